"""Imitation of the rule solver: the warm start before PPO (the seed's Stage A).

The data never leaves the device. ``num_envs`` boards are played on the device, most
by the JAX solver (``solver.batch_solver_action``) and a fraction (``learner_fraction``)
by the network itself, sampling its masked policy; every visited state is labelled by
the solver on the fly and the network takes one gradient step per update on the states
of that update. Letting the learner play is DAgger's remedy for distribution shift:
trained only on the solver's states, a network that imitates 99.5% of the solver's
forced moves missed about 5% of them on the states its own play led to (8x8x10,
measured), and those misses cost most of its lost games.

* **policy**: where the solver's layers ``1..label_max_layer`` prove some hidden cell
  safe, the target is that *set* of forced-safe reveals, and the loss is
  ``-log sum_{a in safe} pi(a)``: the probability of playing *some* proven-safe cell.
  (The seed picks one forced action at random and uses its cross-entropy; the set
  form has the same optimum, a policy that only plays proven-safe cells, without
  label noise, and lets the network pick whichever safe cell it finds easiest.)
  The seed skips guess states for the policy loss; ``guess_weight > 0`` instead adds
  the cross-entropy of the solver's own move on them (its layer-3 proof or its
  layer-4 belief-propagation guess), weighted by ``guess_weight``.
* **mine head**: the true mines of every state whose mines are placed, a binary
  cross-entropy over its hidden cells, weighted by ``aux_mine_weight``.

Loss = policy loss + ``aux_mine_weight`` * BCE. States, labels and the update run in one
jitted chunk of ``num_updates`` updates (an outer ``lax.scan``), seeded and compiled
like PPO, and data-parallel like PPO when given a ``Mesh``: boards split over the
devices (the solver and the game step run on each device's own boards), parameters
replicated, gradients averaged over all boards' states.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import flax
import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh

from msjax import distributed
from msjax import env as ms_env
from msjax import models, ppo, solver


@dataclasses.dataclass(frozen=True)
class ImitationConfig:
    """The imitation stage.

    Attributes:
      enabled: run the stage before PPO.
      num_envs: boards the solver plays in parallel.
      steps_per_update: solver steps per gradient step; each update trains on
        ``num_envs * steps_per_update`` states.
      num_updates: gradient steps of the whole stage (also the cosine-decay horizon).
      lr: peak AdamW learning rate, > 0.
      weight_decay: AdamW weight decay, >= 0.
      max_grad_norm: global gradient-norm clip, > 0.
      anneal_lr: cosine-decay the learning rate to 0 over ``num_updates``.
      aux_mine_weight: weight (lambda) of the mine head's BCE, >= 0.
      guess_weight: weight of the cross-entropy of the solver's move on states without
        a forced-safe label (0 = the seed: no policy loss there), >= 0.
      label_max_layer: the solver layers (1..3) whose proofs are the policy labels.
      play_max_layer: the layers (1..4) of the solver that plays the boards; 4 guesses
        by belief propagation, below 4 it guesses uniformly.
      learner_fraction: fraction of the boards (rounded down) that the network plays,
        sampling its own masked policy, in [0, 1]; the solver plays the rest.
    """

    enabled: bool = True
    num_envs: int = 256
    steps_per_update: int = 1
    num_updates: int = 2000
    lr: float = 1e-3
    weight_decay: float = 1e-4
    max_grad_norm: float = 1.0
    anneal_lr: bool = True
    aux_mine_weight: float = 0.1
    guess_weight: float = 0.0
    label_max_layer: int = 2
    play_max_layer: int = 4
    learner_fraction: float = 0.5

    def __post_init__(self):
        validate_config(self)

    @property
    def label_solver(self) -> solver.SolverConfig:
        return solver.SolverConfig(max_layer=self.label_max_layer)

    @property
    def num_learner_boards(self) -> int:
        return int(self.learner_fraction * self.num_envs)

    @property
    def play_solver(self) -> solver.SolverConfig:
        return solver.SolverConfig(max_layer=self.play_max_layer)


def validate_config(cfg: ImitationConfig) -> None:
    """Raises ``ValueError`` naming the offending field and its allowed range."""
    if not isinstance(cfg.enabled, bool):
        raise ValueError(f"ImitationConfig.enabled={cfg.enabled!r} must be a bool")
    for name in ("num_envs", "steps_per_update", "num_updates"):
        value = getattr(cfg, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"ImitationConfig.{name}={value!r} must be an int >= 1")
    for name in ("lr", "max_grad_norm"):
        if not getattr(cfg, name) > 0.0:
            raise ValueError(f"ImitationConfig.{name}={getattr(cfg, name)!r} must be > 0")
    for name in ("weight_decay", "aux_mine_weight", "guess_weight"):
        if not getattr(cfg, name) >= 0.0:
            raise ValueError(f"ImitationConfig.{name}={getattr(cfg, name)!r} must be >= 0")
    if not 0.0 <= cfg.learner_fraction <= 1.0:
        raise ValueError(f"ImitationConfig.learner_fraction={cfg.learner_fraction!r} must be in [0, 1]")
    if cfg.label_max_layer not in (1, 2, 3):
        raise ValueError(f"ImitationConfig.label_max_layer={cfg.label_max_layer!r} must be 1, 2 or 3")
    if cfg.play_max_layer not in (1, 2, 3, 4):
        raise ValueError(f"ImitationConfig.play_max_layer={cfg.play_max_layer!r} must be in 1..4")


@flax.struct.dataclass
class ImitationState:
    """The imitation stage's carry; exactly what its checkpoint holds.

    Attributes:
      params: network parameters; opt_state: optimizer state;
      env_states: ``EnvState`` batched ``[num_envs]``, the boards the solver plays;
      key: PRNG key; update: int32[], gradient steps done.
    """

    params: Any
    opt_state: Any
    env_states: ms_env.EnvState
    key: jax.Array
    update: jax.Array


@flax.struct.dataclass
class Labelled:
    """Labelled states, flat over ``B`` states.

    Attributes:
      obs: float32[B, C, H, W]; action_mask: bool[B, 2HW], the legal actions;
      forced_safe: bool[B, 2HW], reveals of proven-safe cells (the policy target set);
      solver_action: int32[B], the solver's move; has_guess_label: bool[B], states
        without a forced-safe cell whose solver move is a label (an unfinished game);
      mine_mask: bool[B, H, W], the true mines; mine_label_mask: bool[B, H, W], the
        hidden cells of boards whose mines are placed.
    """

    obs: jax.Array
    action_mask: jax.Array
    forced_safe: jax.Array
    solver_action: jax.Array
    has_guess_label: jax.Array
    mine_mask: jax.Array
    mine_label_mask: jax.Array


def make_optimizer(il_cfg: ImitationConfig) -> optax.GradientTransformation:
    """Global-norm clipping then AdamW, cosine-decayed over the stage when ``anneal_lr``."""
    if il_cfg.anneal_lr:
        lr = optax.cosine_decay_schedule(il_cfg.lr, il_cfg.num_updates)
    else:
        lr = optax.constant_schedule(il_cfg.lr)
    return optax.chain(
        optax.clip_by_global_norm(il_cfg.max_grad_norm),
        optax.adamw(lr, weight_decay=il_cfg.weight_decay),
    )


def init_imitation_state(
    key: jax.Array,
    env_cfg: ms_env.EnvConfig,
    model_cfg: models.ModelConfig,
    il_cfg: ImitationConfig,
    mesh: Mesh | None = None,
) -> ImitationState:
    """Fresh parameters and optimizer, and ``num_envs`` new boards (split over the
    devices of ``mesh``, when given)."""
    if mesh is not None:
        distributed.check_divides("imitation.num_envs", il_cfg.num_envs, mesh)
        return distributed.place(init_imitation_state(key, env_cfg, model_cfg, il_cfg), mesh)
    param_key, env_key, run_key = jax.random.split(key, 3)
    params = models.init_params(param_key, model_cfg, env_cfg)
    return ImitationState(
        params=params,
        opt_state=make_optimizer(il_cfg).init(params),
        env_states=ms_env.batch_reset(env_key, env_cfg, il_cfg.num_envs),
        key=run_key,
        update=jnp.int32(0),
    )


def imitation_loss(
    params: Any, apply_fn: Callable, batch: Labelled, il_cfg: ImitationConfig
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Set cross-entropy on forced states, solver cross-entropy on the others, mine BCE.

    ``loss = policy_ce + guess_weight * guess_ce + aux_mine_weight * mine_bce``, each
    term a mean over the states it covers.

    Returns:
      ``(loss, metrics)``; metrics ``policy_ce`` (mean over forced states), ``guess_ce``
      (mean over guess states), ``mine_bce``, ``policy_accuracy`` (the greedy move is a
      forced-safe cell, over forced states) and ``forced_fraction`` (forced states over
      all states of unfinished games).
    """
    logits, _, mine_logits = apply_fn(params, batch.obs)
    logits = ppo.masked_logits(logits, batch.action_mask)
    log_total = jax.nn.logsumexp(logits, axis=-1)
    has_forced = jnp.any(batch.forced_safe, axis=-1)
    log_safe = jax.nn.logsumexp(ppo.masked_logits(logits, batch.forced_safe), axis=-1)
    set_ce = log_total - log_safe  # -log P(play some forced-safe cell)
    solver_logit = jnp.take_along_axis(logits, batch.solver_action[:, None], axis=-1)[:, 0]
    solver_ce = log_total - solver_logit
    is_guess = batch.has_guess_label & ~has_forced

    forced_weight = has_forced.astype(jnp.float32)
    guess_weight = is_guess.astype(jnp.float32)
    num_forced = jnp.maximum(jnp.sum(forced_weight), 1.0)
    num_guess = jnp.maximum(jnp.sum(guess_weight), 1.0)
    policy_ce = jnp.sum(jnp.where(has_forced, set_ce, 0.0)) / num_forced
    guess_ce = jnp.sum(jnp.where(is_guess, solver_ce, 0.0)) / num_guess
    bce = ppo.mine_bce(mine_logits, batch.mine_mask, batch.mine_label_mask)

    loss = policy_ce + il_cfg.guess_weight * guess_ce + il_cfg.aux_mine_weight * bce

    greedy = jnp.argmax(logits, axis=-1)
    greedy_is_safe = jnp.take_along_axis(batch.forced_safe, greedy[:, None], axis=-1)[:, 0]
    metrics = {
        "policy_ce": policy_ce,
        "guess_ce": guess_ce,
        "mine_bce": bce,
        "policy_accuracy": jnp.sum(greedy_is_safe & has_forced) / num_forced,
        "forced_fraction": jnp.sum(forced_weight) / jnp.maximum(jnp.sum(forced_weight + guess_weight), 1.0),
    }
    return loss, metrics


def _flatten_boards(x: jax.Array) -> jax.Array:
    """[T, N, ...] -> [N*T, ...], board-major, so the boards' split over devices carries over."""
    return jnp.swapaxes(x, 0, 1).reshape((x.shape[0] * x.shape[1],) + x.shape[2:])


def make_imitation_chunk(
    env_cfg: ms_env.EnvConfig,
    model_cfg: models.ModelConfig,
    il_cfg: ImitationConfig,
    num_updates: int,
    mesh: Mesh | None = None,
) -> Callable[[ImitationState], tuple[ImitationState, dict[str, jax.Array]]]:
    """A jitted ``ImitationState -> (ImitationState, metrics)`` of ``num_updates`` updates.

    The input state is donated. With a ``mesh`` the state must be placed on it as
    ``init_imitation_state(..., mesh=mesh)`` does. ``metrics`` maps each name to float32[num_updates]: loss,
    policy_ce, guess_ce, mine_bce, policy_accuracy, forced_fraction, grad_norm, and
    solver_win_rate and learner_win_rate (games won / finished in the update on the
    boards the solver, resp. the network, plays; -1 if none finished).
    """
    if not isinstance(num_updates, int) or num_updates < 1:
        raise ValueError(f"num_updates={num_updates!r} must be an int >= 1")
    if mesh is not None:
        distributed.check_divides("imitation.num_envs", il_cfg.num_envs, mesh)
    model = models.make_model(model_cfg)
    optimizer = make_optimizer(il_cfg)
    # The solver and the game gate work on the whole batch; each device runs its own boards.
    solve = distributed.per_device(
        lambda states, keys: solver.batch_solver_action(states, keys, env_cfg, il_cfg.play_solver), mesh
    )
    forced_moves = distributed.per_device(
        lambda states: solver.batch_forced_moves(states, env_cfg, il_cfg.label_solver), mesh
    )
    step_boards = distributed.per_device(lambda states, actions: ms_env.batch_step(states, actions, env_cfg), mesh)
    observe_boards = jax.vmap(ms_env.observe, in_axes=(0, None))
    mask_boards = jax.vmap(ms_env.action_mask, in_axes=(0, None))
    num_cells = env_cfg.num_cells
    by_learner = jnp.arange(il_cfg.num_envs) < il_cfg.num_learner_boards

    def imitation_update(state: ImitationState, _):
        # PLAY THE BOARDS (SOLVER OR LEARNER) AND LABEL EVERY STATE WITH THE SOLVER
        def play_step(carry, _):
            env_states, key = carry
            key, solver_key, learner_key = jax.random.split(key, 3)
            keys = jax.random.split(solver_key, il_cfg.num_envs)
            solver_action, _ = solve(env_states, keys)
            forced = forced_moves(env_states)
            obs = observe_boards(env_states, env_cfg)
            action_mask = mask_boards(env_states, env_cfg)
            action = solver_action
            if il_cfg.num_learner_boards:
                logits, _, _ = model.apply(state.params, obs)
                learner_action = jax.random.categorical(learner_key, ppo.masked_logits(logits, action_mask))
                action = jnp.where(by_learner, learner_action.astype(jnp.int32), solver_action)

            hidden = ~env_states.revealed
            forced_safe_cells = (forced.safe & hidden).reshape(il_cfg.num_envs, num_cells)
            no_flags = jnp.zeros_like(forced_safe_cells)
            placed = env_states.first_click_done & ~env_states.done
            labelled = Labelled(
                obs=obs,
                action_mask=action_mask,
                forced_safe=jnp.concatenate([forced_safe_cells, no_flags], axis=1),
                solver_action=solver_action,
                has_guess_label=~env_states.done,
                mine_mask=env_states.mine_mask,
                mine_label_mask=hidden & placed[:, None, None],
            )
            env_states, _, done, info = step_boards(env_states, action)
            games = jnp.stack([done & ~by_learner, done & by_learner])  # [solver, learner] x boards
            outcome = (jnp.sum(games, axis=1), jnp.sum(games & info["won"], axis=1))
            return (env_states, key), (labelled, outcome)

        (env_states, key), (labelled, (finished, won)) = jax.lax.scan(
            play_step, (state.env_states, state.key), None, il_cfg.steps_per_update
        )
        batch = jax.tree.map(_flatten_boards, labelled)

        # UPDATE NETWORK
        grad_fn = jax.value_and_grad(imitation_loss, has_aux=True)
        (loss, metrics), grads = grad_fn(state.params, model.apply, batch, il_cfg)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)

        finished, won = jnp.sum(finished, axis=0), jnp.sum(won, axis=0)
        win_rates = jnp.where(finished > 0, won / jnp.maximum(finished, 1), -1.0)
        metrics = {
            **metrics,
            "loss": loss,
            "grad_norm": ppo.global_norm(grads),
            "solver_win_rate": win_rates[0],
            "learner_win_rate": win_rates[1],
        }
        metrics = {name: value.astype(jnp.float32) for name, value in metrics.items()}
        next_state = ImitationState(
            params=params, opt_state=opt_state, env_states=env_states, key=key, update=state.update + 1
        )
        return next_state, metrics

    def imitation_chunk(state: ImitationState) -> tuple[ImitationState, dict[str, jax.Array]]:
        return jax.lax.scan(imitation_update, state, None, num_updates)

    if mesh is None:
        return jax.jit(imitation_chunk, donate_argnums=0)
    abstract = jax.eval_shape(
        lambda k: init_imitation_state(k, env_cfg, model_cfg, il_cfg), jax.random.key(0)
    )
    shardings = distributed.state_shardings(abstract, mesh)
    return jax.jit(
        imitation_chunk,
        in_shardings=(shardings,),
        out_shardings=(shardings, distributed.replicated(mesh)),
        donate_argnums=0,
    )

"""Imitation of the rule solver: the warm start before PPO (the seed's Stage A).

The data never leaves the device. ``num_envs`` games are played on the device, most
by the JAX solver (``solver.batch_solver_action``) and a fraction (``learner_fraction``)
by the network itself, sampling its masked policy (DAgger's remedy for distribution
shift: the network also learns on the states its own play leads to); every visited
state is labelled by the solver on the fly and the network takes one gradient step per
update on the states of that update (``losses.imitation_loss``):

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

Each update plays and labels (``play_and_label``, a ``lax.scan`` of
``steps_per_update`` steps), then takes the gradient step (``update_network``);
``imitation_chunk_fn`` chains ``chunk_updates`` of them in an outer ``lax.scan``. With one
step an update and every state in the gradient (``ImitationConfig.forward_is_shared``, the
CPU configs) the learner plays with the logits of the gradient's own forward pass
(``learn_and_play``): the same update, one network pass fewer. The
function is written for one device: ``make_imitation_chunk`` compiles it so, and
``distributed.jit_chunk`` for a mesh (games split over the devices, the solver and the
game step on each device's own games through ``distributed.per_device``, parameters
replicated, gradients averaged over all games' states). Its settings, ``ImitationConfig``
and their checks, live in ``msjax.stages.imitation_config``; this module exports them.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import flax
import jax
import jax.numpy as jnp
import optax

from msjax import distributed
from msjax import env as ms_env
from msjax import losses, models, optimizers
from msjax.losses import Labelled
from msjax.models import masked_logits
from msjax.stages import batchplay
from msjax.stages.imitation_config import ImitationConfig  # noqa: F401 (exported)
from msjax.stages.spec import StageSpec

ChunkFn = Callable[["ImitationState"], tuple["ImitationState", dict[str, jax.Array]]]


@flax.struct.dataclass
class ImitationState:
    """The imitation stage's carry; exactly what its checkpoint holds.

    Attributes:
      params: network parameters; opt_state: optimizer state;
      env_states: ``EnvState`` batched ``[num_envs]``, the games in play;
      key: PRNG key; update: int32[], gradient steps done;
      beliefs: float32[num_envs, H, W], each game's mine beliefs on its last labelled
        state, from that update's gradient pass, for ``model.carry_beliefs``
        (``models.carried_prior``); None otherwise (no leaf, so the checkpoints of
        other networks are unchanged).
    """

    params: Any
    opt_state: Any
    env_states: ms_env.EnvState
    key: jax.Array
    update: jax.Array
    beliefs: Any = None


@functools.lru_cache(maxsize=32)
def make_optimizer(il_cfg: ImitationConfig) -> optax.GradientTransformation:
    """Global-norm clipping then AdamW, cosine-decayed over
    the stage when ``anneal_lr``; built once per config, for the state's initialisation and
    the chunk alike."""
    schedule = optimizers.lr_schedule(il_cfg.lr, il_cfg.num_updates, il_cfg.anneal_lr)
    return optimizers.clipped_adamw(schedule, il_cfg.max_grad_norm, il_cfg.weight_decay)


def init_imitation_state(
    key: jax.Array, env_cfg: ms_env.EnvConfig, model_cfg: models.ModelConfig, il_cfg: ImitationConfig,
    params: Any = None,
) -> ImitationState:
    """A new optimizer, ``num_envs`` new games, and ``params`` (a warm start) or fresh
    parameters (``distributed.place`` puts the state on a mesh)."""
    param_key, env_key, run_key = jax.random.split(key, 3)
    if params is None:
        params = models.init_params(param_key, model_cfg, env_cfg)
    return ImitationState(
        params=params,
        opt_state=make_optimizer(il_cfg).init(params),
        env_states=ms_env.batch_reset(env_key, env_cfg, il_cfg.num_envs),
        key=run_key,
        update=jnp.int32(0),
        beliefs=jnp.zeros((il_cfg.num_envs, env_cfg.H, env_cfg.W), jnp.float32) if model_cfg.carry_beliefs else None,
    )


# ----------------------------------------------------------------------------- play and label

_observe_games = jax.vmap(ms_env.observe, in_axes=(0, None))
_mask_games = jax.vmap(ms_env.action_mask, in_axes=(0, None))


def play_and_label(
    env_states: ms_env.EnvState, key: jax.Array, params: Any, apply_fn: losses.ApplyFn,
    env_cfg: ms_env.EnvConfig, il_cfg: ImitationConfig,
) -> tuple[ms_env.EnvState, jax.Array, Labelled, tuple[jax.Array, jax.Array]]:
    """One step of every game, played by the solver or (the first ``num_learner_games``
    games) by the network; the states before the step labelled by the solver.

    Returns ``(next env_states, next key, Labelled [N, ...], (finished, won))``:
    ``(finished, won)`` int32[2] each, games finished and won at this step by the solver's
    games and by the learner's. The solver and the game step run per device
    (``batchplay``). ``label_states`` then ``finish_step``, the learner's moves between them.
    """
    labelled_step = label_states(env_states, key, env_cfg, il_cfg)
    action = chosen_moves(labelled_step, None, params, apply_fn, il_cfg)
    env_states, outcome = finish_step(labelled_step, action, env_cfg, il_cfg)
    return env_states, labelled_step.key, labelled_step.labelled, outcome


@flax.struct.dataclass
class LabelledStep:
    """Every game's state before its move, labelled, and what its move needs.

    Attributes:
      env_states: ``EnvState [N]``, the labelled states (the games to move);
      key: the PRNG key after this step's draws; learner_key: the learner's draw's key;
      labelled: ``Labelled [N, ...]``; solver_action: int32[N], the playing solver's moves.
    """

    env_states: ms_env.EnvState
    key: jax.Array
    learner_key: jax.Array
    labelled: Labelled
    solver_action: jax.Array


def label_states(
    env_states: ms_env.EnvState, key: jax.Array, env_cfg: ms_env.EnvConfig, il_cfg: ImitationConfig,
) -> LabelledStep:
    """The random first clicks made, then every game's state labelled by the solver
    (``play_and_label``'s first half: nothing here reads the network)."""
    num_games, num_cells = il_cfg.num_envs, env_cfg.num_cells
    share = il_cfg.random_first_click_share  # opened before anyone plays them: never a labelled move
    env_states, key = batchplay.random_first_clicks(env_states, key, share, env_cfg)
    key, solver_key, learner_key = jax.random.split(key, 3)
    keys = jax.random.split(solver_key, num_games)
    solver_action, _ = batchplay.solver_moves(env_states, keys, env_cfg, il_cfg.play_solver)
    forced = batchplay.forced_moves(env_states, env_cfg, il_cfg.label_solver)

    hidden = ~env_states.revealed
    forced_safe_cells = (forced.safe & hidden).reshape(num_games, num_cells)
    no_flags = jnp.zeros_like(forced_safe_cells)
    placed = env_states.first_click_done & ~env_states.done
    forced_mine_cells = (forced.mines & hidden & placed[:, None, None]).reshape(num_games, num_cells)
    labelled = Labelled(
        obs=_observe_games(env_states, env_cfg),
        action_mask=_mask_games(env_states, env_cfg),
        forced_safe=jnp.concatenate([forced_safe_cells, no_flags], axis=1),
        forced_mines=jnp.concatenate([forced_mine_cells, no_flags], axis=1),
        teacher_moves=jax.nn.one_hot(solver_action, 2 * num_cells, dtype=bool),
        has_guess_label=~env_states.done,
        is_opening=~env_states.first_click_done & ~env_states.done,
        mine_target=env_states.mine_mask,
        mine_label_mask=hidden & placed[:, None, None],
    )
    return LabelledStep(env_states, key, learner_key, labelled, solver_action)


def chosen_moves(
    step: LabelledStep, logits: jax.Array | None, params: Any, apply_fn: losses.ApplyFn, il_cfg: ImitationConfig,
) -> jax.Array:
    """int32[N]: the solver's moves, the learner's games' replaced by the network's
    (``learner_moves``; ``logits`` float[N, A] when the network already ran on the states)."""
    if not il_cfg.num_learner_games:
        return step.solver_action
    labelled = step.labelled
    learner_action = learner_moves(
        logits, labelled.obs, labelled.action_mask, step.learner_key, params, apply_fn, il_cfg.num_learner_games
    )
    return step.solver_action.at[: il_cfg.num_learner_games].set(learner_action)


def finish_step(
    step: LabelledStep, action: jax.Array, env_cfg: ms_env.EnvConfig, il_cfg: ImitationConfig,
) -> tuple[ms_env.EnvState, tuple[jax.Array, jax.Array]]:
    """Every game moved by ``action`` (int32[N]): ``(next env_states, (finished, won))``,
    the latter int32[2] each as in ``play_and_label``."""
    by_learner = jnp.arange(il_cfg.num_envs) < il_cfg.num_learner_games
    env_states, _, done, info = batchplay.step_games(step.env_states, action, env_cfg)
    games = jnp.stack([done & ~by_learner, done & by_learner])  # [solver, learner] x games
    return env_states, (jnp.sum(games, axis=1), jnp.sum(games & info["won"], axis=1))


def learner_moves(
    logits: jax.Array | None, obs: jax.Array, action_mask: jax.Array, key: jax.Array, params: Any,
    apply_fn: losses.ApplyFn, num_learner_games: int,
) -> jax.Array:
    """int32[num_learner_games]: the network's moves in the first ``num_learner_games`` of
    ``N`` games, sampled from its masked policy (``obs`` float[N, H, W, C], ``action_mask``
    bool[N, A]). The network runs on those games alone unless ``logits`` (float[N, A], all
    games') are given; the draw is the one ``jax.random.categorical`` makes for ``N`` games
    with ``key``, whichever it ran on."""
    if logits is None:
        logits, _, _ = apply_fn(params, obs[:num_learner_games])
    rows = masked_logits(logits[:num_learner_games], action_mask[:num_learner_games])
    all_rows = jnp.zeros(action_mask.shape, rows.dtype).at[:num_learner_games].set(rows)
    return jax.random.categorical(key, all_rows)[:num_learner_games].astype(jnp.int32)


def flatten_games(x: jax.Array) -> jax.Array:
    """[T, N, ...] -> [N*T, ...], game-major, so the games' split over devices carries over."""
    return jnp.swapaxes(x, 0, 1).reshape((x.shape[0] * x.shape[1],) + x.shape[2:])


# ----------------------------------------------------------------------------- update network


def update_network(
    state: ImitationState, batch: Labelled, apply_fn: losses.ApplyFn,
    optimizer: optax.GradientTransformation, il_cfg: ImitationConfig,
) -> tuple[Any, Any, dict[str, jax.Array]]:
    """One gradient step on ``losses.imitation_loss``: ``(params, opt_state, metrics)``,
    metrics the loss's plus ``loss`` and ``grad_norm``. With ``il_cfg.microbatch_size``
    the gradient is accumulated over micro-batches."""
    totals_fn = functools.partial(losses.imitation_totals, few_proofs_cells=il_cfg.few_proofs_cells)
    return batchplay.gradient_step(
        lambda params, part, totals: losses.imitation_loss(params, apply_fn, part, il_cfg, totals),
        totals_fn, state.params, state.opt_state, batch, optimizer, il_cfg.microbatch_size,
    )


def learn_and_play(
    state: ImitationState, apply_fn: losses.ApplyFn, optimizer: optax.GradientTransformation,
    env_cfg: ms_env.EnvConfig, il_cfg: ImitationConfig,
) -> tuple[Any, Any, dict[str, jax.Array], ms_env.EnvState, jax.Array, tuple[jax.Array, jax.Array]]:
    """One update whose gradient pass also gives the learner's moves (``il_cfg.forward_is_shared``):
    the states labelled, the gradient step on them, the network's logits from that step's
    forward pass (the parameters the learner plays with) choosing the learner's moves, and
    every game moved. The same update as ``play_and_label`` then ``update_network``, one
    network pass fewer (the learner's moves then differ only by float rounding).

    With ``state.beliefs`` (``model.carry_beliefs``) the network reads each game's beliefs
    of its previous labelled state (``models.carried_prior``) and hands on its beliefs on
    these states.

    Returns ``(params, opt_state, metrics, next env_states, next key, (finished, won),
    beliefs)``, ``(finished, won)`` int32[2] each as in ``play_and_label``, ``beliefs``
    float32[N, H, W] or None.
    """
    step = label_states(state.env_states, state.key, env_cfg, il_cfg)
    prior = None if state.beliefs is None else models.carried_prior(state.beliefs, step.env_states.revealed)

    def loss_and_logits(params):
        logits, _, mine_logits = apply_fn(params, step.labelled.obs, prior)
        shares, metrics = losses.imitation_loss_shares(logits, mine_logits, step.labelled, il_cfg)
        return jnp.sum(shares), (metrics, logits, mine_logits)

    (loss, (metrics, logits, mine_logits)), grads = jax.value_and_grad(loss_and_logits, has_aux=True)(state.params)
    params, opt_state, metrics = batchplay.apply_gradients(grads, state.params, state.opt_state, optimizer, loss, metrics)
    action = chosen_moves(step, logits, state.params, apply_fn, il_cfg)
    env_states, outcome = finish_step(step, action, env_cfg, il_cfg)
    beliefs = None if state.beliefs is None else jax.nn.sigmoid(mine_logits)
    return params, opt_state, metrics, env_states, step.key, outcome, beliefs


# ----------------------------------------------------------------------------- the chunk


def imitation_chunk_fn(
    env_cfg: ms_env.EnvConfig, model_cfg: models.ModelConfig, il_cfg: ImitationConfig, chunk_updates: int
) -> ChunkFn:
    """The (unjitted) ``ImitationState -> (ImitationState, metrics)`` of ``chunk_updates``
    updates; ``make_imitation_chunk`` or ``distributed.jit_chunk`` compile it.

    ``metrics`` maps each name to float32[chunk_updates]: loss, policy_ce, guess_ce,
    opening_ce, mine_bce, proven_mine_ce, few_proofs_ce, proof_bce, policy_accuracy, forced_fraction,
    grad_norm, solver_win_rate and learner_win_rate (games won / finished in the update on
    the games the solver, resp. the network, plays; -1 if none finished).
    """
    if not isinstance(chunk_updates, int) or chunk_updates < 1:
        raise ValueError(f"chunk_updates={chunk_updates!r} must be an int >= 1")
    if model_cfg.carry_beliefs and il_cfg.belief_carry_problem():
        raise ValueError(f"model.carry_beliefs=True needs {il_cfg.belief_carry_problem()}")
    apply_fn = models.make_model(model_cfg).apply
    optimizer = make_optimizer(il_cfg)

    def imitation_update(state: ImitationState, _):
        if il_cfg.forward_is_shared:  # label, learn, then play with the gradient pass's logits
            params, opt_state, metrics, env_states, key, (finished, won), beliefs = learn_and_play(
                state, apply_fn, optimizer, env_cfg, il_cfg
            )
            return finish_update(state, params, opt_state, metrics, env_states, key, finished, won, beliefs)
        # PLAY THE GAMES (SOLVER OR LEARNER) AND LABEL EVERY STATE WITH THE SOLVER
        def play_step(carry, _):
            env_states, key, labelled, outcome = play_and_label(*carry, state.params, apply_fn, env_cfg, il_cfg)
            return (env_states, key), (labelled, outcome)

        (env_states, key), (labelled, (finished, won)) = jax.lax.scan(
            play_step, (state.env_states, state.key), None, il_cfg.steps_per_update
        )
        labelled = jax.tree.map(flatten_games, labelled)
        # UPDATE NETWORK
        params, opt_state, metrics = update_network(state, labelled, apply_fn, optimizer, il_cfg)
        finished, won = jnp.sum(finished, axis=0), jnp.sum(won, axis=0)
        return finish_update(state, params, opt_state, metrics, env_states, key, finished, won)

    def finish_update(state, params, opt_state, metrics, env_states, key, finished, won, beliefs=None):
        """The next state and the update's metrics, its games' win rates (int32[2]
        ``finished``, ``won``: the solver's, the learner's) among them."""
        win_rates = jnp.where(finished > 0, won / jnp.maximum(finished, 1), -1.0)
        metrics = {**metrics, "solver_win_rate": win_rates[0], "learner_win_rate": win_rates[1]}
        metrics = {name: value.astype(jnp.float32) for name, value in metrics.items()}
        next_state = ImitationState(
            params=params, opt_state=opt_state, env_states=env_states, key=key, update=state.update + 1,
            beliefs=beliefs,
        )
        return next_state, metrics

    def imitation_chunk(state: ImitationState) -> tuple[ImitationState, dict[str, jax.Array]]:
        return jax.lax.scan(imitation_update, state, None, chunk_updates)

    return imitation_chunk


def make_imitation_chunk(
    env_cfg: ms_env.EnvConfig, model_cfg: models.ModelConfig, il_cfg: ImitationConfig, chunk_updates: int
) -> ChunkFn:
    """``imitation_chunk_fn`` jitted for one device, its input state donated."""
    return distributed.jit_chunk(imitation_chunk_fn(env_cfg, model_cfg, il_cfg, chunk_updates))


# ----------------------------------------------------------------------------- the stage


def imitation_env(env_cfg: ms_env.EnvConfig) -> ms_env.EnvConfig:
    """The game the imitation stage plays: a board mix's first board, unpadded (the rule
    solver reads whole boards) but with the same observation channels; else ``env_cfg``."""
    if not env_cfg.boards:
        return env_cfg
    return ms_env.board_env(env_cfg, 0, padded=False)


def init_stage_state(key: jax.Array, cfg: Any, params: Any = None) -> ImitationState:
    """``init_imitation_state`` for an experiment config, on the game imitation plays
    (``imitation_env``)."""
    return init_imitation_state(key, imitation_env(cfg.env), cfg.model, cfg.imitation, params=params)


def stage_chunk_fn(cfg: Any, chunk_updates: int) -> ChunkFn:
    """``imitation_chunk_fn`` for an experiment config."""
    return imitation_chunk_fn(imitation_env(cfg.env), cfg.model, cfg.imitation, chunk_updates)


STAGE = StageSpec(
    name="imitation",
    section="imitation",
    init_state=init_stage_state,
    chunk_fn=stage_chunk_fn,
    reads=("env", "model", "imitation"),
)
"""The imitation stage: before PPO when ``imitation.enabled``, on a board mix's first board."""

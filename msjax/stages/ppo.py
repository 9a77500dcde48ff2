"""PPO with action masking, as one compiled program per chunk of updates.

``ppo_chunk_fn`` builds ``PPOState -> (PPOState, metrics)``, ``chunk_updates`` PPO
updates in an outer ``lax.scan``. Each update is the PPO paper's loop, one module-level
function per step: COLLECT TRAJECTORIES (``collect_trajectories``: ``steps_per_update``
steps of ``num_envs`` games from the masked policy, finished games restarted by
``env.batch_step``), CALCULATE ADVANTAGE (``calculate_advantages``: GAE), UPDATE NETWORK
(``update_epoch``: ``ppo_epochs`` passes in ``mini_batches`` shuffled minibatches, each a
gradient step of ``update_minibatch`` on ``losses.ppo_loss``).

The function is written for one device: ``make_ppo_chunk`` compiles it so, and
``distributed.jit_chunk`` for a mesh (games split over the devices, parameters
replicated, the env step on each device's own games through ``distributed.per_device``;
a minibatch takes the same steps of every game, so it spreads evenly over the devices).
Python sees only chunk boundaries; the per-update metrics come back as arrays of
``chunk_updates`` scalars. The frontier-only reveal mask (the seed's early curriculum) is
chosen from the traced update counter, so it switches off without a recompile.

Hidden mines are read only for rewards (inside the env), the mine head's labels and
metrics; the policy sees ``observe`` and ``action_mask``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import chex
import distrax
import flax
import jax
import jax.numpy as jnp
import optax

from msjax.stages import curriculum as curriculum_lib
from msjax import distributed
from msjax import env as ms_env
from msjax import losses, models, optimizers
from msjax.losses import Batch
from msjax.stages import batchplay
from msjax.stages.ppo_config import PPOConfig
from msjax.stages.spec import StageSpec

ChunkFn = Callable[["PPOState"], tuple["PPOState", dict[str, jax.Array]]]


@flax.struct.dataclass
class PPOState:
    """Everything a PPO run carries between updates; exactly what a checkpoint holds.

    Attributes:
      params: network parameters (float32).
      opt_state: optimizer state.
      env_states: ``EnvState`` batched ``[num_envs]``, the games in play.
      key: PRNG key for sampling and shuffling.
      update: int32[], PPO updates done so far.
      curriculum: with a board mix (``env.boards``), the curriculum level and the traced
        board weights that new games are dealt from (``msjax.stages.curriculum``); None otherwise.
    """

    params: Any
    opt_state: Any
    env_states: ms_env.EnvState
    key: jax.Array
    update: jax.Array
    curriculum: curriculum_lib.CurriculumState | None = None


@flax.struct.dataclass
class Transition:
    """One rollout step of ``N`` games (a rollout stacks ``T`` of them: ``[T, N, ...]``).

    Attributes:
      obs: float32[N, C, H, W]; action_mask: bool[N, 2HW]; action: int32[N];
      log_prob: float32[N] of the action under the rollout policy; value: float32[N];
      reward: float32[N]; done: bool[N] (the game ended at this step);
      mine_mask: bool[N, H, W], the true mines (labels only);
      mine_label_mask: bool[N, H, W], hidden cells of games whose mines are placed;
      won: bool[N] (a game was won at this step); invalid: bool[N];
      off_frontier: bool[N], a reveal off the frontier while a frontier existed;
      board: int32[N], each game's board in a board mix (None without one).
    """

    obs: jax.Array
    action_mask: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    done: jax.Array
    mine_mask: jax.Array
    mine_label_mask: jax.Array
    won: jax.Array
    invalid: jax.Array
    off_frontier: jax.Array
    board: jax.Array | None = None


@functools.lru_cache(maxsize=32)
def make_lr_schedule(ppo_cfg: PPOConfig) -> optax.Schedule:
    """Learning rate per optimizer step: cosine decay to 0 over ``num_updates`` updates
    (``anneal_lr``), else constant. Built once per config: the optimizer and the ``lr``
    metric read the same schedule."""
    optimizer_steps_per_update = ppo_cfg.ppo_epochs * ppo_cfg.mini_batches
    return optimizers.lr_schedule(ppo_cfg.lr, ppo_cfg.num_updates * optimizer_steps_per_update, ppo_cfg.anneal_lr)


@functools.lru_cache(maxsize=32)
def make_optimizer(ppo_cfg: PPOConfig) -> optax.GradientTransformation:
    """Global-norm clipping then AdamW on the (cosine-decayed) learning rate; built once
    per config, for the state's initialisation and the chunk alike. With
    ``trainable="value"`` only the value head's leaves are updated (``optimizers.trainable_only``);
    the others get zero updates."""
    optimizer = optimizers.clipped_adamw(make_lr_schedule(ppo_cfg), ppo_cfg.max_grad_norm, ppo_cfg.weight_decay)
    return optimizers.trainable_only(optimizer, ppo_cfg.trainable)


def init_ppo_state(
    key: jax.Array, env_cfg: ms_env.EnvConfig, model_cfg: models.ModelConfig, ppo_cfg: PPOConfig,
    params: Any = None, curriculum_cfg: curriculum_lib.CurriculumConfig | None = None,
) -> PPOState:
    """A fresh run: new games, new optimizer, and ``params`` (from imitation) or fresh ones.

    With a board mix the games are dealt by the curriculum's level-0 weights (uniform
    without ``curriculum_cfg``). ``distributed.place`` puts the state on a mesh.
    """
    param_key, env_key, train_key = jax.random.split(key, 3)
    if params is None:
        params = models.init_params(param_key, model_cfg, env_cfg)
    curriculum = curriculum_lib.init_state(env_cfg, curriculum_cfg)
    weights = None if curriculum is None else curriculum.board_weights
    return PPOState(
        params=params,
        opt_state=make_optimizer(ppo_cfg).init(params),
        env_states=ms_env.batch_reset(env_key, env_cfg, ppo_cfg.num_envs, weights),
        key=train_key,
        update=jnp.int32(0),
        curriculum=curriculum,
    )


# ----------------------------------------------------------------------------- collect trajectories

_observe_games = jax.vmap(ms_env.observe, in_axes=(0, None))
_mask_games = jax.vmap(ms_env.action_mask, in_axes=(0, None, None))
_frontier_games = jax.vmap(ms_env.frontier, in_axes=(0, None))
_playable_games = jax.vmap(ms_env.playable, in_axes=(0, None))


def act_and_step(
    env_states: ms_env.EnvState, key: jax.Array, params: Any, apply_fn: losses.ApplyFn,
    env_cfg: ms_env.EnvConfig, frontier_only: jax.Array, board_weights: jax.Array | None,
    microbatch_size: int,
) -> tuple[ms_env.EnvState, jax.Array, Transition]:
    """One rollout step of every game: sample an action from the masked policy, play it.

    Returns ``(next env_states, next key, Transition)``. The policy's forward pass takes
    the games ``microbatch_size`` at a time (``batchplay.forward_in_microbatches``; 0: all
    at once); the env step runs per device (``batchplay.step_games``).
    """
    num_games = env_states.done.shape[0]
    key, action_key = jax.random.split(key)
    obs = _observe_games(env_states, env_cfg)
    action_mask = _mask_games(env_states, env_cfg, frontier_only)
    logits, value, _ = batchplay.forward_in_microbatches(apply_fn, params, obs, microbatch_size)
    pi = distrax.Categorical(logits=models.masked_logits(logits, action_mask))
    action = pi.sample(seed=action_key).astype(jnp.int32)
    log_prob = pi.log_prob(action)

    near = _frontier_games(env_states, env_cfg).reshape(num_games, -1)
    is_reveal = action < env_cfg.num_cells
    cell = action % env_cfg.num_cells
    on_frontier = jnp.take_along_axis(near, cell[:, None], axis=1)[:, 0]
    off_frontier = is_reveal & ~on_frontier & jnp.any(near, axis=1)

    next_states, reward, done, info = batchplay.step_games(env_states, action, env_cfg, board_weights)
    label_mask = ~env_states.revealed & env_states.first_click_done[:, None, None]
    if env_cfg.boards:
        label_mask = label_mask & _playable_games(env_states, env_cfg)
    transition = Transition(
        obs=obs,
        action_mask=action_mask,
        action=action,
        log_prob=log_prob,
        value=value,
        reward=reward,
        done=done,
        mine_mask=env_states.mine_mask,
        mine_label_mask=label_mask,
        won=done & info["won"],
        invalid=info["invalid"],
        off_frontier=off_frontier,
        board=env_states.board,
    )
    return next_states, key, transition


def collect_trajectories(
    train_state: PPOState, apply_fn: losses.ApplyFn, env_cfg: ms_env.EnvConfig, ppo_cfg: PPOConfig,
    frontier_only: jax.Array,
) -> tuple[ms_env.EnvState, jax.Array, Transition]:
    """``steps_per_update`` steps of every game (``lax.scan``); returns the games after the
    rollout, the next key and the trajectory, leaves ``[T, N, ...]``."""
    curriculum = train_state.curriculum
    board_weights = None if curriculum is None else curriculum.board_weights

    def env_step(carry, _):
        env_states, key = carry
        share = ppo_cfg.random_first_click_share  # opened before the policy sees them, so never its move
        env_states, key = batchplay.random_first_clicks(env_states, key, share, env_cfg, board_weights)
        env_states, key, transition = act_and_step(
            env_states, key, train_state.params, apply_fn, env_cfg, frontier_only, board_weights,
            ppo_cfg.microbatch_size,
        )
        return (env_states, key), transition

    (env_states, key), trajectory = jax.lax.scan(
        env_step, (train_state.env_states, train_state.key), None, ppo_cfg.steps_per_update
    )
    return env_states, key, trajectory


# ----------------------------------------------------------------------------- calculate advantage


def calculate_advantages(
    params: Any, apply_fn: losses.ApplyFn, env_cfg: ms_env.EnvConfig, ppo_cfg: PPOConfig,
    env_states: ms_env.EnvState, trajectory: Transition,
) -> Batch:
    """The rollout as a ``Batch`` (leaves ``[T, N, ...]``) with its GAE advantages and
    returns, bootstrapped from the value of ``env_states`` (the games after the rollout),
    the games passing through the network ``ppo_cfg.microbatch_size`` at a time."""
    last_obs = _observe_games(env_states, env_cfg)
    _, last_value, _ = batchplay.forward_in_microbatches(apply_fn, params, last_obs, ppo_cfg.microbatch_size)
    advantages, targets = losses.gae(
        trajectory.reward, trajectory.value, trajectory.done, last_value,
        ppo_cfg.gamma, ppo_cfg.gae_lambda,
    )
    return Batch(
        obs=trajectory.obs,
        action_mask=trajectory.action_mask,
        action=trajectory.action,
        log_prob=trajectory.log_prob,
        value=trajectory.value,
        advantage=advantages,
        target=targets,
        mine_mask=trajectory.mine_mask,
        mine_label_mask=trajectory.mine_label_mask,
    )


# ----------------------------------------------------------------------------- update network


def shuffled_minibatches(rollout: Batch, key: jax.Array, mini_batches: int) -> Batch:
    """The rollout cut into ``mini_batches`` shuffled minibatches, each spread over all games.

    Every game's ``T`` steps are shuffled on their own (a permutation drawn for that
    game), and minibatch ``m`` takes the steps in places ``[m*T/M, (m+1)*T/M)`` of every
    game, games in order. A game's samples never leave the device that holds it, and
    the draw is the same whatever the number of devices.

    Args:
      rollout: ``Batch`` of time-major leaves ``[T, N, ...]``.
      key: PRNG key of this epoch's shuffle.
      mini_batches: ``M``, a divisor of ``T``.

    Returns:
      ``Batch`` of leaves ``[M, N*T/M, ...]``, game-major within a minibatch.
    """
    num_steps, num_games = rollout.action.shape
    steps_per_minibatch = num_steps // mini_batches
    game_keys = jax.random.split(key, num_games)
    order = jax.vmap(lambda k: jax.random.permutation(k, num_steps))(game_keys)  # int32[N, T]

    def arrange(x: jax.Array) -> jax.Array:
        by_game = jax.vmap(lambda steps, game_order: steps[game_order])(jnp.swapaxes(x, 0, 1), order)
        split = by_game.reshape((num_games, mini_batches, steps_per_minibatch) + x.shape[2:])
        return jnp.swapaxes(split, 0, 1).reshape(
            (mini_batches, num_games * steps_per_minibatch) + x.shape[2:]
        )

    return jax.tree.map(arrange, rollout)


def update_minibatch(
    carry: tuple[Any, Any], minibatch: Batch, apply_fn: losses.ApplyFn,
    optimizer: optax.GradientTransformation, ppo_cfg: PPOConfig,
) -> tuple[tuple[Any, Any], dict[str, jax.Array]]:
    """One gradient step on ``losses.ppo_loss`` (accumulated over ``microbatch_size``
    micro-batches): ``(params, opt_state)`` -> the next, and the step's metrics (the
    loss's, ``loss`` and ``grad_norm``)."""
    params, opt_state = carry
    params, opt_state, metrics = batchplay.gradient_step(
        lambda p, batch, totals: losses.ppo_loss(p, apply_fn, batch, ppo_cfg, totals), losses.ppo_totals,
        params, opt_state, minibatch, optimizer, ppo_cfg.microbatch_size,
    )
    return (params, opt_state), metrics


def update_epoch(
    carry: tuple[Any, Any, jax.Array], rollout: Batch, apply_fn: losses.ApplyFn,
    optimizer: optax.GradientTransformation, ppo_cfg: PPOConfig,
) -> tuple[tuple[Any, Any, jax.Array], dict[str, jax.Array]]:
    """One pass over ``rollout`` in freshly shuffled minibatches: ``(params, opt_state,
    key)`` -> the next, and metrics ``[mini_batches]`` per name."""
    params, opt_state, key = carry
    key, shuffle_key = jax.random.split(key)
    minibatches = shuffled_minibatches(rollout, shuffle_key, ppo_cfg.mini_batches)
    minibatches = distributed.constrain_to_games(minibatches)
    step = functools.partial(update_minibatch, apply_fn=apply_fn, optimizer=optimizer, ppo_cfg=ppo_cfg)
    (params, opt_state), metrics = jax.lax.scan(step, (params, opt_state), minibatches)
    return (params, opt_state, key), metrics


# ----------------------------------------------------------------------------- metrics


def rollout_metrics(trajectory: Transition, frontier_only: jax.Array) -> dict[str, jax.Array]:
    """Scalars of one update's rollout (see ``ppo_chunk_fn`` for the names)."""
    finished = jnp.sum(trajectory.done, dtype=jnp.float32)
    return {
        "mean_reward": jnp.mean(trajectory.reward),
        "episodes_finished": finished,
        "win_rate_train": jnp.sum(trajectory.won, dtype=jnp.float32) / jnp.maximum(finished, 1.0),
        "invalid_rate": jnp.mean(trajectory.invalid.astype(jnp.float32)),
        "frontier_only": frontier_only.astype(jnp.float32),
        "off_frontier_rate": jnp.mean(trajectory.off_frontier.astype(jnp.float32)),
    }


# ----------------------------------------------------------------------------- the chunk


def ppo_chunk_fn(
    env_cfg: ms_env.EnvConfig, model_cfg: models.ModelConfig, ppo_cfg: PPOConfig, chunk_updates: int
) -> ChunkFn:
    """The (unjitted) ``PPOState -> (PPOState, metrics)`` running ``chunk_updates`` PPO
    updates; ``make_ppo_chunk`` or ``distributed.jit_chunk`` compile it.

    ``metrics`` maps each name to float32[chunk_updates]: loss, policy_loss, value_loss,
    entropy, mine_bce, approx_kl, clip_frac, grad_norm and lr (means over the update's
    minibatches), and from the rollout mean_reward,
    episodes_finished, win_rate_train (games won / games finished), invalid_rate,
    frontier_only (1 while the frontier mask is on) and off_frontier_rate (reveals off
    the frontier while one existed, per step). With a board mix (``env_cfg.boards``)
    also curriculum_level (the curriculum's level) and, per board NAME
    (``env.board_name``), games_share/NAME (its share of the finished games) and
    win_rate_train/NAME.
    """
    if not isinstance(chunk_updates, int) or chunk_updates < 1:
        raise ValueError(f"chunk_updates={chunk_updates!r} must be an int >= 1")
    apply_fn = models.make_model(model_cfg).apply
    optimizer = make_optimizer(ppo_cfg)
    lr_schedule = make_lr_schedule(ppo_cfg)
    board_names = [ms_env.board_name(board) for board in env_cfg.boards]
    optimizer_steps_per_update = ppo_cfg.ppo_epochs * ppo_cfg.mini_batches
    epoch = functools.partial(update_epoch, apply_fn=apply_fn, optimizer=optimizer, ppo_cfg=ppo_cfg)

    def ppo_update(train_state: PPOState, _):
        frontier_only = train_state.update < ppo_cfg.frontier_mask_until_updates
        # COLLECT TRAJECTORIES
        env_states, key, trajectory = collect_trajectories(train_state, apply_fn, env_cfg, ppo_cfg, frontier_only)
        # CALCULATE ADVANTAGE
        rollout = calculate_advantages(train_state.params, apply_fn, env_cfg, ppo_cfg, env_states, trajectory)
        # UPDATE NETWORK
        (params, opt_state, key), loss_metrics = jax.lax.scan(
            lambda carry, _: epoch(carry, rollout), (train_state.params, train_state.opt_state, key),
            None, ppo_cfg.ppo_epochs,
        )
        # METRICS (scalars per update)
        metrics = {name: jnp.mean(value) for name, value in loss_metrics.items()}
        metrics["lr"] = jnp.asarray(lr_schedule(train_state.update * optimizer_steps_per_update), jnp.float32)
        metrics.update(rollout_metrics(trajectory, frontier_only))
        if train_state.curriculum is not None:
            metrics.update(
                curriculum_lib.board_mix_metrics(
                    trajectory.done, trajectory.won, trajectory.board, train_state.curriculum, board_names
                )
            )
        next_state = train_state.replace(
            params=params, opt_state=opt_state, env_states=env_states, key=key, update=train_state.update + 1
        )
        return next_state, metrics

    def ppo_chunk(train_state: PPOState) -> tuple[PPOState, dict[str, jax.Array]]:
        chex.assert_shape(train_state.env_states.done, (ppo_cfg.num_envs,))
        return jax.lax.scan(ppo_update, train_state, None, chunk_updates)

    return ppo_chunk


def make_ppo_chunk(
    env_cfg: ms_env.EnvConfig, model_cfg: models.ModelConfig, ppo_cfg: PPOConfig, chunk_updates: int
) -> ChunkFn:
    """``ppo_chunk_fn`` jitted for one device, its input state donated."""
    return distributed.jit_chunk(ppo_chunk_fn(env_cfg, model_cfg, ppo_cfg, chunk_updates))


# ----------------------------------------------------------------------------- the stage


def init_stage_state(key: jax.Array, cfg: Any, params: Any = None) -> PPOState:
    """``init_ppo_state`` for an experiment config: its game, network, PPO section and
    curriculum."""
    return init_ppo_state(key, cfg.env, cfg.model, cfg.ppo, params=params, curriculum_cfg=cfg.curriculum)


def stage_chunk_fn(cfg: Any, chunk_updates: int) -> ChunkFn:
    """``ppo_chunk_fn`` for an experiment config."""
    return ppo_chunk_fn(cfg.env, cfg.model, cfg.ppo, chunk_updates)


STAGE = StageSpec(
    name="ppo",
    section="ppo",
    init_state=init_stage_state,
    chunk_fn=stage_chunk_fn,
    reads=("env", "model", "ppo", "curriculum"),
)
"""The PPO stage: the last of a run when ``ppo.enabled``, on the config's whole game (a
board mix with its curriculum)."""

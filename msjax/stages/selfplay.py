"""Self-play with search targets: the network plays with its guesses searched, and learns
the search's improved policy and the games' outcomes (AlphaZero's loop on Minesweeper).

``selfplay_chunk_fn`` builds ``SelfPlayState -> (SelfPlayState, metrics)``, ``chunk_updates``
updates in an outer ``lax.scan``. Each update, one module-level function per step:

1. PLAY WITH SEARCH (``play_with_search``): ``steps_per_update`` moves of each of
   ``num_envs`` games, each move ``search.search_policy``'s with the current network
   (``search.network_search`` with the config's ``simulations``, ``samples``, ``leaf``,
   ``gumbel_scale``, ``value_scale`` and ``exact_limits``): a proved-safe reveal without search, a guess by
   Gumbel AlphaZero's root; finished games restart (``batchplay.step_games``). Every state
   is kept with the search's improved policy, whether it was searched and whether the move
   played is the network's own favourite (``SelfPlayStep``).
2. TARGETS (``selfplay_targets.search_targets``): the improved policy, the move played,
   and each state's outcome (1 won, 0 lost), the value head's estimate of the game after
   the rollout standing in for the outcome of a game still in play (a rollout of ``T``
   steps with ``gamma = lambda = 1`` returns, as PPO's ``calculate_advantages`` does with
   ``losses.gae``).
3. UPDATE NETWORK: one gradient step on ``selfplay_targets.selfplay_loss`` over the
   rollout's ``num_envs * steps_per_update`` states and, with a buffer (``buffer_size``),
   ``buffer_batch`` states of past rollouts drawn from it (accumulated over
   ``microbatch_size`` micro-batches; clipped, AdamW, cosine-decayed); then the rollout's
   searched guesses join the buffer (``selfplay_buffer``).

The stage plays after imitation (from its network, or ``run.init_from``'s) and before
PPO: the imitation leaves the value head untrained, which the search reads at its leaves
and self-play trains first, and PPO (when it follows) fine-tunes the network self-play
leaves. It plays one board size (the search's analysis reads whole boards: no board mix).
The search gathers the guess views of the whole batch, so on a mesh it runs on the
batch as a whole (the env step still runs per device).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import chex
import flax
import jax
import jax.numpy as jnp
import optax

from msjax import agent as agent_lib
from msjax import distributed, models, optimizers, search
from msjax import env as ms_env
from msjax.stages import batchplay, selfplay_buffer
from msjax.stages.imitation import flatten_games
from msjax.stages.selfplay_config import SelfPlayConfig
from msjax.stages.selfplay_targets import (
    SearchTargets, SelfPlayStep, search_targets, selfplay_loss, selfplay_totals,
)
from msjax.stages.spec import StageSpec

ChunkFn = Callable[["SelfPlayState"], tuple["SelfPlayState", dict[str, jax.Array]]]


@flax.struct.dataclass
class SelfPlayState:
    """The self-play stage's carry; exactly what its checkpoint holds.

    Attributes:
      params: network parameters; opt_state: optimizer state;
      env_states: ``EnvState`` batched ``[num_envs]``, the games in play;
      key: PRNG key of the searches, random first clicks and buffer draws;
      update: int32[], updates done;
      buffer: ``selfplay_buffer.SearchBuffer`` of past searched guesses, or None when
        ``buffer_size`` is 0.
    """

    params: Any
    opt_state: Any
    env_states: ms_env.EnvState
    key: jax.Array
    update: jax.Array
    buffer: selfplay_buffer.SearchBuffer | None = None


@functools.lru_cache(maxsize=32)
def make_lr_schedule(sp_cfg: SelfPlayConfig) -> optax.Schedule:
    """Learning rate per update (one gradient step each): cosine decay to 0 over
    ``num_updates`` when ``anneal_lr``, else constant."""
    return optimizers.lr_schedule(sp_cfg.lr, sp_cfg.num_updates, sp_cfg.anneal_lr)


@functools.lru_cache(maxsize=32)
def make_optimizer(sp_cfg: SelfPlayConfig) -> optax.GradientTransformation:
    """Global-norm clipping then AdamW on ``make_lr_schedule``, on the parameters of
    ``trainable`` (``optimizers.trainable_only``); built once per config, for the state's
    initialisation and the chunk alike."""
    optimizer = optimizers.clipped_adamw(make_lr_schedule(sp_cfg), sp_cfg.max_grad_norm, sp_cfg.weight_decay)
    return optimizers.trainable_only(optimizer, sp_cfg.trainable)


def init_selfplay_state(
    key: jax.Array, env_cfg: ms_env.EnvConfig, model_cfg: models.ModelConfig, sp_cfg: SelfPlayConfig,
    params: Any = None,
) -> SelfPlayState:
    """A new optimizer, ``num_envs`` new games, and ``params`` (the previous stage's or a warm
    start) or fresh ones (``distributed.place`` puts the state on a mesh)."""
    param_key, env_key, run_key = jax.random.split(key, 3)
    if params is None:
        params = models.init_params(param_key, model_cfg, env_cfg)
    env_states = ms_env.batch_reset(env_key, env_cfg, sp_cfg.num_envs)
    buffer = None
    if sp_cfg.buffer_size:
        example = jax.eval_shape(lambda: state_targets(env_states, env_cfg))
        buffer = selfplay_buffer.empty_buffer(sp_cfg.buffer_size, example)
    return SelfPlayState(
        params=params,
        opt_state=make_optimizer(sp_cfg).init(params),
        env_states=env_states,
        key=run_key,
        update=jnp.int32(0),
        buffer=buffer,
    )


# ----------------------------------------------------------------------------- play with search

_observe_games = jax.vmap(ms_env.observe, in_axes=(0, None))
_mask_games = jax.vmap(ms_env.action_mask, in_axes=(0, None))


def state_targets(env_states: ms_env.EnvState, env_cfg: ms_env.EnvConfig) -> SearchTargets:
    """``SearchTargets`` of the games' views with empty targets (leaves ``[N, ...]``): the
    shapes a state of the buffer takes."""
    num_games = env_states.done.shape[0]
    obs, action_mask = _observe_games(env_states, env_cfg), _mask_games(env_states, env_cfg)
    return SearchTargets(
        obs=obs, action_mask=action_mask, action=jnp.zeros(num_games, jnp.int32),
        action_weights=jnp.zeros(action_mask.shape, jnp.float32), searched=jnp.zeros(num_games, bool),
        outcome=jnp.zeros(num_games, jnp.float32), mine_mask=jnp.zeros_like(env_states.mine_mask),
        mine_label_mask=jnp.zeros_like(env_states.mine_mask), valid=jnp.zeros(num_games, bool),
    )


def searcher(params: Any, env_cfg: ms_env.EnvConfig, model_cfg: models.ModelConfig,
             sp_cfg: SelfPlayConfig) -> search.NetworkSearch:
    """The network with ``params`` (greedy, alone) searching its guesses as ``sp_cfg`` says."""
    agent = agent_lib.Agent(params=params, model_cfg=model_cfg, env_cfg=env_cfg)
    return search.network_search(
        agent, sp_cfg.simulations, sp_cfg.samples, sp_cfg.leaf, sp_cfg.endgame, sp_cfg.tolerance,
        sp_cfg.gumbel_scale, sp_cfg.value_scale, sp_cfg.exact_limits,
    )


def search_and_step(
    env_states: ms_env.EnvState, key: jax.Array, params: Any, env_cfg: ms_env.EnvConfig,
    model_cfg: models.ModelConfig, sp_cfg: SelfPlayConfig,
) -> tuple[ms_env.EnvState, jax.Array, SelfPlayStep]:
    """One move of every game, the search's (``search.search_policy``, a key per game), after
    the random first clicks; returns ``(next env_states, next key, SelfPlayStep)``."""
    env_states, key = batchplay.random_first_clicks(env_states, key, sp_cfg.random_first_click_share, env_cfg)
    key, search_key = jax.random.split(key)
    keys = jax.random.split(search_key, sp_cfg.num_envs)
    player = searcher(params, env_cfg, model_cfg, sp_cfg)
    moves = search.search_policy(player, env_states, keys)
    next_states, _, done, info = batchplay.step_games(env_states, moves.action, env_cfg)
    step = SelfPlayStep(
        obs=_observe_games(env_states, env_cfg),
        action_mask=_mask_games(env_states, env_cfg),
        action=moves.action,
        action_weights=moves.action_weights,
        searched=moves.searched,
        corrected=moves.action != moves.network_action,
        won=done & info["won"],
        done=done,
        mine_mask=env_states.mine_mask,
        mine_label_mask=~env_states.revealed & env_states.first_click_done[:, None, None],
    )
    return next_states, key, step


def play_with_search(
    state: SelfPlayState, env_cfg: ms_env.EnvConfig, model_cfg: models.ModelConfig, sp_cfg: SelfPlayConfig,
) -> tuple[ms_env.EnvState, jax.Array, SelfPlayStep]:
    """``steps_per_update`` moves of every game (``lax.scan`` of ``search_and_step``); returns
    the games after the rollout, the next key and the rollout, leaves ``[T, N, ...]``."""

    def one_move(carry, _):
        env_states, key, step = search_and_step(*carry, state.params, env_cfg, model_cfg, sp_cfg)
        return (env_states, key), step

    (env_states, key), rollout = jax.lax.scan(one_move, (state.env_states, state.key), None, sp_cfg.steps_per_update)
    return env_states, key, rollout


def rollout_metrics(rollout: SelfPlayStep) -> dict[str, jax.Array]:
    """Scalars of one update's rollout: episodes_finished, win_rate_train (games won /
    games finished; 0 when none finished), searched_fraction (the moves searched) and
    corrected_fraction (the moves not searched that are not the network's favourite)."""
    finished = jnp.sum(rollout.done, dtype=jnp.float32)
    return {
        "episodes_finished": finished,
        "win_rate_train": jnp.sum(rollout.won, dtype=jnp.float32) / jnp.maximum(finished, 1.0),
        "searched_fraction": jnp.mean(rollout.searched, dtype=jnp.float32),
        "corrected_fraction": jnp.mean(rollout.corrected & ~rollout.searched, dtype=jnp.float32),
    }


# ----------------------------------------------------------------------------- the chunk


def selfplay_chunk_fn(
    env_cfg: ms_env.EnvConfig, model_cfg: models.ModelConfig, sp_cfg: SelfPlayConfig, chunk_updates: int
) -> ChunkFn:
    """The (unjitted) ``SelfPlayState -> (SelfPlayState, metrics)`` of ``chunk_updates``
    updates; ``make_selfplay_chunk`` or ``distributed.jit_chunk`` compile it.

    ``metrics`` maps each name to float32[chunk_updates]: loss, policy_ce, move_ce,
    value_loss, mine_bce, policy_kl, search_changed (``selfplay_loss``, over the states
    learned from), grad_norm, lr, from the rollout episodes_finished, win_rate_train,
    searched_fraction and corrected_fraction, and with a buffer buffer_states (its filled
    slots after the update).
    """
    if not isinstance(chunk_updates, int) or chunk_updates < 1:
        raise ValueError(f"chunk_updates={chunk_updates!r} must be an int >= 1")
    searcher(None, env_cfg, model_cfg, sp_cfg)  # refuses a board mix or carried beliefs, before tracing
    apply_fn = models.make_model(model_cfg).apply
    optimizer = make_optimizer(sp_cfg)
    lr_schedule = make_lr_schedule(sp_cfg)

    def loss_fn(params, batch, totals):
        return selfplay_loss(params, apply_fn, batch, sp_cfg, totals)

    def selfplay_update(state: SelfPlayState, _):
        # PLAY WITH SEARCH
        env_states, key, rollout = play_with_search(state, env_cfg, model_cfg, sp_cfg)
        # TARGETS
        last_obs = _observe_games(env_states, env_cfg)
        _, last_value, _ = batchplay.forward_in_microbatches(apply_fn, state.params, last_obs, sp_cfg.microbatch_size)
        batch = jax.tree.map(flatten_games, search_targets(rollout, last_value))
        learned, buffer, buffer_metrics = batch, state.buffer, {}
        if buffer is not None:
            key, draw_key = jax.random.split(key)
            drawn = selfplay_buffer.draw(buffer, draw_key, sp_cfg.buffer_batch)
            learned = jax.tree.map(lambda *parts: jnp.concatenate(parts), batch, drawn)
            buffer = selfplay_buffer.add_states(buffer, batch, batch.searched)
            buffer_metrics = {"buffer_states": buffer.count}
        # UPDATE NETWORK
        params, opt_state, metrics = batchplay.gradient_step(
            loss_fn, selfplay_totals, state.params, state.opt_state, learned, optimizer, sp_cfg.microbatch_size
        )
        metrics = {**metrics, **rollout_metrics(rollout), **buffer_metrics, "lr": lr_schedule(state.update)}
        metrics = {name: jnp.asarray(value, jnp.float32) for name, value in metrics.items()}
        next_state = SelfPlayState(
            params=params, opt_state=opt_state, env_states=env_states, key=key, update=state.update + 1,
            buffer=buffer,
        )
        return next_state, metrics

    def selfplay_chunk(state: SelfPlayState) -> tuple[SelfPlayState, dict[str, jax.Array]]:
        chex.assert_shape(state.env_states.done, (sp_cfg.num_envs,))
        return jax.lax.scan(selfplay_update, state, None, chunk_updates)

    return selfplay_chunk


def make_selfplay_chunk(
    env_cfg: ms_env.EnvConfig, model_cfg: models.ModelConfig, sp_cfg: SelfPlayConfig, chunk_updates: int
) -> ChunkFn:
    """``selfplay_chunk_fn`` jitted for one device, its input state donated."""
    return distributed.jit_chunk(selfplay_chunk_fn(env_cfg, model_cfg, sp_cfg, chunk_updates))


# ----------------------------------------------------------------------------- the stage


def init_stage_state(key: jax.Array, cfg: Any, params: Any = None) -> SelfPlayState:
    """``init_selfplay_state`` for an experiment config: its game, network and ``selfplay``
    section."""
    return init_selfplay_state(key, cfg.env, cfg.model, cfg.selfplay, params=params)


def stage_chunk_fn(cfg: Any, chunk_updates: int) -> ChunkFn:
    """``selfplay_chunk_fn`` for an experiment config."""
    return selfplay_chunk_fn(cfg.env, cfg.model, cfg.selfplay, chunk_updates)


STAGE = StageSpec(
    name="selfplay",
    section="selfplay",
    init_state=init_stage_state,
    chunk_fn=stage_chunk_fn,
    reads=("env", "model", "selfplay"),
)
"""The self-play stage: after imitation and before PPO when ``selfplay.enabled``."""

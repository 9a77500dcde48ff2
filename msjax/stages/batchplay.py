"""What every training stage does when it plays a batch of games and learns from it.

The env step, the solver and random first clicks gate work on their whole batch (any
game finished, pending cascades), so they run per device (``distributed.per_device``:
each device on its own games when a chunk is compiled for a mesh). A board mix's traced
weights come per game (``per_game``) so that every argument of a per-device function is
split over the games. ``gradient_step`` is one optimizer step on a loss accumulated
over micro-batches, as both stages take it; ``forward_in_microbatches`` is the network's
forward pass over all the games in play, in the same micro-batches.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import optax

from msjax import distributed, losses, solver
from msjax import env as ms_env


def per_game(board_weights: jax.Array, num_games: int) -> jax.Array:
    """float[N, K]: a board mix's weights float[K], repeated for each of ``num_games``."""
    return jnp.broadcast_to(board_weights, (num_games,) + board_weights.shape)


def _step(env_cfg: ms_env.EnvConfig, env_states, actions):
    return ms_env.batch_step(env_states, actions, env_cfg)


def _step_mixed(env_cfg: ms_env.EnvConfig, env_states, actions, weights):
    return ms_env.batch_step(env_states, actions, env_cfg, weights[0])


def step_games(
    env_states: ms_env.EnvState, actions: jax.Array, env_cfg: ms_env.EnvConfig, board_weights: jax.Array | None = None
) -> tuple[ms_env.EnvState, jax.Array, jax.Array, dict[str, jax.Array]]:
    """``env.batch_step`` of ``N`` games, per device: ``(env_states, reward, done, info)``;
    finished games restart, on a board drawn by ``board_weights`` (float[K]) in a mix."""
    if board_weights is None:
        return distributed.per_device(functools.partial(_step, env_cfg))(env_states, actions)
    step = distributed.per_device(functools.partial(_step_mixed, env_cfg))
    return step(env_states, actions, per_game(board_weights, env_states.done.shape[0]))


def _solver_moves(env_cfg, solver_cfg, env_states, keys):
    return solver.batch_solver_action(env_states, keys, env_cfg, solver_cfg)


def solver_moves(
    env_states: ms_env.EnvState, keys: jax.Array, env_cfg: ms_env.EnvConfig, solver_cfg: solver.SolverConfig
) -> Any:
    """``solver.batch_solver_action`` of ``N`` games (``keys``: one per game), per device."""
    return distributed.per_device(functools.partial(_solver_moves, env_cfg, solver_cfg))(env_states, keys)


def _forced_moves(env_cfg, solver_cfg, env_states):
    return solver.batch_forced_moves(env_states, env_cfg, solver_cfg)


def forced_moves(env_states: ms_env.EnvState, env_cfg: ms_env.EnvConfig, solver_cfg: solver.SolverConfig) -> Any:
    """``solver.batch_forced_moves`` of ``N`` games, per device."""
    return distributed.per_device(functools.partial(_forced_moves, env_cfg, solver_cfg))(env_states)


def random_first_clicks(
    env_states: ms_env.EnvState, key: jax.Array, share: float, env_cfg: ms_env.EnvConfig,
    board_weights: jax.Array | None = None,
) -> tuple[ms_env.EnvState, jax.Array]:
    """``(env_states, next key)``: each game of ``env_states`` ``[N]`` waiting for its
    first reveal opened at a uniformly random cell with chance ``share``
    (``env.batch_random_first_clicks``, run per device).

    The training stages call it on their games before the player sees them (their
    ``random_first_click_share``), so a random first click is never a move of the
    player's own. ``share`` is a static Python float; with ``share == 0`` the games and
    ``key`` come back untouched (no key is drawn, so a run without it is unchanged).
    ``board_weights``: float[K] with a board mix, as in ``env.batch_step``.
    """
    if share == 0:
        return env_states, key
    key, click_key = jax.random.split(key)
    num_games = env_states.done.shape[0]
    keys = jax.random.split(click_key, num_games)
    if board_weights is None:
        open_games = lambda s, k: ms_env.batch_random_first_clicks(s, k, share, env_cfg)  # noqa: E731
        return distributed.per_device(open_games)(env_states, keys), key
    open_mixed = lambda s, k, w: ms_env.batch_random_first_clicks(s, k, share, env_cfg, w[0])  # noqa: E731
    return distributed.per_device(open_mixed)(env_states, keys, per_game(board_weights, num_games)), key


def gradient_step(
    loss_fn: Callable[[Any, Any, Any], tuple[jax.Array, dict[str, jax.Array]]],
    totals_fn: Callable[[Any], Any],
    params: Any,
    opt_state: Any,
    batch: Any,
    optimizer: optax.GradientTransformation,
    microbatch_size: int,
) -> tuple[Any, Any, dict[str, jax.Array]]:
    """One optimizer step on ``loss_fn(params, part, totals)`` over ``batch``, its gradient
    accumulated over micro-batches of ``microbatch_size`` (``losses.microbatched_value_and_grad``;
    0: all at once). Returns ``(params, opt_state, metrics)``: the loss's metrics plus
    ``loss`` and ``grad_norm``."""
    (loss, metrics), grads = losses.microbatched_value_and_grad(
        loss_fn, totals_fn, params, batch, microbatch_size, distributed.constrain_to_games
    )
    return apply_gradients(grads, params, opt_state, optimizer, loss, metrics)


def apply_gradients(
    grads: Any, params: Any, opt_state: Any, optimizer: optax.GradientTransformation, loss: jax.Array,
    metrics: dict[str, jax.Array],
) -> tuple[Any, Any, dict[str, jax.Array]]:
    """The optimizer's step on ``grads``: ``(params, opt_state, metrics)``, the loss's
    ``metrics`` plus ``loss`` and ``grad_norm``."""
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, {**metrics, "loss": loss, "grad_norm": optax.tree.norm(grads)}


def forward_in_microbatches(apply_fn: Callable[[Any, jax.Array], Any], params: Any, obs: jax.Array,
                            microbatch_size: int) -> Any:
    """``apply_fn(params, obs)`` (obs ``[N, ...]``; outputs leaves ``[N, ...]``), the games
    passing through the network ``microbatch_size`` at a time (``lax.map``): the same
    outputs, up to float rounding, with the activations of one micro-batch alive at once.

    ``microbatch_size``: 0 or ``N`` and more: one pass; otherwise a divisor of ``N``
    (``ValueError`` if not). Micro-batch ``k`` takes the games ``k, k+K, ...``
    (``losses.split_microbatches``), so each spans every device's games.
    """
    num_games = obs.shape[0]
    losses.check_microbatch_size("microbatch_size", microbatch_size, num_games, "the number of games")
    num_parts = losses.num_microbatches(num_games, microbatch_size)
    if num_parts == 1:
        return apply_fn(params, obs)
    parts = distributed.constrain_to_games(losses.split_microbatches(obs, num_parts))
    return losses.join_microbatches(jax.lax.map(lambda part: apply_fn(params, part), parts))

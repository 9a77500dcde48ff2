"""Batches of games: ``batch_reset``, ``batch_step`` (which restarts finished games) and
``batch_random_first_clicks`` (a training aid that opens a share of new games at a random cell).

Under ``vmap`` a ``lax.cond`` runs both branches for every game and a ``while_loop`` runs
until the slowest game converges. ``batch_step`` therefore gates the rare, costly work at
the level of the whole batch: mine placement and cascades run only on the games that
need them (``_map_pending``), and the reset of finished games only when one finished.
"""

from __future__ import annotations

import functools
from typing import Any

import chex
import jax
import jax.numpy as jnp

from msjax.env.boards import playable, playable_rows
from msjax.env.config import EnvConfig
from msjax.env.rules import (
    apply_action,
    cascade,
    decode_action,
    encode_action,
    needs_cascade,
    needs_mines,
    packed_click,
    packed_zeros,
    place_mines,
    reset,
)
from msjax.env.state import EnvState


@functools.partial(jax.jit, static_argnums=(1, 2))
def batch_reset(
    key: jax.Array, cfg: EnvConfig, num_envs: int, board_weights: jax.Array | None = None
) -> EnvState:
    """``num_envs`` fresh games, each with its own key: an ``EnvState`` with a batch axis.

    With ``cfg.boards`` each game's board is drawn by ``board_weights`` (float[K]; uniform
    when None)."""
    keys = jax.random.split(key, num_envs)
    return jax.vmap(reset, in_axes=(0, None, None))(keys, cfg, board_weights)


def _map_pending(fn, pending: jax.Array, inputs: Any, outputs: Any) -> Any:
    """``outputs`` with ``outputs[i] = fn(inputs[i])`` for every board ``i`` in ``pending``.

    In a given step only some boards of a batch click for the first time or open a zero
    region, and under ``vmap`` the rare, costly work (mine placement, a cascade that loops
    until its slowest board converges) would run on every board. Instead the pending
    boards are gathered into chunks of a quarter of the batch and ``fn`` (batched) runs on
    those alone: a loop that usually runs once or twice, and not at all when no board is
    pending.

    Args:
      fn: batched function of the gathered inputs, returning a pytree shaped like one
        chunk of ``outputs``.
      pending: bool[B].
      inputs, outputs: pytrees of arrays with leading axis B.
    """
    num_envs = pending.shape[0]
    chunk = max(1, -(-num_envs // 4))

    def run_chunk(carry):
        outputs, pending = carry
        (index,) = jnp.nonzero(pending, size=chunk, fill_value=num_envs)
        gathered = jax.tree.map(lambda x: x[jnp.minimum(index, num_envs - 1)], inputs)
        results = fn(*gathered)
        outputs = jax.tree.map(lambda x, y: x.at[index].set(y, mode="drop"), outputs, results)
        return outputs, pending.at[index].set(False, mode="drop")

    outputs, _ = jax.lax.while_loop(lambda carry: jnp.any(carry[1]), run_chunk, (outputs, pending))
    return outputs


def _auto_reset(state: EnvState, cfg: EnvConfig, board_weights: jax.Array | None) -> EnvState:
    # Placement already moved ``key`` on to a fresh stream, and a game that ended before
    # its first reveal drew nothing from its key, so the next game may start from it.
    fresh = reset(state.key, cfg, board_weights)
    return jax.tree.map(lambda new, old: jnp.where(state.done, new, old), fresh, state)


@functools.partial(jax.jit, static_argnums=(2,), static_argnames=("auto_reset",))
def batch_step(
    states: EnvState,
    actions: jax.Array,
    cfg: EnvConfig,
    board_weights: jax.Array | None = None,
    *,
    auto_reset: bool = True,
) -> tuple[EnvState, jax.Array, jax.Array, dict[str, jax.Array]]:
    """Steps a batch of games and starts a new game on every board that finished.

    Equal to ``jax.vmap(step)`` followed by a reset of finished boards, but mine placement
    and cascades run only on the boards that need them (``_map_pending``), and the reset
    only when some board finished. The returned states of finished boards are already
    fresh games; the finished games' outcome is in ``done`` and ``info``. With
    ``auto_reset=False`` (static) it is exactly ``jax.vmap(step)``: finished games are
    returned as they ended, for callers that restart games by rules of their own (the
    adapters in ``msjax.adapters`` report the final observation first).

    Args:
      states: ``EnvState`` with a leading batch axis ``[B]``.
      actions: int32[B], each in ``[0, 2*H*W)``; any other value is an invalid action.
      cfg: the static config.
      board_weights: float[K], with ``cfg.boards``: how the new games of finished boards
        pick their board (uniform when None). Traced: a curriculum changes them without
        recompiling.

    Returns:
      ``(states, reward: float32[B], done: bool[B], info)`` with ``info`` as in ``step``,
      each field ``[B]``.
    """
    chex.assert_shape(actions, states.done.shape)
    per_board = lambda fn: jax.vmap(fn, in_axes=(0, 0, None))  # noqa: E731
    cells = decode_action(jnp.asarray(actions, jnp.int32), cfg)[0]
    place = lambda s, c: jax.vmap(place_mines, in_axes=(0, 0, None))(s, c, cfg)  # noqa: E731
    states = _map_pending(place, per_board(needs_mines)(states, actions, cfg), (states, cells), states)

    click_rows = jax.vmap(packed_click, in_axes=(0, None))(actions, cfg)
    zero_rows = jax.vmap(packed_zeros, in_axes=(0, None))(states, cfg)
    fill = lambda z, c: jax.vmap(cascade, in_axes=(0, 0, None))(z, c, cfg)  # noqa: E731
    pending_fill = per_board(needs_cascade)(states, actions, cfg)
    opened_rows = _map_pending(fill, pending_fill, (zero_rows, click_rows), click_rows)
    if cfg.boards:
        opened_rows = opened_rows & jax.vmap(playable_rows, in_axes=(0, None))(states, cfg)

    apply = jax.vmap(apply_action, in_axes=(0, 0, 0, None))
    states, reward, done, info = apply(states, actions, opened_rows, cfg)
    if not auto_reset:
        return states, reward, done, info
    restart = jax.vmap(_auto_reset, in_axes=(0, None, None))
    states = jax.lax.cond(jnp.any(done), lambda s: restart(s, cfg, board_weights), lambda s: s, states)
    return states, reward, done, info


@functools.partial(jax.jit, static_argnums=(3,))
def batch_random_first_clicks(
    states: EnvState, keys: jax.Array, share: float, cfg: EnvConfig, board_weights: jax.Array | None = None
) -> EnvState:
    """``states`` with each game still waiting for its first reveal opened, with chance
    ``share``, at a uniformly random playable cell; every other game unchanged.

    A training aid (seed 000: "randomize first-click location uniformly"): called on the
    games before a player sees them, the player never sees the opened games' first move,
    so it is never trained on a move it did not choose. A game the random click ends
    (a win at once) is already a fresh game, as after ``batch_step``.

    Args:
      states: ``EnvState`` ``[B]``.
      keys: PRNG keys ``[B]``, one per game (per-game so that the function runs per device).
      share: chance in [0, 1] (traced or a Python float).
      cfg: the static config; board_weights: as in ``batch_step``.

    Returns:
      ``EnvState`` ``[B]``.
    """
    draw_key, cell_key = jax.vmap(lambda k: tuple(jax.random.split(k)), out_axes=(0, 0))(keys)
    opened = ~states.first_click_done & ~states.done
    opened = opened & (jax.vmap(jax.random.uniform)(draw_key) < share)
    cells = jax.vmap(playable, in_axes=(0, None))(states, cfg).reshape(opened.shape[0], -1)
    random_cell = jax.vmap(jax.random.categorical)(cell_key, jnp.where(cells, 0.0, -jnp.inf))
    harmless = jnp.int32(encode_action(0, True, cfg))  # a flag toggle places no mines; discarded below

    def open_games(states):
        actions = jnp.where(opened, random_cell.astype(jnp.int32), harmless)
        clicked = batch_step(states, actions, cfg, board_weights)[0]
        return select_games(opened, clicked, states)

    return jax.lax.cond(jnp.any(opened), open_games, lambda s: s, states)


def batch_random_reveals(key: jax.Array, reveal_mask: jax.Array, height: int, width: int) -> jax.Array:
    """int32[B]: one cell per board, uniform among its allowed reveals (a random
    player's moves, as ``benchmarks.env_throughput`` steps the env).

    Args:
      key: PRNG key.
      reveal_mask: bool[B, H*W], at least one allowed cell per board.
      height: the board's rows.
      width: the board's columns.

    Draws one random integer per board (not one per cell: threefry bits are dear on a CPU)
    and finds that allowed cell in two steps, row then column, because XLA lowers
    ``cumsum`` to a quadratic ``reduce_window``: two short prefix sums of length H and W
    cost far less than one of length H*W on the big boards.
    """
    batch = reveal_mask.shape[0]
    cells = reveal_mask.reshape(batch, height, width)
    per_row = jnp.sum(cells, axis=2, dtype=jnp.int32)
    rows_through = jnp.cumsum(per_row, axis=1, dtype=jnp.int32)
    draw = jax.random.randint(key, (batch,), 0, rows_through[:, -1])
    row = jnp.argmax(rows_through > draw[:, None], axis=1)
    in_row = row[:, None] == jnp.arange(height)
    rank_in_row = draw - jnp.sum(jnp.where(in_row, rows_through - per_row, 0), axis=1)
    row_cells = jnp.any(cells & in_row[:, :, None], axis=1)
    column = jnp.argmax(jnp.cumsum(row_cells, axis=1, dtype=jnp.int32) > rank_in_row[:, None], axis=1)
    return (row * width + column).astype(jnp.int32)


def select_games(flags: jax.Array, new: Any, old: Any) -> Any:
    """Per game, ``new`` where ``flags`` (bool[B], or bool[] for one game) holds, else
    ``old``: two pytrees of the same structure (``EnvState``), every leaf ``[B, ...]``."""
    take = lambda a, b: jnp.where(flags.reshape(flags.shape + (1,) * (b.ndim - flags.ndim)), a, b)  # noqa: E731
    return jax.tree.map(take, new, old)

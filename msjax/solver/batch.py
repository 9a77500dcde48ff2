"""The solver on a batch of games, fast: the games laid out cell-major (games on the
minor axis), layer 1 on every game, and the costly layers and the guess only on the games
that need them, gathered in fixed-size chunks. ``batch_solver_play`` also remembers what
it proved from one move to the next (``SolverMemory``).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from msjax.env import EnvConfig, EnvState
from msjax.solver.deduce import deduce_from, layer1_fixpoint
from msjax.solver.grid import any_cell, in_chunks, on_cells, player_view
from msjax.solver.policy import fallback_move, finish_move, safe_move, typed_key
from msjax.solver.types import Forced, Guess, SolverConfig, View


class SolverMemory(NamedTuple):
    """What the solver proved on each game of a batch, carried from move to move.

    A proved cell stays proved while its game lasts (the view only grows), so a game
    with a proved-safe cell left needs no deduction at all on its next move. Games that
    changed since the last move (another ``key``, nothing revealed, or finished) start
    from nothing, so the memory stays right when the env auto-resets a game or another
    player moves in between.

    Attributes:
      safe, mines: bool[B, H, W], proved cells (``Forced``'s fields).
      layer: int8[B, H, W], the layer that proved each.
      game: uint32[B, k], the key data of the game the memory belongs to.
    """

    safe: jax.Array
    mines: jax.Array
    layer: jax.Array
    game: jax.Array


def empty_memory(states: EnvState) -> SolverMemory:
    """A memory that knows nothing, for ``states`` with a leading batch axis ``[B]``."""
    empty = jnp.zeros_like(states.revealed)
    return SolverMemory(empty, empty, jnp.zeros(empty.shape, jnp.int8), jnp.zeros_like(_game_id(states)))


def _game_id(states: EnvState) -> jax.Array:
    """uint32[B, k]: the key data of each game's key (typed or legacy), its identity."""
    data = jax.random.key_data(states.key)
    return data.reshape(data.shape[0], -1)


def _remembered(memory: SolverMemory, view: View, same_game: jax.Array) -> Forced:
    """The memory's proofs, cell-major, on the games in ``same_game`` (bool[B]) alone."""
    same_game = on_cells(same_game)
    known = jax.tree.map(lambda x: jnp.moveaxis(x, 0, -1), (memory.safe, memory.mines, memory.layer))
    safe, mines = known[0] & same_game & ~view.revealed, known[1] & same_game
    return Forced(safe, mines, jnp.where(safe | mines, known[2], jnp.int8(0)))


def _deduce_in_chunks(view: View, forced: Forced, open_games, solver_cfg: SolverConfig, chunk_size: int) -> Forced:
    """Layers 2-3 on the open games (bool[B]) that layer 1 left without a proved-safe cell.

    Most games find a safe cell within two rounds of layers 2-3; the few that run on
    (towards a guess) continue in smaller chunks. The proof by contradiction is costly:
    it runs last, only on the games the other layers leave without a proved-safe cell
    (the same result as running it inside the rounds: it comes after layers 2 and 3 there
    too).
    """

    def deduce_chunk(args, max_rounds, cfg=dataclasses.replace(solver_cfg, contradiction_cells=0)):
        view, forced = args
        running = jnp.ones(view.mine_count.shape, bool)
        return deduce_from(view, forced, running, cfg, True, max_rounds)

    needs_more = open_games & ~any_cell(forced.safe)
    forced, unfinished = in_chunks(
        needs_more, chunk_size, functools.partial(deduce_chunk, max_rounds=2),
        (view, forced), (forced, jnp.zeros_like(needs_more)),
    )
    forced, _ = in_chunks(
        unfinished & ~any_cell(forced.safe), max(1, chunk_size // 4),
        functools.partial(deduce_chunk, max_rounds=0), (view, forced), (forced, unfinished),
    )
    if solver_cfg.max_layer >= 3 and solver_cfg.contradiction_cells:
        forced, _ = in_chunks(
            open_games & ~any_cell(forced.safe), max(1, chunk_size // 8),
            functools.partial(deduce_chunk, max_rounds=0, cfg=solver_cfg),
            (view, forced), (forced, unfinished),
        )
    return forced


def _move_in_chunks(view, forced, flags, keys, open_games, cfg: EnvConfig, solver_cfg: SolverConfig, chunk_size: int,
                    guess: Guess | None = None):
    """(action, layer) int32[B] and ``forced``: a proved-safe cell where there is one,
    else the fallback move (an exact-proved cell, a flag or ``guess``'s guess), computed
    only on the open games that need it; ``forced`` gains what the exact analysis proved
    there."""
    cell, layer, found = safe_move(view, forced)

    def guess_chunk(args):
        view, forced, flags, keys = args
        return fallback_move(view, forced, flags, keys, cfg, solver_cfg, guess)

    needs_guess = open_games & ~found
    return in_chunks(
        needs_guess, max(1, chunk_size // 4), guess_chunk, (view, forced, flags, keys), (cell, layer, forced)
    )


@functools.partial(jax.jit, static_argnums=(3, 4, 5))
def batch_solver_play(
    states: EnvState,
    keys: jax.Array,
    memory: SolverMemory,
    cfg: EnvConfig,
    solver_cfg: SolverConfig = SolverConfig(),
    chunk_size: int = 0,
    guess: Guess | None = None,
) -> tuple[jax.Array, jax.Array, SolverMemory]:
    """``batch_solver_action`` that remembers its proofs between moves: the fast way to
    play whole games (``SolverMemory``; start from ``empty_memory(states)``).

    A game still holding a proved-safe cell from an earlier move plays it without any
    deduction; the others go through the layers, starting from the proved mines. The
    moves are legal and sound like ``solver_action``'s, though which safe cell comes
    first may differ. Deductions are sound whatever the memory holds of the current
    game, so the win rate is the same.

    Args:
      states: ``EnvState`` with a leading batch axis ``[B]``.
      keys: ``[B]`` PRNG keys, typed (``jax.random.key``) or legacy (``uint32[B, 2]``).
      memory: the ``SolverMemory`` returned by the previous move, or ``empty_memory(states)``.
      cfg: the static game config.
      solver_cfg: the static solver config.
      chunk_size: static (0: an eighth of the batch, at least 64).
      guess: how it guesses on exact probabilities (a ``Guess`` pytree, traced: e.g.
        ``msjax.search.SearchGuess``); None: the rule solver's own guess.

    Returns:
      ``(actions int32[B], layers int32[B], memory)``.
    """
    keys = typed_key(keys)
    num_games = states.done.shape[0]
    chunk_size = chunk_size or max(64, num_games // 8)
    view = player_view(states, batched=True)
    flags = jnp.moveaxis(states.flags, 0, -1)
    opening = ~any_cell(view.revealed)
    open_games = ~states.done & ~opening
    game = _game_id(states)
    forced = _remembered(memory, view, open_games & jnp.all(game == memory.game, axis=1))
    forced = layer1_fixpoint(view, forced, open_games, stop_at_safe=True)
    if solver_cfg.max_layer >= 2:
        forced = _deduce_in_chunks(view, forced, open_games, solver_cfg, chunk_size)
    action, layer, forced = _move_in_chunks(view, forced, flags, keys, open_games, cfg, solver_cfg, chunk_size, guess)
    action, layer = finish_move(action, layer, view, states.done, cfg, solver_cfg)
    memory = SolverMemory(*(jnp.moveaxis(x, -1, 0) for x in forced), game)
    return action, layer, memory


@functools.partial(jax.jit, static_argnums=(2, 3, 4))
def batch_solver_action(
    states: EnvState,
    keys: jax.Array,
    cfg: EnvConfig,
    solver_cfg: SolverConfig = SolverConfig(),
    chunk_size: int = 0,
    guess: Guess | None = None,
) -> tuple[jax.Array, jax.Array]:
    """``jax.vmap(solver_action)`` (same results), several times faster on large batches.

    Games are laid out cell-major; layer 1 runs on every game; only the games it leaves
    without a proved-safe cell go on, gathered ``chunk_size`` at a time (default: an
    eighth of the batch, at least 64), to layers 2-3, and only those still without one to
    the layer-4 guess (chunks a quarter of that size). ``batch_solver_play`` is the same
    with a memory of earlier proofs (faster over whole games).

    Args:
      states: ``EnvState`` with a leading batch axis ``[B]``.
      keys: ``[B]`` PRNG keys, typed (``jax.random.key``) or legacy (``uint32[B, 2]``).
      cfg: the static game config.
      solver_cfg: the static solver config.
      chunk_size: static.
      guess: as ``batch_solver_play``'s.

    Returns:
      ``(actions int32[B], layers int32[B])``.
    """
    actions, layers, _ = batch_solver_play(states, keys, empty_memory(states), cfg, solver_cfg, chunk_size, guess)
    return actions, layers

"""The solver's move on one game: the opening click, a proved-safe reveal, a flag on a
proved mine (with ``flag_mines``), else the layer-4 guess.

The guess is the unknown cell with the lowest estimated mine probability; near-ties
(within ``tie_tolerance``) go to the cell most likely to be a zero, which opens new
information; with ``frontier_risk_limit`` below 1, a frontier too risky sends the guess
off the frontier (seed 001's fallback). With exact probabilities a search may choose the
guess instead: the ``guess`` argument (a ``Guess``: ``msjax.search`` builds them), asked
what the rule solver knows (``GuessSituation``). Before anything is revealed the move is ``first_click``: by default (3, 3)
(clipped to the board) when the first click opens a region
(``guarantee_safe_neighborhood``) and the corner (0, 0) when only the clicked cell is
safe, as the published solvers do.

The functions below ``solver_action`` work cell-major on one game or a batch (``[*b]``
trailing axes), so ``msjax.solver.batch`` reuses them on whole batches.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from msjax import env
from msjax.env import EnvConfig, EnvState
from msjax.solver.beliefs import belief_propagation
from msjax.solver.deduce import deduce, with_exact_proofs
from msjax.solver.grid import any_cell, at_cell, best_cell, flat_cells, neighbours, on_cells, player_view
from msjax.solver.layers import constraints_of
from msjax.solver.types import (
    EXACT_TIES, GUESS_LAYER, NO_LAYER, Constraints, Forced, Guess, GuessSituation, SolverConfig, View,
)


def typed_key(key: jax.Array) -> jax.Array:
    """``key`` as a typed PRNG key array (``jax.random.key``), any batch shape.

    Legacy keys (``jax.random.PRNGKey``: uint32[..., 2]) are wrapped, typed keys pass
    unchanged; the same seed gives the same draws either way.
    """
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return key
    return jax.random.wrap_key_data(key)


def first_click(cfg: EnvConfig, solver_cfg: SolverConfig = SolverConfig()) -> tuple[int, int]:
    """The opening click ``(row, col)``: ``solver_cfg.first_click`` clipped to the board,
    else (3, 3) with a safe first-click neighbourhood and (0, 0) without."""
    if solver_cfg.first_click is not None:
        row, col = solver_cfg.first_click
    elif cfg.guarantee_safe_neighborhood:
        row, col = 3, 3
    else:
        row, col = 0, 0
    return min(row, cfg.H - 1), min(col, cfg.W - 1)


def reveal_action(row: int, col: int, cfg: EnvConfig) -> int:
    """The action (a Python int) that reveals cell ``(row, col)``.

    Raises:
      ValueError: the cell is off the board.
    """
    return env.encode_action(int(np.ravel_multi_index((row, col), (cfg.H, cfg.W))), False, cfg)


def _zero_chance(probability: jax.Array, c: Constraints, mines: jax.Array) -> jax.Array:
    """float32[H, W, *b]: chance that a cell is a zero if safe, treating its neighbours as
    independent; 0 next to a proved mine."""
    log_safe = jnp.where(c.unknown, jnp.log1p(-jnp.clip(probability, 0.0, 1 - 1e-6)), 0.0)
    return jnp.where(neighbours(mines) > 0, 0.0, jnp.exp(neighbours(log_safe)))


def _noise(keys: jax.Array, shape: tuple[int, int]) -> jax.Array:
    """float32[H, W, *b] uniform tie-break noise, one draw per game's key (typed keys: [*b])."""
    draw = lambda key: jax.random.uniform(key, shape)
    for _ in range(keys.ndim):
        draw = jax.vmap(draw)
    noise = draw(keys)
    return jnp.moveaxis(noise, (-2, -1), (0, 1))


def layer4_probabilities(view: View, forced: Forced, solver_cfg: SolverConfig):
    """``(probability float32[H, W, *b], forced, exact)``: layer 4's mine probabilities of
    the unknown cells, ``forced`` with the exact analysis' proofs added, and the analysis
    (``(exact bool[*b], log_layouts float32[*b])``, None without
    ``probabilities="exact"``). Belief propagation runs only where a view is past the
    exact analysis' limits (when some game of the batch is)."""
    c = constraints_of(view, forced.safe, forced.mines)
    if solver_cfg.probabilities != "exact":
        return belief_propagation(c, solver_cfg), forced, None
    forced, exact_probability, exact, log_layouts = with_exact_proofs(view, forced, solver_cfg)
    estimate = jax.lax.cond(
        jnp.all(exact), lambda: jnp.zeros(c.unknown.shape), lambda: belief_propagation(c, solver_cfg)
    )
    return jnp.where(on_cells(exact), exact_probability, estimate), forced, (exact, log_layouts)


def _guess(view: View, forced: Forced, keys: jax.Array, solver_cfg: SolverConfig, guess: Guess | None = None):
    """(cell int32[*b], layer int32[*b], forced): the layer-4 guess, or below layer 4 a
    uniform one among the unknown cells (layer 0). With exact probabilities, a cell their
    analysis proves safe comes first (layer 3), ``forced`` gains its proofs, and ``guess``
    (a ``Guess``; None: the rule solver's own) chooses among the unknown cells."""
    noise = _noise(keys, view.revealed.shape[:2])
    if solver_cfg.max_layer < GUESS_LAYER:
        c = constraints_of(view, forced.safe, forced.mines)
        return best_cell(_candidates(view, c), noise), jnp.full(keys.shape, NO_LAYER, jnp.int32), forced
    probability, forced, analysis = layer4_probabilities(view, forced, solver_cfg)
    c = constraints_of(view, forced.safe, forced.mines)
    candidates = _candidates(view, c)
    ties = solver_cfg.tie_tolerance if solver_cfg.probabilities != "exact" else max(solver_cfg.tie_tolerance, EXACT_TIES)
    lowest = jnp.min(flat_cells(jnp.where(c.unknown, probability, jnp.inf)), axis=0)
    good = candidates & (
        (probability <= on_cells(lowest) + ties)
        | (probability <= solver_cfg.safety_threshold)
    )
    good = jnp.where(on_cells(any_cell(good)), good, candidates)
    if solver_cfg.frontier_risk_limit < 1.0:
        good = _off_frontier_if_risky(good, probability, c, solver_cfg.frontier_risk_limit)
    if solver_cfg.use_information_gain:
        score = _zero_chance(probability, c, forced.mines) - probability + 1e-4 * noise
    else:
        score = noise
    cell, layer = best_cell(good, score), jnp.full(keys.shape, GUESS_LAYER, jnp.int32)
    safe_cell, safe_layer, found = safe_move(view, forced)
    if analysis is not None and guess is not None:
        exact, log_layouts = analysis
        situation = GuessSituation(view, probability, c.unknown, candidates, good, lowest, cell, exact, log_layouts,
                                   exact & ~found, keys)
        cell = guess(situation, solver_cfg)
    return jnp.where(found, safe_cell, cell), jnp.where(found, safe_layer, layer), forced


def _candidates(view: View, c: Constraints) -> jax.Array:
    """bool[H, W, *b]: the unknown cells, or any hidden cell where every hidden cell is a
    proved mine (which happens only in a won game)."""
    return jnp.where(on_cells(any_cell(c.unknown)), c.unknown, ~view.revealed)


def _off_frontier_if_risky(good, probability, c: Constraints, limit: float) -> jax.Array:
    """bool[H, W, *b]: ``good`` or, in games whose safest frontier cell's probability is
    above ``limit`` and that have unknown cells off the frontier, those cells."""
    frontier = c.unknown & (neighbours(c.active) > 0)
    off_frontier = c.unknown & ~frontier
    safest_frontier = jnp.min(flat_cells(jnp.where(frontier, probability, jnp.inf)), axis=0)
    explore = (safest_frontier > limit) & any_cell(off_frontier)
    return jnp.where(on_cells(explore), off_frontier, good)


def safe_move(view: View, forced: Forced):
    """(cell, layer, found) [*b]: a proved-safe cell, preferring one with no proved mine
    next to it (it may be a zero and open a region)."""
    safe = forced.safe & ~view.revealed
    cell = best_cell(safe, -neighbours(forced.mines).astype(jnp.float32))
    return cell, at_cell(forced.layer, cell).astype(jnp.int32), any_cell(safe)


def fallback_move(view, forced, flags, keys, cfg: EnvConfig, solver_cfg: SolverConfig, guess: Guess | None = None):
    """(action, layer) [*b] and ``forced`` when no cell is proved safe: with exact
    probabilities a cell they prove safe; else a flag on a proved mine (with
    ``flag_mines``), else a guess (``guess``'s, a ``Guess``, where given). ``flags``:
    bool[H, W, *b]; ``keys``: typed keys [*b]. ``forced`` gains the exact analysis'
    proofs, if it ran."""
    cell, layer, forced = _guess(view, forced, keys, solver_cfg, guess)
    if not solver_cfg.flag_mines:
        return cell, layer, forced
    to_flag = forced.mines & ~flags & ~view.revealed
    flag_cell = best_cell(to_flag, jnp.zeros(to_flag.shape))
    has_flag = any_cell(to_flag)
    has_flag = has_flag & ((layer == GUESS_LAYER) | (layer == NO_LAYER))  # exact-proved safe cells first
    action = jnp.where(has_flag, env.encode_action(flag_cell, True, cfg), cell)
    layer = jnp.where(has_flag, at_cell(forced.layer, flag_cell).astype(jnp.int32), layer)
    return action, layer, forced


def finish_move(action, layer, view: View, done, cfg: EnvConfig, solver_cfg: SolverConfig):
    """(action, layer) int32[*b]: the opening click before anything is revealed; action 0,
    layer 0 on finished games (``done``: bool[*b]); else ``action`` and ``layer``."""
    opening = ~any_cell(view.revealed)
    action = jnp.where(opening, jnp.int32(reveal_action(*first_click(cfg, solver_cfg), cfg)), action)
    layer = jnp.where(opening | done, jnp.int32(NO_LAYER), layer)
    return jnp.where(done, jnp.int32(0), action).astype(jnp.int32), layer.astype(jnp.int32)


def solver_action(
    state: EnvState, key: jax.Array, cfg: EnvConfig, solver_cfg: SolverConfig = SolverConfig(),
    guess: Guess | None = None,
) -> tuple[jax.Array, jax.Array]:
    """The solver's move on one game: always a legal action of an unfinished game.

    In order: the opening click (before anything is revealed); a reveal of a proved-safe
    cell; with ``flag_mines``, a flag on a proved mine not yet flagged; else a guess.

    Args:
      state: one game (no batch axis; ``batch_solver_action`` is the fast batched form).
      key: PRNG key for tie-breaks among guesses, typed (``jax.random.key``) or legacy
        (``jax.random.PRNGKey``; the same moves for the same seed).
      cfg: the static game config.
      solver_cfg: the static solver config.
      guess: how it guesses on exact probabilities (a ``Guess``, e.g.
        ``msjax.search.SearchGuess``); None: the rule solver's own guess.

    Returns:
      ``(action int32[], layer int32[])``: ``layer`` is the layer that proved the revealed
      or flagged cell (1..3), 4 for a layer-4 guess, and 0 for the opening click, a random
      guess (``max_layer < 4``) or a finished game (whose action is 0 and means nothing).
    """
    key = typed_key(key)
    view = player_view(state)
    forced = deduce(view, solver_cfg, stop_at_safe=True)
    cell, layer, found = safe_move(view, forced)
    action, layer = jax.lax.cond(
        found,
        lambda: (cell, layer),
        lambda: fallback_move(view, forced, state.flags, key, cfg, solver_cfg, guess)[:2],
    )
    return finish_move(action, layer, view, state.done, cfg, solver_cfg)

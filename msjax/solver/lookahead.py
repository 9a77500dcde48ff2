"""The exact one-move lookahead of the guess, on the device: for a few of the safest cells,
what revealing each would show and whether anything is then certainly safe.

For a candidate cell ``c`` and each number ``v`` it could show, the view with ``c``
revealed as ``v`` is analysed exactly (``msjax.solver.exact``): its layout count over the
view's is ``P(c safe and shows v)``, and "some hidden cell is then proved safe" is
*progress*. ``P(progress)`` sums the first over the numbers with progress; ``P(zero)`` is
the ``v = 0`` term. This is ``msjax.exact.lookahead``'s tie-break, computed for a batch of
views in one call of ``candidates x 9`` analyses per view: the safest cells (all within
float32 rounding of the lowest mine probability) are ranked by ``P(progress)``, then
``P(zero)``, then fewer hidden neighbours, then row-major order, as ``msjax.exact``'s player
ranks them. Candidates are the first ``K`` safest cells in (hidden neighbours, row-major)
order, counting cells whose whole neighbourhood is off the frontier once per neighbourhood
size (they are interchangeable). A candidate whose analyses leave the exact analysis'
limits scores no progress (as in ``msjax.exact``).

**Survival** (``survival=True``, ``SolverConfig.lookahead_score="survival"``): a look past the
next guess. The candidates widen to every cell nearly as safe as the safest (``good``:
``SolverConfig.lookahead_tolerance``), ranked by mine probability, and each is scored by
the chance of surviving this guess *and* the next one:
``sum_v P(c safe and shows v) * S(v)``, where ``S(v)`` is the safety of the best cell of the
view after ``c`` shows ``v`` (1 where a cell is then certainly safe or the game is won; the
same analyses as the progress score, so no extra cost). It is David Hill's "secondary
safety" taken exactly, and the one-move form of minesolve's depth-k expectimax. The best
score wins; near-equal scores (within ``TIES``) fall back to P(progress), then P(zero). A
candidate with a flagged analysis scores its own safety times the view's best safety.
No tree-search library: a fixed one-step expectimax over exact chance nodes needs none
(``mctx``'s stochastic MuZero policy would sample the chance nodes that are exact here).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from msjax.solver.exact import exact_analysis
from msjax.solver.grid import in_chunks, neighbours
from msjax.solver.types import EXACT_TIES, ExactLimits

NUMBERS = 9  # a revealed cell shows 0..8
# Chances this close count as equal: they are exp(float32 log counts), and on 16x30x99 the
# counts are ~e^220, whose float32 logs carry ~1e-5 of rounding (1e-5 here broke exact ties
# by noise in 8% of the exact player's expert guesses; 1e-4 leaves 0.7%).
TIES = 1e-4


def candidate_cells(
    revealed: jax.Array, good: jax.Array, count: int, priority: jax.Array | None = None
) -> tuple[jax.Array, jax.Array]:
    """(cells int32[B, K], valid bool[B, K]): the first ``count`` cells of ``good``
    (bool[B, H, W]) by (``priority``, hidden neighbours, row-major), interchangeable isolated
    cells once. ``priority``: float[B, H, W], lower first (None: all equal)."""
    num_boards, height, width = revealed.shape
    hidden = ~revealed
    on_cells = lambda f, x: jax.vmap(f)(x)
    hidden_around = on_cells(neighbours, hidden)
    frontier = hidden & (on_cells(neighbours, revealed) > 0)
    isolated = hidden & ~frontier & (on_cells(neighbours, frontier) == 0)
    board_around = on_cells(neighbours, jnp.ones_like(revealed))  # 3, 5 or 8 by position
    index = jnp.arange(height * width).reshape(height, width)
    keep = good & ~isolated
    for size in (3, 5, 8):  # one isolated cell per neighbourhood size: the lowest index
        same = (good & isolated & (board_around == size)).reshape(num_boards, -1)
        first = jnp.argmax(same, axis=1)
        keep = keep | ((index[None] == first[:, None, None]) & jnp.any(same, axis=1)[:, None, None])
    rank = jnp.where(keep, hidden_around * (height * width) + index[None], 10 * height * width)
    if priority is None:  # one sort operand: XLA's CPU sort is several times faster on one
        order = jnp.argsort(rank.reshape(num_boards, -1), axis=1)[:, :count]
    else:
        first = jnp.where(keep, priority, jnp.inf).reshape(num_boards, -1)
        order = jnp.lexsort((rank.reshape(num_boards, -1), first), axis=1)[:, :count]
    valid = jnp.take_along_axis(keep.reshape(num_boards, -1), order, axis=1)
    return order.astype(jnp.int32), valid


class NumberOutcomes(NamedTuple):
    """What revealing each of ``K`` cells of a view can show, exactly: for every number
    ``v``, the view with the cell showing ``v`` is analysed (``exact_analysis``).

    Attributes:
      chance: float32[B, K, 9], P(the cell is safe and shows v) (0 where not analysed).
      known: bool[B, K], every number's view was analysed exactly or is inconsistent (a
        flagged view leaves ``chance`` incomplete).
      progress: bool[B, K, 9], some hidden cell is certainly safe after showing v.
      next_safety: float32[B, K, 9], the best chance of a safe cell after showing v (1
        with a certainly safe cell, or where the reveal wins the game).
    """

    chance: jax.Array
    known: jax.Array
    progress: jax.Array
    next_safety: jax.Array


def number_outcomes(
    revealed: jax.Array, counts: jax.Array, mine_count: jax.Array, log_layouts: jax.Array,
    cells: jax.Array, need: jax.Array, limits: ExactLimits,
) -> NumberOutcomes:
    """``NumberOutcomes`` of revealing ``cells`` (int32[B, K]) in the views (``revealed``
    bool[B, H, W], ``counts`` int[B, H, W], ``mine_count`` int[B], ``log_layouts``
    float32[B] from their analysis); only where ``need`` (bool[B, K]) holds, and for the
    numbers up to the cell's hidden neighbours, does an analysis run (``K x 9`` at most per
    view, gathered in chunks)."""
    num_boards, height, width = revealed.shape
    count = cells.shape[1]
    flat = lambda x: x.reshape(num_boards, 1, 1, height * width)
    at = jax.nn.one_hot(cells, height * width, dtype=bool)[:, :, None, :]  # [B, K, 1, HW]
    shown = jnp.arange(NUMBERS)[None, None, :, None]
    hidden_around = jnp.take_along_axis(
        jax.vmap(neighbours)(~revealed).reshape(num_boards, -1), cells, axis=1
    )  # [B, K]
    need = need[:, :, None] & (jnp.arange(NUMBERS) <= hidden_around[:, :, None])
    views = (
        jnp.broadcast_to(flat(revealed) | at, (num_boards, count, NUMBERS, height * width)),
        jnp.broadcast_to(jnp.where(at, shown, flat(counts)), (num_boards, count, NUMBERS, height * width)),
        jnp.broadcast_to(mine_count[:, None, None], (num_boards, count, NUMBERS)),
    )
    pairs = num_boards * count * NUMBERS
    views = jax.tree.map(lambda x: x.reshape((pairs,) + x.shape[3:]), views)

    def analyse(v):
        revealed_v = v[0].reshape(-1, height, width)
        a = exact_analysis(revealed_v, v[1].reshape(-1, height, width), v[2], limits)
        lowest_v = jnp.min(jnp.where(revealed_v, 1.0, a.mine_prob), axis=(1, 2))  # 0 with a safe cell
        return a.log_layouts, a.exact, a.inconsistent, jnp.any(a.safe, axis=(1, 2)), 1.0 - lowest_v

    nothing = (jnp.full(pairs, -jnp.inf), jnp.zeros(pairs, bool), jnp.ones(pairs, bool), jnp.zeros(pairs, bool),
               jnp.zeros(pairs))
    results = in_chunks(need.reshape(-1), max(1, pairs // 8), analyse, views, nothing, axis=0)
    per_number = lambda x: x.reshape(num_boards, count, NUMBERS)
    log_ways, exact, inconsistent, progress, next_safety = (per_number(x) for x in results)
    won_next = jnp.sum(~revealed, axis=(1, 2)) - 1 == mine_count  # the reveal wins the game
    return NumberOutcomes(
        chance=jnp.where(exact, jnp.exp(log_ways - log_layouts[:, None, None]), 0.0),
        known=jnp.all(exact | inconsistent, axis=2),
        progress=progress,
        next_safety=jnp.where(won_next[:, None, None], 1.0, next_safety),
    )


def lookahead_choice(
    revealed: jax.Array, counts: jax.Array, mine_count: jax.Array, log_layouts: jax.Array,
    good: jax.Array, count: int, limits: ExactLimits, mine_prob: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The guess among ``good`` cells by the exact lookahead (module docstring).

    Args:
      revealed: bool[B, H, W]; counts: int[B, H, W]; mine_count: int[B]: the views.
      log_layouts: float32[B], their layout counts (``exact_analysis``).
      good: bool[B, H, W], the equally safe cells to choose among (a view with none gets
        an arbitrary cell and costs nothing).
      count: K, static: candidates per view; limits: the exact analysis' sizes.
      mine_prob: float32[B, H, W], the views' exact mine probabilities: given, the score
        is survival (module docstring) and ``good`` may hold cells less safe than the
        safest; None: ``good`` are equally safe and the score is P(progress).

    Returns:
      ``(cell int32[B], progress float32[B], zero float32[B])``: the chosen cell (row-major)
      and its ``P(progress)``, ``P(zero)`` (both 0 where the view has one candidate: no
      analysis runs there).
    """
    num_boards, height, width = revealed.shape
    survival = mine_prob is not None
    priority = None
    if survival:
        lowest = jnp.min(jnp.where(revealed, jnp.inf, mine_prob).reshape(num_boards, -1), axis=1)
        priority = jnp.where(mine_prob <= lowest[:, None, None] + EXACT_TIES, 0.0, mine_prob)
    cells, valid = candidate_cells(revealed, good, count, priority)
    choose = jnp.sum(valid, axis=1) > 1
    outcomes = number_outcomes(revealed, counts, mine_count, log_layouts, cells, valid & choose[:, None], limits)
    chance, known = outcomes.chance, outcomes.known & valid
    progress = jnp.where(known, jnp.sum(jnp.where(outcomes.progress, chance, 0.0), axis=2), 0.0)
    zero = jnp.where(known, chance[:, :, 0], 0.0)
    best = valid
    if survival:
        safe_now = 1.0 - jnp.take_along_axis(mine_prob.reshape(num_boards, -1), cells, axis=1)
        unknown_score = safe_now * (1.0 - lowest[:, None])
        score = jnp.where(known, jnp.sum(chance * outcomes.next_safety, axis=2), unknown_score)
        best = best & (score >= jnp.max(jnp.where(valid, score, -1.0), axis=1, keepdims=True) - TIES)
    best = best & (progress >= jnp.max(jnp.where(best, progress, -1.0), axis=1, keepdims=True) - TIES)
    best = best & (zero >= jnp.max(jnp.where(best, zero, -1.0), axis=1, keepdims=True) - TIES)
    pick = jnp.argmax(best, axis=1)  # candidates are in (hidden neighbours, row-major) order
    take = lambda x: jnp.take_along_axis(x, pick[:, None], axis=1)[:, 0]
    return take(cells), take(progress), take(zero)

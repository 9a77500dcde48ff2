"""The exact one-move lookahead of the guess, on the device: for a few of the safest cells,
what revealing each would show and whether anything is then certainly safe.

For a candidate cell ``c`` and each number ``v`` it could show, the view with ``c``
revealed as ``v`` is analysed exactly (``msjax.solver.exact``): its layout count over the
view's is ``P(c safe and shows v)``, and "some hidden cell is then proved safe" is
*progress*. ``P(progress)`` sums the first over the numbers with progress; ``P(zero)`` is
the ``v = 0`` term. This is ``msjax.reference.lookahead``'s tie-break, computed for a batch of
views in one call of ``candidates x 9`` analyses per view: the safest cells (all within
float32 rounding of the lowest mine probability) are ranked by ``P(progress)``, then
``P(zero)``, then fewer hidden neighbours, then row-major order, as the reference player
ranks them. Candidates are the first ``K`` safest cells in (hidden neighbours, row-major)
order, counting cells whose whole neighbourhood is off the frontier once per neighbourhood
size (they are interchangeable). A candidate whose analyses leave the exact analysis'
limits scores no progress (as in ``msjax.reference.lookahead``).

**Survival** (``survival=True``, ``SearchConfig.lookahead_score="survival"``): a look past the
next guess. The candidates widen to every cell nearly as safe as the safest (``good``:
``SearchConfig.lookahead_tolerance``), ranked by mine probability, and each is scored by
the chance of surviving this guess *and* the next one:
``sum_v P(c safe and shows v) * S(v)``, where ``S(v)`` is the safety of the best cell of the
view after ``c`` shows ``v`` (1 where a cell is then certainly safe or the game is won; the
same analyses as the progress score, so no extra cost; the chances, ratios of layout
counts, are scaled to add up to the cell's safety, which their sum is in exact arithmetic,
so a score never exceeds the safety it starts from). It is David Hill's "secondary
safety" taken exactly, and the one-move form of minesolve's depth-k expectimax. The best
score wins; near-equal scores (within ``TIES``) fall back to P(progress), then P(zero). A
candidate with a flagged analysis scores its own safety times the view's best safety.

**Depth 2** (``depth=2``, ``SearchConfig.lookahead_depth``): a view after the click that
has neither a certainly safe cell nor a won game is worth its own best survival score
instead of its best safety: its candidates (its cells at least ``1 - tolerance`` as safe as
its safest, as many as at the root) are analysed the same way (``survival_scores`` calls
itself on the ``B K 9`` views after). The chance to survive this guess and two more,
exactly, at about ``9 K`` times the analyses of depth 1 (only on the views that need
them). ``expand`` (``SearchConfig.lookahead_expand``) cuts that to ``9 expand`` times: only
the ``expand`` candidates of highest depth-1 score look the second guess further, and the
others are not chosen (their survival score is -1). ``lookahead_scores`` gives every
candidate's scores (the inspector's overlay).
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
# by noise in 8% of the reference player's expert guesses; 1e-4 leaves 0.7%).
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
      exact: bool[B, K, 9], the view after showing v was analysed exactly.
      next_log_layouts: float32[B, K, 9], the log layout count of the view after (-inf
        where not analysed).
      next_mine_prob: float32[B, K, 9, H, W], the mine probabilities of the views after
        (only with ``children=True``, else None).
    """

    chance: jax.Array
    known: jax.Array
    progress: jax.Array
    next_safety: jax.Array
    exact: jax.Array
    next_log_layouts: jax.Array
    next_mine_prob: jax.Array | None = None


def child_views(revealed: jax.Array, counts: jax.Array, cells: jax.Array, index: jax.Array):
    """``(revealed bool[N, H, W], counts int32[N, H, W], board int32[N])``: the views after
    revealing ``cells[b, k]`` (int32[B, K]) as the number ``v``, for flat indices
    ``index`` (int32[N]) = ``(b * K + k) * 9 + v``."""
    height, width = revealed.shape[1:]
    board, rest = jnp.divmod(index, cells.shape[1] * NUMBERS)
    candidate, shown = jnp.divmod(rest, NUMBERS)
    at = jax.nn.one_hot(cells[board, candidate], height * width, dtype=bool).reshape(-1, height, width)
    return revealed[board] | at, jnp.where(at, shown[:, None, None], counts[board]).astype(jnp.int32), board


def number_outcomes(
    revealed: jax.Array, counts: jax.Array, mine_count: jax.Array, log_layouts: jax.Array,
    cells: jax.Array, need: jax.Array, limits: ExactLimits, chunk: int | None = None, children: bool = False,
) -> NumberOutcomes:
    """``NumberOutcomes`` of revealing ``cells`` (int32[B, K]) in the views (``revealed``
    bool[B, H, W], ``counts`` int[B, H, W], ``mine_count`` int[B], ``log_layouts``
    float32[B] from their analysis); only where ``need`` (bool[B, K]) holds, and for the
    numbers up to the cell's hidden neighbours, does an analysis run (``K x 9`` at most per
    view, ``chunk`` at a time: default an eighth of ``B K 9``). ``children``: keep the
    mine probabilities of the views after (for a deeper look)."""
    num_boards, height, width = revealed.shape
    count = cells.shape[1]
    hidden_around = jnp.take_along_axis(
        jax.vmap(neighbours)(~revealed).reshape(num_boards, -1), cells, axis=1
    )  # [B, K]
    need = need[:, :, None] & (jnp.arange(NUMBERS) <= hidden_around[:, :, None])
    pairs = num_boards * count * NUMBERS

    def analyse(index):
        revealed_v, counts_v, board = child_views(revealed, counts, cells, index)
        a = exact_analysis(revealed_v, counts_v, mine_count[board], limits)
        lowest_v = jnp.min(jnp.where(revealed_v, 1.0, a.mine_prob), axis=(1, 2))  # 0 with a safe cell
        found = (a.log_layouts, a.exact, a.inconsistent, jnp.any(a.safe, axis=(1, 2)), 1.0 - lowest_v)
        return found + ((a.mine_prob,) if children else ())

    nothing = (jnp.full(pairs, -jnp.inf), jnp.zeros(pairs, bool), jnp.ones(pairs, bool), jnp.zeros(pairs, bool),
               jnp.zeros(pairs))
    if children:
        nothing = nothing + (jnp.ones((pairs, height, width)),)
    chunk = max(1, pairs // 8) if chunk is None else chunk
    results = in_chunks(need.reshape(-1), chunk, analyse, jnp.arange(pairs, dtype=jnp.int32), nothing, axis=0)
    per_number = lambda x: x.reshape((num_boards, count, NUMBERS) + x.shape[1:])
    log_ways, exact, inconsistent, progress, next_safety = (per_number(x) for x in results[:5])
    won_next = jnp.sum(~revealed, axis=(1, 2)) - 1 == mine_count  # the reveal wins the game
    return NumberOutcomes(
        chance=jnp.where(exact, jnp.exp(log_ways - log_layouts[:, None, None]), 0.0),
        known=jnp.all(exact | inconsistent, axis=2),
        progress=progress,
        next_safety=jnp.where(won_next[:, None, None], 1.0, next_safety),
        exact=exact,
        next_log_layouts=log_ways,
        next_mine_prob=per_number(results[5]) if children else None,
    )


def survival_candidates(revealed: jax.Array, mine_prob: jax.Array, good: jax.Array, count: int):
    """``(cells int32[B, K], valid bool[B, K])``: the survival lookahead's ``count``
    candidates among ``good`` (bool[B, H, W]): the safest cells first (all within
    ``EXACT_TIES`` of the lowest ``mine_prob`` count as one), then by mine probability."""
    lowest = jnp.min(jnp.where(revealed, jnp.inf, mine_prob), axis=(1, 2), keepdims=True)
    priority = jnp.where(mine_prob <= lowest + EXACT_TIES, 0.0, mine_prob)
    return candidate_cells(revealed, good, count, priority)


def nearly_safest(revealed: jax.Array, mine_prob: jax.Array, tolerance: float) -> jax.Array:
    """bool[B, H, W]: the hidden cells, not certain mines, whose chance of being safe is at
    least ``1 - tolerance`` times the best one's (``mine_prob``: float32[B, H, W])."""
    lowest = jnp.min(jnp.where(revealed, jnp.inf, mine_prob), axis=(1, 2), keepdims=True)
    return ~revealed & (mine_prob < 1.0) & ((1.0 - mine_prob) >= (1.0 - tolerance) * (1.0 - lowest) - EXACT_TIES)


def survival_scores(
    revealed: jax.Array, counts: jax.Array, mine_count: jax.Array, log_layouts: jax.Array, mine_prob: jax.Array,
    cells: jax.Array, valid: jax.Array, depth: int, tolerance: float, limits: ExactLimits, chunk: int | None = None,
    expand: int = 0,
) -> tuple[jax.Array, NumberOutcomes]:
    """``(score float32[B, K], outcomes)``: each candidate's chance to survive its own
    guess and the next ``depth`` guesses (module docstring), and its ``NumberOutcomes``.

    At ``depth`` 1 a view after the click is worth its best safety (1 with a certainly
    safe cell or a won game); at ``depth`` 2, where it has neither, it is worth the best
    survival score of its own candidates at ``depth`` 1 (the cells nearly as safe as its
    safest, ``tolerance``; as many as ``cells`` has). A candidate whose views after leave
    the analysis' limits scores its safety times the view's best safety to the power
    ``depth``. ``cells``, ``valid``: int32[B, K], bool[B, K] (``survival_candidates``).
    ``expand`` (``0 < expand < K``, depth 2): only the ``expand`` valid candidates of highest
    depth-1 score (ties to the first) are scored at depth 2; the others score -1.
    """
    num_boards, height, width = revealed.shape
    count = cells.shape[1]
    deeper = depth > 1
    chunk = max(1, num_boards * count * NUMBERS // 8) if chunk is None else chunk  # the root's, at every depth
    outcomes = number_outcomes(revealed, counts, mine_count, log_layouts, cells, valid, limits, chunk, deeper)
    lowest = jnp.min(jnp.where(revealed, jnp.inf, mine_prob).reshape(num_boards, -1), axis=1)
    safe_now = 1.0 - jnp.take_along_axis(mine_prob.reshape(num_boards, -1), cells, axis=1)
    known = outcomes.known & valid
    # A known candidate's chances add up to its safety; scaled to do so exactly, its score
    # never exceeds its safety, whatever rounding the float32 layout counts carry.
    total = jnp.sum(outcomes.chance, axis=2, keepdims=True)
    chance = outcomes.chance * (safe_now[:, :, None] / jnp.where(total > 0, total, 1.0))
    scored = lambda after, d: jnp.where(known, jnp.sum(chance * after, axis=2),
                                        safe_now * (1.0 - lowest[:, None]) ** d)
    after = outcomes.next_safety
    expanded = valid
    if deeper and 0 < expand < count:
        first = jnp.where(valid, scored(after, 1), -jnp.inf)
        rank = jnp.argsort(jnp.argsort(-first, axis=1, stable=True), axis=1, stable=True)
        expanded = valid & (rank < expand)
    if deeper:
        index = jnp.arange(num_boards * count * NUMBERS, dtype=jnp.int32)
        next_revealed, next_counts, board = child_views(revealed, counts, cells, index)
        next_prob = outcomes.next_mine_prob.reshape(-1, height, width)
        guess_next = (expanded[:, :, None] & outcomes.exact & (outcomes.next_safety < 1.0)).reshape(-1)
        next_good = nearly_safest(next_revealed, next_prob, tolerance) & guess_next[:, None, None]
        next_cells, next_valid = survival_candidates(next_revealed, next_prob, next_good, count)
        next_score, _ = survival_scores(
            next_revealed, next_counts, mine_count[board], outcomes.next_log_layouts.reshape(-1), next_prob,
            next_cells, next_valid, depth - 1, tolerance, limits, chunk,
        )
        best_next = jnp.max(jnp.where(next_valid, next_score, 0.0), axis=1).reshape(after.shape)
        after = jnp.where(guess_next.reshape(after.shape), best_next, after)
    return jnp.where(valid & ~expanded, -1.0, scored(after, depth)), outcomes


class LookaheadScores(NamedTuple):
    """The lookahead's candidates of a batch of views and their scores (``[B, K]``).

    Attributes:
      cells: int32, the candidate cells (row-major); valid: bool, a real candidate.
      survival: float32, the chance to survive this guess and ``depth`` more (survival
        score only, and -1 for candidates ``expand`` leaves out; -1 otherwise).
      progress: float32, P(safe and then some cell is certainly safe).
      zero: float32, P(the cell shows a 0).
    """

    cells: jax.Array
    valid: jax.Array
    survival: jax.Array
    progress: jax.Array
    zero: jax.Array


def lookahead_scores(
    revealed: jax.Array, counts: jax.Array, mine_count: jax.Array, log_layouts: jax.Array,
    good: jax.Array, count: int, limits: ExactLimits, mine_prob: jax.Array | None = None,
    depth: int = 1, tolerance: float = 0.0, expand: int = 0,
) -> LookaheadScores:
    """Every candidate's scores (``LookaheadScores``; arguments as ``lookahead_choice``).
    Views with one candidate or none are not analysed (their scores are 0)."""
    if mine_prob is None:
        cells, valid = candidate_cells(revealed, good, count)
    else:
        cells, valid = survival_candidates(revealed, mine_prob, good, count)
    need = valid & (jnp.sum(valid, axis=1) > 1)[:, None]
    if mine_prob is None:
        outcomes = number_outcomes(revealed, counts, mine_count, log_layouts, cells, need, limits)
        survival = jnp.full(cells.shape, -1.0)
    else:
        survival, outcomes = survival_scores(
            revealed, counts, mine_count, log_layouts, mine_prob, cells, need, depth, tolerance, limits, expand=expand
        )
        survival = jnp.where(need, survival, 0.0)
    known = outcomes.known & need
    chance = outcomes.chance
    progress = jnp.where(known, jnp.sum(jnp.where(outcomes.progress, chance, 0.0), axis=2), 0.0)
    zero = jnp.where(known, chance[:, :, 0], 0.0)
    return LookaheadScores(cells, valid, survival, progress, zero)


def lookahead_choice(
    revealed: jax.Array, counts: jax.Array, mine_count: jax.Array, log_layouts: jax.Array,
    good: jax.Array, count: int, limits: ExactLimits, mine_prob: jax.Array | None = None,
    depth: int = 1, tolerance: float = 0.0, expand: int = 0,
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
      depth: with survival, the guesses after this one it looks at (1 or 2, static).
      tolerance: with survival at depth 2, the next view's candidates are its cells at
        least ``1 - tolerance`` times as safe as its safest.
      expand: with survival at depth 2, only this many candidates (those of highest
        depth-1 score) are scored at depth 2 and can be chosen; 0: all (static).

    Returns:
      ``(cell int32[B], progress float32[B], zero float32[B])``: the chosen cell (row-major)
      and its ``P(progress)``, ``P(zero)`` (both 0 where the view has one candidate: no
      analysis runs there).
    """
    scores = lookahead_scores(revealed, counts, mine_count, log_layouts, good, count, limits, mine_prob, depth,
                              tolerance, expand)
    best = scores.valid
    for score in ((scores.survival,) if mine_prob is not None else ()) + (scores.progress, scores.zero):
        best = best & (score >= jnp.max(jnp.where(best, score, -1.0), axis=1, keepdims=True) - TIES)
    pick = jnp.argmax(best, axis=1)  # candidates are in (priority, hidden neighbours, row-major) order
    take = lambda x: jnp.take_along_axis(x, pick[:, None], axis=1)[:, 0]
    return take(scores.cells), take(scores.progress), take(scores.zero)

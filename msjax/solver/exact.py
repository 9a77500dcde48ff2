"""Exact mine probabilities for a batch of views, on the device: the quantities of
``msjax.exact.analyse`` as one compiled JAX program.

**The algorithm: a transfer-matrix DP along the frontier, forward and backward.** The
frontier cells (hidden cells next to a number) are visited one per step in the order of
``msjax.solver.frontier`` (a greedy path along the frontier's curve). The DP's state is
the pair (the mines each *open* number still needs, the mines placed so far); a table of
at most ``max_states`` such states, each with the (log) number of partial layouts that
reach it, is carried from step to step. Visiting a cell splits every state in two (the
cell safe, or a mine: every number of the cell needs one mine fewer); a branch dies when
a number would need more mines than it has unvisited cells, or fewer than zero, or when
the mines placed leave an impossible count for the rest of the board; branches that reach
the same state merge (a sort by the packed key, then neighbours summed: each state has at
most two parents). Components need no special case: between them no number is open, and
the state is the mine count alone, which is how components combine. At the end each
state's mine count ``m`` is weighted by ``C(F, M - m)``, the ways to put the remaining
mines on the ``F`` hidden cells off the frontier.

Marginals come from a backward pass over the stored transitions (the forward-backward
algorithm): ``beta`` of a state is the log number of ways to complete it, and the
probability that the cell of step ``t`` is a mine is the mass of its mine branches,
``sum(alpha_t + beta_{t+1})``, over that of both branches. The cells off the frontier get
``E[M - m] / F`` from the final table.

Why this shape, for an accelerator: frontiers are long and thin, so along a path the open
numbers are few and the *reachable* states fewer (``shared/notes/exact-problem-sizes.md``:
256 states cover 100% / 99.7% / 98.7% of real 8x8 / 16x16 / 16x30 positions); every step
is the same fixed-shape work (a sort of ``2 * max_states`` keys, gathers, a scatter) over
the whole batch, with no data-dependent control flow except the number of steps, which is
the longest frontier in the batch. Brute force over cells or classes cannot cover 16x16
(components of 50-130 classes), and a dense table over the open numbers' values reaches
1e18 entries on 16x30.

**Numbers.** Weights are logs in float32, and every step's table is shifted so its largest
weight is 0 (the shift is common to all states, so it cancels in every probability):
layout counts reach ``C(381, 99) ~ 1e89`` on 16x30x99, past float32's range, while the
shifted logs stay small and keep float32's relative precision. ``C(F, k)`` comes from
log-factorials stored as float32 pairs (value and remainder), taken relative to a reference
count, so the differences that matter are exact to float32 rounding.

**Proofs are exact.** A log weight is ``-inf`` exactly when no layout has that branch (the
log of a count >= 1 is finite, and ``logaddexp``/``exp`` keep ``-inf`` exact), so "the cell
can be a mine" is ``isfinite`` of its mine mass, never a float threshold: a cell is proved
safe (mine) exactly when no consistent layout has a mine (no mine) there, as
``msjax.exact``'s integer comparisons say.

**Limits, flagged per view.** ``max_frontier`` steps, ``max_open`` numbers open at once
(4 bits each in the packed key) and ``max_states`` states per step are static. A view that
exceeds one is flagged (``exact`` False): its probabilities are then the belief-propagation
estimate (``msjax.solver.beliefs``), and it proves nothing here. An inconsistent view (no
layout fits) is flagged too (``inconsistent`` True) and gets the same estimate, never NaN.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from msjax.solver.types import ExactLimits, Forced, View
from msjax.solver.frontier import Planner, StepPlan, key_words, plan_step, start_planner
from msjax.solver.grid import in_chunks

NEG_INF = -jnp.inf


class ExactAnalysis(NamedTuple):
    """Exact mine probabilities of a batch of views (leading axis ``[B]``).

    Attributes:
      mine_prob: float32[B, H, W], P(mine) of each hidden cell (0 on revealed cells); 0
        on the whole board where ``exact`` is False (the solver's ``probabilities="exact"``
        puts its belief-propagation estimate there).
      safe: bool[B, H, W], hidden cells that are safe in every consistent layout.
      mines: bool[B, H, W], hidden cells that are mines in every consistent layout.
      exact: bool[B], the view fit the limits and has a consistent layout (``safe`` and
        ``mines`` are empty where it is False).
      inconsistent: bool[B], within the limits, and no layout fits the view.
      log_layouts: float32[B], the natural log of the number of consistent layouts
        (float32 accuracy; -inf where inconsistent).
    """

    mine_prob: jax.Array
    safe: jax.Array
    mines: jax.Array
    exact: jax.Array
    inconsistent: jax.Array
    log_layouts: jax.Array


# ----------------------------------------------------------------------------- binomials


@functools.lru_cache(maxsize=None)
def _log_factorials(n: int) -> tuple[np.ndarray, np.ndarray]:
    """float32[n + 1] pairs (value, remainder) whose sum is log(k!) to ~1e-11."""
    exact = np.array([math.lgamma(k + 1) for k in range(n + 1)], np.float64)
    value = exact.astype(np.float32)
    return value, (exact - value.astype(np.float64)).astype(np.float32)


def _log_binomial_ratio(n: jax.Array, k: jax.Array, k_ref: jax.Array, size: int) -> jax.Array:
    """``log C(n, k) - log C(n, k_ref)``, accurate to float32 rounding of the result
    (``k``, ``k_ref`` within ``[0, n]``, ``n <= size``); the differences of nearby
    log-factorials are taken before anything else rounds them."""
    value, remainder = (jnp.asarray(x) for x in _log_factorials(size))
    high = (value[k_ref] - value[k]) + (value[n - k_ref] - value[n - k])
    low = (remainder[k_ref] - remainder[k]) + (remainder[n - k_ref] - remainder[n - k])
    return high + low


# ----------------------------------------------------------------------------- forward


class Table(NamedTuple):
    """The DP's states of one view: ``keys`` uint32[S, Wd] (the open numbers' needs,
    packed), ``mines`` int32[S] (placed so far), ``log_ways`` float32[S] (-inf: no state)."""

    keys: jax.Array
    mines: jax.Array
    log_ways: jax.Array


NIBBLE_ONES = np.uint32(0x11111111)  # NumPy: a jnp constant here would start the backend at import
NIBBLE_HIGHS = np.uint32(0x88888888)


def _has_zero_nibble(words: jax.Array) -> jax.Array:
    """bool: some 4-bit field of the uint32 ``words`` is 0 (exact for "any": a borrow
    that could fake a zero only starts at a real one)."""
    return ((words - NIBBLE_ONES) & ~words & NIBBLE_HIGHS) != 0


def _branches_allowed(table: Table, step: StepPlan, mine_count, num_off):
    """(safe_ok, mine_ok) bool[S]: which of each state's two branches stay feasible.

    Every state keeps ``need <= unvisited`` for each open number (a branch that breaks it
    dies), so for the numbers of the visited cell: the mine branch needs ``need >= 1``,
    and the safe branch ``need <= unvisited - 1``, i.e. ``need != unvisited``. Both are
    "no targeted 4-bit field is zero", tested on whole words at once (SWAR): fields
    outside the targets are set to 1 first.
    """
    exists = table.log_ways > NEG_INF
    safe_fits = mine_fits = exists
    for w in range(table.keys.shape[1]):
        targets = step.targets[w]
        others = ~targets & NIBBLE_ONES
        key = table.keys[:, w]
        mine_fits = mine_fits & ~_has_zero_nibble((key & targets) | others)
        safe_fits = safe_fits & ~_has_zero_nibble(((key ^ step.unvisited[w]) & targets) | others)
    # the rest of the board must still be able to take the mines left
    fewest = mine_count - num_off - step.remaining
    safe_ok = safe_fits & (table.mines >= fewest)
    mine_ok = mine_fits & (step.cell >= 0) & (table.mines + 1 <= mine_count) & (table.mines + 1 >= fewest)
    return safe_ok, mine_ok


def _state_hash(keys: jax.Array, mines: jax.Array) -> jax.Array:
    """uint32[N]: a mix of each state's key words and mine count (equal states, equal
    hashes; unequal states rarely collide, and a collision only costs a table row)."""
    mixed = mines.astype(jnp.uint32) * jnp.uint32(0x9E3779B1)
    for w in range(keys.shape[1]):
        mixed = (mixed ^ keys[:, w]) * jnp.uint32(0x85EBCA6B)
        mixed = mixed ^ (mixed >> 13)
    mixed = mixed * jnp.uint32(0xC2B2AE35)
    return mixed ^ (mixed >> 16)


def _running_count(flags: jax.Array) -> jax.Array:
    """int32[N]: how many of ``flags`` (bool[N]) are set up to each position. Doubling
    steps (log N elementwise adds): XLA's CPU cumsum is a reduce-window, O(N^2)."""
    count = flags.astype(jnp.int32)
    step = 1
    while step < count.shape[0]:
        count = count + jnp.concatenate([jnp.zeros(step, jnp.int32), count[:-step]])
        step *= 2
    return count


def _merge(keys, mines, log_ways, ok, max_states: int):
    """The children (``N = 2S`` rows) merged by state and compacted into ``S`` rows.

    Equal states must meet to merge. A sort on one ``uint32`` per child (XLA's CPU sort
    is several times faster on one operand than on several) puts them side by side: the
    high bits hold a hash of the state, the low bits the child's index. States whose
    hashes collide may interleave and then stay apart as two rows of one state, which
    costs a row, not exactness: every child still lands on exactly one row, and rows are
    merged by comparing the whole state.

    Returns:
      (Table, dest int16[N]: each child's row in the new table, -1 if dropped,
      overflow bool[]: more than ``S`` rows were needed).
    """
    num_rows, num_words = keys.shape
    index_bits = max(1, (num_rows - 1).bit_length())
    dropped = jnp.uint32(0xFFFFFFFF)
    high = jnp.minimum(_state_hash(keys, mines) >> index_bits, jnp.uint32((1 << (32 - index_bits)) - 2))
    packed = jnp.where(ok, (high << index_bits) | jnp.arange(num_rows, dtype=jnp.uint32), dropped)
    packed = jax.lax.sort(packed)
    valid = packed != dropped
    order = (packed & jnp.uint32((1 << index_bits) - 1)).astype(jnp.int32)
    words, mines_sorted, ways = keys[order], mines[order], log_ways[order]
    same = (mines_sorted[1:] == mines_sorted[:-1]) & valid[:-1]
    for w in range(num_words):
        same = same & (words[1:, w] == words[:-1, w])
    first = valid & ~jnp.concatenate([jnp.zeros(1, bool), same])
    row = _running_count(first) - 1
    segment = jnp.where(valid & (row < max_states), row, max_states)
    top = jax.ops.segment_max(ways, segment, num_segments=max_states, indices_are_sorted=True)
    top_of = jnp.concatenate([jnp.where(jnp.isfinite(top), top, 0.0), jnp.zeros(1)])[segment]
    total = jax.ops.segment_sum(jnp.exp(ways - top_of), segment, num_segments=max_states, indices_are_sorted=True)
    target = jnp.where(first, segment, max_states)
    table = Table(
        keys=jnp.zeros((max_states, num_words), jnp.uint32).at[target].set(words, mode="drop"),
        mines=jnp.zeros(max_states, jnp.int32).at[target].set(mines_sorted, mode="drop"),
        log_ways=jnp.where(total > 0, jnp.log(total) + top, NEG_INF),
    )
    dest_sorted = jnp.where(segment < max_states, segment, -1).astype(jnp.int16)
    dest = jnp.full(num_rows, -1, jnp.int16).at[jnp.where(valid, order, num_rows)].set(dest_sorted, mode="drop")
    return table, dest, jnp.sum(first) > max_states


def _normalised(log_ways: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(log_ways shifted so their max is 0, the shift); unchanged when all are -inf."""
    top = jnp.max(log_ways)
    top = jnp.where(jnp.isfinite(top), top, 0.0)
    return log_ways - top, top


def _children(table: Table, step: StepPlan, mine_count, num_off):
    """The two branches of every state of one view at one step: ``(keys uint32[2S, Wd],
    mines int32[2S], log_ways float32[2S], ok bool[2S])``, the safe branches first."""
    table = table._replace(keys=table.keys + step.opens[None, :])
    safe_ok, mine_ok = _branches_allowed(table, step, mine_count, num_off)
    keys = jnp.concatenate([table.keys, table.keys - (step.targets & NIBBLE_ONES)[None, :]])
    mines = jnp.concatenate([table.mines, table.mines + 1])
    log_ways = jnp.concatenate([table.log_ways, table.log_ways])
    return keys, mines, log_ways, jnp.concatenate([safe_ok, mine_ok])


def _forward_step(table: Table, step: StepPlan, mine_count, num_off, max_states: int):
    """One frontier cell on a batch of views (leading axis): ``(table, dest int16[B, 2S],
    overflow bool[B], shift float32[B])``."""
    children = jax.vmap(_children)(table, step, mine_count, num_off)
    table, dest, overflow = jax.vmap(functools.partial(_merge, max_states=max_states))(*children)
    log_ways, shift = jax.vmap(_normalised)(table.log_ways)
    return table._replace(log_ways=log_ways), dest, overflow, shift


# ----------------------------------------------------------------------------- backward


def _backward_step(beta_next: jax.Array, alpha: jax.Array, dest: jax.Array):
    """One step back on one view.

    Args:
      beta_next: float32[S], log ways to complete each state after the step.
      alpha: float32[S], log ways to reach each state before it; dest: int16[2S].

    Returns:
      (beta float32[S], log_safe float32[], log_mine float32[]): the log masses of the
      step cell's safe and mine branches (shifted alike).
    """
    dest = dest.astype(jnp.int32)
    completed = jnp.where(dest >= 0, beta_next[jnp.maximum(dest, 0)], NEG_INF)
    num_states = alpha.shape[0]
    safe_side, mine_side = completed[:num_states], completed[num_states:]
    log_safe = jax.nn.logsumexp(alpha + safe_side)
    log_mine = jax.nn.logsumexp(alpha + mine_side)
    beta, _ = _normalised(jnp.logaddexp(safe_side, mine_side))
    return beta, log_safe, log_mine


def final_weights(table: Table, mine_count, num_off, size: int):
    """(beta_T float32[S]: log C(F, M - m) relative to the likeliest state's, the log
    binomial of that reference): the weights of the cells off the frontier."""
    off_mines = mine_count - table.mines
    fits = (table.log_ways > NEG_INF) & (off_mines >= 0) & (off_mines <= num_off)
    reference = jnp.clip(mine_count - table.mines[jnp.argmax(table.log_ways)], 0, num_off)
    k = jnp.clip(off_mines, 0, num_off)
    beta = jnp.where(fits, _log_binomial_ratio(num_off, k, reference, size), NEG_INF)
    log_reference = (
        jax.lax.lgamma(num_off + 1.0) - jax.lax.lgamma(reference + 1.0) - jax.lax.lgamma(num_off - reference + 1.0)
    )
    return beta, log_reference


def _off_frontier(table: Table, beta, mine_count, num_off):
    """(P(mine) float32[], may_mine, may_safe) of every cell off the frontier."""
    weight = table.log_ways + beta
    log_total = jax.nn.logsumexp(weight)
    share = jnp.exp(weight - jnp.where(jnp.isfinite(log_total), log_total, 0.0))
    off_mines = (mine_count - table.mines).astype(jnp.float32)
    fits = weight > NEG_INF
    probability = jnp.sum(jnp.where(fits, share * off_mines, 0.0)) / jnp.maximum(num_off, 1)
    may_mine = jnp.any(fits & (off_mines > 0))
    may_safe = jnp.any(fits & (off_mines < num_off))
    return probability, may_mine, may_safe, log_total


# ----------------------------------------------------------------------------- one tier


class _Tier(NamedTuple):
    """One analysis of a batch at one table size, flat over cells ([B, H*W])."""

    mine_prob: jax.Array
    may_mine: jax.Array
    may_safe: jax.Array
    overflow: jax.Array
    beyond: jax.Array  # past the frontier or open-number limits, whatever the table size
    impossible: jax.Array
    log_layouts: jax.Array


def _start_table(num_boards: int, max_states: int, num_words: int) -> Table:
    log_ways = jnp.full((num_boards, max_states), NEG_INF).at[:, 0].set(0.0)
    return Table(
        jnp.zeros((num_boards, max_states, num_words), jnp.uint32),
        jnp.zeros((num_boards, max_states), jnp.int32),
        log_ways,
    )


class Forward(NamedTuple):
    """The forward pass over a batch of views (leading axis ``[B]``) at one table size.

    Attributes:
      planner: the frontier planner after the last step (``num_off``: hidden cells off
        the frontier; ``too_wide``, ``num_cells``, ``impossible``: the view's limits).
      table: the final ``Table`` (each state's log ways, shifted).
      cells: int32[T, B], the cell visited at each step (-1: none).
      alphas: float32[T, B, S], each step's table before the step (shifted log ways).
      dests: int16[T, B, 2S], each step's children: their row in the next table (-1: dropped).
      overflow: bool[B], a step needed more than ``S`` states.
      shift_total: float32[B], the shifts taken out of the log ways.
      last: int32[], the steps run (the batch's longest frontier, at most ``T``).
    """

    planner: Planner
    table: Table
    cells: jax.Array
    alphas: jax.Array
    dests: jax.Array
    overflow: jax.Array
    shift_total: jax.Array
    last: jax.Array


def forward_pass(views, steps: int, max_open: int, max_states: int) -> Forward:
    """The planner and the DP step by step over ``views`` (``(revealed bool[B, H, W],
    counts int32[B, H, W], mine_count int32[B])``), keeping every step's table and
    transitions for the backward pass (marginals, or sampling)."""
    revealed, counts, mine_count = views
    num_boards, height, width = revealed.shape
    planner = jax.vmap(start_planner, in_axes=(0, 0, None, None))(revealed, counts, steps, max_open)
    last = jnp.max(jnp.minimum(planner.num_cells, steps))  # the batch's longest frontier
    plan = jax.vmap(functools.partial(plan_step, height=height, width=width, max_open=max_open), in_axes=(0, None))

    def forward_body(carry):
        # the planner runs one step ahead: the DP reads its step from the loop carry, a
        # buffer, where XLA's CPU backend would otherwise fuse (recompute) the planner's
        # arithmetic into every element of the DP's arrays
        t, planner, step, table, history, overflow, shift_total = carry
        new_table, dest, step_overflow, shift = _forward_step(table, step, mine_count, planner.num_off, max_states)
        cells, alphas, dests = history
        history = (cells.at[t].set(step.cell), alphas.at[t].set(table.log_ways), dests.at[t].set(dest))
        planner, step = plan(planner, t + 1)
        return t + 1, planner, step, new_table, history, overflow | step_overflow, shift_total + shift

    history = (
        jnp.full((steps, num_boards), -1, jnp.int32),
        jnp.full((steps, num_boards, max_states), NEG_INF),
        jnp.full((steps, num_boards, 2 * max_states), -1, jnp.int16),
    )
    planner, step = plan(planner, jnp.int32(0))
    start = (jnp.int32(0), planner, step, _start_table(num_boards, max_states, key_words(max_open)), history,
             jnp.zeros(num_boards, bool), jnp.zeros(num_boards, jnp.float32))
    _, planner, _, table, (cells, alphas, dests), overflow, shift_total = jax.lax.while_loop(
        lambda c: c[0] < last, forward_body, start
    )
    return Forward(planner, table, cells, alphas, dests, overflow, shift_total, last)


def _analyse_tier(views, steps: int, max_open: int, max_states: int) -> _Tier:
    """The forward pass, the backward pass, and the cells placed on the board, for a
    batch at one table size ``max_states``."""
    revealed, _, mine_count = views
    num_boards, height, width = revealed.shape
    planner, table, cells, alphas, dests, overflow, shift_total, last = forward_pass(views, steps, max_open, max_states)

    beta, log_reference = jax.vmap(functools.partial(final_weights, size=height * width))(
        table, mine_count, planner.num_off
    )
    off_prob, off_may_mine, off_may_safe, log_total = jax.vmap(_off_frontier)(
        table, beta, mine_count, planner.num_off
    )
    backward = jax.vmap(_backward_step)

    def backward_body(carry):
        t, beta, p_mine, may_mine, may_safe = carry
        t = t - 1
        beta, log_safe, log_mine = backward(beta, alphas[t], dests[t])
        both = jnp.logaddexp(log_safe, log_mine)
        finite = jnp.isfinite(both)
        p = jnp.where(finite, jnp.exp(log_mine - jnp.where(finite, both, 0.0)), 0.0)
        return t, beta, p_mine.at[t].set(p), may_mine.at[t].set(log_mine > NEG_INF), may_safe.at[t].set(log_safe > NEG_INF)

    empty = jnp.zeros((steps, num_boards), bool)
    _, _, p_mine, may_mine, may_safe = jax.lax.while_loop(
        lambda c: c[0] > 0, backward_body, (last, beta, jnp.zeros((steps, num_boards)), empty, empty)
    )

    hidden = ~revealed.reshape(num_boards, -1)
    sink = height * width
    visited = jnp.where(cells >= 0, cells, sink).T  # [B, T]

    def place(values, off_value):
        board = jnp.broadcast_to(off_value[:, None], hidden.shape)
        return jax.vmap(lambda b, c, v: b.at[c].set(v, mode="drop"))(board, visited, values.T)

    return _Tier(
        mine_prob=jnp.where(hidden, place(p_mine, off_prob), 0.0),
        may_mine=hidden & place(may_mine, off_may_mine),
        may_safe=hidden & place(may_safe, off_may_safe),
        overflow=overflow,
        beyond=planner.too_wide | (planner.num_cells > steps),
        impossible=planner.impossible,
        log_layouts=log_total + log_reference + shift_total,
    )


# ----------------------------------------------------------------------------- batch


@functools.partial(jax.jit, static_argnames=("limits",))
def exact_analysis(
    revealed: jax.Array, counts: jax.Array, mine_count: jax.Array, limits: ExactLimits = ExactLimits()
) -> ExactAnalysis:
    """Exact mine probabilities and proofs of a batch of views (module docstring).

    Every view is analysed with a table of ``limits.first_states`` states; the views that
    overflow it are analysed again with ``limits.middle_states``, gathered in chunks of an
    eighth of the batch, and those that overflow that with ``limits.max_states`` in chunks
    of a 64th, so the large tables cost only where they are needed.

    Args:
      revealed: bool[B, H, W]; counts: int[B, H, W], the numbers (read where revealed);
      mine_count: int[B], mines on each board.
      limits: static sizes.

    Returns:
      ``ExactAnalysis``; where ``exact`` is False, ``mine_prob`` is 0 and nothing is
      proved (``solver.policy.layer4_probabilities`` puts the estimate there).
    """
    num_boards, height, width = revealed.shape
    steps = limits.steps(height, width)
    views = (revealed, counts.astype(jnp.int32), jnp.asarray(mine_count, jnp.int32))
    tier = functools.partial(_analyse_tier, steps=steps, max_open=limits.max_open)
    sizes = limits.tiers()
    result = tier(views, max_states=sizes[0])
    for depth, size in enumerate(sizes[1:], start=1):
        redo = result.overflow & ~result.beyond & ~result.impossible
        result = in_chunks(
            redo, max(1, num_boards // 8**depth), functools.partial(tier, max_states=size), views, result, axis=0
        )
    within = ~result.overflow & ~result.beyond
    inconsistent = within & (result.impossible | ~jnp.isfinite(result.log_layouts))
    exact = within & ~inconsistent
    proof = exact[:, None]
    board = lambda x: x.reshape(num_boards, height, width)
    return ExactAnalysis(
        mine_prob=board(jnp.where(proof, result.mine_prob, 0.0)),
        safe=board(proof & ~revealed.reshape(num_boards, -1) & ~result.may_mine),
        mines=board(proof & ~revealed.reshape(num_boards, -1) & ~result.may_safe),
        exact=exact,
        inconsistent=inconsistent,
        log_layouts=jnp.where(exact, result.log_layouts, NEG_INF),
    )


def exact_on_cells(view: View, limits: ExactLimits) -> tuple[Forced, jax.Array, jax.Array]:
    """``exact_analysis`` of a cell-major view (``msjax.solver.grid``: ``[H, W, *b]``).

    Returns:
      ``(proofs, mine_prob, exact, log_layouts)``: ``Forced`` with the analysis' proofs
      (layer 3, empty where not exact), float32[H, W, *b] (0 where not exact), bool[*b]
      and float32[*b].
    """
    batch_shape = view.mine_count.shape
    to_boards = lambda x: jnp.moveaxis(x.reshape(x.shape[:2] + (-1,)), -1, 0)
    analysis = exact_analysis(
        to_boards(view.revealed), to_boards(view.counts), view.mine_count.reshape(-1), limits
    )
    to_cells = lambda x: jnp.moveaxis(x, 0, -1).reshape(x.shape[1:] + batch_shape)
    safe, mines = to_cells(analysis.safe), to_cells(analysis.mines)
    proofs = Forced(safe, mines, jnp.where(safe | mines, jnp.int8(3), jnp.int8(0)))
    return proofs, to_cells(analysis.mine_prob), analysis.exact.reshape(batch_shape), analysis.log_layouts.reshape(batch_shape)

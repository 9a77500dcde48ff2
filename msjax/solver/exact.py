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

import dataclasses
import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from msjax.solver.frontier import SLOT_BITS, SLOTS_PER_WORD, FrontierPlan, key_words, plan_frontier

NEG_INF = -jnp.inf


@dataclasses.dataclass(frozen=True)
class ExactLimits:
    """Static sizes of the exact analysis (frozen: a static jit argument).

    Attributes:
      max_frontier: DP steps, the most frontier cells a view may have; 0 picks
        ``default_max_frontier`` of the board.
      max_open: numbers open at once (slots of the packed key), at most 64.
      max_states: states kept per step.

    Raises:
      ValueError: a field out of its range.
    """

    max_frontier: int = 0
    max_open: int = 24
    max_states: int = 256

    def __post_init__(self):
        if self.max_frontier < 0:
            raise ValueError(f"ExactLimits.max_frontier={self.max_frontier} must be >= 0 (0: from the board)")
        if not 1 <= self.max_open <= 64:
            raise ValueError(f"ExactLimits.max_open={self.max_open} must be in [1, 64]")
        if not 2 <= self.max_states <= 32_767:
            raise ValueError(f"ExactLimits.max_states={self.max_states} must be in [2, 32767]")

    def steps(self, height: int, width: int) -> int:
        """The DP's static step count on a ``height`` x ``width`` board."""
        return self.max_frontier or default_max_frontier(height, width)


def default_max_frontier(height: int, width: int) -> int:
    """Frontier cells allowed by default: 3/8 of the board, at least 32 (real positions
    reach 27 / 76 / 143 cells on 8x8 / 16x16 / 16x30: ``benchmarks/RESULTS.md``)."""
    return min(height * width, max(32, (3 * height * width) // 8))


class ExactAnalysis(NamedTuple):
    """Exact mine probabilities of a batch of views (leading axis ``[B]``).

    Attributes:
      mine_prob: float32[B, H, W], P(mine) of each hidden cell (0 on revealed cells); the
        belief-propagation estimate where ``exact`` is False.
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


def _branches_allowed(table: Table, step: FrontierPlan, mine_count, num_off):
    """(safe_ok, mine_ok) bool[S]: which of each state's two branches stay feasible."""
    exists = table.log_ways > NEG_INF
    is_number = step.slot >= 0
    word = jnp.take(table.keys, jnp.maximum(step.slot, 0) // SLOTS_PER_WORD, axis=1)  # [S, 8]
    shift = (SLOT_BITS * (jnp.maximum(step.slot, 0) % SLOTS_PER_WORD)).astype(jnp.uint32)
    need = ((word >> shift) & 0xF).astype(jnp.int32)
    safe_fits = jnp.all(~is_number | (need <= step.capacity), axis=1)
    mine_fits = jnp.all(~is_number | ((need >= 1) & (need - 1 <= step.capacity)), axis=1)
    # the rest of the board must still be able to take the mines left
    fewest = mine_count - num_off - step.remaining
    safe_ok = exists & safe_fits & (table.mines >= fewest)
    mine_ok = exists & mine_fits & (step.cell >= 0) & (table.mines + 1 <= mine_count) & (table.mines + 1 >= fewest)
    return safe_ok, mine_ok


def _merge(keys, mines, log_ways, ok, max_states: int):
    """The children (``2S`` rows) merged by state and compacted into ``S`` rows.

    Returns:
      (Table, dest int16[2S]: each child's row in the new table, -1 if dropped,
      overflow bool[]: more than ``S`` distinct states).
    """
    num_rows, num_words = keys.shape
    order = jnp.arange(num_rows, dtype=jnp.int32)
    operands = [(~ok).astype(jnp.uint32)] + [keys[:, w] for w in range(num_words)] + [mines, order]
    ordered = jax.lax.sort(operands, num_keys=num_words + 2)
    valid, words, mines_sorted, order = ordered[0] == 0, ordered[1:-2], ordered[-2], ordered[-1]
    same = jnp.all(jnp.stack([w[1:] == w[:-1] for w in words] + [mines_sorted[1:] == mines_sorted[:-1]]), axis=0)
    same_next = jnp.concatenate([same & valid[1:] & valid[:-1], jnp.zeros(1, bool)])
    first = valid & ~jnp.concatenate([jnp.zeros(1, bool), same_next[:-1]])
    row = jnp.cumsum(first) - 1
    sorted_ways = log_ways[order]
    next_ways = jnp.concatenate([sorted_ways[1:], jnp.full(1, NEG_INF)])
    merged = jnp.where(same_next, jnp.logaddexp(sorted_ways, next_ways), sorted_ways)
    target = jnp.where(first & (row < max_states), row, max_states)
    table = Table(
        keys=jnp.zeros((max_states, num_words), jnp.uint32).at[target].set(jnp.stack(words, axis=1), mode="drop"),
        mines=jnp.zeros(max_states, jnp.int32).at[target].set(mines_sorted, mode="drop"),
        log_ways=jnp.full(max_states, NEG_INF).at[target].set(merged, mode="drop"),
    )
    dest_sorted = jnp.where(valid & (row < max_states), row, -1).astype(jnp.int16)
    dest = jnp.zeros(num_rows, jnp.int16).at[order].set(dest_sorted)
    return table, dest, jnp.sum(first) > max_states


def _normalised(log_ways: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(log_ways shifted so their max is 0, the shift); unchanged when all are -inf."""
    top = jnp.max(log_ways)
    top = jnp.where(jnp.isfinite(top), top, 0.0)
    return log_ways - top, top


def _forward_step(table: Table, step: FrontierPlan, mine_count, num_off, max_states: int):
    """One frontier cell on one view: ``(table, dest int16[2S], overflow, shift)``."""
    table = table._replace(keys=table.keys + step.opens[None, :])
    safe_ok, mine_ok = _branches_allowed(table, step, mine_count, num_off)
    keys = jnp.concatenate([table.keys, table.keys - step.delta[None, :]])
    mines = jnp.concatenate([table.mines, table.mines + 1])
    log_ways = jnp.concatenate([table.log_ways, table.log_ways])
    table, dest, overflow = _merge(keys, mines, log_ways, jnp.concatenate([safe_ok, mine_ok]), max_states)
    log_ways, shift = _normalised(table.log_ways)
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


def _final_weights(table: Table, mine_count, num_off, size: int):
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


# ----------------------------------------------------------------------------- batch


def _start_table(num_boards: int, max_states: int, num_words: int) -> Table:
    log_ways = jnp.full((num_boards, max_states), NEG_INF).at[:, 0].set(0.0)
    return Table(
        jnp.zeros((num_boards, max_states, num_words), jnp.uint32),
        jnp.zeros((num_boards, max_states), jnp.int32),
        log_ways,
    )


@functools.partial(jax.jit, static_argnames=("limits",))
def exact_analysis(
    revealed: jax.Array, counts: jax.Array, mine_count: jax.Array, limits: ExactLimits = ExactLimits()
) -> ExactAnalysis:
    """Exact mine probabilities and proofs of a batch of views (module docstring).

    Args:
      revealed: bool[B, H, W]; counts: int[B, H, W], the numbers (read where revealed);
      mine_count: int[B], mines on each board.
      limits: static sizes.

    Returns:
      ``ExactAnalysis``; where ``exact`` is False, ``mine_prob`` is not yet filled (0 on
      the flagged boards): ``exact_mine_probabilities`` fills it with the estimate.
    """
    num_boards, height, width = revealed.shape
    steps = limits.steps(height, width)
    num_words = key_words(limits.max_open)
    max_states = limits.max_states
    mine_count = jnp.asarray(mine_count, jnp.int32)
    plan = jax.vmap(plan_frontier, in_axes=(0, 0, None, None))(revealed, counts, steps, limits.max_open)
    by_step = jax.tree.map(lambda x: jnp.moveaxis(x, 1, 0), plan[:6])  # [T, B, ...]
    last = jnp.max(jnp.minimum(plan.num_cells, steps))  # the batch's longest frontier
    forward = jax.vmap(functools.partial(_forward_step, max_states=max_states))

    def forward_body(carry):
        t, table, alphas, dests, overflow, shift_total = carry
        step = FrontierPlan(*jax.tree.map(lambda x: x[t], by_step), *plan[6:])
        new_table, dest, step_overflow, shift = forward(table, step, mine_count, plan.num_off)
        alphas = alphas.at[t].set(table.log_ways)
        dests = dests.at[t].set(dest)
        return t + 1, new_table, alphas, dests, overflow | step_overflow, shift_total + shift

    start = (
        jnp.int32(0),
        _start_table(num_boards, max_states, num_words),
        jnp.full((steps, num_boards, max_states), NEG_INF),
        jnp.full((steps, num_boards, 2 * max_states), -1, jnp.int16),
        jnp.zeros(num_boards, bool),
        jnp.zeros(num_boards, jnp.float32),
    )
    _, table, alphas, dests, overflow, shift_total = jax.lax.while_loop(lambda c: c[0] < last, forward_body, start)

    size = height * width
    beta, log_reference = jax.vmap(functools.partial(_final_weights, size=size))(table, mine_count, plan.num_off)
    off_prob, off_may_mine, off_may_safe, log_total = jax.vmap(_off_frontier)(table, beta, mine_count, plan.num_off)
    backward = jax.vmap(_backward_step)

    def backward_body(carry):
        t, beta, p_mine, may_mine, may_safe = carry
        t = t - 1
        beta, log_safe, log_mine = backward(beta, alphas[t], dests[t])
        both = jnp.logaddexp(log_safe, log_mine)
        p = jnp.where(jnp.isfinite(both), jnp.exp(log_mine - jnp.where(jnp.isfinite(both), both, 0.0)), 0.0)
        p_mine, may_mine, may_safe = (
            p_mine.at[t].set(p),
            may_mine.at[t].set(log_mine > NEG_INF),
            may_safe.at[t].set(log_safe > NEG_INF),
        )
        return t, beta, p_mine, may_mine, may_safe

    empty = jnp.zeros((steps, num_boards), bool)
    _, _, p_mine, may_mine, may_safe = jax.lax.while_loop(
        lambda c: c[0] > 0, backward_body, (last, beta, jnp.zeros((steps, num_boards)), empty, empty)
    )

    return _assemble(
        revealed, plan, jnp.moveaxis(p_mine, 0, 1), jnp.moveaxis(may_mine, 0, 1), jnp.moveaxis(may_safe, 0, 1),
        (off_prob, off_may_mine, off_may_safe), overflow, log_total + log_reference + shift_total,
    )


def _assemble(revealed, plan: FrontierPlan, p_mine, may_mine, may_safe, off, overflow, log_layouts) -> ExactAnalysis:
    """Per-step results placed on the board's cells (all arrays with the batch axis)."""
    num_boards, height, width = revealed.shape
    off_prob, off_may_mine, off_may_safe = off
    hidden = ~revealed.reshape(num_boards, -1)
    frontier = jnp.zeros_like(hidden)
    on = plan.cell >= 0
    cells = jnp.where(on, plan.cell, height * width)

    def place(values, fill):
        board = jnp.full(hidden.shape, fill, values.dtype)
        return jax.vmap(lambda b, c, v: b.at[c].set(v, mode="drop"))(board, cells, values)

    frontier = place(jnp.ones_like(on), False)
    off_cells = hidden & ~frontier
    within = ~overflow & ~plan.too_wide & ~plan.too_long
    inconsistent = within & (plan.impossible | ~jnp.isfinite(log_layouts))
    exact = within & ~inconsistent
    on_board = lambda x: x.reshape(num_boards, height, width)
    mine_prob = jnp.where(off_cells, off_prob[:, None], place(p_mine, 0.0))
    may_mine = jnp.where(off_cells, off_may_mine[:, None], place(may_mine, True))
    may_safe = jnp.where(off_cells, off_may_safe[:, None], place(may_safe, True))
    proof = hidden & exact[:, None]
    return ExactAnalysis(
        mine_prob=on_board(jnp.where(hidden & exact[:, None], mine_prob, 0.0)),
        safe=on_board(proof & ~may_mine),
        mines=on_board(proof & ~may_safe),
        exact=exact,
        inconsistent=inconsistent,
        log_layouts=jnp.where(within & ~inconsistent, log_layouts, NEG_INF),
    )

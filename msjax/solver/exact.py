"""Exact mine probabilities for a batch of views, on the device: the quantities of
the NumPy reference's ``msjax.reference.analyse`` as one compiled JAX program.

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
count, so the differences that matter are exact to float32 rounding. The layout count's log
(``log_layouts``: ~240 on 16x30x99 after one click, ~460 on 32x32x200, where float32 steps
by 1.5e-5 and 3e-5) is the reference's log binomial from the same pairs plus the shifts,
summed with their rounding errors kept (``forward.two_sum``) and rounded once: float32's
``lgamma`` was off by up to 5e-4 there, and so was every chance the lookahead takes as a
ratio of two counts.

**Proofs are exact.** A log weight is ``-inf`` exactly when no layout has that branch (the
log of a count >= 1 is finite, and ``logaddexp``/``exp`` keep ``-inf`` exact), so "the cell
can be a mine" is ``isfinite`` of its mine mass, never a float threshold: a cell is proved
safe (mine) exactly when no consistent layout has a mine (no mine) there, as
the NumPy reference's integer comparisons say.

**Limits, flagged per view.** ``max_frontier`` steps, ``max_open`` numbers open at once
(4 bits each in the packed key) and ``max_states`` states per step are static. A view that
exceeds one is flagged (``exact`` False): its probabilities are then the belief-propagation
estimate (``msjax.solver.beliefs``), and it proves nothing here. An inconsistent view (no
layout fits) is flagged too (``inconsistent`` True) and gets the same estimate, never NaN.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from msjax.solver.forward import NEG_INF, Table, final_weights, forward_pass, log_layout_count, normalised
from msjax.solver.grid import in_chunks, to_boards
from msjax.solver.types import ExactLimits, Forced, View, check_views


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
    beta, _ = normalised(jnp.logaddexp(safe_side, mine_side))
    return beta, log_safe, log_mine


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


def _analyse_tier(views, steps: int, max_open: int, max_states: int) -> _Tier:
    """The forward pass, the backward pass, and the cells placed on the board, for a
    batch at one table size ``max_states``."""
    revealed, _, mine_count = views
    num_boards, height, width = revealed.shape
    forward = forward_pass(views, steps, max_open, max_states)
    planner, table, cells, alphas, dests, overflow, last = (
        forward.planner, forward.table, forward.cells, forward.alphas, forward.dests, forward.overflow, forward.last
    )

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
        log_layouts=log_layout_count(log_total, log_reference, (forward.shift_total, forward.shift_error)),
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

    Raises:
      ValueError: an argument of another shape or dtype (``check_views``).
    """
    check_views("exact_analysis", revealed, counts, mine_count, limits)
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
    analysis = exact_analysis(
        to_boards(view.revealed), to_boards(view.counts), view.mine_count.reshape(-1), limits
    )
    to_cells = lambda x: jnp.moveaxis(x, 0, -1).reshape(x.shape[1:] + batch_shape)
    safe, mines = to_cells(analysis.safe), to_cells(analysis.mines)
    proofs = Forced(safe, mines, jnp.where(safe | mines, jnp.int8(3), jnp.int8(0)))
    return proofs, to_cells(analysis.mine_prob), analysis.exact.reshape(batch_shape), analysis.log_layouts.reshape(batch_shape)

"""Exact uniform sampling of mine layouts consistent with a view, for a batch of views.

Every layout that fits a view (its revealed numbers and the mine count) is equally
likely: ``sample_layouts`` draws from that distribution exactly, with no rejection and no
Markov chain, by *forward filtering, backward sampling* on the exact analysis' DP
(``msjax.solver.exact``). The forward pass visits the frontier cells one per step and
keeps, at every step, each state's log count of partial layouts and where each of its two
branches (the cell safe, or a mine) went. A sample then walks back:

1. the final state (the frontier's mine count ``m`` and the numbers' needs, all met) is
   drawn in proportion to its layouts times ``C(F, M - m)``, the ways to put the other
   mines on the ``F`` hidden cells off the frontier;
2. at each step, going back, the parent branch of the current state is drawn in
   proportion to the parent's count (a state has at most two parents, so each step costs
   a few operations per sample; ``MAX_PARENTS``); the branch says whether the step's cell
   is a mine;
3. the ``M - m`` mines off the frontier go on a uniform subset of those cells.

Each layout's chance is the product of these conditional chances, which telescopes to
``1 / (number of layouts)``. The draws are Gumbel-max over log weights, so counts near
``e^220`` on 16x30x99 stay exact to float32 rounding of the weights. The table sizes and
the flags are the analysis' (``ExactLimits``: a first pass, the overflowing views again
with larger tables); a view past the limits, or with no consistent layout, is flagged
(``exact`` False) and its samples are empty boards.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from msjax.checks import check_value, ints
from msjax.solver.forward import NEG_INF, Forward, final_weights, forward_pass, log_layout_count
from msjax.solver.grid import in_chunks
from msjax.solver.types import ExactLimits, check_views


class LayoutSamples(NamedTuple):
    """Layouts drawn for a batch of views (leading axis ``[B]``).

    Attributes:
      mines: bool[B, N, H, W], ``N`` layouts per view, each uniform over the layouts that
        fit the view (independent draws); all False where ``exact`` is False.
      exact: bool[B], the view fit the analysis' limits and has a consistent layout.
      inconsistent: bool[B], within the limits, and no layout fits the view.
      log_layouts: float32[B], the log of the number of layouts that fit the view, as
        ``exact_analysis`` gives it (the same forward pass; -inf where not ``exact``).
    """

    mines: jax.Array
    exact: jax.Array
    inconsistent: jax.Array
    log_layouts: jax.Array


class _Drawn(NamedTuple):
    mines: jax.Array  # bool[B, N, H*W]
    log_layouts: jax.Array  # -inf: no layout fits
    has_layout: jax.Array
    crowded: jax.Array
    overflow: jax.Array
    beyond: jax.Array
    impossible: jax.Array


def _gumbel_pick(key: jax.Array, log_weights: jax.Array) -> jax.Array:
    """int32[...]: an index of the last axis drawn in proportion to ``exp(log_weights)``."""
    return jnp.argmax(log_weights + jax.random.gumbel(key, log_weights.shape), axis=-1).astype(jnp.int32)


MAX_PARENTS = 4
"""Parents kept per state in the walk back. A state has at most two (its cell safe from one,
a mine from another) unless a hash collision left two rows of one state in a table
(``msjax.solver.forward``'s merge): then a view whose samples pass through a state with more
is flagged, never drawn unevenly."""


def state_parents(dest: jax.Array, num_states: int):
    """``(parents int32[S, P], is_parent bool[S, P], too_many bool[S])``: the children
    (indices into ``dest``, int32[2S], -1 where dropped) that went to each row of the next
    table, and the rows with more than ``P = MAX_PARENTS`` of them."""
    num_children = dest.shape[0]
    order = jnp.argsort(jnp.where(dest >= 0, dest, num_states), stable=True).astype(jnp.int32)
    rows = jnp.arange(num_states)
    sorted_dest = dest[order]
    first = jnp.searchsorted(jnp.where(sorted_dest >= 0, sorted_dest, num_states), rows).astype(jnp.int32)
    slots = jnp.minimum(first[:, None] + jnp.arange(MAX_PARENTS), num_children - 1)
    is_parent = sorted_dest[slots] == rows[:, None]
    beyond = jnp.minimum(first + MAX_PARENTS, num_children - 1)
    too_many = (first + MAX_PARENTS < num_children) & (sorted_dest[beyond] == rows)
    return order[slots], is_parent, too_many


def _draw_one_view(key_data, forward_view: Forward, revealed, mine_count, num_samples: int):
    """(bool[N, H*W], log_layouts float32[], crowded bool[]): ``num_samples`` layouts of one
    view from its forward pass, the log of its layout count (-inf: none fits), and whether
    a walk back met a state with more than ``MAX_PARENTS`` parents."""
    key = jax.random.wrap_key_data(key_data)
    table, planner = forward_view.table, forward_view.planner
    num_cells = revealed.size
    num_states = table.log_ways.shape[0]
    final_key, back_key, off_key = jax.random.split(key, 3)
    beta, log_reference = final_weights(table, mine_count, planner.num_off, num_cells)
    final = table.log_ways + beta
    row = _gumbel_pick(final_key, jnp.broadcast_to(final, (num_samples, num_states)))
    frontier_mines = table.mines[row]  # int32[N]

    def back(carry):
        t, row, mines, crowded, key = carry
        t = t - 1
        key, step_key = jax.random.split(key)
        parents, is_parent, too_many = state_parents(forward_view.dests[t].astype(jnp.int32), num_states)
        weights = jnp.where(is_parent[row], forward_view.alphas[t][parents[row] % num_states], NEG_INF)  # [N, P]
        child = jnp.take_along_axis(parents[row], _gumbel_pick(step_key, weights)[:, None], axis=1)[:, 0]
        cell = forward_view.cells[t]
        is_mine = (child >= num_states) & (cell >= 0)
        mines = mines.at[:, jnp.maximum(cell, 0)].set(mines[:, jnp.maximum(cell, 0)] | is_mine)
        return t, child % num_states, mines, crowded | jnp.any(too_many[row]), key

    mines = jnp.zeros((num_samples, num_cells), bool)
    start = (forward_view.last, row, mines, jnp.bool_(False), back_key)
    _, _, mines, crowded, _ = jax.lax.while_loop(lambda c: c[0] > 0, back, start)

    visited = jnp.zeros(num_cells, bool).at[jnp.where(forward_view.cells >= 0, forward_view.cells, num_cells)].set(
        True, mode="drop"
    )
    off = ~revealed.reshape(-1) & ~visited
    draws = jnp.where(off[None, :], jax.random.uniform(off_key, (num_samples, num_cells)), 2.0)
    rank = jnp.argsort(jnp.argsort(draws, axis=1), axis=1)  # each off cell's place in a random order
    off_mines = (mine_count - frontier_mines)[:, None]
    shift = (forward_view.shift_total, forward_view.shift_error)
    log_layouts = log_layout_count(jax.nn.logsumexp(final), log_reference, shift)
    return mines | (off[None, :] & (rank < off_mines)), log_layouts, crowded


def _sample_tier(views, keys, steps: int, max_open: int, max_states: int, num_samples: int) -> _Drawn:
    """Samples of a batch at one table size (the forward pass, then the walk back)."""
    revealed, _, mine_count = views
    forward = forward_pass(views, steps, max_open, max_states)
    per_view = forward._replace(
        cells=forward.cells.T, alphas=jnp.moveaxis(forward.alphas, 0, 1), dests=jnp.moveaxis(forward.dests, 0, 1),
    )
    in_axes = Forward(0, 0, 0, 0, 0, 0, 0, 0, None)
    draw = jax.vmap(functools.partial(_draw_one_view, num_samples=num_samples), in_axes=(0, in_axes, 0, 0))
    mines, log_layouts, crowded = draw(keys, per_view, revealed, mine_count)
    planner = forward.planner
    beyond = planner.too_wide | (planner.num_cells > steps)
    return _Drawn(mines, log_layouts, jnp.isfinite(log_layouts), crowded, forward.overflow, beyond, planner.impossible)


@functools.partial(jax.jit, static_argnames=("num_samples", "limits"))
def sample_layouts(
    key: jax.Array, revealed: jax.Array, counts: jax.Array, mine_count: jax.Array, num_samples: int,
    limits: ExactLimits = ExactLimits(),
) -> LayoutSamples:
    """``num_samples`` mine layouts per view, each uniform over the layouts that fit the
    view (module docstring).

    Args:
      key: a PRNG key (typed or legacy); revealed: bool[B, H, W]; counts: int[B, H, W],
        the numbers (read where revealed); mine_count: int[B].
      num_samples: N, static; limits: the analysis' static sizes.

    Returns:
      ``LayoutSamples``: every sample of an ``exact`` view has ``mine_count`` mines, none
      on a revealed cell, and shows every revealed number.

    Raises:
      ValueError: ``num_samples`` not an int >= 1, or a view's argument of another shape or
        dtype (``check_views``).
    """
    check_views("sample_layouts", revealed, counts, mine_count, limits)
    check_value("sample_layouts", "num_samples", num_samples, ints(1))
    num_boards, height, width = revealed.shape
    steps = limits.steps(height, width)
    views = (revealed, counts.astype(jnp.int32), jnp.asarray(mine_count, jnp.int32))
    keys = jax.random.key_data(jax.random.split(key, num_boards))
    tier = functools.partial(_sample_tier, steps=steps, max_open=limits.max_open, num_samples=num_samples)
    sizes = limits.tiers()
    result = tier(views, keys, max_states=sizes[0])
    for depth, size in enumerate(sizes[1:], start=1):
        redo = result.overflow & ~result.beyond & ~result.impossible
        result = in_chunks(
            redo, max(1, num_boards // 8**depth), lambda args, size=size: tier(*args, max_states=size),
            (views, keys), result, axis=0,
        )
    within = ~result.overflow & ~result.beyond & ~result.crowded
    inconsistent = within & (result.impossible | ~result.has_layout)
    exact = within & ~inconsistent
    mines = jnp.where(exact[:, None, None], result.mines, False).reshape(num_boards, num_samples, height, width)
    return LayoutSamples(mines, exact, inconsistent, jnp.where(exact, result.log_layouts, NEG_INF))


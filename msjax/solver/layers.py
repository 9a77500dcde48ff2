"""Deduction layers 1-3 as single passes over the whole board: the number constraints,
the single-cell rules, subset (pair) reasoning, the global mine count and the proof by
contradiction. Each pass takes the constraints left by the proved cells and returns
``(new_safe, new_mines)``, bool[H, W, *b]; ``msjax.solver.deduce`` orders them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from msjax.solver.grid import (
    BOX_OFFSETS,
    PAIR_OFFSETS,
    any_cell,
    flat_cells,
    materialize,
    neighbours,
    on_cells,
    pad,
    static_cells,
    sum_over_cells,
    take,
)
from msjax.solver.types import Constraints, SolverConfig, View


def constraints_of(view: View, safe: jax.Array, mines: jax.Array) -> Constraints:
    """The constraints of ``view`` once the proved ``safe`` and ``mines`` (bool[H, W, *b])
    are taken out (computed once into memory: ``materialize``)."""
    unknown = ~view.revealed & ~safe & ~mines
    need = jnp.where(view.revealed, view.counts - neighbours(mines), 0)
    unk = jnp.where(view.revealed, neighbours(unknown), 0)
    remaining = view.mine_count - sum_over_cells(mines)
    return materialize(Constraints(unknown, need, unk, view.revealed & (unk > 0), remaining))


def layer1(c: Constraints) -> tuple[jax.Array, jax.Array]:
    """Single-cell rules: (new_safe, new_mines) bool[H, W, *b]."""
    all_safe = c.active & (c.need == 0)
    all_mines = c.active & (c.need == c.unk)
    new_safe = (neighbours(all_safe) > 0) & c.unknown
    new_mines = (neighbours(all_mines) > 0) & c.unknown & ~new_safe
    return new_safe, new_mines


def _in_box(offset: tuple[int, int], centre: tuple[int, int]) -> bool:
    return abs(offset[0] - centre[0]) <= 1 and abs(offset[1] - centre[1]) <= 1


def reduce_by_subsets(c: Constraints) -> tuple[jax.Array, jax.Array]:
    """Each number's constraint less the other numbers' constraints that lie inside it.

    Going over the 24 offsets in order, a number ``Y`` drops the unknown cells of a number
    ``X`` when all of them are among the cells ``Y`` still keeps, and ``X``'s missing
    mines with them: ``Y``'s kept cells hold exactly ``Y``'s reduced need. Several
    disjoint ``X`` can come out of one ``Y`` (a 2 with a 1-pair on each side leaves a
    single cell with no mine: a deduction no pair of numbers makes). Of two numbers with
    equal cells only the later one (row-major) drops the other, so every original
    constraint is still implied by the reduced ones (each ``Y`` is its kept part plus
    smaller, or earlier, constraints).

    Belief propagation runs on the reduced constraints: nested and equal cell sets are
    short loops in which it counts the same evidence twice (on a 50/50 pair seen by two
    equal numbers it went to 0 and 1).

    Returns:
      (kept, need): int32[H, W, *b] bits over ``BOX_OFFSETS`` (bit i: the cell at
      ``BOX_OFFSETS[i]`` is kept; 0 off the active numbers), and int32[H, W, *b], the
      mines the kept cells hold.
    """
    unknown_pad = pad(c.unknown, False)
    kept = sum(
        jnp.where(c.active & take(unknown_pad, *o), 1 << i, 0) for i, o in enumerate(BOX_OFFSETS) if o != (0, 0)
    )
    need = c.need
    unk_pad, need_pad, active_pad = pad(c.unk, 0), pad(c.need, 0), pad(c.active, False)
    for d in PAIR_OFFSETS:
        in_x = [i for i, o in enumerate(BOX_OFFSETS) if _in_box(o, d) and o != (0, 0)]
        shared = sum((kept >> i) & 1 for i in in_x)
        size = take(unk_pad, *d)
        earlier = d < (0, 0)  # X comes first in row-major order
        smaller = size <= c.unk if earlier else size < c.unk
        inside = c.active & take(active_pad, *d) & (size > 0) & (shared == size) & smaller
        kept = jnp.where(inside, kept & ~sum(1 << i for i in in_x), kept)
        need = jnp.where(inside, need - take(need_pad, *d), need)
    return materialize((kept, need))


def layer2(c: Constraints) -> tuple[jax.Array, jax.Array]:
    """Subset reasoning between numbers up to two cells apart: (new_safe, new_mines).

    For a number A and a number B = A + d, the verdicts on A's own cells (XA) and on the
    shared cells (S) are computed at A's position as bits of a 3x3 mask (bit i = the cell
    at ``A + BOX_OFFSETS[i]``; bits 0-8 safe, 9-17 mines), OR-ed over the 24 offsets,
    then spread to the cells they speak of. XB is A's XA for the offset -d. The numbers'
    constraints less the numbers inside them (``reduce_by_subsets``) add their own
    verdicts: none left to place makes the kept cells safe, as many as them makes them mines.
    """
    unknown = pad(c.unknown.astype(jnp.int32), 0)
    need_pad, unk_pad, active_pad = pad(c.need, 0), pad(c.unk, 0), pad(c.active, False)
    verdicts = jnp.zeros(c.need.shape, jnp.int32)
    for d in PAIR_OFFSETS:
        shared_offsets = [o for o in BOX_OFFSETS if _in_box(o, d)]
        shared_bits = sum(1 << i for i, o in enumerate(BOX_OFFSETS) if o in shared_offsets)
        only_a_bits = 511 & ~shared_bits
        shared = sum(take(unknown, *o) for o in shared_offsets)
        valid = c.active & take(active_pad, *d)
        need_a, need_b = c.need, take(need_pad, *d)
        only_a, only_b = c.unk - shared, take(unk_pad, *d) - shared
        low = jnp.maximum(jnp.maximum(0, need_a - only_a), need_b - only_b)
        high = jnp.minimum(jnp.minimum(shared, need_a), need_b)
        only_a_safe = valid & (only_a > 0) & (low >= need_a)
        only_a_mines = valid & (only_a > 0) & (need_a - high >= only_a)
        shared_safe = valid & (shared > 0) & (high <= 0)
        shared_mines = valid & (shared > 0) & (low >= shared)
        verdicts = (
            verdicts
            | jnp.where(only_a_safe, only_a_bits, 0)
            | jnp.where(shared_safe, shared_bits, 0)
            | jnp.where(only_a_mines, only_a_bits << 9, 0)
            | jnp.where(shared_mines, shared_bits << 9, 0)
        )
    kept, need = reduce_by_subsets(c)
    size = sum((kept >> i) & 1 for i in range(len(BOX_OFFSETS)))
    verdicts = (
        verdicts
        | jnp.where((kept != 0) & (need == 0), kept, 0)
        | jnp.where((kept != 0) & (need == size), kept << 9, 0)
    )
    verdicts = pad(materialize(verdicts), 0)  # else computed again in each of 9 spreads
    heard = jnp.zeros(c.need.shape, jnp.int32)
    for i, o in enumerate(BOX_OFFSETS):  # the cell A + o hears bit i of A's verdicts
        heard = heard | (take(verdicts, -o[0], -o[1]) & ((1 << i) | (1 << (i + 9))))
    new_safe = ((heard & 511) != 0) & c.unknown
    new_mines = ((heard >> 9) != 0) & c.unknown & ~new_safe
    return new_safe, new_mines


def layer3(c: Constraints) -> tuple[jax.Array, jax.Array]:
    """Global mine count: (new_safe, new_mines) bool[H, W, *b].

    A cell's 3x3 box holds exactly one cell of each of the nine lattices
    ``(r % 3, c % 3)``, so one spread of ``1 << lattice`` over the active numbers tells
    every cell which lattices' neighbourhoods it lies in.
    """
    height, width = c.unknown.shape[:2]
    remaining = on_cells(c.remaining)
    n_unknown = on_cells(sum_over_cells(c.unknown))
    new_safe = c.unknown & (remaining == 0)
    new_mines = c.unknown & (remaining == n_unknown)
    rows, cols = np.mgrid[:height, :width]
    lattice_of = (rows % 3) * 3 + cols % 3
    lattice_bit = static_cells(1 << lattice_of, c.unknown.ndim).astype(jnp.int32)
    covered = materialize(neighbours(jnp.where(c.active, lattice_bit, 0)))
    # all nine lattices at once on a lattice axis after the cell axes: [H, W, 9, *b]
    lattices = np.arange(9).reshape(1, 1, 9)
    one_hot = jnp.asarray(lattice_of[:, :, None] == lattices).reshape((height, width, 9) + (1,) * (c.unknown.ndim - 2))
    need = jnp.where(c.active, c.need, 0)[:, :, None]
    inside = sum_over_cells(jnp.where(one_hot, need, 0))  # [9, *b]
    bits = jnp.asarray(1 << lattices).reshape((1, 1, 9) + (1,) * (c.unknown.ndim - 2))
    outside = c.unknown[:, :, None] & ((covered[:, :, None] & bits) == 0)
    rest = (remaining[:, :, None] - inside[None, None])  # [1, 1, 9, *b]
    n_outside = sum_over_cells(outside)[None, None]
    new_safe = new_safe | jnp.any(outside & (rest == 0), axis=2)
    new_mines = new_mines | jnp.any(outside & (rest == n_outside), axis=2)
    return new_safe, new_mines & ~new_safe


def _inconsistent(c: Constraints) -> jax.Array:
    """bool[*b]: some number needs more mines than its unknown cells or has more proved
    mines than its value, or the mine count is exceeded or cannot be reached."""
    bad_number = (c.need < 0) | (c.need > c.unk)  # both 0 off the revealed cells
    return (
        any_cell(bad_number)
        | (c.remaining < 0)
        | (c.remaining > sum_over_cells(c.unknown))
    )


def contradiction(view: View, c: Constraints, safe: jax.Array, mines: jax.Array, solver_cfg: SolverConfig):
    """Proof by contradiction (the last resort of layer 3): (new_safe, new_mines).

    Each frontier cell is assumed a mine, and separately safe, and layer 1 runs from
    that assumption for up to ``contradiction_rounds`` rounds; an assumption that leads
    to an inconsistent view (``_inconsistent``) is false, so its opposite is proved. The
    frontier is tried ``contradiction_cells`` cells at a time, in row-major order, on a
    hypothesis axis after the cell axes (``[H, W, 2K, *b]``: K mine assumptions, then K
    safe ones), until a pass proves something on every game still looking or the
    frontier is exhausted. Sound by construction: every step is layer 1's.
    """
    size = solver_cfg.contradiction_cells
    frontier = c.unknown & (neighbours(c.active) > 0)
    rank = (jnp.cumsum(flat_cells(frontier).astype(jnp.int32), axis=0) - 1).reshape(frontier.shape)
    n_frontier = sum_over_cells(frontier)
    extra = (1,) * (frontier.ndim - 2)
    slots = jnp.arange(size, dtype=jnp.int32).reshape((1, 1, size) + extra)
    hyp_view = View(view.revealed[:, :, None], view.counts[:, :, None], view.mine_count[None])

    def one_pass(carry):
        start, new_safe, new_mines = carry
        tried = frontier[:, :, None] & (rank[:, :, None] == start + slots)  # [H, W, K, *b]
        no = jnp.zeros_like(tried)
        hyp_mines = mines[:, :, None] | jnp.concatenate([tried, no], axis=2)
        hyp_safe = safe[:, :, None] | jnp.concatenate([no, tried], axis=2)

        def propagate(carry):
            hyp_safe, hyp_mines, bad, rounds, _ = carry
            hc = constraints_of(hyp_view, hyp_safe, hyp_mines)
            bad = bad | _inconsistent(hc)
            step_safe, step_mines = layer1(hc)
            step_safe, step_mines = step_safe & ~on_cells(bad), step_mines & ~on_cells(bad)
            changed = any_cell(step_safe | step_mines)
            return hyp_safe | step_safe, hyp_mines | step_mines, bad, rounds + 1, jnp.any(changed)

        bad = jnp.zeros(hyp_safe.shape[2:], bool)
        hyp_safe, hyp_mines, bad, _, _ = jax.lax.while_loop(
            lambda carry: carry[4] & (carry[3] < solver_cfg.contradiction_rounds),
            propagate,
            (hyp_safe, hyp_mines, bad, jnp.int32(0), jnp.bool_(True)),
        )
        bad = bad | _inconsistent(constraints_of(hyp_view, hyp_safe, hyp_mines))
        mine_false, safe_false = bad[:size], bad[size:]
        new_safe = new_safe | jnp.any(tried & mine_false[None, None], axis=2)
        new_mines = new_mines | jnp.any(tried & safe_false[None, None], axis=2)
        return start + size, new_safe, new_mines

    def more(carry):
        start, new_safe, new_mines = carry
        return jnp.any((n_frontier > start) & ~any_cell(new_safe | new_mines))

    no_cells = jnp.zeros_like(frontier)
    _, new_safe, new_mines = jax.lax.while_loop(more, one_pass, (jnp.int32(0), no_cells, no_cells))
    new_safe = new_safe & c.unknown
    return new_safe, new_mines & c.unknown & ~new_safe

"""The rule solver: layered deduction and best-risk guessing, as pure JAX on one board.

The solver reads only what a player sees: ``revealed``, the numbers on revealed cells
and the total ``mine_count`` (never ``mine_mask``, and never the player's flags, which may
be wrong: deduction uses the mines it has proved itself). Every function works on one
board with fixed shapes, so ``jax.jit`` and ``jax.vmap`` apply unchanged.

The four layers follow seed 001's hybrid solver, done with whole-board array ops:

1. **Single-cell rules**: a number whose missing mines equal its unknown neighbours
   makes them all mines; a number with no missing mines makes them all safe.
2. **Subset (pair) reasoning** between every two numbers up to two cells apart (the 24
   offsets with Chebyshev distance <= 2): with ``S`` the unknown cells they share and
   ``XA``/``XB`` the cells only one of them sees, the mines in ``S`` lie in
   ``[max(0, nA-|XA|, nB-|XB|), min(|S|, nA, nB)]``, which can force ``XA`` or ``S``
   to all-safe or all-mines. This is the general form of the 1-1, 1-2, 1-2-1 and
   1-2-2-1 patterns and their rotations.
3. **Global mine count**: no mines left makes every unknown safe, as many mines as
   unknowns makes them all mines; and for each of the nine 3-spaced lattices of
   numbers (whose neighbourhoods are disjoint, so their missing mines add up exactly),
   the unknown cells outside their neighbourhoods hold exactly the rest of the mines,
   which forces them when that rest is 0 or all of them. When neither pairs nor the
   count prove anything, layer 3 ends with **proof by contradiction**: each frontier cell
   (``contradiction_cells`` at a time) is assumed a mine, and separately safe, layer 1
   runs from the assumption, and an assumption that leads to an impossible view (a
   number with more proved mines than its value or fewer unknown cells than its missing
   mines, or a broken mine count) proves the opposite. It finds chains that no pair of
   numbers sees (on 6x6 test positions layers 1-3 without it find 98.8% of the certain
   cells, with it 98.9%). It is off by default (``contradiction_cells=0``): it did not
   move the measured win rates (see ``SolverConfig``).
4. **Probability guess**: loopy belief propagation over the number constraints (each
   factor's messages computed exactly from its <= 8 unknown neighbours) with a global
   mine-density prior whose odds are re-solved so that the expected mines match the
   mines left. The guess is the unknown cell with the lowest estimated probability;
   near-ties (within ``tie_tolerance``) go to the cell most likely to be a zero, which
   opens new information.

Orchestration (seed 001): layers are tried in order and any progress restarts at layer
1, in ``lax.while_loop`` s (layer 1 to its fixpoint inside a loop over rounds of the
higher layers) that run to a fixpoint (``forced_moves``) or, for
``solver_action``, stops at the first proved-safe cell. A cell's ``layer`` is the layer
whose pass proved it (a cell proved by layer 1 from a mine that layer 2 found counts as
layer 1, as in the seed).

Batches: ``jax.vmap`` of the per-board functions works; ``batch_solver_action`` and
``batch_forced_moves`` give the same results several times faster by laying the boards
on the minor axis; ``batch_solver_action`` also sends only the boards that need the
costly layers to them, in fixed-size chunks (see ``_in_chunks``).

First click: before anything is revealed ``solver_action`` clicks
``SolverConfig.first_click``, by default (3, 3) (clipped to the board) when the first
click opens a region (``guarantee_safe_neighborhood``) and the corner (0, 0) when only
the clicked cell is safe, as the published solvers do.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from msjax import env
from msjax.env import EnvConfig, EnvState

NEIGHBOUR_OFFSETS = tuple((dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0))
BOX_OFFSETS = tuple((dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1))
PAIR_OFFSETS = tuple((dr, dc) for dr in range(-2, 3) for dc in range(-2, 3) if (dr, dc) != (0, 0))
MARGIN = 2  # padding wide enough for every offset above
GUESS_LAYER = 4
NO_LAYER = 0  # first click, random guesses (max_layer < 4), finished games


@dataclasses.dataclass(frozen=True)
class SolverConfig:
    """Static options of the rule solver (frozen and hashable: a static jit argument).

    Attributes:
      max_layer: highest layer used, 1..4. 1 = single-cell rules, 2 = + subset
        reasoning, 3 = + global mine count and proof by contradiction, 4 = + probability
        guess. Below 4 the
        solver guesses uniformly among the unknown cells (layer 0).
      contradiction_cells: frontier cells layer 3's proof by contradiction tries per
        pass (each assumed a mine and, separately, safe); passes repeat over the next
        cells of the frontier until one proves something or the frontier is done.
        0 (the default) disables it: on the same seeds it changed no measured win
        rate (16x16x40 safe first click, 1,024 games: 773 wins with 16, 774 without;
        8x8x10: 3,284 of 4,096 vs 3,279) and costs about 4x the CPU on 8x8x10.
      contradiction_rounds: at most this many layer-1 rounds follow each assumption.
      safety_threshold: a guess whose estimated mine probability is at most this is
        "safe enough": every such cell joins the near-ties and the most informative
        one is taken. 0 disables it (only near-ties of the lowest probability count).
      use_information_gain: among candidate guesses take the one most likely to be a
        zero (the product of its unknown neighbours' safe probabilities, 0 next to a
        proved mine); otherwise a uniformly random candidate.
      tie_tolerance: probabilities within this of the lowest count as ties. 0 (exact
        ties only, e.g. the cells off the frontier, which share one estimate) won 48.7%
        of 8,192 16x30x99 opening-start games against 47.8% with 0.02 (safe first
        click: 35.7% against 36.0%).
      flag_mines: when True, ``solver_action`` flags a proved, unflagged mine before it
        guesses; by default it never spends a move on flags.
      first_click: ``(row, col)`` of the opening click; ``None`` picks (3, 3) (clipped
        to the board) with a safe first-click neighbourhood, else the corner (0, 0).
      bp_iterations: belief-propagation sweeps of layer 4.
      bp_damping: weight of the new message in each sweep, in (0, 1]. 8 sweeps at 0.8
        match 12 at 0.6 (mean gap to the exact probabilities on 6x6 positions 0.0020
        against 0.0020; the same 16x30x99 win rates) at two thirds of the cost; without
        damping (1.0) the estimate oscillates on expert frontiers.
    """

    max_layer: int = 4
    contradiction_cells: int = 0
    contradiction_rounds: int = 8
    safety_threshold: float = 0.0
    use_information_gain: bool = True
    tie_tolerance: float = 0.0
    flag_mines: bool = False
    first_click: tuple[int, int] | None = None
    bp_iterations: int = 8
    bp_damping: float = 0.8

    def __post_init__(self):
        if self.max_layer not in (1, 2, 3, 4):
            raise ValueError(f"SolverConfig.max_layer={self.max_layer} must be one of 1, 2, 3, 4")
        if self.contradiction_cells < 0:
            raise ValueError(f"SolverConfig.contradiction_cells={self.contradiction_cells} must be >= 0")
        if self.contradiction_rounds < 1:
            raise ValueError(f"SolverConfig.contradiction_rounds={self.contradiction_rounds} must be >= 1")
        if not 0.0 <= self.safety_threshold <= 1.0:
            raise ValueError(f"SolverConfig.safety_threshold={self.safety_threshold} must be in [0, 1]")
        if not 0.0 <= self.tie_tolerance <= 1.0:
            raise ValueError(f"SolverConfig.tie_tolerance={self.tie_tolerance} must be in [0, 1]")
        if self.bp_iterations < 1:
            raise ValueError(f"SolverConfig.bp_iterations={self.bp_iterations} must be >= 1")
        if not 0.0 < self.bp_damping <= 1.0:
            raise ValueError(f"SolverConfig.bp_damping={self.bp_damping} must be in (0, 1]")
        if self.first_click is not None and (
            len(self.first_click) != 2 or min(self.first_click) < 0
        ):
            raise ValueError(f"SolverConfig.first_click={self.first_click!r} must be (row, col) >= 0")


class Forced(NamedTuple):
    """What the deduction layers prove about the hidden cells of one board.

    Attributes:
      safe: bool[H, W], hidden cells proved safe.
      mines: bool[H, W], hidden cells proved to be mines.
      layer: int8[H, W], the layer that proved each cell (1..3), 0 where nothing is proved.
    """

    safe: jax.Array
    mines: jax.Array
    layer: jax.Array


class _Constraints(NamedTuple):
    """The number constraints left once the proved cells are taken out.

    unknown: bool[H, W], hidden cells neither proved safe nor proved mines.
    need: int32[H, W], mines still missing around each revealed cell (0 elsewhere).
    unk: int32[H, W], unknown neighbours of each revealed cell (0 elsewhere).
    active: bool[H, W], revealed cells with at least one unknown neighbour.
    remaining: int32[], mines not yet proved.
    """

    unknown: jax.Array
    need: jax.Array
    unk: jax.Array
    active: jax.Array
    remaining: jax.Array


# ----------------------------------------------------------------------------- layout
#
# The core works on cell-major arrays ``[H, W, *batch]``: the board's rows and columns
# first and any boards after them, with per-board scalars shaped ``[*batch]``. One code
# path then serves one board (``batch == ()``, the public per-board API, which
# ``jax.vmap`` batches) and a whole batch with the boards on the minor axis (the
# ``batch_*`` functions), where every shift is a slice of whole contiguous rows and each
# elementwise op runs over the boards with full SIMD width: about 7x faster on CPU than
# the ``[B, H, W]`` layout ``vmap`` produces.


class _View(NamedTuple):
    """What the player sees. revealed: bool[H, W, *b]; counts: int32[H, W, *b] (0 where
    hidden); mine_count: int32[*b]."""

    revealed: jax.Array
    counts: jax.Array
    mine_count: jax.Array


def _view(state: EnvState, batched: bool = False) -> _View:
    """The player's view of one state, or of a batch (leading axis) moved to cell-major."""
    counts = jnp.where(state.revealed, state.counts.astype(jnp.int32), 0)
    revealed = state.revealed
    if batched:
        revealed, counts = jnp.moveaxis(revealed, 0, -1), jnp.moveaxis(counts, 0, -1)
    return _View(revealed, counts, state.mine_count.astype(jnp.int32))


def _cells(board_values: jax.Array) -> jax.Array:
    """[*b] -> [1, 1, *b]: a per-board value broadcast against cells."""
    return board_values[None, None]


def _flat(cells: jax.Array) -> jax.Array:
    return cells.reshape((cells.shape[0] * cells.shape[1],) + cells.shape[2:])


def _materialize(tree):
    """``tree`` unchanged, but computed once into memory.

    XLA's CPU fusion copies cheap elementwise producers into every consumer; a value
    read at 8 shifts (a neighbour sum) is then computed 8 times, and chains of such reads
    multiply (layer 2 and belief propagation ran 10-100x slower). Branches of a
    conditional are separate computations that fusion cannot enter, so passing the value
    through an identity ``lax.cond`` on a predicate XLA cannot fold forces it into a
    buffer. (``optimization_barrier`` does not stop this fusion on CPU.) Under ``vmap``
    the cond becomes a select of two equal values: the same result.
    """
    first = jax.tree.leaves(tree)[0]
    predicate = first.reshape(-1)[0].astype(jnp.float32) > 0.5
    return jax.lax.cond(predicate, lambda: tree, lambda: jax.tree.map(lambda x: x, tree))


def _board_sum(cells: jax.Array) -> jax.Array:
    """[H, W, *b] -> [*b]: the sum over each board's cells (int32 for bools and ints).

    A float32 dot with ones: on CPU it is several times faster than XLA's reduction over
    the leading axes, and XLA never fuses it into (and recomputes it inside) a consumer
    that broadcasts it back over the cells. Exact for integers below 2**24.
    """
    ones = jnp.ones(cells.shape[0] * cells.shape[1], jnp.float32)
    total = jnp.tensordot(ones, _flat(cells).astype(jnp.float32), axes=1)
    return total if jnp.issubdtype(cells.dtype, jnp.floating) else total.astype(jnp.int32)


def _board_any(cells: jax.Array) -> jax.Array:
    return _board_sum(cells) > 0


def _pad(cells: jax.Array, fill) -> jax.Array:
    widths = [(MARGIN, MARGIN)] * 2 + [(0, 0)] * (cells.ndim - 2)
    return jnp.pad(cells, widths, constant_values=fill)


def _take(padded: jax.Array, dr: int, dc: int) -> jax.Array:
    """From a ``_pad``-ed array, ``y[r, c] = x[r + dr, c + dc]`` (the fill off the board)."""
    height, width = padded.shape[0] - 2 * MARGIN, padded.shape[1] - 2 * MARGIN
    return padded[MARGIN + dr : MARGIN + dr + height, MARGIN + dc : MARGIN + dc + width]


def _neighbours(cells: jax.Array) -> jax.Array:
    """[H, W, *b] -> sum over each cell's 8 neighbours (int32 for bools)."""
    if cells.dtype == bool:
        cells = cells.astype(jnp.int32)
    padded = _pad(cells, 0)
    return sum(_take(padded, dr, dc) for dr, dc in NEIGHBOUR_OFFSETS)


def _static_cells(values, ndim: int) -> jax.Array:
    """A static ``[H, W]`` array shaped to broadcast against ``ndim``-dim cell arrays."""
    return jnp.asarray(values).reshape(values.shape + (1,) * (ndim - 2))


def _constraints(view: _View, safe: jax.Array, mines: jax.Array) -> _Constraints:
    unknown = ~view.revealed & ~safe & ~mines
    need = jnp.where(view.revealed, view.counts - _neighbours(mines), 0)
    unk = jnp.where(view.revealed, _neighbours(unknown), 0)
    remaining = view.mine_count - _board_sum(mines)
    return _materialize(_Constraints(unknown, need, unk, view.revealed & (unk > 0), remaining))


# ----------------------------------------------------------------------------- layers 1-3


def _layer1(c: _Constraints) -> tuple[jax.Array, jax.Array]:
    """Single-cell rules: (new_safe, new_mines) bool[H, W, *b]."""
    all_safe = c.active & (c.need == 0)
    all_mines = c.active & (c.need == c.unk)
    new_safe = (_neighbours(all_safe) > 0) & c.unknown
    new_mines = (_neighbours(all_mines) > 0) & c.unknown & ~new_safe
    return new_safe, new_mines


def _in_box(offset: tuple[int, int], centre: tuple[int, int]) -> bool:
    return abs(offset[0] - centre[0]) <= 1 and abs(offset[1] - centre[1]) <= 1


def _reduce_by_subsets(c: _Constraints) -> tuple[jax.Array, jax.Array]:
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
    unknown_pad = _pad(c.unknown, False)
    kept = sum(
        jnp.where(c.active & _take(unknown_pad, *o), 1 << i, 0) for i, o in enumerate(BOX_OFFSETS) if o != (0, 0)
    )
    need = c.need
    unk_pad, need_pad, active_pad = _pad(c.unk, 0), _pad(c.need, 0), _pad(c.active, False)
    for d in PAIR_OFFSETS:
        in_x = [i for i, o in enumerate(BOX_OFFSETS) if _in_box(o, d) and o != (0, 0)]
        shared = sum((kept >> i) & 1 for i in in_x)
        size = _take(unk_pad, *d)
        earlier = d < (0, 0)  # X comes first in row-major order
        smaller = size <= c.unk if earlier else size < c.unk
        inside = c.active & _take(active_pad, *d) & (size > 0) & (shared == size) & smaller
        kept = jnp.where(inside, kept & ~sum(1 << i for i in in_x), kept)
        need = jnp.where(inside, need - _take(need_pad, *d), need)
    return _materialize((kept, need))


def _layer2(c: _Constraints) -> tuple[jax.Array, jax.Array]:
    """Subset reasoning between numbers up to two cells apart: (new_safe, new_mines).

    For a number A and a number B = A + d, the verdicts on A's own cells (XA) and on the
    shared cells (S) are computed at A's position as bits of a 3x3 mask (bit i = the cell
    at ``A + BOX_OFFSETS[i]``; bits 0-8 safe, 9-17 mines), OR-ed over the 24 offsets,
    then spread to the cells they speak of. XB is A's XA for the offset -d. The numbers'
    constraints less the numbers inside them (``_reduce_by_subsets``) add their own
    verdicts: none left to place makes the kept cells safe, as many as them makes them mines.
    """
    unknown = _pad(c.unknown.astype(jnp.int32), 0)
    need_pad, unk_pad, active_pad = _pad(c.need, 0), _pad(c.unk, 0), _pad(c.active, False)
    verdicts = jnp.zeros(c.need.shape, jnp.int32)
    for d in PAIR_OFFSETS:
        shared_offsets = [o for o in BOX_OFFSETS if _in_box(o, d)]
        shared_bits = sum(1 << i for i, o in enumerate(BOX_OFFSETS) if o in shared_offsets)
        only_a_bits = 511 & ~shared_bits
        shared = sum(_take(unknown, *o) for o in shared_offsets)
        valid = c.active & _take(active_pad, *d)
        need_a, need_b = c.need, _take(need_pad, *d)
        only_a, only_b = c.unk - shared, _take(unk_pad, *d) - shared
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
    kept, need = _reduce_by_subsets(c)
    size = sum((kept >> i) & 1 for i in range(len(BOX_OFFSETS)))
    verdicts = (
        verdicts
        | jnp.where((kept != 0) & (need == 0), kept, 0)
        | jnp.where((kept != 0) & (need == size), kept << 9, 0)
    )
    verdicts = _pad(_materialize(verdicts), 0)  # else computed again in each of 9 spreads
    heard = jnp.zeros(c.need.shape, jnp.int32)
    for i, o in enumerate(BOX_OFFSETS):  # the cell A + o hears bit i of A's verdicts
        heard = heard | (_take(verdicts, -o[0], -o[1]) & ((1 << i) | (1 << (i + 9))))
    new_safe = ((heard & 511) != 0) & c.unknown
    new_mines = ((heard >> 9) != 0) & c.unknown & ~new_safe
    return new_safe, new_mines


def _layer3(c: _Constraints) -> tuple[jax.Array, jax.Array]:
    """Global mine count: (new_safe, new_mines) bool[H, W, *b].

    A cell's 3x3 box holds exactly one cell of each of the nine lattices
    ``(r % 3, c % 3)``, so one spread of ``1 << lattice`` over the active numbers tells
    every cell which lattices' neighbourhoods it lies in.
    """
    height, width = c.unknown.shape[:2]
    remaining = _cells(c.remaining)
    n_unknown = _cells(_board_sum(c.unknown))
    new_safe = c.unknown & (remaining == 0)
    new_mines = c.unknown & (remaining == n_unknown)
    rows, cols = np.mgrid[:height, :width]
    lattice_of = (rows % 3) * 3 + cols % 3
    lattice_bit = _static_cells(1 << lattice_of, c.unknown.ndim).astype(jnp.int32)
    covered = _materialize(_neighbours(jnp.where(c.active, lattice_bit, 0)))
    # all nine lattices at once on a lattice axis after the cell axes: [H, W, 9, *b]
    lattices = np.arange(9).reshape(1, 1, 9)
    one_hot = jnp.asarray(lattice_of[:, :, None] == lattices).reshape((height, width, 9) + (1,) * (c.unknown.ndim - 2))
    need = jnp.where(c.active, c.need, 0)[:, :, None]
    inside = _board_sum(jnp.where(one_hot, need, 0))  # [9, *b]
    bits = jnp.asarray(1 << lattices).reshape((1, 1, 9) + (1,) * (c.unknown.ndim - 2))
    outside = c.unknown[:, :, None] & ((covered[:, :, None] & bits) == 0)
    rest = (remaining[:, :, None] - inside[None, None])  # [1, 1, 9, *b]
    n_outside = _board_sum(outside)[None, None]
    new_safe = new_safe | jnp.any(outside & (rest == 0), axis=2)
    new_mines = new_mines | jnp.any(outside & (rest == n_outside), axis=2)
    return new_safe, new_mines & ~new_safe


def _inconsistent(c: _Constraints) -> jax.Array:
    """bool[*b]: some number needs more mines than its unknown cells or has more proved
    mines than its value, or the mine count is exceeded or cannot be reached."""
    bad_number = (c.need < 0) | (c.need > c.unk)  # both 0 off the revealed cells
    return (
        _board_any(bad_number)
        | (c.remaining < 0)
        | (c.remaining > _board_sum(c.unknown))
    )


def _contradiction(view: _View, c: _Constraints, safe: jax.Array, mines: jax.Array, solver_cfg: SolverConfig):
    """Proof by contradiction (the last resort of layer 3): (new_safe, new_mines).

    Each frontier cell is assumed a mine, and separately safe, and layer 1 runs from
    that assumption for up to ``contradiction_rounds`` rounds; an assumption that leads
    to an inconsistent view (``_inconsistent``) is false, so its opposite is proved. The
    frontier is tried ``contradiction_cells`` cells at a time, in row-major order, on a
    hypothesis axis after the cell axes (``[H, W, 2K, *b]``: K mine assumptions, then K
    safe ones), until a pass proves something on every board still looking or the
    frontier is exhausted. Sound by construction: every step is layer 1's.
    """
    size = solver_cfg.contradiction_cells
    frontier = c.unknown & (_neighbours(c.active) > 0)
    rank = (jnp.cumsum(_flat(frontier).astype(jnp.int32), axis=0) - 1).reshape(frontier.shape)
    n_frontier = _board_sum(frontier)
    extra = (1,) * (frontier.ndim - 2)
    slots = jnp.arange(size, dtype=jnp.int32).reshape((1, 1, size) + extra)
    hyp_view = _View(view.revealed[:, :, None], view.counts[:, :, None], view.mine_count[None])

    def one_pass(carry):
        start, new_safe, new_mines = carry
        tried = frontier[:, :, None] & (rank[:, :, None] == start + slots)  # [H, W, K, *b]
        no = jnp.zeros_like(tried)
        hyp_mines = mines[:, :, None] | jnp.concatenate([tried, no], axis=2)
        hyp_safe = safe[:, :, None] | jnp.concatenate([no, tried], axis=2)

        def propagate(carry):
            hyp_safe, hyp_mines, bad, rounds, _ = carry
            hc = _constraints(hyp_view, hyp_safe, hyp_mines)
            bad = bad | _inconsistent(hc)
            step_safe, step_mines = _layer1(hc)
            step_safe, step_mines = step_safe & ~_cells(bad), step_mines & ~_cells(bad)
            changed = _board_any(step_safe | step_mines)
            return hyp_safe | step_safe, hyp_mines | step_mines, bad, rounds + 1, jnp.any(changed)

        bad = jnp.zeros(hyp_safe.shape[2:], bool)
        hyp_safe, hyp_mines, bad, _, _ = jax.lax.while_loop(
            lambda carry: carry[4] & (carry[3] < solver_cfg.contradiction_rounds),
            propagate,
            (hyp_safe, hyp_mines, bad, jnp.int32(0), jnp.bool_(True)),
        )
        bad = bad | _inconsistent(_constraints(hyp_view, hyp_safe, hyp_mines))
        mine_false, safe_false = bad[:size], bad[size:]
        new_safe = new_safe | jnp.any(tried & mine_false[None, None], axis=2)
        new_mines = new_mines | jnp.any(tried & safe_false[None, None], axis=2)
        return start + size, new_safe, new_mines

    def more(carry):
        start, new_safe, new_mines = carry
        return jnp.any((n_frontier > start) & ~_board_any(new_safe | new_mines))

    no_cells = jnp.zeros_like(frontier)
    _, new_safe, new_mines = jax.lax.while_loop(more, one_pass, (jnp.int32(0), no_cells, no_cells))
    new_safe = new_safe & c.unknown
    return new_safe, new_mines & c.unknown & ~new_safe


def _record(forced: Forced, new_safe, new_mines, level) -> Forced:
    new = new_safe | new_mines
    return Forced(forced.safe | new_safe, forced.mines | new_mines, jnp.where(new, level, forced.layer))


def _empty_forced(view: _View) -> Forced:
    empty = jnp.zeros_like(view.revealed)
    return Forced(empty, empty, jnp.zeros(view.revealed.shape, jnp.int8))


def _layer1_fixpoint(view: _View, forced: Forced, running: jax.Array, stop_at_safe: bool) -> Forced:
    """Layer 1 repeated on the boards in ``running`` (bool[*b]) until it stalls (or a
    proved-safe cell exists, with ``stop_at_safe``)."""

    def pending(forced, running):
        return running & ~_board_any(forced.safe) if stop_at_safe else running

    def one_pass(carry):
        forced, running = carry
        new_safe, new_mines = _layer1(_constraints(view, forced.safe, forced.mines))
        new_safe, new_mines = new_safe & _cells(running), new_mines & _cells(running)
        forced = _record(forced, new_safe, new_mines, jnp.int8(1))
        return forced, pending(forced, running & _board_any(new_safe | new_mines))

    forced, _ = jax.lax.while_loop(
        lambda carry: jnp.any(carry[1]), one_pass, (forced, pending(forced, running))
    )
    return forced


def _deduce_from(
    view: _View,
    forced: Forced,
    running: jax.Array,
    solver_cfg: SolverConfig,
    stop_at_safe: bool,
    max_rounds: int = 0,
) -> tuple[Forced, jax.Array]:
    """Seed 001's orchestration on the boards in ``running``: layer 1 to a fixpoint, then
    layer 2, else layer 3, and back to layer 1 after any progress; ends when no layer
    makes progress (or, with ``stop_at_safe``, once a proved-safe cell exists).

    With ``max_rounds`` > 0 it stops after that many rounds (layer-1 fixpoint + one
    higher layer); the returned ``running`` (bool[*b]) marks the boards not finished.
    """
    if solver_cfg.max_layer == 1:
        return _layer1_fixpoint(view, forced, running, stop_at_safe), jnp.zeros_like(running)

    def one_round(carry):
        forced, running, rounds = carry
        forced = _layer1_fixpoint(view, forced, running, stop_at_safe)
        if stop_at_safe:
            running = running & ~_board_any(forced.safe)
        c = _constraints(view, forced.safe, forced.mines)
        new_safe, new_mines = _layer2(c)
        level = jnp.full(running.shape, 2, jnp.int8)
        if solver_cfg.max_layer >= 3:
            by_pairs = _board_any(new_safe | new_mines)
            global_safe, global_mines = _layer3(c)
            new_safe = jnp.where(_cells(by_pairs), new_safe, global_safe)
            new_mines = jnp.where(_cells(by_pairs), new_mines, global_mines)
            level = jnp.where(by_pairs, level, jnp.int8(3))
            if solver_cfg.contradiction_cells:
                stuck = running & ~_board_any(new_safe | new_mines)

                def by_contradiction():
                    proved_safe, proved_mines = _contradiction(view, c, forced.safe, forced.mines, solver_cfg)
                    return (
                        jnp.where(_cells(stuck), proved_safe, new_safe),
                        jnp.where(_cells(stuck), proved_mines, new_mines),
                    )

                new_safe, new_mines = jax.lax.cond(
                    jnp.any(stuck), by_contradiction, lambda: (new_safe, new_mines)
                )
        new_safe, new_mines = new_safe & _cells(running), new_mines & _cells(running)
        forced = _record(forced, new_safe, new_mines, _cells(level))
        return forced, running & _board_any(new_safe | new_mines), rounds + 1

    def more(carry):
        _, running, rounds = carry
        return jnp.any(running) & ((rounds < max_rounds) if max_rounds else True)

    forced, running, _ = jax.lax.while_loop(more, one_round, (forced, running, jnp.int32(0)))
    return forced, running


def _deduce(view: _View, solver_cfg: SolverConfig, stop_at_safe: bool) -> Forced:
    running = jnp.ones(view.mine_count.shape, bool)
    return _deduce_from(view, _empty_forced(view), running, solver_cfg, stop_at_safe)[0]


def forced_moves(state: EnvState, cfg: EnvConfig, solver_cfg: SolverConfig = SolverConfig()) -> Forced:
    """Every hidden cell that layers ``1..min(max_layer, 3)`` prove safe or a mine.

    Args:
      state: one game (no batch axis; ``jax.vmap`` it, or use ``batch_forced_moves``).
      cfg: the static env config.
      solver_cfg: the static solver config.

    Returns:
      ``Forced(safe, mines, layer)``, each ``[H, W]``.
    """
    del cfg  # shapes come from the state
    return _deduce(_view(state), solver_cfg, stop_at_safe=False)


@functools.partial(jax.jit, static_argnums=(1, 2))
def batch_forced_moves(
    states: EnvState, cfg: EnvConfig, solver_cfg: SolverConfig = SolverConfig()
) -> Forced:
    """``jax.vmap(forced_moves)`` computed in the faster cell-major layout: ``[B, H, W]`` fields."""
    del cfg
    forced = _deduce(_view(states, batched=True), solver_cfg, stop_at_safe=False)
    return jax.tree.map(lambda x: jnp.moveaxis(x, -1, 0), forced)


# ----------------------------------------------------------------------------- layer 4


def _times_linear(poly: list[jax.Array], safe_p: jax.Array, mine_p: jax.Array) -> list[jax.Array]:
    """Coefficients of ``poly(z) * (safe_p + mine_p z)``, lowest degree first."""
    out = [poly[0] * safe_p]
    for k in range(1, len(poly)):
        out.append(poly[k] * safe_p + poly[k - 1] * mine_p)
    out.append(poly[-1] * mine_p)
    return out


def _factor_messages(to_factor: list[jax.Array], need_is: list[jax.Array]) -> list[jax.Array]:
    """Exact messages of each number to each of its 8 neighbours.

    Args:
      to_factor: 8 x float32[H, W, *b], the mine probability each neighbour (by
        direction) sends to the number; 0 for neighbours that are not unknown.
      need_is: 9 x bool[H, W, *b], ``need == k``.

    Returns:
      8 x float32[H, W, *b]: P(neighbour is a mine) given the number and the other
      neighbours' messages: the leave-one-out generating polynomial's coefficient at
      ``need - 1`` over the sum of those at ``need - 1`` and ``need``.
    """
    n = len(to_factor)
    one = jnp.ones_like(to_factor[0])
    prefix = [[one]]
    for q in to_factor:
        prefix.append(_times_linear(prefix[-1], 1.0 - q, q))
    suffix = [[one]]
    for q in reversed(to_factor):
        suffix.append(_times_linear(suffix[-1], 1.0 - q, q))
    suffix = suffix[::-1]  # suffix[d] covers directions d..n-1
    prefix, suffix = _materialize((prefix, suffix))
    messages = []
    for d in range(n):
        others = [None] * n
        for i, a in enumerate(prefix[d]):
            for j, b in enumerate(suffix[d + 1]):
                others[i + j] = a * b if others[i + j] is None else others[i + j] + a * b
        at_need = sum(jnp.where(need_is[k], others[k], 0.0) for k in range(n))
        at_need_minus_one = sum(jnp.where(need_is[k + 1], others[k], 0.0) for k in range(n))
        total = at_need + at_need_minus_one
        messages.append(jnp.where(total > 0, at_need_minus_one / jnp.where(total > 0, total, 1.0), 0.5))
    return messages


def _solve_prior(evidence, unknown, remaining, log_prior, steps: int = 3):
    """Newton steps on the log prior odds ``log_prior`` [*b] so that the expected mines,
    ``sum(p)`` with ``p = t*E / (1 + t*E)`` and ``t = exp(log_prior)`` over the unknown
    cells (evidence odds ``E``), equal the mines left."""
    target = remaining.astype(jnp.float32)
    for _ in range(steps):
        odds = _cells(jnp.exp(log_prior)) * evidence
        p = jnp.where(unknown, odds / (1.0 + odds), 0.0)
        excess = _board_sum(p) - target
        slope = _board_sum(p * (1.0 - p))
        step = jnp.clip(excess / jnp.maximum(slope, 1e-6), -2.0, 2.0)
        log_prior = jnp.clip(log_prior - step, -MAX_LOG_PRIOR, MAX_LOG_PRIOR)
    return log_prior


MAX_LOG_PRIOR = 15.0
MESSAGE_FLOOR = 1e-4  # messages stay in [floor, 1 - floor]: odds within 1e+-4
EVIDENCE_CAP = 1e30  # keeps prior * evidence odds inside float32


def _belief_propagation(c: _Constraints, solver_cfg: SolverConfig) -> jax.Array:
    """float32[H, W, *b]: estimated mine probability of each unknown cell (0 elsewhere).

    Loopy belief propagation in the odds domain (no per-cell transcendentals): the
    variables are the unknown cells, the factors the numbers, each factor's message exact
    over its neighbours. The prior odds of a mine, shared by the cells of a board, are
    re-solved after every sweep so that the expected number of mines equals the mines
    left (the global count in its grand-canonical form).
    """
    kept, need = _reduce_by_subsets(c)
    edges = [(kept & (1 << BOX_OFFSETS.index(d))) != 0 for d in NEIGHBOUR_OFFSETS]
    need_is = [need == k for k in range(len(NEIGHBOUR_OFFSETS) + 1)]
    n_unknown = jnp.maximum(_board_sum(c.unknown), 1)
    density = jnp.clip(c.remaining / n_unknown, 1e-6, 1 - 1e-6).astype(jnp.float32)
    damping = solver_cfg.bp_damping

    def odds_of(messages):  # at the number's position, 1 on non-edges
        return [jnp.where(e, m / (1.0 - m), 1.0) for e, m in zip(edges, messages)]

    def evidence_of(message_odds):  # the variable at u hears the number at u - d
        total = functools.reduce(
            jnp.multiply,
            [_take(_pad(o, 1.0), -d[0], -d[1]) for o, d in zip(message_odds, NEIGHBOUR_OFFSETS)],
        )
        return jnp.clip(total, 1.0 / EVIDENCE_CAP, EVIDENCE_CAP)

    def sweep(_, carry):
        messages, evidence, log_prior = carry
        message_odds = _materialize(odds_of(messages))
        belief = _pad(_materialize(_cells(jnp.exp(log_prior)) * evidence), 1.0)
        to_factor = []
        for edge, d, o in zip(edges, NEIGHBOUR_OFFSETS, message_odds):
            cavity = _take(belief, *d) / o  # the neighbour's odds without this number
            to_factor.append(jnp.where(edge, cavity / (1.0 + cavity), 0.0))
        fresh = _factor_messages(_materialize(to_factor), need_is)
        messages = [
            jnp.clip((1 - damping) * m + damping * f, MESSAGE_FLOOR, 1 - MESSAGE_FLOOR)
            for m, f in zip(messages, fresh)
        ]
        evidence = _materialize(evidence_of(odds_of(messages)))
        log_prior = _solve_prior(evidence, c.unknown, c.remaining, log_prior)
        return messages, evidence, log_prior

    halves = [jnp.full(c.unknown.shape, 0.5, jnp.float32) for _ in NEIGHBOUR_OFFSETS]
    start = (halves, jnp.ones(c.unknown.shape, jnp.float32), jnp.log(density) - jnp.log1p(-density))
    _, evidence, log_prior = jax.lax.fori_loop(0, solver_cfg.bp_iterations, sweep, start)
    odds = _cells(jnp.exp(log_prior)) * evidence
    return jnp.where(c.unknown, odds / (1.0 + odds), 0.0)


def _probabilities(view: _View, forced: Forced, solver_cfg: SolverConfig) -> jax.Array:
    c = _constraints(view, forced.safe, forced.mines)
    return jnp.where(forced.mines, 1.0, _belief_propagation(c, solver_cfg)).astype(jnp.float32)


def mine_probabilities(
    state: EnvState, cfg: EnvConfig, solver_cfg: SolverConfig = SolverConfig()
) -> jax.Array:
    """float32[H, W]: the solver's estimate that each hidden cell holds a mine.

    Deduction runs with layers 1-3 (whatever ``max_layer`` says); proved mines are 1,
    proved-safe and revealed cells 0, the other hidden cells get the layer-4 estimate.
    """
    del cfg
    view = _view(state)
    deduction_cfg = dataclasses.replace(solver_cfg, max_layer=3)
    return _probabilities(view, _deduce(view, deduction_cfg, stop_at_safe=False), solver_cfg)


# ----------------------------------------------------------------------------- actions


def default_first_click(cfg: EnvConfig, solver_cfg: SolverConfig = SolverConfig()) -> tuple[int, int]:
    """The opening click ``(row, col)``: ``solver_cfg.first_click`` clipped to the board,
    else (3, 3) with a safe first-click neighbourhood and (0, 0) without."""
    if solver_cfg.first_click is not None:
        row, col = solver_cfg.first_click
    elif cfg.guarantee_safe_neighborhood:
        row, col = 3, 3
    else:
        row, col = 0, 0
    return min(row, cfg.H - 1), min(col, cfg.W - 1)


def _best_cell(mask: jax.Array, score: jax.Array) -> jax.Array:
    """int32[*b]: the flat (row-major) index of the highest ``score`` inside ``mask``,
    the first one on ties."""
    return jnp.argmax(_flat(jnp.where(mask, score, -jnp.inf)), axis=0).astype(jnp.int32)


def _at_cell(cells: jax.Array, index: jax.Array) -> jax.Array:
    """int32[*b]: cells[H, W, *b] (small integers) at the flat index int32[*b] of each board."""
    height, width = cells.shape[:2]
    flat_index = _static_cells(np.arange(height * width).reshape(height, width), cells.ndim)
    return _board_sum(jnp.where(flat_index == _cells(index), cells, 0))


def _zero_chance(probability: jax.Array, c: _Constraints, mines: jax.Array) -> jax.Array:
    """float32[H, W, *b]: chance that a cell is a zero if safe, treating its neighbours as
    independent; 0 next to a proved mine."""
    log_safe = jnp.where(c.unknown, jnp.log1p(-jnp.clip(probability, 0.0, 1 - 1e-6)), 0.0)
    return jnp.where(_neighbours(mines) > 0, 0.0, jnp.exp(_neighbours(log_safe)))


def _noise(keys: jax.Array, shape: tuple[int, int]) -> jax.Array:
    """float32[H, W, *b] uniform tie-break noise, one draw per board key (keys: [*b])."""
    draw = lambda key: jax.random.uniform(key, shape)
    for _ in range(keys.ndim):
        draw = jax.vmap(draw)
    noise = draw(keys)
    return jnp.moveaxis(noise, (-2, -1), (0, 1))


def _guess(view: _View, forced: Forced, keys: jax.Array, solver_cfg: SolverConfig):
    """(cell int32[*b], layer int32[*b]): the layer-4 guess, or below layer 4 a uniform
    one among the unknown cells (layer 0)."""
    c = _constraints(view, forced.safe, forced.mines)
    # every hidden cell a proved mine happens only on a won board; any hidden cell then
    candidates = jnp.where(_cells(_board_any(c.unknown)), c.unknown, ~view.revealed)
    noise = _noise(keys, view.revealed.shape[:2])
    if solver_cfg.max_layer < GUESS_LAYER:
        return _best_cell(candidates, noise), jnp.full(keys.shape, NO_LAYER, jnp.int32)
    probability = _belief_propagation(c, solver_cfg)
    lowest = jnp.min(_flat(jnp.where(c.unknown, probability, jnp.inf)), axis=0)
    good = candidates & (
        (probability <= _cells(lowest) + solver_cfg.tie_tolerance)
        | (probability <= solver_cfg.safety_threshold)
    )
    good = jnp.where(_cells(_board_any(good)), good, candidates)
    if solver_cfg.use_information_gain:
        score = _zero_chance(probability, c, forced.mines) - probability + 1e-4 * noise
    else:
        score = noise
    return _best_cell(good, score), jnp.full(keys.shape, GUESS_LAYER, jnp.int32)


def _safe_move(view: _View, forced: Forced):
    """(cell, layer, found) [*b]: a proved-safe cell, preferring one with no proved mine
    next to it (it may be a zero and open a region)."""
    safe = forced.safe & ~view.revealed
    cell = _best_cell(safe, -_neighbours(forced.mines).astype(jnp.float32))
    return cell, _at_cell(forced.layer, cell).astype(jnp.int32), _board_any(safe)


def _fallback_move(view, forced, flags, keys, cfg: EnvConfig, solver_cfg: SolverConfig):
    """(action, layer) [*b] when no cell is proved safe: a flag on a proved mine (with
    ``flag_mines``), else a guess."""
    cell, layer = _guess(view, forced, keys, solver_cfg)
    if not solver_cfg.flag_mines:
        return cell, layer
    to_flag = forced.mines & ~flags & ~view.revealed
    flag_cell = _best_cell(to_flag, jnp.zeros(to_flag.shape))
    has_flag = _board_any(to_flag)
    action = jnp.where(has_flag, flag_cell + cfg.num_cells, cell)
    layer = jnp.where(has_flag, _at_cell(forced.layer, flag_cell).astype(jnp.int32), layer)
    return action, layer


def _finish(action, layer, view: _View, done, cfg: EnvConfig, solver_cfg: SolverConfig):
    """The opening click before anything is revealed; action 0, layer 0 on finished games."""
    row, col = default_first_click(cfg, solver_cfg)
    opening = ~_board_any(view.revealed)
    action = jnp.where(opening, jnp.int32(row * cfg.W + col), action)
    layer = jnp.where(opening | done, jnp.int32(NO_LAYER), layer)
    return jnp.where(done, jnp.int32(0), action).astype(jnp.int32), layer.astype(jnp.int32)


def solver_action(
    state: EnvState, key: jax.Array, cfg: EnvConfig, solver_cfg: SolverConfig = SolverConfig()
) -> tuple[jax.Array, jax.Array]:
    """The solver's move on one board: always a legal action of an unfinished game.

    In order: the opening click (before anything is revealed); a reveal of a proved-safe
    cell; with ``flag_mines``, a flag on a proved mine not yet flagged; else a guess.

    Args:
      state: one game (no batch axis; ``batch_solver_action`` is the fast batched form).
      key: PRNG key for tie-breaks among guesses.
      cfg, solver_cfg: static configs.

    Returns:
      ``(action int32[], layer int32[])``: ``layer`` is the layer that proved the revealed
      or flagged cell (1..3), 4 for a layer-4 guess, and 0 for the opening click, a random
      guess (``max_layer < 4``) or a finished game (whose action is 0 and means nothing).
    """
    view = _view(state)
    forced = _deduce(view, solver_cfg, stop_at_safe=True)
    cell, layer, found = _safe_move(view, forced)
    action, layer = jax.lax.cond(
        found,
        lambda: (cell, layer),
        lambda: _fallback_move(view, forced, state.flags, key, cfg, solver_cfg),
    )
    return _finish(action, layer, view, state.done, cfg, solver_cfg)


def _in_chunks(need: jax.Array, chunk_size: int, fn, inputs, outputs):
    """Runs ``fn`` only on the boards where ``need`` (bool[B]) holds, ``chunk_size`` at a
    time: the needing boards are gathered (trailing batch axis) into fixed-size chunks,
    and ``fn``'s results are scattered into ``outputs`` (pytree, trailing axis B)."""
    num_boards = need.shape[0]
    size = min(chunk_size, num_boards)
    num_chunks = -(-num_boards // size)
    order = jnp.argsort(~need, stable=True).astype(jnp.int32)  # needing boards first
    order = jnp.concatenate([order, order[: num_chunks * size - num_boards]])
    num_need = jnp.sum(need, dtype=jnp.int32)

    def one_chunk(carry):
        i, outputs = carry
        index = jax.lax.dynamic_slice(order, (i * size,), (size,))
        valid = i * size + jnp.arange(size) < num_need
        results = fn(jax.tree.map(lambda x: x[..., index], inputs))
        outputs = jax.tree.map(
            lambda out, new: out.at[..., index].set(jnp.where(valid, new, out[..., index])),
            outputs,
            results,
        )
        return i + 1, outputs

    _, outputs = jax.lax.while_loop(
        lambda carry: carry[0] * size < num_need, one_chunk, (jnp.int32(0), outputs)
    )
    return outputs


class SolverMemory(NamedTuple):
    """What the solver proved on each board of a batch, carried from move to move.

    A proved cell stays proved while its game lasts (the view only grows), so a board
    with a proved-safe cell left needs no deduction at all on its next move. Boards whose
    game changed since the last move (another ``key``, nothing revealed, or finished)
    start from nothing, so the memory stays right when the env auto-resets a board or
    another player moves in between.

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
    data = jax.random.key_data(states.key)
    return data.reshape(data.shape[0], -1)


@functools.partial(jax.jit, static_argnums=(3, 4, 5))
def batch_solver_play(
    states: EnvState,
    keys: jax.Array,
    memory: SolverMemory,
    cfg: EnvConfig,
    solver_cfg: SolverConfig = SolverConfig(),
    chunk_size: int = 0,
) -> tuple[jax.Array, jax.Array, SolverMemory]:
    """``batch_solver_action`` that remembers its proofs between moves: the fast way to
    play whole games (``SolverMemory``; start from ``empty_memory(states)``).

    A board still holding a proved-safe cell from an earlier move plays it without any
    deduction; the others go through the layers, starting from the proved mines. The
    moves are legal and sound like ``solver_action``'s, though which safe cell comes
    first may differ. Deductions are sound whatever the memory holds of the current
    game, so the win rate is the same.

    Returns:
      ``(actions int32[B], layers int32[B], memory)``.
    """
    num_boards = states.done.shape[0]
    chunk_size = chunk_size or max(64, num_boards // 8)
    view = _view(states, batched=True)
    flags = jnp.moveaxis(states.flags, 0, -1)
    opening = ~_board_any(view.revealed)
    open_games = ~states.done & ~opening
    game = _game_id(states)
    same_game = _cells(open_games & jnp.all(game == memory.game, axis=1))
    known = jax.tree.map(lambda x: jnp.moveaxis(x, 0, -1), (memory.safe, memory.mines, memory.layer))
    safe, mines = known[0] & same_game & ~view.revealed, known[1] & same_game
    forced = Forced(safe, mines, jnp.where(safe | mines, known[2], jnp.int8(0)))
    forced = _layer1_fixpoint(view, forced, open_games, stop_at_safe=True)

    if solver_cfg.max_layer >= 2:
        # most boards find a safe cell within two rounds of layers 2-3; the few that run on
        # (towards a guess) continue in smaller chunks
        # the proof by contradiction is costly: it runs last, only on the boards the
        # other layers leave without a proved-safe cell (the same result as running it
        # inside the rounds: it comes after layers 2 and 3 there too)
        def deduce_chunk(args, max_rounds, cfg=dataclasses.replace(solver_cfg, contradiction_cells=0)):
            view, forced = args
            running = jnp.ones(view.mine_count.shape, bool)
            return _deduce_from(view, forced, running, cfg, True, max_rounds)

        needs_more = open_games & ~_board_any(forced.safe)
        forced, unfinished = _in_chunks(
            needs_more, chunk_size, functools.partial(deduce_chunk, max_rounds=2),
            (view, forced), (forced, jnp.zeros_like(needs_more)),
        )
        forced, _ = _in_chunks(
            unfinished & ~_board_any(forced.safe), max(1, chunk_size // 4),
            functools.partial(deduce_chunk, max_rounds=0), (view, forced), (forced, unfinished),
        )
        if solver_cfg.max_layer >= 3 and solver_cfg.contradiction_cells:
            forced, _ = _in_chunks(
                open_games & ~_board_any(forced.safe), max(1, chunk_size // 8),
                functools.partial(deduce_chunk, max_rounds=0, cfg=solver_cfg),
                (view, forced), (forced, unfinished),
            )

    cell, layer, found = _safe_move(view, forced)

    def guess_chunk(args):
        view, forced, flags, keys = args
        return _fallback_move(view, forced, flags, keys, cfg, solver_cfg)

    needs_guess = open_games & ~found
    action, layer = _in_chunks(
        needs_guess, max(1, chunk_size // 4), guess_chunk, (view, forced, flags, keys), (cell, layer)
    )
    action, layer = _finish(action, layer, view, states.done, cfg, solver_cfg)
    memory = SolverMemory(*(jnp.moveaxis(x, -1, 0) for x in forced), game)
    return action, layer, memory


@functools.partial(jax.jit, static_argnums=(2, 3, 4))
def batch_solver_action(
    states: EnvState,
    keys: jax.Array,
    cfg: EnvConfig,
    solver_cfg: SolverConfig = SolverConfig(),
    chunk_size: int = 0,
) -> tuple[jax.Array, jax.Array]:
    """``jax.vmap(solver_action)`` (same results), several times faster on large batches.

    Boards are laid out cell-major; layer 1 runs on every board; only the boards it leaves
    without a proved-safe cell go on, gathered ``chunk_size`` at a time (default: a
    eighth of the batch, at least 64), to layers 2-3, and only those still without one to
    the layer-4 guess (chunks a quarter of that size). ``batch_solver_play`` is the same with a
    memory of earlier proofs (faster over whole games).

    Args:
      states: ``EnvState`` with a leading batch axis ``[B]``.
      keys: ``[B]`` PRNG keys.
      cfg, solver_cfg: static configs; chunk_size: static.

    Returns:
      ``(actions int32[B], layers int32[B])``.
    """
    actions, layers, _ = batch_solver_play(states, keys, empty_memory(states), cfg, solver_cfg, chunk_size)
    return actions, layers


# ----------------------------------------------------------------------------- play_game


@dataclasses.dataclass(frozen=True)
class ActionRecord:
    """One move of a recorded game: ``action_type`` "REVEAL" or "FLAG", the cell, the layer."""

    action_type: str
    row: int
    col: int
    layer: int


@dataclasses.dataclass
class GameRecord:
    """A whole game played by the solver.

    Attributes:
      actions: every move in order.
      solved: the game was won.
      final_status: "Won", "Lost" or "Playing" (step limit reached).
      action_summary: ``{layer: {"REVEAL": n, "FLAG": n, "total": n}}`` for the layers used.
      final_state: the last ``EnvState``.
    """

    actions: list[ActionRecord]
    solved: bool
    final_status: str
    action_summary: dict[int, dict[str, int]]
    final_state: EnvState

    def history(self, detailed: bool = False) -> str:
        """The seed-001 printout: status, totals by layer, and with ``detailed`` every move
        as ``Layer L: REVEAL (row, col)`` (layer 0 = opening click or random guess)."""
        rule = "=" * 60
        lines = [rule, "HYBRID SOLVER RESULTS", rule, f"Final Status: {self.final_status}"]
        lines += [f"Total Actions: {len(self.actions)}", "", "Action Summary by Layer:"]
        for layer in sorted(self.action_summary):
            s = self.action_summary[layer]
            lines.append(f"  Layer {layer}: {s['REVEAL']} reveals, {s['FLAG']} flags, {s['total']} total")
        if detailed:
            lines += ["", "Detailed Action Sequence:", rule]
            for i, a in enumerate(self.actions, start=1):
                lines.append(f"{i:5d}. Layer {a.layer}: {a.action_type} ({a.row}, {a.col})")
            lines.append(rule)
        return "\n".join(lines)


def summarize(actions: list[ActionRecord]) -> dict[int, dict[str, int]]:
    """Counts of reveals, flags and all moves per layer."""
    summary: dict[int, dict[str, int]] = {}
    for a in actions:
        s = summary.setdefault(a.layer, {"REVEAL": 0, "FLAG": 0, "total": 0})
        s[a.action_type] += 1
        s["total"] += 1
    return summary


@functools.partial(jax.jit, static_argnums=(2, 3))
def _jit_solver_action(state, key, cfg, solver_cfg):
    return solver_action(state, key, cfg, solver_cfg)


@functools.partial(jax.jit, static_argnums=(2,))
def _jit_step(state, action, cfg):
    return env.step(state, action, cfg)


def play_game(
    key: jax.Array,
    cfg: EnvConfig,
    solver_cfg: SolverConfig = SolverConfig(),
    first_click: tuple[int, int] | None = None,
) -> GameRecord:
    """Plays one game to its end with a host-side loop over the jitted solver step.

    ``first_click`` ``(row, col)`` overrides the solver's opening click. The game stops
    at the env's ``max_steps`` or, without one, after ``4 * H * W`` moves.
    """
    game_key, solver_key = jax.random.split(key)
    state = env.reset(game_key, cfg)
    actions: list[ActionRecord] = []
    limit = cfg.max_steps or 4 * cfg.num_cells
    for move in range(limit):
        if bool(state.done):
            break
        action, layer = _jit_solver_action(state, jax.random.fold_in(solver_key, move), cfg, solver_cfg)
        action, layer = int(action), int(layer)
        if move == 0 and first_click is not None:
            action, layer = first_click[0] * cfg.W + first_click[1], NO_LAYER
        cell = action % cfg.num_cells
        kind = "FLAG" if action >= cfg.num_cells else "REVEAL"
        actions.append(ActionRecord(kind, cell // cfg.W, cell % cfg.W, layer))
        state, _, _, _ = _jit_step(state, jnp.int32(action), cfg)
    won = bool(state.won)
    status = "Won" if won else ("Lost" if bool(state.done) else "Playing")
    return GameRecord(actions, won, status, summarize(actions), state)

"""The order in which the exact analysis visits the frontier, and where it keeps each
number: a planner that runs step by step beside the DP, for one board (``jax.vmap`` it).

The exact analysis (``msjax.solver.exact``) runs a transfer-matrix DP over the frontier
cells (hidden cells next to a revealed number), one cell per step. A number is *open*
from the step that visits its first hidden neighbour to the step that visits its last;
the DP's state is the vector of mines each open number still needs, so the order decides
how many states stay alive. Frontiers are long, thin curves, and a path along the curve
keeps few numbers open: the order is greedy, always the unvisited cell that opens the
fewest new numbers net of those it closes (ties: closes the most, then row-major), among
the cells next to an open number; when none is open (a new component), the cell next to
the fewest numbers.

Each open number has a *slot*, a 4-bit field of the DP's packed key (``uint32`` words,
8 slots each; a number's value is at most 8; at most 32 slots). A slot is taken when the number opens and
freed when it closes, so the key needs as many slots as numbers are open at once
(``max_open``).

The planner keeps, per cell, how many of its numbers are unopened, open, and one visit
from closing; a visit changes only the numbers around the visited cell, so each step
updates the cells around those (64 entries) and scores the ``T`` frontier cells, never
the whole board. Cells are row-major indices; index ``H * W`` is a sink for off-board
neighbours (its entries are never read as real cells). ``T`` = ``max_frontier`` steps,
``K`` = ``max_open`` slots, ``Wd = ceil(K / 8)`` key words.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from msjax.solver.grid import NEIGHBOUR_OFFSETS, neighbours

SLOT_BITS = 4
SLOTS_PER_WORD = 32 // SLOT_BITS


class StepPlan(NamedTuple):
    """What the DP needs to visit one cell.

    Attributes:
      cell: int32[], the frontier cell visited (row-major); -1 past the frontier's end.
      opens: uint32[Wd], the values of the numbers that open at the step, in their slots.
      targets: uint32[Wd], 0xF in the slot of every number of the cell.
      unvisited: uint32[Wd], in those slots, each number's hidden cells not yet visited
        before the step (the visited cell included).
      remaining: int32[], frontier cells left after the step.
    """

    cell: jax.Array
    opens: jax.Array
    targets: jax.Array
    unvisited: jax.Array
    remaining: jax.Array


class Planner(NamedTuple):
    """The planner's state on one view, packed so that a step reads and writes few arrays.

    Attributes:
      frontier: int32[T], the frontier cells in row-major order (the sink past the end).
      num_cells: int32[], frontier cells (more than ``T``: the view is too long).
      num_off: int32[], hidden cells off the frontier.
      number: int32[H*W + 1], per cell: unvisited hidden cells around it (bits 0-3),
        opened (bit 4), its slot + 1 (bits 5-11), its value (bits 12-15), a number with
        hidden neighbours (bit 16).
      ring: int32[H*W + 1, 8], per cell, the frontier position of each neighbour (``T``
        where the neighbour is not on the frontier).
      around: int32[T + 1], per frontier position, counts of its numbers: not yet opened
        (bits 0-3), one unvisited cell from closing (4-7), open (8-11), all (12-15);
        bit 16 once visited (and on positions past the frontier's end).
      free: uint32[], the free slots as a bit mask.
      too_wide: bool[], more than ``K`` numbers were open at once.
      impossible: bool[], a number exceeds its hidden neighbours (an inconsistent view).
    """

    frontier: jax.Array
    num_cells: jax.Array
    num_off: jax.Array
    number: jax.Array
    ring: jax.Array
    around: jax.Array
    free: jax.Array
    too_wide: jax.Array
    impossible: jax.Array


def _field(packed: jax.Array, low: int, bits: int = 4) -> jax.Array:
    return (packed >> low) & ((1 << bits) - 1)


VISITED = 1 << 16
IS_NUMBER = 1 << 16
OPENED = 1 << 4


def key_words(max_open: int) -> int:
    """``uint32`` words of a DP key with ``max_open`` slots."""
    return -(-max_open // SLOTS_PER_WORD)


@functools.lru_cache(maxsize=None)
def neighbour_table(height: int, width: int) -> np.ndarray:
    """int32[H*W + 1, 8]: each cell's neighbours by direction, ``H * W`` (the sink) off
    the board and for the sink itself."""
    table = np.full((height * width + 1, len(NEIGHBOUR_OFFSETS)), height * width, np.int32)
    for cell in range(height * width):
        row, col = divmod(cell, width)
        for d, (dr, dc) in enumerate(NEIGHBOUR_OFFSETS):
            if 0 <= row + dr < height and 0 <= col + dc < width:
                table[cell, d] = (row + dr) * width + col + dc
    return table


def _flat(cells: jax.Array, fill) -> jax.Array:
    """[H, W] -> [H*W + 1] with ``fill`` at the sink."""
    return jnp.concatenate([cells.reshape(-1), jnp.full(1, fill, cells.dtype)])


def start_planner(revealed: jax.Array, counts: jax.Array, max_frontier: int, max_open: int) -> Planner:
    """The planner before its first step, for one view.

    Args:
      revealed: bool[H, W]; counts: int[H, W], the numbers (read where revealed).
      max_frontier: T, static; max_open: K, static.
    """
    height, width = revealed.shape
    hidden = ~revealed
    hidden_around = neighbours(hidden)
    shown = jnp.where(revealed, counts, 0)
    is_number = revealed & (hidden_around > 0)
    numbers_around = neighbours(is_number)
    frontier = hidden & (numbers_around > 0)
    num_cells = jnp.sum(frontier, dtype=jnp.int32)
    (cells,) = jnp.nonzero(frontier.reshape(-1), size=max_frontier, fill_value=height * width)
    position = jnp.full(height * width + 1, max_frontier, jnp.int32).at[cells].set(
        jnp.arange(max_frontier, dtype=jnp.int32), mode="drop"
    ).at[height * width].set(max_frontier)
    number = jnp.where(is_number, jnp.minimum(hidden_around, 8) | (jnp.clip(shown, 0, 9) << 12) | IS_NUMBER, 0)
    around = (
        numbers_around
        | (neighbours(is_number & (hidden_around == 1)) << 4)
        | (numbers_around << 12)
    )
    around = _flat(around, 0)[cells]
    past_end = jnp.arange(max_frontier) >= num_cells
    return Planner(
        frontier=cells.astype(jnp.int32),
        num_cells=num_cells,
        num_off=jnp.sum(hidden, dtype=jnp.int32) - num_cells,
        number=_flat(number.astype(jnp.int32), 0),
        ring=position[jnp.asarray(neighbour_table(height, width))],
        around=jnp.concatenate([jnp.where(past_end, around | VISITED, around), jnp.full(1, VISITED)]),
        free=jnp.uint32((1 << max_open) - 1),
        too_wide=jnp.array(False),
        impossible=jnp.any(revealed & ((shown > hidden_around) | (shown < 0))),
    )


def _choose(planner: Planner) -> jax.Array:
    """int32[]: the position in ``planner.frontier`` of the next cell (module docstring)."""
    around = planner.around[:-1]
    candidate = around < VISITED
    unopened, closes, live, total = (_field(around, low) for low in (0, 4, 8, 12))
    touches = live > 0
    any_touch = jnp.any(candidate & touches)
    primary = jnp.where(any_touch, unopened - closes, total)
    secondary = jnp.where(any_touch, -closes, 0)
    allowed = candidate & (touches | ~any_touch)
    score = ((primary + 8) * 17 + secondary + 8) * (planner.number.shape[0]) + planner.frontier
    return jnp.argmin(jnp.where(allowed, score, jnp.iinfo(jnp.int32).max)).astype(jnp.int32)


def _lowest_bit(mask: jax.Array) -> jax.Array:
    """int32[]: the index of the lowest set bit of a nonzero uint32 ``mask``."""
    return jax.lax.population_count((mask & (~mask + jnp.uint32(1))) - jnp.uint32(1)).astype(jnp.int32)


def _assign_slots(free: jax.Array, new: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The k-th new number (bool[8]) takes the k-th lowest free slot of ``free`` (a uint32
    bit mask), unrolled over the 8 directions (elementwise: cheap under ``vmap``).

    Returns:
      (slot int32[8] (meaningful where ``new``), free after, enough bool[]).
    """
    slots = []
    enough = jnp.array(True)
    for d in range(new.shape[0]):
        slots.append(_lowest_bit(free))
        enough = enough & (~new[d] | (free != 0))
        free = jnp.where(new[d], free & (free - jnp.uint32(1)), free)
    return jnp.stack(slots), free, enough


def plan_step(
    planner: Planner, t: jax.Array, height: int, width: int, max_open: int
) -> tuple[Planner, StepPlan]:
    """Chooses and visits the step-``t`` cell of one view: the next planner and the step."""
    num_words = key_words(max_open)
    sink = height * width
    active = t < jnp.minimum(planner.num_cells, planner.frontier.shape[0])
    position = _choose(planner)
    cell = planner.frontier[position]
    around = jnp.asarray(neighbour_table(height, width))[cell]  # [8]
    info = planner.number[around]
    number = (info >= IS_NUMBER) & active
    left_before, was_opened = _field(info, 0), (info & OPENED) > 0
    new = number & ~was_opened
    assigned, free, enough = _assign_slots(planner.free, new)
    slot = jnp.where(number, jnp.where(new, assigned, _field(info, 5, 7) - 1), -1).astype(jnp.int32)
    capacity = jnp.where(number, left_before - 1, 0)
    closing = number & (capacity == 0)
    bit = jnp.uint32(1) << jnp.maximum(slot, 0).astype(jnp.uint32)
    for d in range(slot.shape[0]):
        free = jnp.where(closing[d], free | bit[d], free)

    shift = (SLOT_BITS * (jnp.maximum(slot, 0) % SLOTS_PER_WORD)).astype(jnp.uint32)
    word = slot // SLOTS_PER_WORD
    value = _field(info, 12).astype(jnp.uint32)
    packed = lambda per_number: jnp.stack([  # uint32[Wd]: per_number (uint32[8]) in the slots
        sum(jnp.where(number[d] & (word[d] == w), per_number[d] << shift[d], jnp.uint32(0)) for d in range(8))
        for w in range(num_words)
    ])
    opens = packed(jnp.where(new, value, jnp.uint32(0)))
    targets = packed(jnp.full(8, 0xF, jnp.uint32))
    unvisited = packed(left_before.astype(jnp.uint32))

    # every frontier cell around a number of the visited cell sees that number change
    live_before = was_opened & (left_before > 0)
    change = (
        -new.astype(jnp.int32)
        + ((capacity == 1).astype(jnp.int32) - (left_before == 1)) * (1 << 4)
        + ((capacity > 0).astype(jnp.int32) - live_before) * (1 << 8)
    )
    change = jnp.where(number, change, 0)
    ring = planner.ring[around]  # [8, 8]
    updates = jnp.concatenate([jnp.broadcast_to(change[:, None], ring.shape).reshape(-1), jnp.where(active, VISITED, 0)[None]])
    at = jnp.concatenate([ring.reshape(-1), position[None]])
    updated = (capacity | OPENED | ((slot + 1) << 5) | (info & ~0xFFF)).astype(jnp.int32)
    planner = planner._replace(
        number=planner.number.at[jnp.where(number, around, sink)].set(updated, mode="drop"),
        around=planner.around.at[at].add(updates),
        free=free,
        too_wide=planner.too_wide | ~enough,
    )
    remaining = jnp.maximum(planner.num_cells - t - 1, 0)
    step = StepPlan(jnp.where(active, cell, -1), opens, targets, unvisited, remaining)
    return planner, step

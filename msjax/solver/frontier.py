"""The order in which the exact analysis visits the frontier, and where it keeps each
constraint: a plan computed once per view, on the device, for one board (``jax.vmap`` it).

The exact analysis (``msjax.solver.exact``) runs a transfer-matrix DP over the frontier
cells (hidden cells next to a revealed number), one cell per step. A number is *open*
from the step that visits its first hidden neighbour to the step that visits its last;
the DP's state is the vector of mines each open number still needs, so the order decides
how many states stay alive. Frontiers are long, thin curves, and a path along the curve
keeps few numbers open: the order is greedy, always the unvisited cell that opens the
fewest new numbers net of those it closes (ties: closes the most, then row-major), among
the cells next to an open number; when none is open (a new component), the cell in the
fewest numbers.

Each open number has a *slot*, a 4-bit field of the DP's packed key (``uint32`` words,
8 slots each; its value is at most 8). A slot is taken when the number opens and freed
when it closes, so the key needs as many slots as numbers are open at once (``max_open``).

Shapes: ``T`` = ``max_frontier`` steps, ``K`` = ``max_open`` slots, ``Wd = ceil(K / 8)``
key words; directions are ``msjax.solver.grid.NEIGHBOUR_OFFSETS`` (8).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from msjax.solver.grid import NEIGHBOUR_OFFSETS, neighbours

SLOT_BITS = 4
SLOTS_PER_WORD = 32 // SLOT_BITS


class FrontierPlan(NamedTuple):
    """The DP's schedule for one view.

    Attributes:
      cell: int32[T], the frontier cell (row-major) visited at each step; -1 past the end.
      slot: int32[T, 8], per direction from that cell, the slot of the number there;
        -1 where the neighbour is not a number with hidden neighbours (or off the board).
      capacity: int32[T, 8], hidden cells of that number not yet visited after the step.
      opens: uint32[T, Wd], the values of the numbers that open at the step, in their slots.
      delta: uint32[T, Wd], a 1 in the slot of every number of the cell (its mine branch).
      remaining: int32[T], frontier cells left after the step.
      num_cells: int32[], frontier cells (steps used).
      num_off: int32[], hidden cells off the frontier.
      too_wide: bool[], more than ``K`` numbers were open at once.
      too_long: bool[], the frontier has more than ``T`` cells.
      impossible: bool[], a number exceeds its hidden neighbours (an inconsistent view).
    """

    cell: jax.Array
    slot: jax.Array
    capacity: jax.Array
    opens: jax.Array
    delta: jax.Array
    remaining: jax.Array
    num_cells: jax.Array
    num_off: jax.Array
    too_wide: jax.Array
    too_long: jax.Array
    impossible: jax.Array


def key_words(max_open: int) -> int:
    """``uint32`` words of a DP key with ``max_open`` slots."""
    return -(-max_open // SLOTS_PER_WORD)


def _neighbour_index(cell: jax.Array, height: int, width: int) -> tuple[jax.Array, jax.Array]:
    """(index int32[8], on_board bool[8]): the row-major neighbours of ``cell`` by direction;
    off-board ones get index ``height * width`` (dropped by ``mode="drop"`` updates)."""
    offsets = np.array(NEIGHBOUR_OFFSETS)
    row, col = cell // width + offsets[:, 0], cell % width + offsets[:, 1]
    on_board = (row >= 0) & (row < height) & (col >= 0) & (col < width)
    return jnp.where(on_board, row * width + col, height * width), on_board


def _choose(frontier, visited, is_number, numbers_around, opened, left, index):
    """int32[]: the next cell to visit (the greedy rule of the module docstring)."""
    candidate = frontier & ~visited
    live = is_number & opened & (left > 0)
    touches = neighbours(live) > 0
    new = neighbours(is_number & ~opened)
    closes = neighbours(is_number & (left == 1))
    any_touch = jnp.any(candidate & touches)
    primary = jnp.where(any_touch, new - closes, numbers_around)
    secondary = jnp.where(any_touch, -closes, 0)
    allowed = candidate & (touches | ~any_touch)
    size = index.size
    score = ((primary + 8) * 17 + secondary + 8) * size + index
    return jnp.argmin(jnp.where(allowed, score, jnp.iinfo(jnp.int32).max).reshape(-1)).astype(jnp.int32)


def plan_frontier(revealed: jax.Array, counts: jax.Array, max_frontier: int, max_open: int) -> FrontierPlan:
    """The visiting order and slots of one view (see the module docstring).

    Args:
      revealed: bool[H, W]; counts: int[H, W], the numbers (read where revealed).
      max_frontier: T, static; max_open: K, static.

    Returns:
      ``FrontierPlan``.
    """
    height, width = revealed.shape
    num_words = key_words(max_open)
    hidden = ~revealed
    hidden_around = neighbours(hidden)
    is_number = revealed & (hidden_around > 0)
    values = jnp.clip(jnp.where(revealed, counts, 0), 0, 9).astype(jnp.uint32).reshape(-1)
    numbers_around = neighbours(is_number)
    frontier = hidden & (numbers_around > 0)
    num_cells = jnp.sum(frontier, dtype=jnp.int32)
    index = jnp.arange(height * width, dtype=jnp.int32).reshape(height, width)
    slot_ids = jnp.arange(max_open, dtype=jnp.int32)
    word_ids = jnp.arange(num_words, dtype=jnp.int32)

    def step(carry, t):
        visited, opened, left, slot_of, free, too_wide = carry
        active = t < num_cells
        cell = _choose(frontier, visited, is_number, numbers_around, opened, left, index)
        around, on_board = _neighbour_index(cell, height, width)
        at = jnp.minimum(around, height * width - 1)
        number = on_board & is_number.reshape(-1)[at] & active
        new = number & ~opened.reshape(-1)[at]
        # the k-th new number takes the k-th free slot
        free_rank = jnp.cumsum(free) - 1
        new_rank = jnp.cumsum(new) - 1
        taken = free[None, :] & (free_rank[None, :] == new_rank[:, None])  # [8, K]
        too_wide = too_wide | (jnp.sum(new) > jnp.sum(free))
        slot = jnp.where(new, jnp.argmax(taken, axis=1), slot_of.reshape(-1)[at])
        slot = jnp.where(number, slot, -1).astype(jnp.int32)
        capacity = jnp.where(number, left.reshape(-1)[at] - 1, 0)
        shift = (SLOT_BITS * (slot % SLOTS_PER_WORD)).astype(jnp.uint32)
        in_word = number[:, None] & ((slot // SLOTS_PER_WORD)[:, None] == word_ids[None, :])  # [8, Wd]
        opens = jnp.sum(jnp.where(in_word & new[:, None], (values[at] << shift)[:, None], 0), axis=0, dtype=jnp.uint32)
        delta = jnp.sum(jnp.where(in_word, (jnp.uint32(1) << shift)[:, None], 0), axis=0, dtype=jnp.uint32)
        drop = jnp.where(number, around, height * width)
        visited = visited.reshape(-1).at[jnp.where(active, cell, height * width)].set(True, mode="drop")
        opened = opened.reshape(-1).at[drop].set(True, mode="drop").reshape(height, width)
        left = left.reshape(-1).at[drop].add(-1, mode="drop").reshape(height, width)
        slot_of = slot_of.reshape(-1).at[drop].set(slot, mode="drop").reshape(height, width)
        uses = jnp.any((slot[:, None] == slot_ids[None, :]) & new[:, None], axis=0)
        frees = jnp.any((slot[:, None] == slot_ids[None, :]) & (number & (capacity == 0))[:, None], axis=0)
        free = (free & ~uses) | frees
        out = (jnp.where(active, cell, -1), slot, capacity, opens, delta, num_cells - t - 1)
        return (visited.reshape(height, width), opened, left, slot_of, free, too_wide), out

    start = (
        jnp.zeros((height, width), bool),
        jnp.zeros((height, width), bool),
        jnp.where(is_number, hidden_around, 0),
        jnp.full((height, width), -1, jnp.int32),
        jnp.ones(max_open, bool),
        jnp.array(False),
    )
    (_, _, _, _, _, too_wide), (cell, slot, capacity, opens, delta, remaining) = jax.lax.scan(
        step, start, jnp.arange(max_frontier, dtype=jnp.int32)
    )
    impossible = jnp.any(revealed & (jnp.where(revealed, counts, 0) > hidden_around)) | jnp.any(
        revealed & (jnp.where(revealed, counts, 0) < 0)
    )
    return FrontierPlan(
        cell=cell,
        slot=slot,
        capacity=capacity,
        opens=opens,
        delta=delta,
        remaining=jnp.maximum(remaining, 0),
        num_cells=num_cells,
        num_off=jnp.sum(hidden, dtype=jnp.int32) - num_cells,
        too_wide=too_wide,
        too_long=num_cells > max_frontier,
        impossible=impossible,
    )

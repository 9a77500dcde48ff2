"""The exhaustive endgame: the exact chance of winning from a view, maximised over the
whole remaining game tree, when few layouts fit the view.

A view with ``n`` consistent layouts (``n <= max_layouts``, a static bound up to
``MAX_ENDGAME_LAYOUTS``) is solved outright:

1. **All its layouts.** ``n`` is known exactly (the analysis' layout count), and
   ``SAMPLES_PER_LAYOUT * max_layouts`` uniform draws of the sampler
   (``msjax.solver.sample``) are deduplicated by two 32-bit hashes of their mine cells.
   The view counts as solved only when exactly ``n`` distinct hashes turn up: distinct
   hashes are distinct layouts, so all ``n`` are then in hand (a hash collision, or a
   layout no draw met, leaves fewer and the view is flagged, never solved on part of its
   layouts; with 16 draws per layout a miss happens about once in 10^6 views).
2. **What each click shows.** In layout ``l`` a hidden cell ``c`` shows a mine or its
   number ``v``. Only cells whose outcome differs between layouts matter (at most
   ``max_cells`` of them, else the view is flagged): a cell safe with the same number
   in every layout tells nothing, one that is a mine in every layout is never clicked.
   For each such cell and number, the set of layouts where the click shows it is a
   bitmask over the ``n`` layouts (``int32``, so ``n <= 16``).
3. **The game tree as a DP over sets of layouts.** The player's knowledge is the set
   ``S`` of layouts still consistent with what it has seen, and its chance to win is
   ``V(S) = 1`` when ``|S| = 1`` (the layout is known: every safe cell is then proved)
   and otherwise ``max_c sum_v |S & class(c, v)| / |S| * V(S & class(c, v))`` over the
   cells whose click splits ``S`` or risks a mine (clicking one that does neither
   changes nothing). Partitioning by the clicked cell's number is the whole observation:
   a ``0`` opens its neighbours, which are then safe in every layout left, so what the
   cascade shows is what the DP may click next for free. Every child set is a proper
   subset, hence a smaller integer, and the sets are filled in order of their size
   (``n - 1`` vectorised steps over all ``2^n`` masks), so one view costs
   ``2^n * max_cells * 9`` gathers.

The result is the optimal first click (the cell of highest ``V``; ties to the safest,
then the first in row-major order) and the optimal win probability. Cost and memory grow
as ``2^n``: 8 layouts is cheap, 16 is the most a mask holds. No tree-search library: the
tree is small enough to fill exactly, with nothing to sample or prune (PSEQ-D256's
endgame does the same over up to 256 layouts with a depth-first search on the CPU).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from msjax.solver.grid import neighbours
from msjax.solver.sample import sample_layouts
from msjax.solver.types import MAX_ENDGAME_LAYOUTS, ExactLimits

SAMPLES_PER_LAYOUT = 16  # draws per layout of the bound, deduplicated into the layouts
MINE = 9  # outcome of a click on a mine; 0..8 are the numbers
TIES = 1e-6  # win chances this close are equal (float32 sums of the same terms in another order)


class Endgame(NamedTuple):
    """The endgame of a batch of views (leading axis ``[B]``).

    Attributes:
      cell: int32[B], the optimal click (row-major); -1 where not ``solved``.
      win: float32[B], the chance of winning from the view with optimal play (0 where not
        ``solved``).
      cell_win: float32[B, H, W], the chance of winning when clicking each cell first and
        playing optimally after; -1 on cells whose click tells nothing (the same outcome
        in every layout) and where not ``solved``.
      solved: bool[B], all the view's layouts were found, at most ``max_layouts`` of them
        (and at least two), with at most ``max_cells`` cells whose outcome differs.
      num_layouts: int32[B], the distinct layouts among the draws (all of them where
        ``solved``).
    """

    cell: jax.Array
    win: jax.Array
    cell_win: jax.Array
    solved: jax.Array
    num_layouts: jax.Array


def _hash_weights(num_cells: int) -> jax.Array:
    """uint32[2, H*W]: fixed random weights; a layout's hashes are the sums over its mines."""
    return jax.random.bits(jax.random.key(20261126), (2, num_cells), jnp.uint32)


def distinct_layouts(mines: jax.Array, max_layouts: int) -> tuple[jax.Array, jax.Array]:
    """(layouts bool[L, H*W], count int32[]): the distinct rows of ``mines`` (bool[N, H*W]),
    by two 32-bit hashes, the first ``L = max_layouts`` of them kept (rows past ``count``
    are False)."""
    hashes = jnp.sum(jnp.where(mines[:, None, :], _hash_weights(mines.shape[1]), jnp.uint32(0)), axis=-1,
                     dtype=jnp.uint32)  # [N, 2], wrapping sums
    order = jnp.lexsort((hashes[:, 1], hashes[:, 0]))
    ordered = hashes[order]
    first = jnp.concatenate([jnp.ones(1, bool), jnp.any(ordered[1:] != ordered[:-1], axis=1)])
    count = jnp.sum(first, dtype=jnp.int32)
    kept = order[jnp.argsort(~first, stable=True)[:max_layouts]]
    return mines[kept] & (jnp.arange(max_layouts) < count)[:, None], count


def click_classes(layouts: jax.Array, present: jax.Array, revealed: jax.Array, max_cells: int):
    """The outcome of each click as bitmasks over the layouts.

    Args:
      layouts: bool[L, H, W], the layouts (``present`` ones count); present: bool[L];
      revealed: bool[H, W]; max_cells: C, static.

    Returns:
      ``(cells int32[C], classes int32[C, 9], fits bool[])`` (``C`` at most the cells): the hidden cells whose outcome
      differs between layouts (row-major order, -1 past their number), for each the
      layouts (bit ``l``) where its click shows the number ``v``, and whether all such
      cells fit in ``C``.
    """
    num_layouts = layouts.shape[0]
    max_cells = min(max_cells, revealed.size)
    shown = jnp.moveaxis(neighbours(jnp.moveaxis(layouts, 0, -1)), -1, 0)  # int32[L, H, W]
    outcome = jnp.where(layouts, MINE, shown).reshape(num_layouts, -1)
    differs = jnp.any(present[:, None] & (outcome != outcome[:1]), axis=0) & ~revealed.reshape(-1)
    num_differ = jnp.sum(differs, dtype=jnp.int32)
    cells = jnp.argsort(~differs, stable=True)[:max_cells].astype(jnp.int32)
    valid = jnp.arange(max_cells) < num_differ
    bits = jnp.where(present, jnp.left_shift(jnp.int32(1), jnp.arange(num_layouts, dtype=jnp.int32)), 0)
    shows = outcome[:, cells][:, :, None] == jnp.arange(MINE)  # [L, C, 9]
    classes = jnp.sum(jnp.where(shows & valid[None, :, None], bits[:, None, None], 0), axis=0, dtype=jnp.int32)
    return jnp.where(valid, cells, -1), classes, num_differ <= max_cells


@functools.lru_cache(maxsize=None)
def _masks_by_size(num_layouts: int) -> np.ndarray:
    """int32[L - 1, W]: the masks of each size 2..L (padded with ``2^L``, out of range)."""
    size = 1 << num_layouts
    masks = np.arange(size)
    popcount = np.array([bin(m).count("1") for m in masks])
    width = math.comb(num_layouts, num_layouts // 2)
    table = np.full((num_layouts - 1, width), size, np.int32)
    for k in range(2, num_layouts + 1):
        of_size = masks[popcount == k]
        table[k - 2, : len(of_size)] = of_size
    return table


def within_bound(log_layouts: jax.Array, max_layouts: int) -> jax.Array:
    """bool[...]: the views whose layout count (``log_layouts``, the exact analysis' log)
    is at most ``max_layouts``, the endgame's bound (the log compared half a layout above
    it, so float rounding of an exact count never decides)."""
    return log_layouts < np.log(max_layouts + 0.5)


def endgame_chunk(num_views: int, max_layouts: int, max_cells: int = 64) -> int:
    """Views per call of ``solve_endgame`` for a batch of ``num_views``: an eighth of it (few
    views are near their end at once), at most what keeps its largest step near 256 MiB."""
    per_view = _masks_by_size(max_layouts).shape[1] * max_cells * MINE * 4
    return max(1, min(max(8, num_views // 8), (256 << 20) // per_view))


def _click_values(mask: jax.Array, classes: jax.Array, values: jax.Array) -> jax.Array:
    """float32[..., C]: for each mask (int32[...]), the win chance of clicking each cell
    first, -1 where the click tells nothing (``values``: float32[2^L], V of every mask)."""
    children = mask[..., None, None] & classes  # [..., C, 9]
    sizes = jax.lax.population_count(children)
    mine_or_split = ~jnp.any(children == mask[..., None, None], axis=-1)
    total = jnp.sum(sizes * values[children], axis=-1)  # children < 2^L: classes hold only layout bits
    chance = total / jnp.maximum(jax.lax.population_count(mask), 1)[..., None]
    return jnp.where(mine_or_split, chance, -1.0)


def win_values(classes: jax.Array, num_layouts: int) -> jax.Array:
    """float32[2^L]: the optimal win chance ``V(S)`` of every set of layouts ``S`` (a mask;
    module docstring), for click classes ``int32[C, 9]`` over ``L = num_layouts`` layouts."""
    size = 1 << num_layouts
    popcount = jax.lax.population_count(jnp.arange(size, dtype=jnp.int32))
    values = (popcount == 1).astype(jnp.float32)

    def fill(values, masks):
        best = jnp.max(_click_values(masks, classes, values), axis=-1)
        return values.at[masks].set(best, mode="drop"), None

    return jax.lax.scan(fill, values, jnp.asarray(_masks_by_size(num_layouts)))[0]


@functools.partial(jax.jit, static_argnames=("max_layouts", "max_cells", "limits"))
def solve_endgame(
    key: jax.Array, revealed: jax.Array, counts: jax.Array, mine_count: jax.Array, max_layouts: int = 8,
    max_cells: int = 64, limits: ExactLimits = ExactLimits(),
) -> Endgame:
    """The exhaustive endgame of each view (module docstring).

    Args:
      key: a PRNG key (the draws that find the layouts; the result does not depend on
        it unless a layout is missed, which flags the view); revealed: bool[B, H, W];
        counts: int[B, H, W] (read where revealed); mine_count: int[B].
      max_layouts: static, 2..``MAX_ENDGAME_LAYOUTS``: views with more layouts are not
        solved; max_cells: static, the most cells whose outcome differs.
      limits: the exact analysis' static sizes.

    Returns:
      ``Endgame``.
    """
    if not 2 <= max_layouts <= MAX_ENDGAME_LAYOUTS:
        raise ValueError(f"max_layouts={max_layouts} must be in [2, {MAX_ENDGAME_LAYOUTS}]")
    if max_cells < 1:
        raise ValueError(f"max_cells={max_cells} must be >= 1")
    num_boards, height, width = revealed.shape
    drawn = sample_layouts(key, revealed, counts, mine_count, SAMPLES_PER_LAYOUT * max_layouts, limits)
    flat = drawn.mines.reshape(num_boards, -1, height * width)
    layouts, found = jax.vmap(functools.partial(distinct_layouts, max_layouts=max_layouts))(flat)
    expected = jnp.round(jnp.exp(jnp.minimum(drawn.log_layouts, math.log(max_layouts + 1.0))))
    complete = drawn.exact & (drawn.log_layouts < math.log(max_layouts + 0.5)) & (found == expected) & (found >= 2)
    present = jnp.arange(max_layouts) < found[:, None]
    cells, classes, fits = jax.vmap(functools.partial(click_classes, max_cells=max_cells))(
        layouts.reshape(num_boards, max_layouts, height, width), present, revealed
    )
    values = jax.vmap(functools.partial(win_values, num_layouts=max_layouts))(classes)
    everything = jnp.left_shift(jnp.int32(1), found) - 1
    root = jax.vmap(_click_values)(everything, classes, values)  # [B, C]
    root = jnp.where(cells >= 0, root, -1.0)
    win = jnp.max(root, axis=1)
    safety = jnp.sum(jax.lax.population_count(everything[:, None, None] & classes), axis=2)
    pick = jnp.argmax(jnp.where(root >= win[:, None] - TIES, safety, -1), axis=1)
    solved = complete & fits & (win >= 0)
    cell = jnp.where(solved, jnp.take_along_axis(cells, pick[:, None], axis=1)[:, 0], -1)
    slots = jnp.where(cells >= 0, cells, height * width)  # padding dropped
    cell_win = jnp.full((num_boards, height * width), -1.0).at[jnp.arange(num_boards)[:, None], slots].set(
        jnp.where(solved[:, None], root, -1.0), mode="drop"
    )
    return Endgame(
        cell=cell.astype(jnp.int32),
        win=jnp.where(solved, win, 0.0),
        cell_win=cell_win.reshape(num_boards, height, width),
        solved=solved,
        num_layouts=found,
    )

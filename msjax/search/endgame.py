"""The exhaustive endgame: the exact chance of winning from a view, maximised over the
whole remaining game tree, when few layouts fit the view.

A view with ``n`` consistent layouts (``n <= max_layouts``, a static bound up to
``MAX_ENDGAME_LAYOUTS``) is solved outright:

1. **All its layouts.** ``n`` is known exactly (the analysis' layout count), and
   ``SAMPLES_PER_LAYOUT * max_layouts`` uniform draws of the sampler
   (``msjax.search.sample``) are deduplicated by two 32-bit hashes of their mine cells.
   The view counts as solved only when exactly ``n`` distinct hashes turn up: distinct
   hashes are distinct layouts, so all ``n`` are then in hand (a hash collision, or a
   layout no draw met, leaves fewer and the view is flagged, never solved on part of its
   layouts; with 16 draws per layout a miss happens about once in 10^6 views).
2. **What each click shows.** In layout ``l`` a hidden cell ``c`` shows a mine or its
   number ``v``. Only cells whose outcome differs between layouts matter (at most
   ``max_cells`` of them, else the view is flagged): a cell safe with the same number
   in every layout tells nothing, one that is a mine in every layout is never clicked.
   For each such cell and number, the set of layouts where the click shows it is a
   bitmask over the ``n`` layouts: ``ceil(n / 32)`` ``uint32`` words (``words``), layout
   ``l`` at bit ``l % 32`` of word ``l // 32``; tables of masks are sorted by their words
   in order (word 0 first).
3. **The sets of layouts the player can come to know.** The player's knowledge is the set
   ``S`` of layouts still consistent with what it has seen. From the view's set, each click
   splits ``S`` by the number it shows; the sets that some sequence of clicks reaches
   (``reachable_sets``) are found a click at a time: the sets not split yet wait in a
   queue, and each step splits the first of them and merges what it finds into a table
   (sorted and deduplicated, ``max_sets`` at most: a view with more is flagged) until the
   queue is empty. Far fewer sets are reachable than the ``2^n`` subsets: on 8x8x10 games'
   views with 17 to 32 layouts, a few hundred (ad hoc, a host search of the reference
   player's games).
4. **The game tree as a DP over those sets.** The chance to win is ``V(S) = 1`` when
   ``|S| = 1`` (the layout is known: every safe cell is then proved) and otherwise
   ``max_c sum_v |S & class(c, v)| / |S| * V(S & class(c, v))`` over the cells whose click
   splits ``S`` or risks a mine (clicking one that does neither changes nothing).
   Partitioning by the clicked cell's number is the whole observation: a ``0`` opens its
   neighbours, which are then safe in every layout left, so what the cascade shows is what
   the DP may click next for free. ``set_values`` sweeps that equation over the table from
   ``V = 0`` until a sweep changes nothing (each sweep makes the sets one split taller
   exact), so one view costs about ``max_sets * max_cells * 9`` gathers per sweep.

The result is the optimal first click (the cell of highest ``V``; ties to the safest,
then the first in row-major order) and the optimal win probability. No tree-search
library: the tree is small enough to fill exactly, with nothing to sample or prune
(PSEQ-D256's endgame does the same over up to 256 layouts with a depth-first search on
the CPU).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from msjax.checks import check_effect, check_value, ints, optional
from msjax.search.layout_sets import (
    DENSE_LAYOUTS, MAX_ENDGAME_LAYOUTS, MINE, click_values, dense_click_values, layout_bits, popcount, words,
)
from msjax.search.sample import sample_layouts
from msjax.solver.grid import neighbours
from msjax.solver.types import ExactLimits, check_views

SAMPLES_PER_LAYOUT = 16  # draws per layout of the bound, deduplicated into the layouts
# The default (most sets of layouts the player can come to know, most cells whose outcome differs) for
# each bound: at most 32, 64, 128 layouts. On 8x8x10 (benchmarks/endgame_sizes.py, 6,000 games): the views
# the tables hold carry nearly all their endgame's gain (33-64 layouts: 0.030 of 0.032 points per game;
# 65-128: 0.015 of 0.018), with at most 34, 38, 42 cells.
SIZES = ((32, 1024, 32), (64, 4096, 40), (128, 16384, 48))
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


def default_sizes(max_layouts: int) -> tuple[int, int]:
    """``(max_sets, max_cells)`` for the bound ``max_layouts`` (``SIZES``)."""
    return next((sets, cells) for top, sets, cells in SIZES if max_layouts <= top)


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
      ``(cells int32[C], classes uint32[C, 9, words(L)], fits bool[])`` (``C`` at most the cells): the
      hidden cells whose outcome differs between layouts (row-major order, -1 past their
      number), for each the layouts (bit ``l``) where its click shows the number ``v``, and
      whether all such cells fit in ``C``.
    """
    num_layouts = layouts.shape[0]
    max_cells = min(max_cells, revealed.size)
    shown = jnp.moveaxis(neighbours(jnp.moveaxis(layouts, 0, -1)), -1, 0)  # int32[L, H, W]
    outcome = jnp.where(layouts, MINE, shown).reshape(num_layouts, -1)
    differs = jnp.any(present[:, None] & (outcome != outcome[:1]), axis=0) & ~revealed.reshape(-1)
    num_differ = jnp.sum(differs, dtype=jnp.int32)
    cells = jnp.argsort(~differs, stable=True)[:max_cells].astype(jnp.int32)
    valid = jnp.arange(max_cells) < num_differ
    shows = outcome[:, cells][:, :, None] == jnp.arange(MINE)  # [L, C, 9]
    bits = layout_bits(present)
    classes = jnp.sum(jnp.where((shows & valid[None, :, None])[..., None], bits[:, None, None], jnp.uint32(0)),
                      axis=0, dtype=jnp.uint32)
    return jnp.where(valid, cells, -1), classes, num_differ <= max_cells


def within_bound(log_layouts: jax.Array, max_layouts: int) -> jax.Array:
    """bool[...]: the views whose layout count (``log_layouts``, the exact analysis' log)
    is at most ``max_layouts``, the endgame's bound (the log compared half a layout above
    it, so float rounding of an exact count never decides)."""
    return log_layouts < np.log(max_layouts + 0.5)


def table_size(max_layouts: int, max_sets: int | None = None) -> int:
    """The reachable-set table's static size: ``max_sets`` (default: ``default_sizes``), or
    fewer where fewer sets exist (at most ``2^L - L - 2`` sets of 2..L-1 of ``L`` layouts)."""
    max_sets = default_sizes(max_layouts)[0] if max_sets is None else max_sets
    return max(1, min(max_sets, 2**max_layouts - max_layouts - 2))


def endgame_chunk(num_views: int, max_layouts: int) -> int:
    """Views per call of ``solve_endgame`` (default sizes) for a batch of ``num_views``: an
    eighth of it (few views are near their end at once; a 256th above ``DENSE_LAYOUTS``
    layouts, rarer and dearer), at most what keeps its largest step near 256 MiB."""
    max_cells = default_sizes(max_layouts)[1]
    if max_layouts <= DENSE_LAYOUTS:
        per_view, share = math.comb(max_layouts, max_layouts // 2) * max_cells * MINE * 4, max(8, num_views // 8)
    else:  # the table's clicks: children, sizes, indices, values
        per_view = table_size(max_layouts) * max_cells * MINE * (12 + 4 * words(max_layouts))
        share = max(1, num_views // 256)
    return max(1, min(share, (256 << 20) // per_view))


@functools.partial(jax.jit, static_argnames=("max_layouts", "max_cells", "limits", "max_sets"))
def solve_endgame(
    key: jax.Array, revealed: jax.Array, counts: jax.Array, mine_count: jax.Array, max_layouts: int = 8,
    max_cells: int | None = None, limits: ExactLimits = ExactLimits(), max_sets: int | None = None,
) -> Endgame:
    """The exhaustive endgame of each view (module docstring).

    Args:
      key: a PRNG key (the draws that find the layouts; the result does not depend on
        it unless a layout is missed, which flags the view); revealed: bool[B, H, W];
        counts: int[B, H, W] (read where revealed); mine_count: int[B].
      max_layouts: static, 2..``MAX_ENDGAME_LAYOUTS``: views with more layouts are not
        solved; max_cells: static, the most cells whose outcome differs (default:
        ``default_sizes``).
      limits: the exact analysis' static sizes.
      max_sets: static, the most sets of layouts the player can come to know
        (``reachable_sets``; default: ``default_sizes``); a view with more is not solved.

    Returns:
      ``Endgame``.

    Raises:
      ValueError: a static argument out of its range, ``max_sets`` with at most
        ``DENSE_LAYOUTS`` layouts (every set is then in the table), or a view's argument
        of another shape or dtype (``check_views``).
    """
    check_views("solve_endgame", revealed, counts, mine_count, limits)
    check_value("solve_endgame", "max_layouts", max_layouts, ints(2, MAX_ENDGAME_LAYOUTS))
    check_value("solve_endgame", "max_cells", max_cells, optional(ints(1)))
    check_value("solve_endgame", "max_sets", max_sets, optional(ints(1)))
    if max_sets is not None:
        check_effect("solve_endgame", "max_sets", max_sets, max_layouts > DENSE_LAYOUTS,
                     f"max_layouts > {DENSE_LAYOUTS}", f"max_layouts={max_layouts}")
    max_cells = default_sizes(max_layouts)[1] if max_cells is None else max_cells
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
    everything = jnp.sum(layout_bits(present), axis=1, dtype=jnp.uint32)
    if max_layouts <= DENSE_LAYOUTS:
        root = jax.vmap(functools.partial(dense_click_values, num_layouts=max_layouts))(everything, classes)
        known = jnp.ones(num_boards, bool)
    else:
        click_chances = functools.partial(click_values, max_sets=table_size(max_layouts, max_sets),
                                          num_layouts=max_layouts)
        root, known = jax.vmap(click_chances)(everything, classes)  # [B, C], [B]
    root = jnp.where(cells >= 0, root, -1.0)
    win = jnp.max(root, axis=1)
    safety = jnp.sum(popcount(everything[:, None, None, :] & classes), axis=2)
    pick = jnp.argmax(jnp.where(root >= win[:, None] - TIES, safety, -1), axis=1)
    solved = complete & fits & known & (win >= 0)
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

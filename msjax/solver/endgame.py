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
   views with 17 to 32 layouts, a few hundred (ad hoc, a host search of ``msjax.exact``'s
   games).
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
from msjax.solver.grid import neighbours
from msjax.solver.sample import sample_layouts
from msjax.solver.types import MAX_ENDGAME_LAYOUTS, ExactLimits, check_views

SAMPLES_PER_LAYOUT = 16  # draws per layout of the bound, deduplicated into the layouts
MINE = 9  # outcome of a click on a mine; 0..8 are the numbers
WORD = 32  # layouts per uint32 word of a mask
NO_SET = np.uint32(0xFFFFFFFF)  # every word of an empty slot of a table of sets (only a view's own set of
# 32, 64, 96 or 128 layouts has all bits: it is never in a table, its splits being proper subsets)
# The default (most sets of layouts the player can come to know, most cells whose outcome differs) for
# each bound: at most 32, 64, 128 layouts. On 8x8x10 (benchmarks/endgame_sizes.py, 6,000 games): the views
# the tables hold carry nearly all their endgame's gain (33-64 layouts: 0.030 of 0.032 points per game;
# 65-128: 0.015 of 0.018), with at most 34, 38, 42 cells.
SIZES = ((32, 1024, 32), (64, 4096, 40), (128, 16384, 48))
DENSE_LAYOUTS = 12  # up to this many layouts, V is filled for all 2^n sets (cheaper than finding the reachable)
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


def words(num_layouts: int) -> int:
    """The uint32 words of a mask over ``num_layouts`` layouts."""
    return -(-num_layouts // WORD)


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


def layout_bits(present: jax.Array) -> jax.Array:
    """uint32[..., L, words(L)]: the mask of each present layout (bool[..., L]; bit ``l %
    32`` of word ``l // 32``), 0 for the others; their sum is the mask of all present
    layouts."""
    layout = np.arange(present.shape[-1])
    one = np.zeros((layout.size, words(layout.size)), np.uint32)
    one[layout, layout // WORD] = np.left_shift(np.uint32(1), (layout % WORD).astype(np.uint32))
    return jnp.where(present[..., None], one, jnp.uint32(0))


def _popcount(masks: jax.Array) -> jax.Array:
    """int32[...]: the layouts in each mask (uint32[..., words])."""
    return jnp.sum(jax.lax.population_count(masks), axis=-1, dtype=jnp.int32)


def _same(a: jax.Array, b: jax.Array) -> jax.Array:
    """bool[...]: the masks (uint32[..., words]) are equal."""
    return jnp.all(a == b, axis=-1)


def _empty(masks: jax.Array) -> jax.Array:
    """bool[...]: the slots (uint32[..., words]) that hold ``NO_SET``."""
    return jnp.all(masks == NO_SET, axis=-1)


def _below(a: jax.Array, b: jax.Array) -> jax.Array:
    """bool[...]: mask ``a`` sorts before ``b`` (uint32[..., words]; by word 0, then 1...)."""
    below, equal = jnp.zeros(a.shape[:-1], bool), jnp.ones(a.shape[:-1], bool)
    for word in range(a.shape[-1]):
        below, equal = below | (equal & (a[..., word] < b[..., word])), equal & (a[..., word] == b[..., word])
    return below


def _search(table: jax.Array, masks: jax.Array) -> jax.Array:
    """int32[...]: for each mask (uint32[..., words]), the first row of ``table``
    (uint32[M, words], sorted) not below it (``M`` where none)."""
    if table.shape[-1] == 1:
        return jnp.searchsorted(table[:, 0], masks[..., 0]).astype(jnp.int32)
    size = table.shape[0]

    def halve(_, bounds):  # binary search: the answer stays in [low, high]
        low, high = bounds
        middle = (low + high) // 2
        below = _below(table[jnp.minimum(middle, size - 1)], masks) & (low < high)
        return jnp.where(below, middle + 1, low), jnp.where(below | (low >= high), high, middle)

    start = (jnp.zeros(masks.shape[:-1], jnp.int32), jnp.full(masks.shape[:-1], size, jnp.int32))
    return jax.lax.fori_loop(0, size.bit_length(), halve, start)[0]


def _find(table: jax.Array, masks: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(int32[...], bool[...]): where each mask (uint32[..., words]) is in ``table``
    (uint32[M, words], sorted), and whether it is there."""
    at = jnp.clip(_search(table, masks), 0, table.shape[0] - 1)
    return at, _same(table[at], masks)


def _sorted(masks: jax.Array) -> jax.Array:
    """uint32[N, words]: the rows of ``masks`` in ascending order (``NO_SET`` last)."""
    columns = jax.lax.sort(tuple(masks[:, word] for word in range(masks.shape[1])), num_keys=masks.shape[1])
    return jnp.stack(columns, axis=1)


def _split_by_click(masks: jax.Array, classes: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """What each click does to each mask (uint32[..., words]): ``(children uint32[..., C, 9,
    words], the layouts showing each number; their sizes int32[..., C, 9]; tells bool[...,
    C], the click risks a mine or splits the mask)``."""
    children = masks[..., None, None, :] & classes
    return children, _popcount(children), ~jnp.any(_same(children, masks[..., None, None, :]), axis=-1)


def _chances(masks: jax.Array, sizes: jax.Array, after: jax.Array, tells: jax.Array) -> jax.Array:
    """float32[..., C]: the win chance of each click from each mask (uint32[..., words]), given the
    sizes (int32[..., C, 9]) and values ``after`` (float32[..., C, 9]) of the sets it splits
    the mask into; -1 where it tells nothing."""
    chance = jnp.sum(sizes * after, axis=-1) / jnp.maximum(_popcount(masks), 1)[..., None]
    return jnp.where(tells, chance, -1.0)


def _splits(masks: jax.Array, real: jax.Array, classes: jax.Array) -> jax.Array:
    """uint32[M, C, 9, words]: the sets of at least two layouts that each click splits each
    mask (uint32[M, words]; where ``real``, bool[M]) into; ``NO_SET`` elsewhere."""
    children, sizes, _ = _split_by_click(masks, classes)
    kept = real[:, None, None] & (sizes >= 2) & ~_same(children, masks[:, None, None, :])
    return jnp.where(kept[..., None], children, NO_SET)


def _distinct_sets(masks: jax.Array, capacity: int) -> tuple[jax.Array, jax.Array]:
    """(uint32[capacity, words] ascending, ``NO_SET`` past them; int32[] how many there
    were): the distinct masks of ``masks`` (uint32[N, words], N >= capacity), ``NO_SET``
    entries dropped."""
    ordered = _sorted(masks)
    first = ~_empty(ordered) & jnp.concatenate([jnp.ones(1, bool), ~_same(ordered[1:], ordered[:-1])])
    count = jnp.sum(first, dtype=jnp.int32)
    kept = ordered[jnp.argsort(~first, stable=True)[:capacity]]
    return jnp.where((jnp.arange(capacity) < count)[:, None], kept, NO_SET), count


def _packed(masks: jax.Array, keep: jax.Array, size: int) -> tuple[jax.Array, jax.Array]:
    """(uint32[size, words], int32[]): the ``masks`` (uint32[N, words]) where ``keep``, in
    their order, ``NO_SET`` after them, and how many there were (only ``size`` fit)."""
    slot = jnp.where(keep, jnp.cumsum(keep) - 1, size)
    empty = jnp.full((size, masks.shape[1]), NO_SET)
    return empty.at[slot].set(masks, mode="drop"), jnp.sum(keep, dtype=jnp.int32)


def _queue_rest(queue: jax.Array, num_queued: jax.Array, num_taken: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(uint32[Q, words], bool[Q]): the ``queue`` less its first ``num_taken`` entries (of
    ``num_queued``), and which of its rows are real."""
    rows = jnp.arange(queue.shape[0])
    return queue[jnp.minimum(rows + num_taken, queue.shape[0] - 1)], rows < num_queued - num_taken


def reachable_sets(root: jax.Array, classes: jax.Array, max_sets: int) -> tuple[jax.Array, jax.Array]:
    """The sets of layouts the player can come to know from ``root`` (uint32[words], a
    mask): every set of at least two layouts that a sequence of clicks (``classes``:
    uint32[C, 9, words]) splits ``root`` into, ``root`` itself excluded.

    Found through a queue of the sets still to split (each set joins it once, so it holds
    ``max_sets``): each step splits the first of them (at most ``max_sets // 2``, and only as
    many as their splits fit ``max(4 * max_sets, 9 C)`` slots, most of the ``9 C`` per set
    being empty; the rest wait for the next step), merges the splits into the table (sorted,
    deduplicated) and queues the sets new to it; it stops when the queue is empty. Only the
    table bounds the search: a view whose sets fit it is never flagged for how they arrive.

    Returns:
      ``(sets uint32[max_sets, words], fits bool[])``: the sets in ascending order, ``NO_SET``
      past them; ``fits``: the table holds every set (else ``sets`` holds only some).
    """
    batch, num_words = max(1, max_sets // 2), root.shape[-1]
    splits = max(4 * max_sets, classes.shape[0] * MINE)  # one set's splits always fit: every step takes one

    def grow(carry):  # split the first sets of the queue and queue those not seen yet
        table, queue, num_queued, fits = carry  # the root may be all ones, as NO_SET: count, not compare
        children = _splits(queue[:batch], jnp.arange(batch) < num_queued, classes)  # [batch, C, 9, words]
        taken = jnp.cumsum(jnp.sum(~_empty(children), axis=(1, 2))) <= splits  # a prefix of the queue
        num_taken = jnp.minimum(jnp.sum(taken, dtype=jnp.int32), num_queued)
        children = jnp.where(taken[:, None, None, None], children, NO_SET).reshape(-1, num_words)
        children, _ = _packed(children, ~_empty(children), splits)
        merged, count = _distinct_sets(jnp.concatenate([table, children]), max_sets)
        _, seen = _find(table, merged)
        rest, waiting = _queue_rest(queue, num_queued, num_taken)
        queue, num_queued = _packed(jnp.concatenate([rest, merged]), jnp.concatenate([waiting, ~_empty(merged) & ~seen]),
                                    max_sets)
        return merged, queue, num_queued, fits & (count <= max_sets) & (num_taken > 0)

    start = (jnp.full((max_sets, num_words), NO_SET), jnp.full((max_sets, num_words), NO_SET).at[0].set(root),
             jnp.int32(1), jnp.bool_(True))
    table, _, _, fits = jax.lax.while_loop(lambda carry: (carry[2] > 0) & carry[3], grow, start)
    return table, fits


class _Clicks(NamedTuple):
    """What each click does to each of some masks (``[..., C, 9]``): ``size`` int32, the
    layouts that show each number; ``index`` int32, where that set is in the table (-1 with
    fewer than two layouts, or not there); ``tells`` bool[..., C]: the click risks a mine
    or splits the mask."""

    size: jax.Array
    index: jax.Array
    tells: jax.Array


def _clicks(masks: jax.Array, classes: jax.Array, sets: jax.Array) -> _Clicks:
    """``_Clicks`` of ``masks`` (uint32[..., words]) against the table ``sets`` (ascending)."""
    children, size, tells = _split_by_click(masks, classes)
    at, found = _find(sets, children)
    return _Clicks(size, jnp.where(found & (size >= 2), at, -1), tells)


def _click_values(masks: jax.Array, clicks: _Clicks, values: jax.Array) -> jax.Array:
    """float32[..., C]: for each mask (uint32[..., words]), the win chance of clicking each cell
    first, -1 where the click tells nothing (``values``: float32[M], V of the table's sets;
    a set of one layout is won, of none is not there)."""
    after = jnp.where(clicks.index >= 0, values[jnp.maximum(clicks.index, 0)], (clicks.size == 1).astype(jnp.float32))
    return _chances(masks, clicks.size, after, clicks.tells)


def set_values(sets: jax.Array, classes: jax.Array, num_layouts: int) -> jax.Array:
    """float32[M]: the optimal win chance ``V(S)`` of each set of the table ``sets``
    (uint32[M, words] ascending, ``NO_SET`` entries get 0; every split of a set must be in
    it: ``reachable_sets``), for click classes uint32[C, 9, words] over at most
    ``num_layouts``.

    Sweeps ``V <- max_c sum_v |S_v| / |S| V(S_v)`` over the whole table from ``V = 0``: the
    sweep is monotone and exact after as many sweeps as the longest chain of splits below
    a set, so it stops when a sweep changes nothing (at most ``num_layouts`` sweeps).
    """
    clicks = _clicks(sets, classes, sets)
    real = ~_empty(sets)

    def sweep(carry):
        values, _, done = carry
        best = jnp.max(_click_values(sets, clicks, values), axis=-1)
        return jnp.where(real, jnp.maximum(best, 0.0), 0.0), values, done + 1

    def changing(carry):
        values, before, done = carry
        return jnp.any(values != before) & (done <= num_layouts)

    start = jnp.zeros(sets.shape[:1], jnp.float32)
    return jax.lax.while_loop(changing, sweep, (start, jnp.full(sets.shape[:1], -1.0), jnp.int32(0)))[0]


def click_values(root: jax.Array, classes: jax.Array, max_sets: int, num_layouts: int):
    """``(float32[C], bool[])``: the win chance of clicking each cell first from the set of
    layouts ``root`` (uint32[words]) and playing best after (-1 where the click tells
    nothing), for click classes uint32[C, 9, words] over at most ``num_layouts`` layouts; and whether the
    ``max_sets`` table held every set the player can come to know (else the chances are
    not to be used)."""
    sets, fits = reachable_sets(root, classes, max_sets)
    values = set_values(sets, classes, num_layouts)
    return _click_values(root, _clicks(root, classes, sets), values), fits


def _dense_click_values(masks: jax.Array, classes: jax.Array, values: jax.Array) -> jax.Array:
    """float32[..., C]: ``_click_values`` where ``values`` (float32[2^L]) holds V of every
    mask (one word: ``L <= DENSE_LAYOUTS``)."""
    children, sizes, tells = _split_by_click(masks, classes)  # children < 2^L: classes hold only layout bits
    return _chances(masks, sizes, values[children[..., 0]], tells)


@functools.lru_cache(maxsize=None)
def _masks_by_size(num_layouts: int) -> np.ndarray:
    """uint32[L - 1, N, 1]: the masks of each size 2..L (padded with ``2^L``, out of range)."""
    size = 1 << num_layouts
    masks = np.arange(size)
    popcount = np.array([bin(m).count("1") for m in masks])
    table = np.full((num_layouts - 1, math.comb(num_layouts, num_layouts // 2)), size, np.uint32)
    for k in range(2, num_layouts + 1):
        of_size = masks[popcount == k]
        table[k - 2, : len(of_size)] = of_size
    return table[..., None]


def dense_click_values(root: jax.Array, classes: jax.Array, num_layouts: int) -> jax.Array:
    """float32[C]: ``click_values`` by a table of all ``2^num_layouts`` sets of layouts,
    filled by size (``num_layouts - 1`` vectorised steps): cheaper than the reachable sets
    for a few layouts (``DENSE_LAYOUTS``), and nothing to flag."""
    values = (jax.lax.population_count(jnp.arange(1 << num_layouts, dtype=jnp.uint32)) == 1).astype(jnp.float32)

    def fill(values, masks):
        best = jnp.max(_dense_click_values(masks, classes, values), axis=-1)  # -1: no click splits it
        return values.at[masks[:, 0]].set(jnp.maximum(best, 0.0), mode="drop"), None

    values = jax.lax.scan(fill, values, jnp.asarray(_masks_by_size(num_layouts)))[0]
    return _dense_click_values(root, classes, values)


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
    safety = jnp.sum(_popcount(everything[:, None, None, :] & classes), axis=2)
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

"""Sets of layouts as bitmasks, and the exhaustive endgame's DP over them
(``msjax.search.endgame``'s steps 2-4).

A set of at most ``MAX_ENDGAME_LAYOUTS`` layouts is a mask of ``words(n)`` ``uint32`` words,
layout ``l`` at bit ``l % 32`` of word ``l // 32``; tables of masks are sorted by their
words in order (word 0 first), ``NO_SET`` in their empty slots. ``reachable_sets`` finds the
sets of layouts the player can come to know from a view's set, ``set_values`` fills the
chance to win ``V(S)`` over them, and ``click_values`` / ``dense_click_values`` give the
chance of each first click.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

MAX_ENDGAME_LAYOUTS = 128  # the endgame's sets of layouts are bitmasks of four uint32 words at most
MINE = 9  # outcome of a click on a mine; 0..8 are the numbers
WORD = 32  # layouts per uint32 word of a mask
NO_SET = np.uint32(0xFFFFFFFF)  # every word of an empty slot of a table of sets (only a view's own set of
# 32, 64, 96 or 128 layouts has all bits: it is never in a table, its splits being proper subsets)
DENSE_LAYOUTS = 12  # up to this many layouts, V is filled for all 2^n sets (cheaper than finding the reachable)


def words(num_layouts: int) -> int:
    """The uint32 words of a mask over ``num_layouts`` layouts."""
    return -(-num_layouts // WORD)


def layout_bits(present: jax.Array) -> jax.Array:
    """uint32[..., L, words(L)]: the mask of each present layout (bool[..., L]; bit ``l %
    32`` of word ``l // 32``), 0 for the others; their sum is the mask of all present
    layouts."""
    layout = np.arange(present.shape[-1])
    one = np.zeros((layout.size, words(layout.size)), np.uint32)
    one[layout, layout // WORD] = np.left_shift(np.uint32(1), (layout % WORD).astype(np.uint32))
    return jnp.where(present[..., None], one, jnp.uint32(0))


def popcount(masks: jax.Array) -> jax.Array:
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
    return children, popcount(children), ~jnp.any(_same(children, masks[..., None, None, :]), axis=-1)


def _chances(masks: jax.Array, sizes: jax.Array, after: jax.Array, tells: jax.Array) -> jax.Array:
    """float32[..., C]: the win chance of each click from each mask (uint32[..., words]), given the
    sizes (int32[..., C, 9]) and values ``after`` (float32[..., C, 9]) of the sets it splits
    the mask into; -1 where it tells nothing."""
    chance = jnp.sum(sizes * after, axis=-1) / jnp.maximum(popcount(masks), 1)[..., None]
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

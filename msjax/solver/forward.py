"""The forward pass of the exact analysis (``msjax.solver.exact``): the transfer-matrix DP
along the frontier, step by step over a batch of views, keeping every step's table and
transitions for a backward pass (``exact``'s marginals, ``sample``'s layouts).

A state of the DP is (the mines each open number still needs, packed 4 bits a number in
``uint32`` words; the mines placed so far), held in a table of at most ``max_states``
rows with the log number of partial layouts that reach it (``Table``). Each step visits
one frontier cell (``msjax.solver.frontier`` plans the path), splits every state in two
(the cell safe, or a mine), drops the branches that can no longer fit, and merges equal
states (a sort by a 32-bit hash of the key, then neighbours summed). ``final_weights``
weights the last table by ``C(F, M - m)``, the ways to put the remaining mines off the
frontier. ``msjax.solver.exact``'s docstring gives the whole algorithm, its numbers and
its limits.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from msjax.solver.frontier import Planner, StepPlan, key_words, plan_step, start_planner

NEG_INF = -jnp.inf

# ----------------------------------------------------------------------------- binomials


@functools.lru_cache(maxsize=None)
def _log_factorials(n: int) -> tuple[np.ndarray, np.ndarray]:
    """float32[n + 1] pairs (value, remainder) whose sum is log(k!) to ~1e-11."""
    exact = np.array([math.lgamma(k + 1) for k in range(n + 1)], np.float64)
    value = exact.astype(np.float32)
    return value, (exact - value.astype(np.float64)).astype(np.float32)


def _log_binomial_ratio(n: jax.Array, k: jax.Array, k_ref: jax.Array, size: int) -> jax.Array:
    """``log C(n, k) - log C(n, k_ref)``, accurate to float32 rounding of the result
    (``k``, ``k_ref`` within ``[0, n]``, ``n <= size``); the differences of nearby
    log-factorials are taken before anything else rounds them."""
    value, remainder = (jnp.asarray(x) for x in _log_factorials(size))
    high = (value[k_ref] - value[k]) + (value[n - k_ref] - value[n - k])
    low = (remainder[k_ref] - remainder[k]) + (remainder[n - k_ref] - remainder[n - k])
    return high + low


def two_sum(a: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(a + b rounded, its rounding error)``: ``a + b`` equals their sum exactly (Knuth's
    TwoSum, six float32 operations; XLA keeps their IEEE order, it never reassociates)."""
    total = a + b
    b_part = total - a
    return total, (a - (total - b_part)) + (b - b_part)


def _log_binomial(n: jax.Array, k: jax.Array, size: int) -> tuple[jax.Array, jax.Array]:
    """``log C(n, k)`` as ``(value, error)`` float32 pairs, exact to ~1e-9 in their sum
    (``0 <= k <= n <= size``): ``lax.lgamma`` in float32 is off by up to ~5e-4 near
    ``log(1000!)``, and so were the layout counts and every ratio of them."""
    value, remainder = (jnp.asarray(x) for x in _log_factorials(size))
    high, error_n = two_sum(value[n], -value[k])
    high, error_k = two_sum(high, -value[n - k])
    return high, (error_n + error_k) + ((remainder[n] - remainder[k]) - remainder[n - k])


def log_layout_count(log_final: jax.Array, log_reference, shift) -> jax.Array:
    """float32[...]: the natural log of a view's layout count, rounded once.

    Args:
      log_final: the final table's log total (``final_weights``), a few units at most.
      log_reference: ``(value, error)``, the log binomial of the reference (~e^240 on
        16x30x99, ~e^460 on 32x32x200, where float32 steps by 1.5e-5 and 3e-5).
      shift: ``(total, error)``, the shifts the forward pass took out of the tables.

    The large terms are added exactly (``two_sum``) and every small rest before them, so the
    result is the true count's log to float32 rounding: a ratio of two counts (a chance
    of the lookahead) is then off by at most a couple of float32 steps of the logs.
    """
    big, error = two_sum(log_reference[0], shift[0])
    return big + (log_final + ((log_reference[1] + shift[1]) + error))


# ----------------------------------------------------------------------------- forward


class Table(NamedTuple):
    """The DP's states of one view: ``keys`` uint32[S, Wd] (the open numbers' needs,
    packed), ``mines`` int32[S] (placed so far), ``log_ways`` float32[S] (-inf: no state)."""

    keys: jax.Array
    mines: jax.Array
    log_ways: jax.Array


NIBBLE_ONES = np.uint32(0x11111111)  # NumPy: a jnp constant here would start the backend at import
NIBBLE_HIGHS = np.uint32(0x88888888)


def _has_zero_nibble(words: jax.Array) -> jax.Array:
    """bool: some 4-bit field of the uint32 ``words`` is 0 (exact for "any": a borrow
    that could fake a zero only starts at a real one)."""
    return ((words - NIBBLE_ONES) & ~words & NIBBLE_HIGHS) != 0


def _branches_allowed(table: Table, step: StepPlan, mine_count, num_off):
    """(safe_ok, mine_ok) bool[S]: which of each state's two branches stay feasible.

    Every state keeps ``need <= unvisited`` for each open number (a branch that breaks it
    dies), so for the numbers of the visited cell: the mine branch needs ``need >= 1``,
    and the safe branch ``need <= unvisited - 1``, i.e. ``need != unvisited``. Both are
    "no targeted 4-bit field is zero", tested on whole words at once (SWAR): fields
    outside the targets are set to 1 first.
    """
    exists = table.log_ways > NEG_INF
    safe_fits = mine_fits = exists
    for w in range(table.keys.shape[1]):
        targets = step.targets[w]
        others = ~targets & NIBBLE_ONES
        key = table.keys[:, w]
        mine_fits = mine_fits & ~_has_zero_nibble((key & targets) | others)
        safe_fits = safe_fits & ~_has_zero_nibble(((key ^ step.unvisited[w]) & targets) | others)
    # the rest of the board must still be able to take the mines left
    fewest = mine_count - num_off - step.remaining
    safe_ok = safe_fits & (table.mines >= fewest)
    mine_ok = mine_fits & (step.cell >= 0) & (table.mines + 1 <= mine_count) & (table.mines + 1 >= fewest)
    return safe_ok, mine_ok


def _state_hash(keys: jax.Array, mines: jax.Array) -> jax.Array:
    """uint32[N]: a mix of each state's key words and mine count (equal states, equal
    hashes; unequal states rarely collide, and a collision only costs a table row)."""
    mixed = mines.astype(jnp.uint32) * jnp.uint32(0x9E3779B1)
    for w in range(keys.shape[1]):
        mixed = (mixed ^ keys[:, w]) * jnp.uint32(0x85EBCA6B)
        mixed = mixed ^ (mixed >> 13)
    mixed = mixed * jnp.uint32(0xC2B2AE35)
    return mixed ^ (mixed >> 16)


def _running_count(flags: jax.Array) -> jax.Array:
    """int32[N]: how many of ``flags`` (bool[N]) are set up to each position. Doubling
    steps (log N elementwise adds): XLA's CPU cumsum is a reduce-window, O(N^2)."""
    count = flags.astype(jnp.int32)
    step = 1
    while step < count.shape[0]:
        count = count + jnp.concatenate([jnp.zeros(step, jnp.int32), count[:-step]])
        step *= 2
    return count


def _merge(keys, mines, log_ways, ok, max_states: int):
    """The children (``N = 2S`` rows) merged by state and compacted into ``S`` rows.

    Equal states must meet to merge. A sort on one ``uint32`` per child (XLA's CPU sort
    is several times faster on one operand than on several) puts them side by side: the
    high bits hold a hash of the state, the low bits the child's index. States whose
    hashes collide may interleave and then stay apart as two rows of one state, which
    costs a row, not exactness: every child still lands on exactly one row, and rows are
    merged by comparing the whole state.

    Returns:
      (Table, dest int16[N]: each child's row in the new table, -1 if dropped,
      overflow bool[]: more than ``S`` rows were needed).
    """
    num_rows, num_words = keys.shape
    index_bits = max(1, (num_rows - 1).bit_length())
    dropped = jnp.uint32(0xFFFFFFFF)
    high = jnp.minimum(_state_hash(keys, mines) >> index_bits, jnp.uint32((1 << (32 - index_bits)) - 2))
    packed = jnp.where(ok, (high << index_bits) | jnp.arange(num_rows, dtype=jnp.uint32), dropped)
    packed = jax.lax.sort(packed)
    valid = packed != dropped
    order = (packed & jnp.uint32((1 << index_bits) - 1)).astype(jnp.int32)
    words, mines_sorted, ways = keys[order], mines[order], log_ways[order]
    same = (mines_sorted[1:] == mines_sorted[:-1]) & valid[:-1]
    for w in range(num_words):
        same = same & (words[1:, w] == words[:-1, w])
    first = valid & ~jnp.concatenate([jnp.zeros(1, bool), same])
    row = _running_count(first) - 1
    segment = jnp.where(valid & (row < max_states), row, max_states)
    top = jax.ops.segment_max(ways, segment, num_segments=max_states, indices_are_sorted=True)
    top_of = jnp.concatenate([jnp.where(jnp.isfinite(top), top, 0.0), jnp.zeros(1)])[segment]
    total = jax.ops.segment_sum(jnp.exp(ways - top_of), segment, num_segments=max_states, indices_are_sorted=True)
    target = jnp.where(first, segment, max_states)
    table = Table(
        keys=jnp.zeros((max_states, num_words), jnp.uint32).at[target].set(words, mode="drop"),
        mines=jnp.zeros(max_states, jnp.int32).at[target].set(mines_sorted, mode="drop"),
        log_ways=jnp.where(total > 0, jnp.log(total) + top, NEG_INF),
    )
    dest_sorted = jnp.where(segment < max_states, segment, -1).astype(jnp.int16)
    dest = jnp.full(num_rows, -1, jnp.int16).at[jnp.where(valid, order, num_rows)].set(dest_sorted, mode="drop")
    return table, dest, jnp.sum(first) > max_states


def normalised(log_ways: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(log_ways shifted so their max is 0, the shift); unchanged when all are -inf."""
    top = jnp.max(log_ways)
    top = jnp.where(jnp.isfinite(top), top, 0.0)
    return log_ways - top, top


def _children(table: Table, step: StepPlan, mine_count, num_off):
    """The two branches of every state of one view at one step: ``(keys uint32[2S, Wd],
    mines int32[2S], log_ways float32[2S], ok bool[2S])``, the safe branches first."""
    table = table._replace(keys=table.keys + step.opens[None, :])
    safe_ok, mine_ok = _branches_allowed(table, step, mine_count, num_off)
    keys = jnp.concatenate([table.keys, table.keys - (step.targets & NIBBLE_ONES)[None, :]])
    mines = jnp.concatenate([table.mines, table.mines + 1])
    log_ways = jnp.concatenate([table.log_ways, table.log_ways])
    return keys, mines, log_ways, jnp.concatenate([safe_ok, mine_ok])


def _forward_step(table: Table, step: StepPlan, mine_count, num_off, max_states: int):
    """One frontier cell on a batch of views (leading axis): ``(table, dest int16[B, 2S],
    overflow bool[B], shift float32[B])``."""
    children = jax.vmap(_children)(table, step, mine_count, num_off)
    table, dest, overflow = jax.vmap(functools.partial(_merge, max_states=max_states))(*children)
    log_ways, shift = jax.vmap(normalised)(table.log_ways)
    return table._replace(log_ways=log_ways), dest, overflow, shift


# ----------------------------------------------------------------------------- the pass


def final_weights(table: Table, mine_count, num_off, size: int):
    """(beta_T float32[S]: log C(F, M - m) relative to the likeliest state's, the log
    binomial of that reference as a ``(value, error)`` pair): the weights of the cells off
    the frontier."""
    off_mines = mine_count - table.mines
    fits = (table.log_ways > NEG_INF) & (off_mines >= 0) & (off_mines <= num_off)
    reference = jnp.clip(mine_count - table.mines[jnp.argmax(table.log_ways)], 0, num_off)
    k = jnp.clip(off_mines, 0, num_off)
    beta = jnp.where(fits, _log_binomial_ratio(num_off, k, reference, size), NEG_INF)
    return beta, _log_binomial(num_off, reference, size)


def _start_table(num_boards: int, max_states: int, num_words: int) -> Table:
    log_ways = jnp.full((num_boards, max_states), NEG_INF).at[:, 0].set(0.0)
    return Table(
        jnp.zeros((num_boards, max_states, num_words), jnp.uint32),
        jnp.zeros((num_boards, max_states), jnp.int32),
        log_ways,
    )


class Forward(NamedTuple):
    """The forward pass over a batch of views (leading axis ``[B]``) at one table size.

    Attributes:
      planner: the frontier planner after the last step (``num_off``: hidden cells off
        the frontier; ``too_wide``, ``num_cells``, ``impossible``: the view's limits).
      table: the final ``Table`` (each state's log ways, shifted).
      cells: int32[T, B], the cell visited at each step (-1: none).
      alphas: float32[T, B, S], each step's table before the step (shifted log ways).
      dests: int16[T, B, 2S], each step's children: their row in the next table (-1: dropped).
      overflow: bool[B], a step needed more than ``S`` states.
      shift_total: float32[B], the shifts taken out of the log ways, summed.
      shift_error: float32[B], the rounding of that sum (``two_sum``): the shifts add up
        to ~e^100-e^400 on large boards, where each float32 addition may lose 1e-5.
      last: int32[], the steps run (the batch's longest frontier, at most ``T``).
    """

    planner: Planner
    table: Table
    cells: jax.Array
    alphas: jax.Array
    dests: jax.Array
    overflow: jax.Array
    shift_total: jax.Array
    shift_error: jax.Array
    last: jax.Array


def forward_pass(views, steps: int, max_open: int, max_states: int) -> Forward:
    """The planner and the DP step by step over ``views`` (``(revealed bool[B, H, W],
    counts int32[B, H, W], mine_count int32[B])``), keeping every step's table and
    transitions for the backward pass (marginals, or sampling)."""
    revealed, counts, mine_count = views
    num_boards, height, width = revealed.shape
    planner = jax.vmap(start_planner, in_axes=(0, 0, None, None))(revealed, counts, steps, max_open)
    last = jnp.max(jnp.minimum(planner.num_cells, steps))  # the batch's longest frontier
    plan = jax.vmap(functools.partial(plan_step, height=height, width=width, max_open=max_open), in_axes=(0, None))

    def forward_body(carry):
        # the planner runs one step ahead: the DP reads its step from the loop carry, a
        # buffer, where XLA's CPU backend would otherwise fuse (recompute) the planner's
        # arithmetic into every element of the DP's arrays
        t, planner, step, table, history, overflow, (shift_total, shift_error) = carry
        new_table, dest, step_overflow, shift = _forward_step(table, step, mine_count, planner.num_off, max_states)
        cells, alphas, dests = history
        history = (cells.at[t].set(step.cell), alphas.at[t].set(table.log_ways), dests.at[t].set(dest))
        planner, step = plan(planner, t + 1)
        shift_total, error = two_sum(shift_total, shift)
        return t + 1, planner, step, new_table, history, overflow | step_overflow, (shift_total, shift_error + error)

    history = (
        jnp.full((steps, num_boards), -1, jnp.int32),
        jnp.full((steps, num_boards, max_states), NEG_INF),
        jnp.full((steps, num_boards, 2 * max_states), -1, jnp.int16),
    )
    planner, step = plan(planner, jnp.int32(0))
    no_shift = jnp.zeros(num_boards, jnp.float32)
    start = (jnp.int32(0), planner, step, _start_table(num_boards, max_states, key_words(max_open)), history,
             jnp.zeros(num_boards, bool), (no_shift, no_shift))
    _, planner, _, table, (cells, alphas, dests), overflow, (shift_total, shift_error) = jax.lax.while_loop(
        lambda c: c[0] < last, forward_body, start
    )
    return Forward(planner, table, cells, alphas, dests, overflow, shift_total, shift_error, last)

"""Enumerating one component of the frontier: every mine layout its constraints allow.

A component is a set of constraints ``(cells, value)`` ("these hidden cells hold exactly
``value`` mines") linked by shared cells. Hidden cells touched by the same constraints
are interchangeable, so they form *classes*, enumerated by how many mines each holds (a
class of ``s`` cells holding ``k`` mines stands for ``C(s, k)`` layouts). The tallies, per
mine count, are the number of layouts and, per class, the layouts weighted by its mines;
all are Python integers, so nothing overflows and "exactly 0" is an integer comparison.

Plain backtracking (``enumerate_component``, fast per node) runs first; past ``max_nodes``
search nodes the component is enumerated again with memoised subtrees
(``enumerate_memoised``, slower per node but polynomial on long frontier chains) under the
same budget; only if that fails too is the component replaced by a local estimate, flagged
``approximate`` (``solve_component``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections import deque
from typing import NamedTuple

Constraint = tuple[tuple[int, ...], int]
"""``(cells, value)``: the hidden cells (row-major indices) hold exactly ``value`` mines."""

Tallies = tuple[dict[tuple[int, int], int], dict[tuple[int, int], list[int]]]
"""``(weights, class_mines)`` of an enumeration, as in ``ComponentResult``."""


@functools.lru_cache(maxsize=None)
def comb(n: int, k: int) -> int:
    """``C(n, k)``, and 0 where ``k`` is outside ``[0, n]``."""
    return math.comb(n, k) if 0 <= k <= n else 0


class TooLarge(Exception):
    """A component needed more than ``max_nodes`` search nodes."""


@dataclasses.dataclass(frozen=True)
class ComponentResult:
    """What one component contributes, independent of the rest of the board.

    Attributes:
      classes: tuple of tuples of cell indices (interchangeable cells).
      weights: {(m, p): number of layouts of the component with m mines, p of them on the
        probe cells} (p is 0 without a probe).
      class_mines: {(m, p): per class, sum over those layouts of the mines in the class}.
      approximate: the enumeration hit ``max_nodes`` and this is the local estimate.
    """

    classes: tuple[tuple[int, ...], ...]
    weights: dict[tuple[int, int], int]
    class_mines: dict[tuple[int, int], list[int]]
    approximate: bool

    @property
    def sizes(self) -> list[int]:
        return [len(c) for c in self.classes]


class ComponentClasses(NamedTuple):
    """A component's cells grouped into classes, the input of the enumerations.

    Attributes:
      classes: per class, its cells (sorted), classes ordered by their smallest cell.
      sizes: cells per class.
      class_constraints: per class, the ids (positions) of the constraints it belongs to.
      values: per constraint, the mines its cells must hold.
      in_probe: per class, whether its cells are probe cells.
    """

    classes: tuple[tuple[int, ...], ...]
    sizes: list[int]
    class_constraints: list[tuple[int, ...]]
    values: list[int]
    in_probe: list[bool]


def component_classes(constraints: tuple[Constraint, ...], probe: frozenset = frozenset()) -> ComponentClasses:
    """Groups the cells of ``constraints`` into classes: cells in the same constraints (and
    on the same side of ``probe``) are interchangeable."""
    membership: dict[int, list[int]] = {}
    for ci, (cells, _) in enumerate(constraints):
        for cell in cells:
            membership.setdefault(cell, []).append(ci)
    grouped: dict[tuple[tuple[int, ...], bool], list[int]] = {}
    for cell, cons in membership.items():
        grouped.setdefault((tuple(cons), cell in probe), []).append(cell)
    keys = sorted(grouped, key=lambda k: min(grouped[k]))
    classes = tuple(tuple(sorted(grouped[k])) for k in keys)
    return ComponentClasses(
        classes=classes,
        sizes=[len(c) for c in classes],
        class_constraints=[k[0] for k in keys],
        values=[v for _, v in constraints],
        in_probe=[k[1] for k in keys],
    )


def _order_classes(class_constraints: list[tuple[int, ...]], num_constraints: int) -> list[int]:
    """Classes in breadth-first order over shared constraints, so constraints close early."""
    by_constraint: list[list[int]] = [[] for _ in range(num_constraints)]
    for i, cons in enumerate(class_constraints):
        for c in cons:
            by_constraint[c].append(i)
    order, seen_class, seen_cons = [], set(), set()
    for start in range(len(class_constraints)):
        if start in seen_class:
            continue
        queue = deque([start])
        seen_class.add(start)
        while queue:
            i = queue.popleft()
            order.append(i)
            for c in class_constraints[i]:
                if c in seen_cons:
                    continue
                seen_cons.add(c)
                for j in by_constraint[c]:
                    if j not in seen_class:
                        seen_class.add(j)
                        queue.append(j)
    return order


def _capacities(sizes: list[int], class_constraints: list[tuple[int, ...]], num_constraints: int) -> list[int]:
    """Per constraint, the cells of all its classes: the most mines it could still take."""
    capacity = [0] * num_constraints
    for size, cons in zip(sizes, class_constraints):
        for c in cons:
            capacity[c] += size
    return capacity


def enumerate_component(
    sizes: list[int],
    class_constraints: list[tuple[int, ...]],
    values: list[int],
    max_nodes: int,
    in_probe: list[bool],
) -> Tallies:
    """Backtracking over the mines per class with forward checking on every constraint.

    Each class's range of mine counts is cut to what keeps every constraint it touches
    satisfiable, so every leaf is a solution.

    Args:
      sizes: cells per class.
      class_constraints: per class, the constraint ids it belongs to.
      values: per constraint, the mines its cells must hold.
      max_nodes: budget; ``TooLarge`` is raised past it.
      in_probe: per class, whether its cells are probe cells (their mines are tallied
        separately, for the guess lookahead).

    Returns:
      ``(weights, class_mines)`` as in ``ComponentResult``.
    """
    num_classes = len(sizes)
    order = _order_classes(class_constraints, len(values))
    sums = [0] * len(values)
    capacity = _capacities(sizes, class_constraints, len(values))
    weights: dict[tuple[int, int], int] = {}
    class_mines: dict[tuple[int, int], list[int]] = {}
    mines_per_class = [0] * num_classes
    nodes = 0

    def visit(depth: int, weight: int, mines: int, probe_mines: int) -> None:
        nonlocal nodes
        nodes += 1
        if nodes > max_nodes:
            raise TooLarge
        if depth == num_classes:
            key = (mines, probe_mines)
            weights[key] = weights.get(key, 0) + weight
            tally = class_mines.get(key)
            if tally is None:
                tally = class_mines[key] = [0] * num_classes
            for i in range(num_classes):
                if mines_per_class[i]:
                    tally[i] += weight * mines_per_class[i]
            return
        i = order[depth]
        size = sizes[i]
        cons = class_constraints[i]
        probe = in_probe[i]
        low, high = 0, size
        for c in cons:
            need = values[c] - sums[c]
            high = min(high, need)
            low = max(low, need - (capacity[c] - size))
        if low > high:
            return
        for c in cons:
            capacity[c] -= size
        for k in range(low, high + 1):
            for c in cons:
                sums[c] += k
            mines_per_class[i] = k
            visit(depth + 1, weight * comb(size, k), mines + k, probe_mines + k * probe)
            for c in cons:
                sums[c] -= k
        mines_per_class[i] = 0
        for c in cons:
            capacity[c] += size

    visit(0, 1, 0, 0)
    return weights, class_mines


# ----------------------------------------------------------------------------- memoised


def _open_constraints(seq_cons: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Per depth ``d`` (0..len), the constraints touched both before ``d`` and at or after it."""
    first_seen: dict[int, int] = {}
    last_seen: dict[int, int] = {}
    for depth, cons in enumerate(seq_cons):
        for c in cons:
            first_seen.setdefault(c, depth)
            last_seen[c] = depth
    return [
        tuple(c for c in first_seen if first_seen[c] < depth <= last_seen[c]) for depth in range(len(seq_cons) + 1)
    ]


_LEAF = {(0, 0): (1, [])}
"""The table below the last class: one empty layout (read only)."""


def _add_subtree(out: dict, below: dict, mines: int, ways: int, probe: int) -> None:
    """Adds to ``out`` the subtree ``below`` with ``mines`` mines (``ways`` layouts) in the
    current class. Both map ``(m, p)`` to ``(layouts, [current class's tally, deeper
    classes' tallies ...])``."""
    for (m, p), (weight, tallies) in below.items():
        key = (m + mines, p + mines * probe)
        weight = weight * ways
        scaled = [weight * mines]
        scaled.extend(t * ways for t in tallies)
        current = out.get(key)
        if current is None:
            out[key] = (weight, scaled)
        else:
            out[key] = (current[0] + weight, [x + y for x, y in zip(current[1], scaled)])


def _in_class_order(result: dict, order: list[int]) -> Tallies:
    """The memoised root table as ``(weights, class_mines)``, tallies back in class order."""
    weights: dict[tuple[int, int], int] = {}
    class_mines: dict[tuple[int, int], list[int]] = {}
    for key, (weight, tallies) in result.items():
        weights[key] = weight
        by_class = [0] * len(order)
        for position, tally in enumerate(tallies):
            by_class[order[position]] = tally
        class_mines[key] = by_class
    return weights, class_mines


def _count_range(size: int, cons: tuple[int, ...], values: list[int], sums: list[int], capacity: list[int]):
    """``(low, high)``: the mines a class of ``size`` cells may hold so that every
    constraint it touches stays satisfiable (``capacity`` still counts the class)."""
    low, high = 0, size
    for c in cons:  # comparisons, not min/max calls: this runs once per search node
        need = values[c] - sums[c]
        if need < high:
            high = need
        rest = need - capacity[c] + size
        if rest > low:
            low = rest
    return low, high


def enumerate_memoised(
    sizes: list[int],
    class_constraints: list[tuple[int, ...]],
    values: list[int],
    max_nodes: int,
    in_probe: list[bool],
) -> Tallies:
    """``enumerate_component`` with memoised subtrees, for components too big for it.

    The arguments and result are those of ``enumerate_component`` (``max_nodes`` counts
    subtree evaluations). Classes are assigned in the same breadth-first order. The subtree
    below depth ``d`` depends only on the running sums of the constraints still open there
    (touched both before and after ``d``), so it is computed once per distinct tuple of
    those sums: long frontier chains cost a few states per class instead of one walk per
    solution (the transfer-matrix idea).
    """
    order = _order_classes(class_constraints, len(values))
    seq_size = [sizes[i] for i in order]
    seq_cons = [class_constraints[i] for i in order]
    seq_probe = [int(in_probe[i]) for i in order]
    seq_comb = [[comb(s, k) for k in range(s + 1)] for s in seq_size]
    open_at = _open_constraints(seq_cons)
    sums = [0] * len(values)
    capacity = _capacities(seq_size, seq_cons, len(values))
    memo: list[dict] = [{} for _ in range(len(order) + 1)]
    nodes = 0

    def visit(depth: int) -> dict:
        nonlocal nodes
        if depth == len(order):
            return _LEAF
        state = tuple(sums[c] for c in open_at[depth])
        known = memo[depth].get(state)
        if known is not None:
            return known
        nodes += 1
        if nodes > max_nodes:
            raise TooLarge
        size, cons = seq_size[depth], seq_cons[depth]
        low, high = _count_range(size, cons, values, sums, capacity)
        out: dict = {}
        for c in cons:
            capacity[c] -= size
        for k in range(low, high + 1):
            for c in cons:
                sums[c] += k
            below = visit(depth + 1)
            for c in cons:
                sums[c] -= k
            _add_subtree(out, below, k, seq_comb[depth][k], seq_probe[depth])
        for c in cons:
            capacity[c] += size
        memo[depth][state] = out
        return out

    return _in_class_order(visit(0), order)


# ----------------------------------------------------------------------------- one component


def _local_estimate(
    sizes: list[int],
    class_constraints: list[tuple[int, ...]],
    values: list[int],
    cells: list[int],
    every_count: bool = False,
) -> Tallies:
    """The fallback: per class the mean density of its constraints, and one total mine
    count, ``round(sum(expected))``; with ``every_count``, each count the constraints
    allow (``max(values)`` to ``min(sum(values), cells)``: every mine of the component
    lies in some constraint), equally weighted, the densities scaled to each count."""
    density = [
        sum(values[c] / cells[c] for c in cons) / len(cons) if cons else 0.0 for cons in class_constraints
    ]
    expected = [d * s for d, s in zip(density, sizes)]
    total = int(round(sum(expected)))
    # Weight 10**6 so that the class tallies (expected mines x weight) stay integers.
    scale = 10**6
    if not every_count:
        return {(total, 0): scale}, {(total, 0): [int(round(e * scale)) for e in expected]}
    weights, class_mines = {}, {}
    expected_sum = sum(expected) or 1.0
    for count in range(max(values, default=0), min(sum(values), sum(sizes)) + 1):
        share = [min(e * count / expected_sum, s) for e, s in zip(expected, sizes)]
        weights[(count, 0)] = scale
        class_mines[(count, 0)] = [int(round(x * scale)) for x in share]
    return weights, class_mines


def feasible_estimate(constraints: tuple[Constraint, ...]) -> ComponentResult:
    """The local estimate of a component over every mine count its constraints allow
    (``approximate``): for a view whose single-count estimate fits no global layout."""
    parts = component_classes(constraints)
    cells = [len(c) for c, _ in constraints]
    weights, class_mines = _local_estimate(parts.sizes, parts.class_constraints, parts.values, cells, True)
    return ComponentResult(parts.classes, weights, class_mines, True)


def solve_component(
    constraints: tuple[Constraint, ...], max_nodes: int, probe: frozenset = frozenset()
) -> ComponentResult:
    """Enumerates constraints given as ``((cells, value), ...)`` (usually one component).

    Plain backtracking first, memoised enumeration past ``max_nodes``, the local estimate
    (``approximate``) past that too. Cells of ``probe`` are kept in classes of their own and
    their mines tallied apart.
    """
    parts = component_classes(constraints, probe)
    arguments = (parts.sizes, parts.class_constraints, parts.values, max_nodes, parts.in_probe)
    for enumerate_fn in (enumerate_component, enumerate_memoised):
        try:
            weights, class_mines = enumerate_fn(*arguments)
        except TooLarge:
            continue
        return ComponentResult(parts.classes, weights, class_mines, False)
    cells = [len(c) for c, _ in constraints]
    weights, class_mines = _local_estimate(parts.sizes, parts.class_constraints, parts.values, cells)
    return ComponentResult(parts.classes, weights, class_mines, True)


def cached_solve(
    constraints: tuple[Constraint, ...], max_nodes: int, cache: dict | None, probe: frozenset = frozenset()
) -> ComponentResult:
    """``solve_component``, looked up in ``cache`` (a dict, or None for no cache) first."""
    key = (constraints, max_nodes, probe)
    result = cache.get(key) if cache is not None else None
    if result is None:
        result = solve_component(constraints, max_nodes, probe)
        if cache is not None:
            cache[key] = result
    return result

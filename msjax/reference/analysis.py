"""Exact mine probabilities of one view: constraints, components, and their combination.

Every revealed number with hidden neighbours is a constraint; constraints that share cells
form components, each enumerated on its own (``msjax.reference.enumeration``). The components
are combined through their mine-count distributions, each global combination weighted by
``C(F, M - m_total)``, the ways to put the remaining mines on the ``F`` hidden cells off the
frontier; those cells get their exact probability from the same sum. A component that
needed the local-estimate fallback makes the analysis ``approximate``, and nothing is then
called certain; when the fallbacks' mine counts fit no global layout, they are widened to
every count their constraints allow, so a consistent view never reads as inconsistent.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from msjax.reference.enumeration import ComponentResult, Constraint, cached_solve, comb, feasible_estimate
from msjax.reference.grid import neighbour_lists

MineTallies = tuple[dict[int, int], dict[int, list[int]]]
"""``(weights {m: layouts}, class_mines {m: per-class mine tallies})`` of one part."""


@dataclasses.dataclass(frozen=True)
class Analysis:
    """Exact (or flagged approximate) mine probabilities of one view.

    Attributes:
      mine_prob: float64[H, W], P(mine) for hidden cells, 0 on revealed cells.
      safe: int list of hidden cells (row-major) that are certainly safe.
      mines: int list of hidden cells that are certainly mines.
      total: number of mine layouts consistent with the view (0: inconsistent view);
        comparable across views of the same board and mine count.
      approximate: some component used the local-estimate fallback.
      fallbacks: how many components used it.
      components: the constraint components (``((cells, value), ...)`` each), and
      results: their enumerations, kept for the guess lookahead.
      num_off: hidden cells off the frontier.
    """

    mine_prob: np.ndarray
    safe: list[int]
    mines: list[int]
    total: int
    approximate: bool
    fallbacks: int
    components: list = dataclasses.field(default_factory=list, repr=False)
    results: list = dataclasses.field(default_factory=list, repr=False)
    num_off: int = 0


def constraints_of_view(revealed: np.ndarray, counts: np.ndarray) -> list[Constraint] | None:
    """Each revealed number with hidden neighbours as ``(hidden cells, value)``.

    Args:
      revealed: bool[H, W]; counts: int[H, W], read where revealed.

    Returns:
      The constraints, duplicate cell sets merged; None when the view is inconsistent (a
      number larger than its hidden neighbours, or one cell set with two different values).
    """
    height, width = revealed.shape
    neighbours = neighbour_lists(height, width)
    flat_revealed = revealed.reshape(-1).tolist()
    flat_counts = counts.reshape(-1).tolist()
    by_cells: dict[tuple[int, ...], int] = {}
    for cell, is_open in enumerate(flat_revealed):
        if not is_open:
            continue
        value = int(flat_counts[cell])
        hidden = tuple(n for n in neighbours[cell] if not flat_revealed[n])
        if value > len(hidden) or value < 0:
            return None
        if not hidden:
            continue
        if by_cells.setdefault(hidden, value) != value:
            return None
    return list(by_cells.items())


def components(constraints: list[Constraint]) -> list[tuple[Constraint, ...]]:
    """Constraints grouped into connected components (shared cells), each a sorted tuple."""
    parent = list(range(len(constraints)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[int, int] = {}
    for ci, (cells, _) in enumerate(constraints):
        for cell in cells:
            if cell in owner:
                a, b = find(owner[cell]), find(ci)
                if a != b:
                    parent[a] = b
            else:
                owner[cell] = ci
    groups: dict[int, list] = {}
    for ci, constraint in enumerate(constraints):
        groups.setdefault(find(ci), []).append(constraint)
    return [tuple(sorted(g)) for g in groups.values()]


def _convolve(a: dict[int, int], b: dict[int, int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for ma, wa in a.items():
        for mb, wb in b.items():
            out[ma + mb] = out.get(ma + mb, 0) + wa * wb
    return out


def combine(parts: list[MineTallies], num_off: int, mine_count: int) -> tuple[int, list[list[int]], int]:
    """Joins independent parts of the frontier with the cells off it.

    Args:
      parts: per part ``(weights {m: layouts}, class_mines {m: per-class mine tallies})``.
      num_off: hidden cells in no constraint; they share the remaining mines uniformly.
      mine_count: total mines.

    Returns:
      ``(total, class_tallies, off_mines)``: the number of consistent global layouts; per
      part and class the layouts weighted by the class's mines; and the layouts weighted by
      the mines off the frontier.
    """
    dists = [weights for weights, _ in parts]
    prefix = [{0: 1}]
    for d in dists:
        prefix.append(_convolve(prefix[-1], d))
    suffix = [{0: 1}]
    for d in reversed(dists):
        suffix.append(_convolve(suffix[-1], d))
    suffix.reverse()
    everything = prefix[-1]
    total = sum(w * comb(num_off, mine_count - m) for m, w in everything.items())
    class_tallies = []
    for j, (_, class_mines) in enumerate(parts):
        others = _convolve(prefix[j], suffix[j + 1])
        tallies = None
        for m, class_weights in class_mines.items():
            ways = sum(w * comb(num_off, mine_count - m - s) for s, w in others.items())
            if tallies is None:
                tallies = [0] * len(class_weights)
            if ways:
                for i, cw in enumerate(class_weights):
                    tallies[i] += cw * ways
        class_tallies.append(tallies or [])
    off_mines = sum(w * comb(num_off, mine_count - m) * (mine_count - m) for m, w in everything.items())
    return total, class_tallies, off_mines


def by_mines(result: ComponentResult) -> MineTallies:
    """A component's tallies keyed by mine count alone (the probe count summed out)."""
    weights: dict[int, int] = {}
    class_mines: dict[int, list[int]] = {}
    for (m, p), w in result.weights.items():
        weights[m] = weights.get(m, 0) + w
        tally = class_mines.setdefault(m, [0] * len(result.classes))
        for i, cw in enumerate(result.class_mines[(m, p)]):
            tally[i] += cw
    return weights, class_mines


def _inconsistent(revealed: np.ndarray) -> Analysis:
    mine_prob = np.where(revealed, 0.0, np.nan)
    return Analysis(mine_prob, [], [], 0, False, 0)


def check_view_shapes(revealed: Any, counts: Any) -> None:
    """Raises ``ValueError`` naming both shapes unless ``revealed`` is ``[H, W]`` and
    ``counts`` is the same ``[H, W]`` (one board's view; batch with a loop)."""
    revealed_shape, counts_shape = np.shape(revealed), np.shape(counts)
    if len(revealed_shape) != 2 or revealed_shape != counts_shape or 0 in revealed_shape:
        raise ValueError(
            f"reference.analyse needs revealed and counts of one board, both [H, W]; got revealed "
            f"{list(revealed_shape)} and counts {list(counts_shape)}"
        )


def analyse(
    revealed: np.ndarray,
    counts: np.ndarray,
    mine_count: int,
    max_nodes: int = 200_000,
    cache: dict | None = None,
) -> Analysis:
    """Mine probabilities of every hidden cell given only the player's view.

    Args:
      revealed: bool[H, W], opened cells (never mines).
      counts: int[H, W], neighbour mine counts, read only where ``revealed``.
      mine_count: total mines on the board.
      max_nodes: search budget per component and enumeration method before the
        local-estimate fallback (``msjax.reference.enumeration``).
      cache: optional dict reused across calls on the same board size; components already
        enumerated (same constraints) are looked up instead of enumerated again.

    Returns:
      ``Analysis``; for an inconsistent view ``total == 0`` and ``mine_prob`` is all NaN
      on hidden cells.

    Raises:
      ValueError: ``revealed`` is not 2-D or ``counts`` has another shape (both named).
    """
    check_view_shapes(revealed, counts)
    revealed = np.asarray(revealed, bool)
    height, width = revealed.shape
    flat_revealed = revealed.reshape(-1)
    num_hidden = int(np.count_nonzero(~flat_revealed))
    constraints = constraints_of_view(revealed, np.asarray(counts))
    if constraints is None or not 0 <= mine_count <= num_hidden:
        return _inconsistent(revealed)

    parts = components(constraints)
    results = [cached_solve(component, max_nodes, cache) for component in parts]
    frontier = np.zeros(height * width, bool)
    for result in results:
        for cls in result.classes:
            frontier[list(cls)] = True
    off_cells = np.flatnonzero(~flat_revealed & ~frontier)
    num_off = len(off_cells)
    total, class_tallies, off_mines = combine([by_mines(r) for r in results], num_off, mine_count)
    if total == 0 and any(r.approximate for r in results):
        # A fallback's single mine count can fit no global layout (too many mines for the
        # board, say): widen each fallback to every count its constraints allow.
        results = [feasible_estimate(part) if r.approximate else r for part, r in zip(parts, results)]
        total, class_tallies, off_mines = combine([by_mines(r) for r in results], num_off, mine_count)
    if total == 0:
        return _inconsistent(revealed)

    mine_prob = np.zeros(height * width)
    safe, mines = [], []
    fallbacks = sum(r.approximate for r in results)
    for result, tallies in zip(results, class_tallies):
        for cls, tally in zip(result.classes, tallies):
            mine_prob[list(cls)] = tally / (total * len(cls))
            if result.approximate:
                continue
            if tally == 0:
                safe.extend(cls)
            elif tally == total * len(cls):
                mines.extend(cls)
    if num_off:
        mine_prob[off_cells] = off_mines / (total * num_off)
        if not fallbacks and off_mines == 0:
            safe.extend(off_cells.tolist())
        elif not fallbacks and off_mines == total * num_off:
            mines.extend(off_cells.tolist())
    mine_prob = mine_prob.reshape(height, width)
    return Analysis(mine_prob, sorted(safe), sorted(mines), total, fallbacks > 0, fallbacks, parts, results, num_off)

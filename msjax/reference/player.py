"""The reference player: reveal every certainly safe cell, else make the best guess.

After each move the view is analysed exactly (``analyse``); every cell whose mine
probability is exactly 0 is revealed (all of them, then the view is analysed again). When
none is left the player guesses (``choose_guess``): by default a cell of lowest mine
probability; ties (often many: off-frontier cells share one probability) go to the cell
most likely to be safe *and* make progress, looked up one move ahead exactly
(``lookahead``: for each number the cell could show, is some cell then certainly safe?),
then to the one most likely to be safe and a zero, then to fewer hidden neighbours, then to
row-major order. ``ExactConfig`` can widen the candidates (``guess_tolerance``) and trade
safety for progress (``progress_weight``). There is no search deeper than one move.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from msjax.checks import check_fields, ints, numbers
from msjax.reference.analysis import Analysis, analyse, by_mines, combine
from msjax.reference.board import Board
from msjax.reference.enumeration import ComponentResult, Constraint, cached_solve, comb
from msjax.reference.grid import neighbour_lists


@dataclasses.dataclass(frozen=True)
class ExactConfig:
    """Knobs of the exact analysis and of the player's guess.

    Attributes:
      max_nodes: search nodes allowed per component and enumeration method before the
        local-estimate fallback (``msjax.reference.enumeration``).
      guess_tolerance: cells whose safety is at least ``(1 - guess_tolerance)`` times the
        best safety are guess candidates (0 = only the safest cells).
      lookahead_candidates: how many candidates (safest first) get the one-move lookahead;
        0 switches the lookahead off (then the zero chance and the corner rule break ties).
      progress_weight: weight of ``P(safe and progress)`` in the guess score.

    Raises:
      ValueError: on construction, naming a field out of its range.
    """

    max_nodes: int = 200_000
    guess_tolerance: float = 0.0
    lookahead_candidates: int = 6
    progress_weight: float = 0.0

    def __post_init__(self):
        check_fields(self, (
            (ints(1), ("max_nodes",)),
            (numbers(0, 1, high_open=True), ("guess_tolerance",)),
            (ints(0), ("lookahead_candidates",)),
            (numbers(0), ("progress_weight",)),
        ))


@dataclasses.dataclass
class PlayStats:
    """Outcome of one game.

    Attributes:
      won: every safe cell opened.
      moves: reveals made (the first click included).
      guesses: reveals of cells that were not certainly safe (the first click excluded).
      fallbacks: analyses that used the local-estimate fallback.
    """

    won: bool
    moves: int
    guesses: int
    fallbacks: int


def first_click_cell(height: int, width: int, safe_neighbourhood: bool) -> int:
    """The reference player's first click (row-major index).

    Safe first click only: the corner (0, 0): a corner has the fewest neighbours, so it is
    most often a zero (Tu et al. 2017 show corner probes raise the win rate). Opening start
    (``safe_neighbourhood``): the first click is always a zero, so the question is where
    the opening helps most; cell (2, 2) (third row and column, clamped to the board) keeps
    the guaranteed 3x3 clear block one cell off both edges. ``docs/experiments/017-*`` has
    the measurements behind the choice; ``benchmarks/solver_winrate.py --first-click R,C``
    overrides it.
    """
    if not safe_neighbourhood:
        return 0
    return min(2, height - 1) * width + min(2, width - 1)


# ----------------------------------------------------------------------------- lookahead


def _without_cell(
    cell: int, touched: list[int], analysis: Analysis
) -> list[Constraint] | None:
    """The constraints of the ``touched`` components with ``cell`` taken out (it is safe
    once revealed); None when that leaves a constraint no layout satisfies."""
    merged = []
    for j in touched:
        for cells, value in analysis.components[j]:
            if cell in cells:
                cells = tuple(x for x in cells if x != cell)
                if not cells:
                    if value:
                        return None
                    continue
            merged.append((cells, value))
    return merged


def _showing(result: ComponentResult, value: int, off_probe: int) -> tuple[dict[int, int], dict[int, list[int]]]:
    """The merged component's layouts in which the revealed cell shows ``value``, keyed by
    total mine count: ``p`` mines on its frontier neighbours (the probe) and ``value - p``
    on its ``off_probe`` neighbours off the frontier, tallied as one extra class."""
    weights: dict[int, int] = {}
    class_mines: dict[int, list[int]] = {}
    for (m, p), w in result.weights.items():
        u = value - p  # mines among the neighbours off the frontier
        if not 0 <= u <= off_probe:
            continue
        ways = w * comb(off_probe, u)
        if not ways:
            continue
        weights[m + u] = weights.get(m + u, 0) + ways
        tally = class_mines.setdefault(m + u, [0] * (len(result.classes) + 1))
        for i, cw in enumerate(result.class_mines[(m, p)]):
            tally[i] += cw * comb(off_probe, u)
        tally[-1] += ways * u
    return weights, class_mines


def lookahead(
    revealed: np.ndarray, cell: int, analysis: Analysis, mine_count: int, cfg: ExactConfig, cache: dict
) -> tuple[float, float]:
    """``(P(safe and shows 0), P(safe and progress))`` of revealing ``cell``, exactly.

    Progress: after the reveal some hidden cell is certainly safe. Revealing ``cell``
    removes it from its constraints and adds "its hidden neighbours hold v mines". The
    components it touches are enumerated once more, with ``cell`` safe and its neighbours
    as probe cells, giving the layouts for every ``v`` in one pass; each ``v`` is then
    combined with the untouched components and the off-frontier cells exactly as in
    ``analyse``. Layouts over ``analysis.total`` is ``P(cell safe and shows v)``.

    Args:
      revealed: bool[H, W], the view ``analysis`` describes; cell: a hidden cell.
      analysis: the view's exact analysis; mine_count: total mines.
      cfg: ``cfg.max_nodes`` bounds the enumeration; cache: shared with ``analyse``.

    Returns:
      The two probabilities; ``(0, 0)`` (no information) when an enumeration needs the
      fallback.
    """
    height, width = revealed.shape
    flat = revealed.reshape(-1)
    neighbours = [n for n in neighbour_lists(height, width)[cell] if not flat[n]]
    component_of = {x: j for j, result in enumerate(analysis.results) for cls in result.classes for x in cls}
    touched = {component_of[x] for x in [cell] + neighbours if x in component_of}
    merged = _without_cell(cell, sorted(touched), analysis)
    if merged is None:
        return 0.0, 0.0
    probe_front = frozenset(x for x in neighbours if x in component_of)
    off_probe = len(neighbours) - len(probe_front)
    if merged:
        result = cached_solve(tuple(sorted(merged)), cfg.max_nodes, cache, probe_front)
        if result.approximate:
            return 0.0, 0.0
    else:
        result = ComponentResult((), {(0, 0): 1}, {(0, 0): []}, False)
    others = [analysis.results[j] for j in range(len(analysis.results)) if j not in touched]
    if any(r.approximate for r in others):
        return 0.0, 0.0
    other_parts = [by_mines(r) for r in others]
    sizes = [r.sizes for r in others] + [result.sizes + [off_probe]]
    num_off = analysis.num_off - (cell not in component_of) - off_probe
    zero_ways = progress_ways = 0
    for value in range(len(neighbours) + 1):
        part = _showing(result, value, off_probe)
        if not part[0]:
            continue
        total, class_tallies, off_mines = combine(other_parts + [part], num_off, mine_count)
        if total == 0:
            continue
        if value == 0:
            zero_ways = total
        some_safe = (num_off > 0 and off_mines == 0) or any(
            tally == 0 and size > 0
            for tallies, part_sizes in zip(class_tallies, sizes)
            for tally, size in zip(tallies, part_sizes)
        )
        if some_safe:
            progress_ways += total
    return zero_ways / analysis.total, progress_ways / analysis.total


# ----------------------------------------------------------------------------- the guess


def _lookahead_candidates(candidates: list[int], flat: np.ndarray, neighbours: tuple, limit: int) -> list[int]:
    """The first ``limit`` candidates, counting cells whose whole neighbourhood is off the
    frontier once per neighbourhood size (they are interchangeable)."""
    frontier = set()
    for cell in np.flatnonzero(flat).tolist():
        frontier.update(n for n in neighbours[cell] if not flat[n])
    chosen, seen = [], set()
    for c in candidates:
        isolated = c not in frontier and not any(n in frontier for n in neighbours[c])
        signature = ("off", len(neighbours[c])) if isolated else c
        if signature in seen:
            continue
        seen.add(signature)
        chosen.append(c)
        if len(chosen) == limit:
            break
    return chosen


def choose_guess(
    revealed: np.ndarray,
    analysis: Analysis,
    mine_count: int,
    cfg: ExactConfig = ExactConfig(),
    cache: dict | None = None,
) -> int:
    """The cell (row-major) to reveal when no hidden cell is certainly safe.

    Args:
      revealed: bool[H, W], the view that ``analysis`` (from ``analyse``) describes.
      analysis: its exact analysis (with ``analysis.safe`` empty); any result of
        ``analyse`` for a view with a hidden cell, an inconsistent one included.
      mine_count: total mines.
      cfg: the guess knobs; cache: the component cache shared with ``analyse``.

    Candidates are the hidden cells whose safety is within ``cfg.guess_tolerance`` of the
    best; the ``cfg.lookahead_candidates`` safest of them (cells whose whole
    neighbourhood is off the frontier count once per neighbourhood size: they are
    interchangeable) are scored ``P(safe) + progress_weight * P(safe and progress)``, ties
    broken by ``P(safe and progress)``, then ``P(safe and zero)``, then fewer hidden
    neighbours, then the lower index.
    """
    cache = {} if cache is None else cache
    height, width = revealed.shape
    neighbours = neighbour_lists(height, width)
    flat = revealed.reshape(-1)
    safety = 1.0 - analysis.mine_prob.reshape(-1)
    hidden = np.flatnonzero(~flat)
    if analysis.total == 0:  # an inconsistent view: no probabilities, so the fewest hidden neighbours
        return min(hidden.tolist(), key=lambda c: (sum(1 for n in neighbours[c] if not flat[n]), c))
    best = safety[hidden].max()
    candidates = hidden[safety[hidden] >= best * (1.0 - cfg.guess_tolerance) - 1e-12].tolist()
    hidden_count = {c: sum(1 for n in neighbours[c] if not flat[n]) for c in candidates}
    candidates.sort(key=lambda c: (-round(safety[c], 12), hidden_count[c], c))
    if cfg.lookahead_candidates == 0 or len(candidates) == 1:
        return candidates[0]
    chosen = _lookahead_candidates(candidates, flat, neighbours, cfg.lookahead_candidates)
    best_cell, best_key = chosen[0], None
    for c in chosen:
        zero, progress = lookahead(revealed, c, analysis, mine_count, cfg, cache)
        score = round(safety[c] + cfg.progress_weight * progress, 12)
        key = (score, round(progress, 12), round(zero, 12), -hidden_count[c], -c)
        if best_key is None or key > best_key:
            best_cell, best_key = c, key
    return best_cell


def play_board(board: Board, first_click: int, cfg: ExactConfig = ExactConfig()) -> PlayStats:
    """Plays one game to the end on ``board``: deduce, reveal all certain cells, else guess.

    Reads only ``board.revealed``, ``board.counts`` on revealed cells and the mine count.
    """
    cache: dict = {}
    moves, guesses, fallbacks = 1, 0, 0
    board.reveal(first_click)
    while not (board.won or board.lost):
        view_counts = np.where(board.revealed, board.counts, 0)
        analysis = analyse(board.revealed, view_counts, board.mine_count, cfg.max_nodes, cache)
        fallbacks += analysis.fallbacks
        if analysis.safe:
            flat = board.revealed.reshape(-1)
            for cell in analysis.safe:
                if not flat[cell]:
                    board.reveal(cell)
                    moves += 1
            continue
        cell = choose_guess(board.revealed, analysis, board.mine_count, cfg, cache)
        board.reveal(cell)
        moves += 1
        guesses += 1
        if len(cache) > 20_000:
            cache.clear()
    return PlayStats(won=board.won, moves=moves, guesses=guesses, fallbacks=fallbacks)

"""Exact probabilities and the reference player: the NumPy reference (msjax.reference)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from drawings import view

from msjax import reference
from msjax.reference import Board, ExactConfig, analyse, neighbour_lists

# ----------------------------------------------------------------------------- helpers


def brute_force(revealed: np.ndarray, counts: np.ndarray, mine_count: int) -> tuple[np.ndarray, int]:
    """P(mine) per cell and the number of layouts, over every layout consistent with the view."""
    height, width = revealed.shape
    flat_revealed = revealed.reshape(-1)
    flat_counts = counts.reshape(-1)
    neighbours = neighbour_lists(height, width)
    hidden = np.flatnonzero(~flat_revealed).tolist()
    numbers = np.flatnonzero(flat_revealed).tolist()
    tally = np.zeros(height * width)
    layouts = 0
    for mines in itertools.combinations(hidden, mine_count):
        chosen = set(mines)
        if all(sum(n in chosen for n in neighbours[c]) == flat_counts[c] for c in numbers):
            layouts += 1
            tally[list(mines)] += 1
    return (tally / max(layouts, 1)).reshape(height, width), layouts



def consistent_layouts(revealed: np.ndarray, counts: np.ndarray, mine_count: int) -> np.ndarray:
    """bool[L, H*W]: every layout of ``mine_count`` mines on the hidden cells that fits the
    numbers, in ``itertools.combinations`` order, by brute force: every combination's numbers
    counted at once in NumPy (independent of msjax)."""
    height, width = revealed.shape
    hidden = np.flatnonzero(~revealed.reshape(-1))
    combinations = list(itertools.combinations(hidden, mine_count))
    chosen = np.array(combinations, np.int64).reshape(len(combinations), mine_count)
    layouts = np.zeros((len(chosen), revealed.size), bool)
    layouts[np.arange(len(chosen))[:, None], chosen] = True
    around = np.pad(layouts.reshape(-1, height, width), ((0, 0), (1, 1), (1, 1))).astype(np.int8)
    shown = sum(around[:, 1 + dr:1 + dr + height, 1 + dc:1 + dc + width]
                for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc)
    return layouts[(shown[:, revealed] == counts[revealed]).all(axis=1)]


def random_positions(seed: int, count: int, max_hidden: int = 16):
    """Mid-game views (revealed, counts seen, mines, true layout) of small random games."""
    rng = np.random.default_rng(seed)
    positions = []
    while len(positions) < count:
        height, width = int(rng.integers(3, 6)), int(rng.integers(3, 6))
        mines = int(rng.integers(1, min(8, height * width - 2)))
        board = Board(height, width, mines, bool(rng.integers(2)) and height * width - 9 >= mines, rng)
        board.reveal(int(rng.integers(height * width)))
        for _ in range(int(rng.integers(0, 4))):
            if board.won:
                break
            safe_hidden = np.flatnonzero(~board.revealed.reshape(-1) & ~board.mine_mask.reshape(-1))
            board.reveal(int(rng.choice(safe_hidden)))
        if board.won or np.count_nonzero(~board.revealed) > max_hidden:
            continue
        seen = np.where(board.revealed, board.counts, 0)
        positions.append((board.revealed.copy(), seen, mines, board.mine_mask.copy()))
    return positions


# ----------------------------------------------------------------------------- probabilities


def test_probabilities_equal_brute_force_on_random_small_positions():
    for revealed, counts, mines, _ in random_positions(seed=1, count=120):
        expected, layouts = brute_force(revealed, counts, mines)
        result = analyse(revealed, counts, mines)
        assert result.total == layouts
        np.testing.assert_allclose(result.mine_prob[~revealed], expected[~revealed], atol=1e-9, rtol=0)


def test_deductions_hold_in_every_consistent_layout():
    checked = 0
    for revealed, counts, mines, truth in random_positions(seed=2, count=120):
        expected, _ = brute_force(revealed, counts, mines)
        result = analyse(revealed, counts, mines)
        flat_expected, flat_truth = expected.reshape(-1), truth.reshape(-1)
        for cell in result.safe:
            assert flat_expected[cell] == 0 and not flat_truth[cell]
        for cell in result.mines:
            assert flat_expected[cell] == 1 and flat_truth[cell]
        # Complete too: every cell brute force proves is found.
        hidden = np.flatnonzero(~revealed.reshape(-1))
        assert sorted(result.safe) == [c for c in hidden if flat_expected[c] == 0]
        assert sorted(result.mines) == [c for c in hidden if flat_expected[c] == 1]
        checked += len(result.safe) + len(result.mines)
    assert checked > 50


def test_one_two_one_against_a_wall():
    revealed, counts = view(
        """
        # # #
        1 2 1
        """
    )
    result = analyse(revealed, counts, mine_count=2)
    np.testing.assert_array_equal(result.mine_prob[0], [1.0, 0.0, 1.0])
    assert result.safe == [1] and result.mines == [0, 2]


ONE_TWO_TWO_ONE = """
    # # # #
    1 2 2 1
"""


def test_one_two_two_one_against_a_wall():
    revealed, counts = view(ONE_TWO_TWO_ONE)
    result = analyse(revealed, counts, mine_count=2)
    np.testing.assert_array_equal(result.mine_prob[0], [0.0, 1.0, 1.0, 0.0])


def test_one_one_from_the_edge_clears_the_cells_past_it():
    # The 1 in the corner sees two cells, its neighbour 1 sees those two and two more.
    revealed, counts = view(
        """
        # # #
        1 1 #
        """
    )
    result = analyse(revealed, counts, mine_count=1)
    assert result.safe == [2, 5]
    np.testing.assert_allclose(result.mine_prob[0, :2], [0.5, 0.5])


def test_total_mine_count_settles_the_cell_off_the_frontier():
    # Two independent 50/50s hold exactly two mines; the last cell touches no number.
    revealed, counts = view("# 1 # # 1 # #")
    np.testing.assert_allclose(analyse(revealed, counts, 2).mine_prob[0, [0, 2, 3, 5]], 0.5)
    assert 6 in analyse(revealed, counts, 2).safe
    assert 6 in analyse(revealed, counts, 3).mines
    assert analyse(revealed, counts, 1).total == 0
    assert analyse(revealed, counts, 4).total == 0


def test_off_frontier_cells_get_their_exact_share():
    # One revealed 1 in the corner of a 4x4 board; its 3 hidden neighbours hold one mine.
    revealed, counts = view(
        """
        1 # # #
        # # # #
        # # # #
        # # # #
        """
    )
    expected, _ = brute_force(revealed, counts, 3)
    result = analyse(revealed, counts, 3)
    np.testing.assert_allclose(result.mine_prob, expected, atol=1e-12)
    # 3 frontier cells share 1 mine; 12 off-frontier cells share the other 2.
    assert result.mine_prob[3, 3] == pytest.approx(2 / 12)


def test_inconsistent_view_has_no_layouts():
    revealed, counts = view(
        """
        # # #
        3 . .
        """
    )
    assert analyse(revealed, counts, 3).total == 0


def test_expected_mines_add_up_on_an_expert_board_without_overflow():
    rng = np.random.default_rng(3)
    board = Board(16, 30, 99, True, rng)
    board.reveal(2 * 30 + 2)
    seen = np.where(board.revealed, board.counts, 0)
    result = analyse(board.revealed, seen, 99)
    hidden = ~board.revealed
    assert np.all((result.mine_prob[hidden] >= 0) & (result.mine_prob[hidden] <= 1))
    assert result.mine_prob[hidden].sum() == pytest.approx(99, abs=1e-9)
    assert not np.any(board.mine_mask.reshape(-1)[result.safe])


def test_huge_components_fall_back_and_are_flagged():
    revealed, counts = view(ONE_TWO_TWO_ONE)
    result = analyse(revealed, counts, 2, max_nodes=2)
    assert result.approximate and result.fallbacks == 1
    assert result.safe == [] and result.mines == []
    assert np.all((result.mine_prob[0] >= 0) & (result.mine_prob[0] <= 1))


def test_memoised_enumeration_equals_plain_backtracking():
    positions = random_positions(seed=10, count=40, max_hidden=24)
    components = [
        component
        for revealed, counts, _, _ in positions
        for component in reference.components(reference.constraints_of_view(revealed, counts))
    ]
    assert len(components) > 40
    for component in components:
        probe = frozenset(sorted({cell for group, _ in component for cell in group})[::3])
        parts = reference.component_classes(component, probe)
        arguments = (parts.sizes, parts.class_constraints, parts.values, 10**6, parts.in_probe)
        assert reference.enumerate_memoised(*arguments) == reference.enumerate_component(*arguments)


def test_memoised_enumeration_takes_over_past_the_node_budget():
    # One component that plain backtracking needs ~1,700 nodes for and memoised
    # enumeration ~120 subtree states.
    revealed, counts = view(
        """
        # # # # # # # #
        # 2 3 # # 2 # 2
        1 # 2 # 2 # 3 #
        # # # # # # # #
        """
    )
    (component,) = reference.components(reference.constraints_of_view(revealed, counts))
    parts = reference.component_classes(component)
    with pytest.raises(reference.TooLarge):
        reference.enumerate_component(parts.sizes, parts.class_constraints, parts.values, 500, parts.in_probe)
    result = reference.solve_component(component, 500)
    assert not result.approximate
    assert result == reference.solve_component(component, 10**6)


def test_component_cache_gives_identical_answers():
    cache: dict = {}
    for revealed, counts, mines, _ in random_positions(seed=4, count=30):
        cold = analyse(revealed, counts, mines)
        warm = analyse(revealed, counts, mines, cache=cache)
        warm_again = analyse(revealed, counts, mines, cache=cache)
        np.testing.assert_array_equal(cold.mine_prob, warm_again.mine_prob)
        assert cold.total == warm.total == warm_again.total


# ----------------------------------------------------------------------------- lookahead


def test_lookahead_equals_analysing_each_possible_number():
    """P(safe and zero) and P(safe and progress) against one analysis per number shown."""
    for revealed, counts, mines, _ in random_positions(seed=5, count=25, max_hidden=20):
        analysis = analyse(revealed, counts, mines)
        height, width = revealed.shape
        for cell in np.flatnonzero(~revealed.reshape(-1)).tolist():
            hidden_neighbours = sum(1 for n in neighbour_lists(height, width)[cell] if not revealed.reshape(-1)[n])
            trial = revealed.copy()
            trial.reshape(-1)[cell] = True
            trial_counts = counts.copy()
            zero = progress = 0
            for value in range(hidden_neighbours + 1):
                trial_counts.reshape(-1)[cell] = value
                after = analyse(trial, trial_counts, mines)
                zero += after.total if value == 0 else 0
                progress += after.total if after.total and (value == 0 or after.safe) else 0
            got = reference.lookahead(revealed, cell, analysis, mines, ExactConfig(), {})
            assert got == pytest.approx((zero / analysis.total, progress / analysis.total), abs=1e-12)


# ----------------------------------------------------------------------------- game and player


def test_player_never_makes_an_illegal_move_and_wins_sometimes():
    rng = np.random.default_rng(8)
    wins = 0
    for game in range(150):
        opening = game % 2 == 0
        board = Board(6, 6, 7, opening, rng)
        stats = reference.play_board(board, reference.first_click_cell(6, 6, opening))  # reveal raises if illegal
        assert board.won != board.lost
        assert stats.won == board.won and stats.moves >= stats.guesses + 1
        assert stats.fallbacks == 0
        wins += stats.won
    assert 0.5 < wins / 150 < 1.0


def test_player_never_guesses_while_a_safe_cell_is_known():
    rng = np.random.default_rng(9)
    for _ in range(40):
        board = Board(6, 6, 8, False, rng)
        board.reveal(0)
        while not (board.won or board.lost):
            seen = np.where(board.revealed, board.counts, 0)
            analysis = analyse(board.revealed, seen, 8)
            if analysis.safe:
                board.reveal(analysis.safe[0])
                assert not board.lost
                continue
            cell = reference.choose_guess(board.revealed, analysis, 8, ExactConfig())
            assert not board.revealed.reshape(-1)[cell]
            lowest = analysis.mine_prob[~board.revealed].min()
            assert analysis.mine_prob.reshape(-1)[cell] == pytest.approx(lowest, abs=1e-12)
            board.reveal(cell)


def test_first_click_cells():
    assert reference.first_click_cell(8, 8, False) == 0
    assert reference.first_click_cell(8, 8, True) == 2 * 8 + 2
    assert reference.first_click_cell(16, 30, True) == 2 * 30 + 2
    assert reference.first_click_cell(2, 2, True) == 3


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"max_nodes": 0}, "max_nodes"),
        ({"guess_tolerance": 1.0}, "guess_tolerance"),
        ({"lookahead_candidates": -1}, "lookahead_candidates"),
        ({"progress_weight": -0.1}, "progress_weight"),
    ],
)
def test_config_rejects_bad_values(kwargs, field):
    with pytest.raises(ValueError, match=field):
        ExactConfig(**kwargs)


# ----------------------------------------------------------------------------- the fallback


def test_fallback_whose_mine_count_fits_no_layout_is_widened_not_called_inconsistent():
    revealed, counts = view("# 1 # 1 #")  # 1 mine: the answer is 0, 0, 1, 0, 0
    result = analyse(revealed, counts, 1, max_nodes=1)
    assert result.total > 0 and result.approximate and result.fallbacks == 1
    hidden = result.mine_prob[~revealed]
    assert np.all((hidden >= 0) & (hidden <= 1))


def real_positions(seed: int, per_board: int):
    """Mid-game views (revealed, counts seen, mines) of the three standard boards: a first
    click in the middle, then up to 11 random safe cells."""
    rng = np.random.default_rng(seed)
    positions = []
    for height, width, mines in ((8, 8, 10), (16, 16, 40), (16, 30, 99)):
        for _ in range(per_board):
            board = Board(height, width, mines, True, rng)
            board.reveal((height // 2) * width + width // 2)
            for _ in range(int(rng.integers(0, 12))):
                if board.won:
                    break
                safe_hidden = np.flatnonzero(~board.revealed.reshape(-1) & ~board.mine_mask.reshape(-1))
                board.reveal(int(rng.choice(safe_hidden)))
            if not board.won:
                positions.append((board.revealed.copy(), np.where(board.revealed, board.counts, 0), mines))
    return positions


def test_tiny_node_budgets_always_give_finite_probabilities_on_real_positions():
    for revealed, counts, mines in real_positions(seed=0, per_board=70):
        for max_nodes in (1, 40):
            result = analyse(revealed, counts, mines, max_nodes=max_nodes)
            assert result.total > 0
            hidden = result.mine_prob[~revealed]
            assert np.all((hidden >= 0) & (hidden <= 1))


def test_choose_guess_answers_an_inconsistent_view():
    revealed, counts = view(
        """
        # # #
        3 . .
        """
    )
    result = analyse(revealed, counts, 3)
    assert result.total == 0
    cell = reference.choose_guess(revealed, result, 3)
    assert not revealed.reshape(-1)[cell]

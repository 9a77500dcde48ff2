"""msjax.evaluate.layouts (for benchmarks.opening_cell): the coupled opening-start layouts and the candidate cells."""

from __future__ import annotations

import numpy as np
import pytest

from msjax.evaluate.layouts import block_mask, candidate_cells, coupled_layouts


def test_block_mask_is_the_cell_and_its_neighbours_clipped_to_the_board():
    np.testing.assert_array_equal(
        block_mask(3, 4, (0, 3)),
        np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0]], bool),
    )
    assert block_mask(5, 5, (2, 2)).sum() == 9


def test_each_cells_layouts_keep_its_block_free_and_hold_the_mine_count():
    cells = [(0, 0), (2, 2), (0, 3)]
    layouts = coupled_layouts(5, 6, 7, 200, seed=1, cells=cells)
    for cell in cells:
        boards = layouts[cell]
        assert boards.shape == (200, 5, 6)
        np.testing.assert_array_equal(boards.sum(axis=(1, 2)), 7)
        assert not np.any(boards & block_mask(5, 6, cell))


def test_two_cells_layouts_share_every_mine_away_from_both_blocks():
    a, b = (0, 0), (3, 3)
    layouts = coupled_layouts(6, 6, 8, 300, seed=2, cells=[a, b])
    away = ~(block_mask(6, 6, a) | block_mask(6, 6, b))
    first, second = layouts[a], layouts[b]
    # A mine away from both blocks in the first layout is a mine in the second (the same
    # priority ranks it among the top cells of both) unless a cell of the first's block, open
    # to the second, outranks it: each such mine of the second displaces at most one.
    displaced = (first & away & ~second).sum(axis=(1, 2))
    from_first_block = (second & block_mask(6, 6, a)).sum(axis=(1, 2))
    assert np.all(displaced <= from_first_block)
    assert displaced.sum() > 0
    shared = (first & second & away).sum() / (first & away).sum()
    assert shared > 0.9  # independent draws share about 0.3 of them here


def test_each_cells_layouts_are_uniform_over_its_allowed_cells():
    layouts = coupled_layouts(4, 4, 3, 40_000, seed=3, cells=[(0, 0)])[(0, 0)]
    allowed = ~block_mask(4, 4, (0, 0))
    frequency = layouts.mean(axis=0)[allowed]
    np.testing.assert_allclose(frequency, 3 / allowed.sum(), atol=0.01)


def test_too_many_mines_for_the_cells_off_a_block_is_refused():
    with pytest.raises(ValueError, match="fewer than"):
        coupled_layouts(3, 3, 1, 4, seed=0, cells=[(1, 1)])


def test_candidates_start_with_the_current_opening_and_hold_each_symmetry_class_once():
    cells = candidate_cells(8, 8, 3, (3, 3))
    assert cells == [(3, 3), (0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]
    assert candidate_cells(4, 6, 2, (1, 1)) == [(1, 1), (0, 0), (0, 1), (1, 0), (1, 2)]

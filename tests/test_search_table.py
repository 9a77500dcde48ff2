"""benchmarks/search_table.py's row names: the solver options each row runs and the file its
outcomes are saved to (no games played: the script itself is a benchmark)."""

import re

import pytest

from benchmarks.search_table import row_options, saved_name


def test_row_options_of_each_depth():
    assert row_options("depth 0", 6, 0.1, 32) == {"exact_lookahead": 6}
    assert row_options("depth 1+endgame", 6, 0.1, 32) == {
        "exact_lookahead": 6, "lookahead_score": "survival", "lookahead_tolerance": 0.1,
        "lookahead_depth": 1, "endgame_layouts": 32}
    assert row_options("depth 2", 4, 0.2, 8, expand=3)["lookahead_expand"] == 3
    assert "lookahead_expand" not in row_options("depth 1", 4, 0.2, 8, expand=3)


@pytest.mark.parametrize("name", ["depth 3", "depth 1+search", "one"])
def test_a_row_that_is_not_a_depth_is_refused(name):
    with pytest.raises(ValueError, match=re.escape(f"row {name!r}: use")):
        row_options(name, 6, 0.1, 8)


def test_saved_names_carry_the_endgame_bound_and_the_expansion():
    name = lambda row, first=0, expand=0: saved_name(
        "expert", 1, first, row, row_options(row, 6, 0.1, 32, expand))
    assert name("depth 1") == "expert_seed1_depth1.npz"
    assert name("depth 1+endgame") == "expert_seed1_depth1_endgame32.npz"
    assert name("depth 0+endgame", first=5120) == "expert_seed1_from5120_depth0_endgame32.npz"
    assert name("depth 2", expand=3) == "expert_seed1_depth2_expand3.npz"

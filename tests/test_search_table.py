"""benchmarks/search_table.py's row names: the solver options each row runs and the file its
outcomes are saved to, what a saved row records and when it pairs, and its command line's
errors (no games played: the script itself is a benchmark)."""

import json
import re

import numpy as np
import pytest

from benchmarks.search_table import row_options, saved_name


def test_row_options_of_each_depth():
    assert row_options("depth 0", 6, 0.1, 32) == {"lookahead_candidates": 6}
    assert row_options("depth 1+endgame", 6, 0.1, 32) == {
        "lookahead_candidates": 6, "lookahead_score": "survival", "lookahead_tolerance": 0.1,
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


@pytest.fixture
def no_games(monkeypatch):
    """search_table.main without a device game: every row wins boards 0, 2, 4, ..."""
    from benchmarks import search_table

    def device_wins(layouts, options, batch, on_batch=None):
        wins = np.arange(len(layouts)) % 2 == 0
        if on_batch is not None:
            on_batch(wins)
        return wins, 0.0

    monkeypatch.setattr(search_table, "device_wins", device_wins)
    return search_table.main


def saved_row(path, **fields):
    row = {"wins": np.ones(4, bool), "seed": 0, "first_board": 0, "board": "8x8x10", "first_click": [2, 2], **fields}
    np.savez(path, **{key: value for key, value in row.items() if value is not None})
    return str(path)


def test_a_saved_row_records_its_board_seed_first_click_and_first_board(no_games, tmp_path, capsys):
    no_games(["--games", "4", "--seed", "3", "--first-board", "2", "--rows", "depth 0", "--save", str(tmp_path)])
    with np.load(tmp_path / "beginner_seed3_from2_depth0.npz") as saved:
        assert str(saved["board"]) == "8x8x10" and saved["first_click"].tolist() == [2, 2]
        assert int(saved["seed"]) == 3 and int(saved["first_board"]) == 2 and saved["wins"].tolist() == [1, 0, 1, 0]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"board": "16x30x99"}, "its board 16x30x99, this run's 8x8x10"),
        ({"first_click": [0, 0]}, "its first_click [0, 0], this run's [2, 2]"),
        ({"board": "16x16x40", "seed": 1}, "its board 16x16x40, this run's 8x8x10; its seed 1, this run's 0"),
    ],
)
def test_a_row_saved_on_other_boards_is_refused_naming_what_differs(no_games, tmp_path, capsys, fields, message):
    path = saved_row(tmp_path / "row.npz", **fields)
    with pytest.raises(SystemExit):
        no_games(["--games", "4", "--rows", "depth 0", "--paired-with", path])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"search_table.py: error: --paired-with {path}: ") and message in err, err


def test_a_row_saved_on_the_same_boards_is_the_baseline(no_games, tmp_path, capsys):
    path = saved_row(tmp_path / "row.npz", wins=np.zeros(6, bool))
    no_games(["--games", "4", "--first-board", "2", "--rows", "depth 0", "--paired-with", path])
    row = json.loads(capsys.readouterr().out.splitlines()[0])
    assert row["baseline"] == "row" and row["won_by_this_only"] == 2 and row["won_by_first_only"] == 0


def test_an_older_row_without_board_or_first_click_is_paired_with_a_warning(no_games, tmp_path, capsys):
    path = saved_row(tmp_path / "old.npz", board=None, first_click=None)
    no_games(["--games", "4", "--rows", "depth 0", "--paired-with", path])
    captured = capsys.readouterr()
    assert json.loads(captured.out.splitlines()[0])["baseline"] == "old"
    assert f"warning: --paired-with {path} records no board, first_click" in captured.err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not a zip at all", "not a .npz file"),
        ("truncated", "not a .npz file"),
        ("no wins", "holds no 'wins'"),
        (None, "no such file"),
    ],
)
def test_a_paired_with_file_that_is_not_a_saved_row_is_one_line(no_games, tmp_path, capsys, content, message):
    path = tmp_path / "row.npz"
    if content == "truncated":
        saved_row(path)
        path.write_bytes(path.read_bytes()[:100])
    elif content == "no wins":
        np.savez(path, seed=0)
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(SystemExit):
        no_games(["--games", "4", "--rows", "depth 0", "--paired-with", str(path)])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"search_table.py: error: --paired-with {path}: ") and message in err, err


@pytest.mark.parametrize(
    ("flag", "value", "allowed"),
    [
        ("--tolerance", "1.5", "1.5 must be in [0, 1)"),
        ("--batch", "0", "0 must be >= 1"),
        ("--seed", "-1", "-1 must be in [0, 4294967295]"),
        ("--games", "1", "1 must be >= 2"),
        ("--endgame-layouts", "1", "1 must be in [2, 128]"),
        ("--first-board", "-1", "-1 must be >= 0"),
    ],
)
def test_bad_numbers_are_one_argparse_line_naming_the_flag_and_range(no_games, capsys, flag, value, allowed):
    with pytest.raises(SystemExit) as exit_info:
        no_games(["--games", "4", "--rows", "depth 1", flag, value])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"search_table.py: error: argument {flag}: {allowed}"

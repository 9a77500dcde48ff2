"""benchmarks/endgame_sizes.py --paired-with: a saved run of other boards is refused before playing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.endgame_sizes import saved_baseline  # noqa: E402

THIS_RUN = {"board": "8x8x10", "seed": 3}


def saved(tmp_path, **keys) -> str:
    path = tmp_path / "run.npz"
    np.savez(path, wins=np.array([True, False, True]), sizes="32:1024:32", **keys)
    return str(path)


def refusal(path: str, games: int, capsys) -> str:
    with pytest.raises(SystemExit):
        saved_baseline(path, THIS_RUN, games, argparse.ArgumentParser(prog="endgame_sizes.py"))
    return capsys.readouterr().err


def test_a_run_of_the_same_boards_is_the_baseline(tmp_path):
    baseline = saved_baseline(saved(tmp_path, **THIS_RUN), THIS_RUN, 3, argparse.ArgumentParser())
    np.testing.assert_array_equal(baseline["wins"], [True, False, True])


def test_a_run_of_another_board_seed_or_length_is_one_error_naming_it(tmp_path, capsys):
    assert "its board 16x16x40, this run's 8x8x10" in refusal(saved(tmp_path, board="16x16x40", seed=3), 3, capsys)
    assert "its seed 4, this run's 3" in refusal(saved(tmp_path, board="8x8x10", seed=4), 3, capsys)
    assert "it holds 3 games, this run plays 5" in refusal(saved(tmp_path, **THIS_RUN), 5, capsys)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    assert "not a .npz file" in refusal(str(tmp_path / "junk.npz"), 3, capsys)


def test_a_run_saved_before_boards_were_recorded_is_taken_with_a_warning(tmp_path, capsys):
    saved_baseline(saved(tmp_path, seed=3), THIS_RUN, 3, argparse.ArgumentParser())
    assert "records no board" in capsys.readouterr().err

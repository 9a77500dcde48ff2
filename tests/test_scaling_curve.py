"""``python -m benchmarks.scaling_curve``: each chain's final agent on the same boards, at the
chain's whole compute, paired with the first (run as the command)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tiny_runs import saved_run, write_metrics

REPO = Path(__file__).resolve().parents[1]


def scaling_curve(*argv: str) -> subprocess.CompletedProcess:
    """``python -m benchmarks.scaling_curve ARGV`` from the repository's root."""
    return subprocess.run([sys.executable, "-m", "benchmarks.scaling_curve", *argv], cwd=REPO, capture_output=True,
                          text=True)


def test_each_chain_is_one_point_at_its_whole_cost_on_its_series_line_and_saved_rows_are_reused(tmp_path):
    pytest.importorskip("matplotlib")
    start = saved_run(tmp_path / "start", steps=(2,))
    write_metrics(start, [{"kind": "train", "update": 2, "env_steps": 20, "wall_s": 9.0},
                    {"kind": "eval", "update": 2, "env_steps": 20, "wall_s": 12.0}])
    short = saved_run(tmp_path / "short", steps=(1,))
    write_metrics(short, [{"kind": "train", "update": 1, "env_steps": 4, "wall_s": 2.0}])
    long = saved_run(tmp_path / "long", steps=(3,))
    write_metrics(long, [{"kind": "train", "update": 3, "env_steps": 12, "wall_s": 6.0}])
    # the long chain's row, as msjax paired saves it, on 8 boards: its first 6 are this run's
    won = np.array([True, False, True, True, False, False, True, True])
    saved = tmp_path / "rows.npz"
    np.savez(saved, wins=won[None], rows=np.array([str(long)]), board="4x4x2", seed=2, rule="opening")
    png = tmp_path / "curve.png"
    done = scaling_curve("--chain", f"plain/1x={start},{short}", "--chain", f"plain/2x={start},{long}",
                         "--chain", f"2x={start},{long}", "--games", "6", "--batch", "3", "--seed", "2",
                         "--saved", str(saved), "--level", "teacher=0.5", "--peer", "peer=0.6@1e3", "-o", str(png))
    assert done.returncode == 0, done.stderr[-3000:]
    points = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [(p["label"], p["series"], p["env_steps"], p["wall_s"]) for p in points] == [
        ("plain/1x", "plain", 24, 14.0), ("plain/2x", "plain", 32, 18.0), ("2x", None, 32, 18.0)]
    assert points[1]["win_rate"] == points[2]["win_rate"] == pytest.approx(0.5)  # the saved row cut to 6, not played
    assert points[0]["vs_first"][0] == 0.0
    assert points[1]["vs_first"][0] == pytest.approx(0.5 - points[0]["win_rate"])
    assert all(p["board"] == "4x4x2" and p["games"] == 6 for p in points)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("flag", [["--peer", "peer=0.6"], ["--level", "teacher"], ["--games", "1"]])
def test_bad_arguments_are_refused(tmp_path, flag):
    run = saved_run(tmp_path / "run", steps=(1,))
    write_metrics(run, [{"kind": "train", "update": 1, "env_steps": 10, "wall_s": 5.0}])
    done = scaling_curve("--chain", f"1x={run}", *flag, "-o", str(tmp_path / "c.png"))
    assert done.returncode == 2 and "error:" in done.stderr, done.stderr[-3000:]


def one_saved_chain(tmp_path, wins: list[bool], **boards) -> tuple[Path, subprocess.CompletedProcess]:
    """``(the file, the finished command)``: one one-run chain, its row ``wins`` saved with
    ``boards`` (board, seed, rule), paired at ``--games 4 --seed 2``."""
    run = saved_run(tmp_path / "run", steps=(1,))
    write_metrics(run, [{"kind": "train", "update": 1, "env_steps": 10, "wall_s": 5.0}])
    saved = tmp_path / "rows.npz"
    np.savez(saved, wins=np.array([wins]), rows=np.array([str(run)]), **boards)
    return saved, scaling_curve("--chain", f"1x={run}", "--games", "4", "--seed", "2", "--saved", str(saved),
                                "-o", str(tmp_path / "c.png"))


@pytest.mark.parametrize(
    ("games", "seed", "message"),
    [(3, 2, "the file holds 3 games per row, fewer than --games 4"),
     (4, 9, "its seed 9, this run's 2 (other boards)")],
)
def test_saved_rows_of_fewer_games_or_other_boards_are_refused(tmp_path, games, seed, message):
    saved, done = one_saved_chain(tmp_path, [True] * games, board="4x4x2", seed=seed, rule="opening")
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.strip().splitlines()[-1].endswith(f"error: --saved {saved}: {message}")


def test_an_older_saved_file_without_its_board_and_rule_is_used_with_a_warning(tmp_path):
    saved, done = one_saved_chain(tmp_path, [True, False, True, True], seed=2)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"warning: --saved {saved} records no board, rule" in done.stderr
    assert json.loads(done.stdout.splitlines()[0])["win_rate"] == pytest.approx(0.75)

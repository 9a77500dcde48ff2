"""``python -m benchmarks.chain_curve``: every checkpoint of a chain of runs on one board,
placed at the chain's whole compute (run as the command)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tiny_runs import saved_run, write_metrics

REPO = Path(__file__).resolve().parents[1]


def chain_curve(*argv: str) -> subprocess.CompletedProcess:
    """``python -m benchmarks.chain_curve ARGV`` from the repository's root."""
    return subprocess.run([sys.executable, "-m", "benchmarks.chain_curve", *argv], cwd=REPO, capture_output=True,
                          text=True)


def test_each_checkpoint_stands_at_the_chain_s_steps_and_seconds(tmp_path):
    pytest.importorskip("matplotlib")
    first = saved_run(tmp_path / "first", steps=(1, 2))
    write_metrics(first, [
        {"kind": "train", "update": 1, "env_steps": 10, "wall_s": 5.0},
        {"kind": "eval", "update": 1, "env_steps": 10, "wall_s": 7.0},
        {"kind": "train", "update": 2, "env_steps": 20, "wall_s": 9.0},
        {"kind": "eval", "update": 2, "env_steps": 20, "wall_s": 12.0},  # the final evaluation
    ])  # fmt: skip
    second = saved_run(tmp_path / "second", steps=(1, 3))
    write_metrics(second, [{"kind": "train", "update": 1, "env_steps": 4, "wall_s": 2.0},
                     {"kind": "train", "update": 3, "env_steps": 12, "wall_s": 6.0}])
    png, saved = tmp_path / "curve.png", tmp_path / "rows.npz"
    done = chain_curve(str(first / "checkpoints" / "2"), str(second), "--games", "6", "--batch", "3", "--seed", "2",
                       "-o", str(png), "--save", str(saved))
    assert done.returncode == 0, done.stderr[-3000:]
    points = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [(p["stage"], p["update"]) for p in points] == [("first", 2), ("second", 1), ("second", 3)]
    assert [p["env_steps"] for p in points] == [20, 24, 32]
    assert [p["wall_s"] for p in points] == [12.0, 14.0, 18.0]
    for p in points:
        assert p["board"] == "4x4x2" and p["games"] == 6 and p["ci"][0] <= p["win_rate"] <= p["ci"][1]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with np.load(saved) as kept:
        assert kept["wins"].shape == (3, 6) and str(kept["board"]) == "4x4x2" and int(kept["seed"]) == 2
        assert kept["rows"].tolist() == [f"{first}/checkpoints/2", f"{second}/checkpoints/1", f"{second}/checkpoints/3"]


def test_a_checkpoint_without_its_metrics_row_is_refused(tmp_path):
    run = saved_run(tmp_path / "run", steps=(2,))
    write_metrics(run, [{"kind": "train", "update": 1, "env_steps": 10, "wall_s": 5.0}])
    done = chain_curve(str(run), "--games", "2", "-o", str(tmp_path / "c.png"))
    assert done.returncode == 2 and "update 2" in done.stderr.strip().splitlines()[-1], done.stderr[-3000:]


@pytest.mark.parametrize("flag", [["--games", "0"], ["--board", "3x3x20"]])
def test_bad_arguments_are_refused(tmp_path, flag):
    run = saved_run(tmp_path / "run", steps=(1,))
    write_metrics(run, [{"kind": "train", "update": 1, "env_steps": 10, "wall_s": 5.0}])
    done = chain_curve(str(run), *flag, "-o", str(tmp_path / "c.png"))
    assert done.returncode == 2 and "error:" in done.stderr, done.stderr[-3000:]

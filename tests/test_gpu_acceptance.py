"""The GPU acceptance run's scaled-down CPU version (``python -m benchmarks.gpu_acceptance``)
runs and writes its tables."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_cpu_version_of_the_acceptance_run_times_a_chunk_and_tracks_a_run(tmp_path):
    # The env section is left out: it is env_throughput's rollout (kept within the test budget).
    argv = ["--out", str(tmp_path), "--sections", "train", "beginner_run", "--configs", "beginner"]
    done = subprocess.run([sys.executable, "-m", "benchmarks.gpu_acceptance", *argv, "--stages", "ppo", "--run-s", "0"],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "acceptance.jsonl").read_text().splitlines()]
    assert [row["section"] for row in rows] == ["train", "beginner_run"]
    assert rows[0]["env_steps_per_s"] > 0 and rows[0]["compile_s"] > 0
    assert 0.0 <= rows[-1]["win_rate"] <= 1.0
    assert "### beginner_run" in (tmp_path / "acceptance.md").read_text()

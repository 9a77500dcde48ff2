"""The GPU acceptance script's scaled-down CPU version runs and writes its tables."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import gpu_acceptance  # noqa: E402


def test_the_cpu_version_of_the_acceptance_run_times_a_chunk_and_tracks_a_run(tmp_path):
    # The env section is left out: it is env_throughput's rollout (kept within the test budget).
    argv = ["--out", str(tmp_path), "--sections", "train", "beginner_run", "--configs", "beginner"]
    rows = gpu_acceptance.main(argv + ["--stages", "ppo", "--run-s", "0"])
    assert [row["section"] for row in rows] == ["train", "beginner_run"]
    assert rows[0]["env_steps_per_s"] > 0 and rows[0]["compile_s"] > 0
    assert 0.0 <= rows[-1]["win_rate"] <= 1.0
    lines = (tmp_path / "acceptance.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == rows
    assert "### beginner_run" in (tmp_path / "acceptance.md").read_text()

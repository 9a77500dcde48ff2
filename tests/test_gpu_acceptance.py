"""The GPU acceptance script's scaled-down CPU version runs and writes its tables."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import gpu_acceptance  # noqa: E402


def test_the_cpu_version_of_the_acceptance_run_writes_every_section(tmp_path):
    argv = ["--out", str(tmp_path), "--boards", "beginner", "--configs", "beginner", "--stages", "ppo", "--run-s", "0"]
    rows = gpu_acceptance.main(argv)
    assert {row["section"] for row in rows} == {"env", "train", "beginner_run"}
    assert all(row["env_steps_per_s"] > 0 for row in rows if row["section"] != "beginner_run")
    assert 0.0 <= rows[-1]["win_rate"] <= 1.0
    lines = (tmp_path / "acceptance.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == rows
    assert "### beginner_run" in (tmp_path / "acceptance.md").read_text()

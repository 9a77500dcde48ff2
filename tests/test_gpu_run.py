"""The GPU run (benchmarks/gpu_run.py, sized by gpu_run_plan.py) on this CPU at tiny
settings: how it sizes a run to its budget, a run to completion, a run its budget guard
cuts, and the agent it brings back. The two runs are real training processes
(``python -m msjax.train``)."""

import json
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import gpu_run, gpu_run_plan  # noqa: E402
from msjax.run import checkpoint as checkpoint_lib
from msjax.run import config as config_lib
from msjax import evaluate  # noqa: E402
from tiny_runs import ENDLESS, TINY, config_file  # noqa: E402

EVAL_GAMES = 64


def run_script(tmp_path: Path, cfg, *options: str) -> tuple[dict, Path, Path]:
    """``gpu_run.main`` on ``cfg`` (unsized), bringing back ``EVAL_GAMES`` games'
    evaluation; returns the summary, the output folder and the run directory."""
    out, workdir = tmp_path / "out", tmp_path / "run"
    argv = ["--config", str(config_file(tmp_path, cfg)), "--out", str(out), "--workdir", str(workdir)]
    summary = gpu_run.main(argv + ["--no-sizing", "--eval-games", str(EVAL_GAMES), *options])
    return summary, out, workdir


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """TINY (4 PPO updates, evaluated every 2) run to its end within a budget it does not reach."""
    return run_script(tmp_path_factory.mktemp("finished"), TINY, "--budget-s", "600")


def test_a_run_to_completion_brings_back_every_promised_file(finished_run):
    summary, out, _ = finished_run
    assert sorted(path.name for path in out.iterdir()) == sorted(gpu_run.OUT_FILES)
    assert summary["status"] == "complete" and not summary["cut"] and summary["train_returncode"] == 0
    final = json.loads((out / "final_eval.json").read_text())
    assert final["evaluated_by"] == "msjax.train" and final["episodes"] == EVAL_GAMES
    assert summary["win_rate"] == final["win_rate"] and summary["win_rate_ci95"] == final["win_rate_ci95"]
    assert summary["env_steps"] == 4 * 16 * 8 and summary["updates"] == {"ppo": 4}
    assert json.loads((out / "summary.json").read_text()) == summary  # one line
    trained = config_lib.load_json(out / "config.json")
    assert trained.run.final_eval_episodes == EVAL_GAMES and trained.ppo == TINY.ppo


def test_the_returned_agent_plays_as_the_checkpoint_it_came_from(finished_run):
    _, out, workdir = finished_run
    returned, saved = gpu_run.load_returned_agent(out), checkpoint_lib.load_agent(workdir)
    assert returned.config == saved.config and returned.env_cfg == TINY.env
    assert jax.tree.all(jax.tree.map(np.array_equal, returned.params, saved.params))
    games = [evaluate.evaluate(agent, TINY.env, episodes=32, seed=3, batch_size=32) for agent in (returned, saved)]
    assert games[0]["win_rate"] == games[1]["win_rate"] and games[0]["steps_to_loss"] == games[1]["steps_to_loss"]


def test_the_budget_guard_cuts_a_run_that_would_overrun_and_still_brings_back_the_files(tmp_path):
    # 100,000 updates and a budget of 1 s: the guard stops training once it has written a
    # row (the start-wait is long enough for any load on this machine).
    options = ["--budget-s", "1", "--reserve-s", "1", "--start-wait-s", "240", "--config.run.eval_every_updates=2"]
    summary, out, workdir = run_script(tmp_path, ENDLESS, *options)
    assert summary["status"] == "cut" and summary["cut"] and summary["train_returncode"] == 143  # 128 + SIGTERM
    assert sorted(path.name for path in out.iterdir()) == sorted(gpu_run.OUT_FILES)
    final = json.loads((out / "final_eval.json").read_text())
    assert final["evaluated_by"].startswith("gpu_run") and final["episodes"] == EVAL_GAMES
    assert not (workdir / "final_eval.json").exists()  # the run itself never got there
    latest = checkpoint_lib.load_agent(workdir)
    assert 0 < summary["updates"]["ppo"] < ENDLESS.ppo.num_updates
    assert jax.tree.all(jax.tree.map(np.array_equal, gpu_run.load_returned_agent(out).params, latest.params))


# ----------------------------------------------------------------------------- sizing


def test_the_plan_sizes_a_run_by_its_arithmetic():
    # TINY: 16 boards x 8 steps = 128 env steps an update; at 128 steps/s an update is 1 s,
    # so a chunk is 10 updates (CHUNK_S). Greedy play runs at 5 x 128 board-steps/s, a batch
    # of 32 games for 7 moves (half the 14 safe cells): 0.35 s per 32 games, 0.7 s per 64.
    # Reserve: a chunk 10 + save 5 + finish 25 + eval compile 20 + final 0.7 = 60.7 s; fixed:
    # start 20 + eval compile 20 + compile 10 = 50 s; allowed 0.85 x (300 - 60.7 - 50) = 160.9 s.
    # 160 updates evaluated every 50 (4 evaluations) would take 160 + 3 x 0.35 + 0.7 = 161.75 s;
    # 150 updates (3 evaluations) take 151.4 s.
    plan = gpu_run_plan.plan_run(TINY, 300.0, EVAL_GAMES, {"ppo": gpu_run_plan.StageRate(128.0, 10.0)}, 0.67)
    assert plan.overrides == (
        "ppo.num_updates=150", "run.chunk_updates=10", "run.eval_every_updates=50",
        f"run.final_eval_episodes={EVAL_GAMES}", "run.tensorboard=false",
    )  # fmt: skip
    assert plan.stop_at_s == pytest.approx(300 - 60.7)


@pytest.mark.parametrize("name", ["intermediate", "expert"])
def test_the_shipped_configs_are_sized_to_finish_before_the_guard_stops_them(name):
    shipped = config_lib.load_config(name)
    plan = gpu_run_plan.plan_run(shipped, 500.0, 10_000, gpu_run_plan.stage_rates(shipped), 0.67)
    sized = config_lib.apply_overrides(shipped, plan.overrides)
    changed = {line.split(":")[0] for line in config_lib.differences(shipped, sized)}
    assert changed <= {override.split("=")[0] for override in plan.overrides}  # the recipe is kept
    assert sized.imitation.num_updates % sized.run.chunk_updates == 0  # no second compile for a short chunk
    assert sized.ppo.num_updates % sized.run.chunk_updates == 0
    estimate = plan.estimate
    assert estimate["startup_s"] + estimate["compile_s"] + estimate["updates_and_evals_s"] < plan.stop_at_s


def test_a_budget_too_small_for_one_chunk_of_each_stage_is_refused_in_one_line(tmp_path):
    with pytest.raises(SystemExit, match=r"^error: --budget-s 150 is too small: .* s of start and compiles") as refused:
        gpu_run.main(["--config", "expert", "--out", str(tmp_path), "--budget-s", "150"])
    assert "\n" not in str(refused.value) and not any(tmp_path.iterdir())  # nothing ran

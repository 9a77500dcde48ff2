"""The GPU run (``python -m benchmarks.gpu_run``, sized by ``benchmarks.gpu_run_plan``) on
this CPU at tiny settings, run as the command: how it sizes a run to its budget, a run to
completion, a run its budget guard cuts, and the agent it brings back. The two runs are
real training processes (``python -m msjax.train``)."""

import json
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from tiny_runs import ENDLESS, TINY, config_file

from msjax import agent as agent_lib
from msjax import evaluate
from msjax.run import agents as agents_lib
from msjax.run import config as config_lib
from msjax.shipped import files as shipped_files

EVAL_GAMES = 64
REPO = Path(__file__).resolve().parents[1]
OUT_FILES = ("agent.msgpack", "config.json", "metrics.jsonl", "final_eval.json", "training_curves.png",
             "win_rate_vs_compute.png", "log.txt", "summary.json")  # what the run promises to bring back


def gpu_run(*argv: str) -> subprocess.CompletedProcess:
    """``python -m benchmarks.gpu_run ARGV`` from the repository's root."""
    return subprocess.run([sys.executable, "-m", "benchmarks.gpu_run", *argv], cwd=REPO, capture_output=True, text=True)


def run_script(tmp_path: Path, cfg, *options: str) -> tuple[dict, Path, Path]:
    """The GPU run on ``cfg`` (unsized), bringing back ``EVAL_GAMES`` games' evaluation;
    returns the summary, the output folder and the run directory."""
    out, workdir = tmp_path / "out", tmp_path / "run"
    argv = ["--config", str(config_file(tmp_path, cfg)), "--out", str(out), "--workdir", str(workdir)]
    done = gpu_run(*argv, "--no-sizing", "--eval-games", str(EVAL_GAMES), *options)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "summary.json").read_text()), out, workdir


def returned_agent(directory: Path):
    """The agent a GPU run brought back (its ``config.json`` and ``agent.msgpack``)."""
    cfg = config_lib.load_json(directory / "config.json")
    return agent_lib.from_params(shipped_files.read_params(directory / "agent.msgpack"), cfg).replace(config=cfg)


def plan(config: str, *options: str) -> dict:
    """``--plan-only``'s JSON line."""
    done = gpu_run("--config", config, "--out", "unused", "--plan-only", *options)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """TINY (4 PPO updates, evaluated every 2) run to its end within a budget it does not reach."""
    return run_script(tmp_path_factory.mktemp("finished"), TINY, "--budget-s", "600")


def test_a_run_to_completion_brings_back_every_promised_file(finished_run):
    summary, out, _ = finished_run
    assert sorted(path.name for path in out.iterdir()) == sorted(OUT_FILES)
    assert summary["status"] == "complete" and not summary["cut"] and summary["train_returncode"] == 0
    final = json.loads((out / "final_eval.json").read_text())
    assert final["evaluated_by"] == "msjax.train" and final["episodes"] == EVAL_GAMES
    assert summary["win_rate"] == final["win_rate"] and summary["win_rate_ci95"] == final["win_rate_ci95"]
    assert summary["env_steps"] == 4 * 16 * 8 and summary["updates"] == {"ppo": 4}
    assert len((out / "summary.json").read_text().strip().splitlines()) == 1
    trained = config_lib.load_json(out / "config.json")
    assert trained.run.final_eval_episodes == EVAL_GAMES and trained.ppo == TINY.ppo


def test_the_returned_agent_plays_as_the_checkpoint_it_came_from(finished_run):
    _, out, workdir = finished_run
    returned, saved = returned_agent(out), agents_lib.load_agent(workdir)
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
    assert sorted(path.name for path in out.iterdir()) == sorted(OUT_FILES)
    final = json.loads((out / "final_eval.json").read_text())
    assert final["evaluated_by"].startswith("gpu_run") and final["episodes"] == EVAL_GAMES
    assert not (workdir / "final_eval.json").exists()  # the run itself never got there
    latest = agents_lib.load_agent(workdir)
    assert 0 < summary["updates"]["ppo"] < ENDLESS.ppo.num_updates
    assert jax.tree.all(jax.tree.map(np.array_equal, returned_agent(out).params, latest.params))


# ----------------------------------------------------------------------------- sizing


def test_the_plan_sizes_a_run_by_its_arithmetic(tmp_path):
    # TINY: 16 boards x 8 steps = 128 env steps an update; at 128 steps/s an update is 1 s,
    # so a chunk is 10 updates (CHUNK_S). Reserve: a chunk 10 + save 5 + finish 25 + eval
    # compile 20 + final evaluation 0.7 = 60.7 s.
    sized = plan(str(config_file(tmp_path, TINY)), "--budget-s", "300", "--eval-games", str(EVAL_GAMES),
                 "--ppo-steps-per-s", "128")
    names = [override.split("=")[0] for override in sized["overrides"]]
    assert names == ["ppo.num_updates", "run.chunk_updates", "run.eval_every_updates", "run.checkpoint_every_updates",
                     "run.final_eval_episodes", "run.tensorboard"]
    assert "run.chunk_updates=10" in sized["overrides"] and f"run.final_eval_episodes={EVAL_GAMES}" in sized["overrides"]
    assert sized["stop_at_s"] == pytest.approx(300 - 60.7)


@pytest.mark.parametrize("name", ["intermediate", "expert"])
def test_the_shipped_configs_are_sized_to_finish_before_the_guard_stops_them(name):
    shipped = config_lib.load_config(name)
    sized_plan = plan(name, "--budget-s", "500", "--eval-games", "10000")
    sized = config_lib.apply_overrides(shipped, sized_plan["overrides"])
    changed = {line.split(":")[0] for line in config_lib.differences(shipped, sized)}
    assert changed <= {override.split("=")[0] for override in sized_plan["overrides"]}  # the recipe is kept
    assert sized.imitation.num_updates % sized.run.chunk_updates == 0  # no second compile for a short chunk
    assert sized.ppo.num_updates % sized.run.chunk_updates == 0
    saves = sum(-(-updates // sized.run.checkpoint_every_updates) for updates in sized_plan["updates"].values())
    assert saves <= 10  # with the evaluations: the config's own cadence is set for its full length
    assert sized_plan["startup_s"] + sized_plan["compile_s"] + sized_plan["updates_and_evals_s"] < sized_plan["stop_at_s"]


def test_a_budget_too_small_for_one_chunk_of_each_stage_is_refused_in_one_line(tmp_path):
    done = gpu_run("--config", "expert", "--out", str(tmp_path), "--budget-s", "150")
    assert done.returncode != 0 and done.stderr.strip().splitlines()[-1].startswith("error: --budget-s 150 is too small: ")
    assert " s of start and compiles" in done.stderr and not any(tmp_path.iterdir())  # nothing ran

"""Tiny configs and checkpoints for the runner's tests (4x4 boards, a one-layer net), and
real training processes on them (``start_endless_run``)."""

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jax

from msjax.cli import train as train_cli
from msjax.run import checkpoint as checkpoint_lib
from msjax.run import config as config_lib
from msjax.stages import ppo
from msjax.run.config import ExperimentConfig, RunConfig
from msjax.env import EnvConfig
from msjax.stages.imitation import ImitationConfig
from msjax.models import ModelConfig
from msjax.stages.ppo import PPOConfig

TINY = ExperimentConfig(
    env=EnvConfig(H=4, W=4, mine_count=2),
    model=ModelConfig(channels=(8,), value_hidden=8),
    ppo=PPOConfig(num_envs=16, steps_per_update=8, mini_batches=2, ppo_epochs=1, num_updates=4),
    imitation=ImitationConfig(enabled=False),
    run=RunConfig(
        chunk_updates=2,
        eval_every_updates=2,
        eval_episodes=32,
        final_eval_episodes=32,
        eval_batch_size=32,
        progress_bar=False,
    ),
)
# Runs until it is stopped: the tests that send it signals or a second writer.
ENDLESS = config_lib.apply_overrides(
    TINY, ["ppo.num_updates=100000", "run.eval_every_updates=0", "run.checkpoint_every_updates=0",
           "run.tensorboard=false"],
)  # fmt: skip
REPO = Path(__file__).resolve().parent.parent
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


def fresh_ppo_state(cfg: ExperimentConfig = TINY, seed: int = 0) -> ppo.PPOState:
    return ppo.init_ppo_state(jax.random.key(seed), cfg.env, cfg.model, cfg.ppo)


def saved_run(run_dir: Path, cfg: ExperimentConfig = TINY, steps=(1,), metrics=None) -> Path:
    """A run directory as training leaves it, holding untrained PPO states at ``steps``
    (``metrics[i]`` is the evaluation win rate recorded with ``steps[i]``, or None)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    config_lib.save_json(cfg, run_dir / "config.json")
    checkpoints = checkpoint_lib.Checkpoints(run_dir / "checkpoints", keep=cfg.run.keep_checkpoints)
    for i, step in enumerate(steps):
        win_rate = None if metrics is None else metrics[i]
        checkpoints.save(
            step,
            fresh_ppo_state(cfg, seed=step),
            stage="ppo",
            update=step,
            cfg=cfg,
            metrics=None if win_rate is None else {"win_rate": win_rate},
        )
    checkpoints.close()
    return run_dir


def write_metrics(run_dir: Path, rows: list[dict]) -> None:
    """Writes ``rows`` as ``run_dir``'s ``metrics.jsonl`` (one JSON object a line)."""
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def run_main(argv):
    """``train_cli.main(argv)`` and what it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        final = train_cli.main([str(arg) for arg in argv])
    return final, printed.getvalue()


def train_rows(run_dir):
    """The training rows of ``run_dir``'s ``metrics.jsonl``, its clock fields left out."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k not in ("time", "wall_s")} for row in rows if row["kind"] == "train"]


def config_file(tmp_path: Path, cfg: ExperimentConfig) -> Path:
    """A config file whose ``get_config()`` returns ``cfg``."""
    (tmp_path / "saved.json").write_text(json.dumps(config_lib.to_dict(cfg)))
    path = tmp_path / "tiny_config.py"
    path.write_text(
        "from pathlib import Path\nfrom msjax.run import config\n\n"
        f"def get_config():\n    return config.load_json(Path({str(tmp_path / 'saved.json')!r}))\n"
    )
    return path


def start_endless_run(tmp_path: Path, run_dir: Path) -> subprocess.Popen:
    """A real training process (``python -m msjax.train``) on ``run_dir`` that runs until
    it is stopped."""
    command = [sys.executable, "-m", "msjax.train", "--config", str(config_file(tmp_path, ENDLESS))]
    command += ["--workdir", str(run_dir)]
    return subprocess.Popen(command, cwd=REPO, env=CHILD_ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(path: Path, process: subprocess.Popen, seconds: float = 240, non_empty: bool = False) -> None:
    """Waits until ``path`` exists (and, with ``non_empty``, holds something); fails if
    ``process`` ends first or after ``seconds``."""
    deadline = time.monotonic() + seconds
    there = lambda: path.is_file() and bool(path.read_text()) if non_empty else path.exists()
    while not there():
        assert process.poll() is None and time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)

"""Shipping a run's agent: its parameters, config and card, from what the run wrote.

The card says what the agent is (``card_of_run``): the win rate with its 95% interval and
games (the run's ``final_eval.json``, or the JSON line of ``python -m msjax evaluate`` or
``paired`` given instead), the chain of runs that trained it (each run, then the one its
``run.init_from`` warm-started from, back to a fresh start or to a shipped agent, whose
card's chain comes first: board, stages and updates,
environment steps, wall time, finishing date, from ``config.json`` and ``metrics.jsonl``),
their totals, the device, and the dates of training and shipping. The parameters are
those of the checkpoint the win rate was measured on.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
from pathlib import Path
from typing import Any

import jax

from msjax.run import checkpoint as checkpoint_lib

from msjax.run import agents as agents_lib
from msjax.run import config as config_lib
from msjax.run import files as runfiles
from msjax import stages as stages_lib
from msjax.env import STANDARD_BOARDS, EnvConfig
from msjax.shipped import files

FINAL_EVAL = "final_eval.json"


def run_dir_of(path: str | Path) -> Path:
    """The run directory of ``path`` (a run directory, its checkpoints directory or one
    checkpoint); ``CheckpointError`` when it is none of those."""
    checkpoints_dir, _ = checkpoint_lib.resolve(path)
    return checkpoints_dir.parent if checkpoints_dir.name == "checkpoints" else checkpoints_dir


def board_of(env_cfg: EnvConfig) -> str:
    """``"8x8x10"``: the board ``env_cfg`` plays."""
    return f"{env_cfg.H}x{env_cfg.W}x{env_cfg.mine_count}"


def check_board(name: str, env_cfg: EnvConfig) -> None:
    """Raises ``ShippedAgentError`` when ``name`` is a standard board's name and ``env_cfg``
    plays another board (or a mix of boards)."""
    if name not in STANDARD_BOARDS:
        return
    want = "x".join(str(n) for n in STANDARD_BOARDS[name])
    if env_cfg.boards or board_of(env_cfg) != want:
        got = "a mix of boards" if env_cfg.boards else board_of(env_cfg)
        raise files.ShippedAgentError(f"--name {name} is the {want} board's agent; the run plays {got}")


def wall_seconds(rows: list[dict[str, Any]]) -> float:
    """The training time of a run's metrics rows: the sum of each process's last
    ``wall_s`` (a resumed run's clock starts again)."""
    total, last = 0.0, 0.0
    for row in rows:
        wall = float(row.get("wall_s", 0.0))
        if wall < last:
            total += last
        last = wall
    return total + last


def utc_date(timestamp: float) -> str:
    """``"2026-12-06"``: the UTC date of a Unix time."""
    return datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc).date().isoformat()


def run_summary(run_dir: Path) -> dict[str, Any]:
    """What one run of the chain did: its name, board, stages with their updates, warm
    start, environment steps, wall time and finishing date (from ``config.json`` and
    ``metrics.jsonl``)."""
    cfg = config_lib.load_json(run_dir / "config.json")
    metrics = run_dir / "metrics.jsonl"
    rows = runfiles.read_jsonl(metrics, say=lambda _: None)[1] if metrics.is_file() else []
    summary = {
        "run": run_dir.name,
        "board": board_of(cfg.env),
        "stages": {stage.name: stage.config(cfg).num_updates for stage in stages_lib.run_stages(cfg)},
        "init_from": cfg.run.init_from,
        "seed": cfg.run.seed,
        "env_steps": int(max((row.get("env_steps", 0) for row in rows), default=0)),
        "wall_s": round(wall_seconds(rows), 1),
    }
    if rows and "time" in rows[-1]:
        summary["finished"] = utc_date(float(rows[-1]["time"]))
    return summary


def training_chain(run_dir: Path) -> list[dict[str, Any]]:
    """``run_summary`` of ``run_dir`` and of every run it was warm-started from, first run
    first; a warm start from a shipped agent (``run.init_from=intermediate``) carries on
    with that agent's card's chain; a warm start whose run is gone is listed by its path
    alone (``missing``); paths as ``portable_init_from`` writes them."""
    chain, seen, path, shipped_chain = [], set(), run_dir, []
    while path is not None and path.resolve() not in seen:
        seen.add(path.resolve())
        summary = run_summary(path)
        chain.append(summary)
        source = summary["init_from"]
        path = None
        if files.is_agent_name(source):  # as run.init_from read it (agents.load_agent)
            shipped_chain = files.card(source)["training"]
        elif source:
            try:
                path = run_dir_of(source)
            except checkpoint_lib.CheckpointError:
                chain.append({"run": Path(source).name, "path": source, "missing": True})
    for summary in chain:  # followed on this machine; written as portable paths
        for key in ("init_from", "path"):
            if key in summary:
                summary[key] = portable_init_from(summary[key])
    return shipped_chain + chain[::-1]


def evaluation_of(run_dir: Path, evaluation_file: str | Path | None, env_cfg: EnvConfig) -> dict[str, Any]:
    """The win rate, its interval and games: from ``evaluation_file`` (the last JSON line in
    it: the one ``python -m msjax evaluate`` prints, or the last row of ``python -m msjax
    paired``, saved to a file) when given, else the run's ``final_eval.json``;
    ``ShippedAgentError`` when there is none or it is of another board."""
    if evaluation_file is None:
        path = run_dir / FINAL_EVAL
        if not path.is_file():
            raise files.ShippedAgentError(f"{run_dir} has no {FINAL_EVAL}: the run has not finished (resume it first)")
        source = runfiles.read_json(path)
        board = board_of(env_cfg)
    else:
        path = Path(evaluation_file)
        lines = [line for line in path.read_text().splitlines() if line.strip().startswith("{")]
        if not lines:
            raise files.ShippedAgentError(f"--evaluation {path}: holds no JSON line of python -m msjax evaluate or paired")
        source = json.loads(lines[-1])
        if "games" in source:  # a row of python -m msjax paired
            source = {**source, "episodes": source["games"], "win_rate_ci95": source.get("ci")}
        board = source.get("board")
        if board != board_of(env_cfg):
            raise files.ShippedAgentError(f"--evaluation {path}: is of board {board}, the run plays {board_of(env_cfg)}")
    missing = [key for key in ("win_rate", "win_rate_ci95", "episodes") if source.get(key) is None]
    if missing:
        raise files.ShippedAgentError(f"{path} has no {', '.join(missing)}")
    return {
        "win_rate": float(source["win_rate"]),
        "win_rate_ci95": [float(x) for x in source["win_rate_ci95"]],
        "games": int(source["episodes"]),
        "evaluation": path.name,
    }


def this_machine() -> str:
    """The device JAX runs on here, and the CPU cores: the card's device when none is given."""
    device = jax.devices()[0]
    return f"{jax.default_backend()}: {device.device_kind} x{jax.device_count()}, {os.cpu_count()} CPU cores"


def card_of_run(run_dir: Path, cfg: config_lib.ExperimentConfig, evaluation: dict[str, Any], device: str) -> dict[str, Any]:
    """The card of ``run_dir``'s agent (``cfg``: the run's config; ``evaluation``:
    ``evaluation_of``): the fields ``files.write`` completes with ``name`` and ``files``."""
    chain = training_chain(run_dir)
    trained = [run for run in chain if not run.get("missing")]
    return {
        "board": board_of(cfg.env),
        "rule": "opening" if cfg.env.guarantee_safe_neighborhood else "safe first click",
        **evaluation,
        "training": chain,
        "compute": {
            "env_steps": sum(run["env_steps"] for run in trained),
            "wall_s": round(sum(run["wall_s"] for run in trained), 1),
            "device": device,
        },
        "trained": chain[-1].get("finished"),
        "shipped": datetime.date.today().isoformat(),
    }


def ship_run(run: str | Path, name: str, directory: str | Path | None = None,
             evaluation_file: str | Path | None = None, device: str | None = None) -> Path:
    """Ships the agent of ``run`` (a run directory) as ``name`` into ``directory`` (default
    ``files.shipped_dir()``), replacing any agent of that name: the parameters of the
    checkpoint its win rate was measured on (``final_eval.json``'s, else the latest), its
    config (``portable``) and its card. Returns the agent's folder.

    Raises:
      ShippedAgentError: a bad name, a run of another board than the name's, no
        evaluation.
      CheckpointError: no run there, or its checkpoint cannot be read.
    """
    files.check_name(name)
    run_dir = run_dir_of(run)
    cfg = config_lib.load_json(run_dir / "config.json")
    check_board(name, cfg.env)
    evaluation = evaluation_of(run_dir, evaluation_file, cfg.env)
    final = run_dir / FINAL_EVAL
    evaluated = runfiles.read_json(final).get("checkpoint") if final.is_file() else None
    agent = agents_lib.load_agent(evaluated if evaluated and Path(evaluated).is_dir() else run_dir)
    card = card_of_run(run_dir, agent.config, evaluation, device or this_machine())
    return files.write(name, agent.params, portable(agent.config, run_dir), card, directory)


def portable(cfg: config_lib.ExperimentConfig, run_dir: Path) -> config_lib.ExperimentConfig:
    """``cfg`` with ``run.workdir`` as ``runs/NAME`` (the run directory's name) and an absolute
    ``run.init_from`` from its run's folder on, under ``runs/`` (``/x/y/runs/a`` as
    ``runs/a``, ``/x/a/checkpoints/500`` as ``runs/a/checkpoints/500``): not the paths on
    the machine that trained it."""
    init_from = portable_init_from(cfg.run.init_from)
    return dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, workdir=f"runs/{run_dir.name}", init_from=init_from))


def portable_init_from(init_from: str) -> str:
    """``init_from`` as ``portable`` writes it: an absolute path from its run's folder on,
    under ``runs/``; any other value as it is."""
    if init_from and Path(init_from).is_absolute():
        path = Path(init_from)
        run = path.parents[1] if path.parent.name == "checkpoints" else path  # a checkpoint's run
        init_from = (Path("runs") / path.relative_to(run.parent)).as_posix()
    return init_from

"""GPU acceptance run: what the first session with a GPU should measure, in one command.

    python -m benchmarks.gpu_acceptance                  # on one GPU: within ~8 minutes
    python -m benchmarks.gpu_acceptance --out runs/acceptance --budget-s 480

Three sections, each a list of rows, printed as JSON lines as they are measured and at
the end as Markdown tables; both are also written to ``--out`` (``acceptance.jsonl``,
``acceptance.md``):

* ``env``: env steps/s of random valid reveals (``benchmarks/env_throughput.py``'s msjax
  rollout) at 16k and 64k boards on the three standard boards.
* ``train``: for each shipped accelerator config (beginner, intermediate, expert,
  curriculum; bf16) and each of its stages, a 2-update training chunk as the runner
  builds it (``msjax.run.loop.make_stages``): compile time, env steps/s of a steady chunk, XLA's
  memory analysis of the chunk (argument + output + temporary bytes) and, on a GPU, the
  device's peak bytes in use so far (``memory_stats()["peak_bytes_in_use"]``: a running
  maximum over the process, so a row shows the largest chunk run up to it).
* ``beginner_run``: ``configs/beginner.py`` trained for ``--run-s`` seconds (imitation
  for a third of them, then PPO), its greedy win rate on 1000 fresh boards after every
  10 updates.

A time budget (``--budget-s``) guards the whole run: work that would start after it is
skipped and listed as skipped. Without a GPU (the CPU backend) everything is scaled
down (64 and 256 boards, configs shrunk to a few boards, a one-layer network, a short
run), so the script's plumbing can be tested anywhere (``tests/test_gpu_acceptance.py``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import jax

from benchmarks import env_throughput
from msjax.run import config as config_lib
from msjax import distributed, env
from msjax.run import memory
from msjax.run import loop as train

CONFIGS = ("beginner", "intermediate", "expert", "curriculum")
# On the CPU backend: a few boards and a one-layer network, the plumbing only.
CPU_OVERRIDES = (
    "ppo.num_envs=16", "ppo.steps_per_update=4", "ppo.mini_batches=2", "ppo.ppo_epochs=1", "ppo.microbatch_size=4",
    "imitation.num_envs=16", "imitation.steps_per_update=2", "imitation.microbatch_size=8",
    "model.residual=false", "model.channels=(8,)", "model.dtype=float32",
    "run.eval_episodes=32", "run.eval_batch_size=32",
)
TRAIN_CHUNK_UPDATES = 2  # updates per timed chunk: a few seconds each for the largest configs
RUN_CHUNK_UPDATES = {"gpu": 10, "cpu": 2}  # updates between the beginner run's evaluations
RUN_EVAL_EPISODES = {"gpu": 1000, "cpu": 32}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/gpu_acceptance", help="folder for acceptance.jsonl and acceptance.md")
    parser.add_argument("--budget-s", type=float, default=480.0, help="no new work starts after this many seconds")
    parser.add_argument("--sections", nargs="+", default=["env", "train", "beginner_run"])
    parser.add_argument("--boards", nargs="+", default=list(env.STANDARD_BOARDS), help="boards of the env section")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), help="configs of the train section")
    parser.add_argument("--stages", nargs="+", default=["imitation", "ppo"], help="stages trained and timed")
    parser.add_argument("--run-s", type=float, help="length of the beginner run (default 150 on a GPU, 10 on CPU)")
    return parser.parse_args(argv)


def on_accelerator() -> bool:
    return jax.default_backend() != "cpu"


def peak_bytes() -> int | None:
    """The first device's peak bytes in use so far (None where it does not say: the CPU)."""
    stats = jax.local_devices()[0].memory_stats() or {}
    return stats.get("peak_bytes_in_use")


def shipped_config(name: str, chunk_updates: int, extra: tuple[str, ...] = ()) -> config_lib.ExperimentConfig:
    """configs/NAME.py (scaled down on the CPU) with ``chunk_updates`` per chunk."""
    overrides = [] if on_accelerator() else list(CPU_OVERRIDES)
    overrides += [f"run.chunk_updates={chunk_updates}", *extra]
    return config_lib.apply_overrides(config_lib.load_config(name), overrides)


# ----------------------------------------------------------------------------- sections


def env_rows(board_names: list[str], deadline: float) -> list[dict[str, Any]]:
    batches = (16384, 65536) if on_accelerator() else (64, 256)
    rows = []
    for name in board_names:
        height, width, mines = env.STANDARD_BOARDS[name]
        for batch in batches:
            if time.perf_counter() > deadline:
                rows.append({"section": "env", "board": name, "boards": batch, "skipped": "time budget"})
                continue
            cfg = env.EnvConfig(H=height, W=width, mine_count=mines)
            steps_per_s, games_per_s, compile_s = env_throughput.bench_msjax(cfg, batch, num_steps=32, min_time=2.0)
            rows.append({
                "section": "env", "board": name, "boards": batch, "env_steps_per_s": round(steps_per_s),
                "games_per_s": round(games_per_s), "compile_s": round(compile_s, 1),
            })
            print(json.dumps(rows[-1]), flush=True)
    return rows


def time_stage(name: str, stage: train.Stage, cfg: config_lib.ExperimentConfig) -> dict[str, Any]:
    """One stage's chunk: compile, one warm-up call, one timed call."""
    num_updates = cfg.run.chunk_updates
    state = stage.init(None)
    chunk = stage.make_chunk(num_updates)
    started = time.perf_counter()
    figures = memory.compiled_memory(stage.name, chunk.lower(state))
    compile_s = time.perf_counter() - started
    state, metrics = chunk(state)
    jax.block_until_ready(metrics)
    started = time.perf_counter()
    state, metrics = chunk(state)
    jax.block_until_ready(metrics)
    chunk_s = time.perf_counter() - started
    return {
        "section": "train", "config": name, "stage": stage.name,
        "env_steps_per_s": round(stage.env_steps_per_update * num_updates / chunk_s),
        "compile_s": round(compile_s, 1), "xla_total_gib": round(figures.total_bytes / memory.GIB, 3),
        "peak_gib": None if peak_bytes() is None else round(peak_bytes() / memory.GIB, 2),
    }


def train_rows(config_names: list[str], stage_names: list[str], deadline: float) -> list[dict[str, Any]]:
    mesh = distributed.make_mesh(1)
    rows = []
    for name in config_names:
        cfg = shipped_config(name, TRAIN_CHUNK_UPDATES)
        for stage in train.make_stages(cfg, mesh):
            if stage.name not in stage_names:
                continue
            if time.perf_counter() > deadline:
                rows.append({"section": "train", "config": name, "stage": stage.name, "skipped": "time budget"})
                continue
            rows.append(time_stage(name, stage, cfg))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def beginner_run_rows(run_s: float, stage_names: list[str], deadline: float) -> list[dict[str, Any]]:
    """Imitation for a third of ``run_s``, then PPO for the rest (each at least one chunk,
    within the budget); the greedy win rate after every chunk."""
    kind = "gpu" if on_accelerator() else "cpu"
    cfg = shipped_config("beginner", RUN_CHUNK_UPDATES[kind], (f"run.eval_episodes={RUN_EVAL_EPISODES[kind]}",))
    stages = [stage for stage in train.make_stages(cfg, distributed.make_mesh(1)) if stage.name in stage_names]
    rows, started, state = [], time.perf_counter(), None
    for stage in stages:
        state = stage.init(None if state is None else state.params)
        chunk = stage.make_chunk(cfg.run.chunk_updates)
        stop = started + (run_s / 3 if stage.name == "imitation" else run_s)
        while time.perf_counter() < deadline and int(state.update) < stage.num_updates:
            state, _ = chunk(state)
            results = train.evaluate_params(state.params, cfg, cfg.run.eval_episodes)
            rows.append({
                "section": "beginner_run", "stage": stage.name, "update": int(state.update),
                "elapsed_s": round(time.perf_counter() - started, 1), "win_rate": round(results["win_rate"], 3),
            })
            print(json.dumps(rows[-1]), flush=True)
            if time.perf_counter() > stop:
                break
    return rows


# ----------------------------------------------------------------------------- output


def markdown(rows: list[dict[str, Any]]) -> str:
    """One Markdown table per section, its columns the union of its rows' keys."""
    out = [f"GPU acceptance run on {jax.devices()[0].device_kind} ({jax.default_backend()}), "
           f"{time.strftime('%Y-%m-%d')}"]
    for section in dict.fromkeys(row["section"] for row in rows):
        section_rows = [row for row in rows if row["section"] == section]
        columns = [key for key in dict.fromkeys(k for row in section_rows for k in row) if key != "section"]
        out += ["", f"### {section}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        out += ["| " + " | ".join(str(row.get(key, "")) for key in columns) + " |" for row in section_rows]
    return "\n".join(out) + "\n"


def main(argv=None) -> list[dict[str, Any]]:
    args = parse_args(argv)
    deadline = time.perf_counter() + args.budget_s
    run_s = args.run_s if args.run_s is not None else (150.0 if on_accelerator() else 10.0)
    rows = []
    if "env" in args.sections:
        rows += env_rows(args.boards, deadline)
    if "train" in args.sections:
        rows += train_rows(args.configs, args.stages, deadline)
    if "beginner_run" in args.sections:
        rows += beginner_run_rows(run_s, args.stages, deadline)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "acceptance.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    table = markdown(rows)
    (out / "acceptance.md").write_text(table)
    print("\n" + table)
    return rows


if __name__ == "__main__":
    main()

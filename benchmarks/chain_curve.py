"""A chain of training stages on one board: win rate against the whole chain's compute.

Each stage of a chain (``small_recycled.py``, then ``intermediate_cpu.py`` from it, then
``dense_cpu.py``...) evaluates on its own board, so its ``metrics.jsonl`` gives no curve on
the board the chain is for. Here every checkpoint of every stage plays the same ``--games``
boards of ``--board`` greedily, with its own first click (``msjax.evaluate.play_games``: game
``i`` is the same board for every checkpoint), and stands at the environment steps and wall
seconds the chain had spent when it was saved: its update's last row in its stage's
``metrics.jsonl``, plus every earlier stage's whole run (its last row: the final evaluation
included).

    python -m benchmarks.chain_curve runs/proof_sr/checkpoints/6000 runs/proof_int runs/proof_dense \\
        --board intermediate --games 1000 --seed 9 -o benchmarks/figures/chain_16x16.png

A stage is a run directory (all its checkpoints) or one checkpoint folder (that one; the
stage still counts its whole run). Output: a table, one JSON line per checkpoint, the PNG
(``msjax.viz.plot_compute_curve``; dashed lines where a stage begins), and with ``--save
FILE.npz`` every checkpoint's per-board outcomes (``wins`` bool[rows, games], ``rows``,
``seed``, ``board``, as ``msjax paired --save`` writes them, so rows can be paired).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from msjax.distributed import device_name
from msjax.evaluate.paired import agent_wins, boards_played, save_rows
from msjax.cli import args as cli_args


def stage_checkpoints(spec: str) -> tuple[Path, list[int]]:
    """``(run directory, checkpoint steps)`` of a stage given as a run directory (all its
    checkpoints, ascending) or one checkpoint folder (that one).

    Raises:
      msjax.run.checkpoint.CheckpointError: ``spec`` is neither.
    """
    from msjax.run import checkpoint

    directory, step = checkpoint.resolve(spec)
    if step is not None:
        return directory.parent, [step]
    checkpoints = checkpoint.Checkpoints(directory, read_only=True)
    try:
        steps = sorted(checkpoints.steps)
    finally:
        checkpoints.close()
    if not steps:
        raise checkpoint.CheckpointError(f"no checkpoints in {directory}")
    return directory.parent, steps


def cost_at(rows: list[dict], wall: np.ndarray, update: int) -> tuple[float, float]:
    """``(env steps, wall seconds)`` of a run at its update ``update``: its last metrics
    row of that update (``wall``: ``msjax.viz.figures.wall_seconds(rows)``).

    Raises:
      ValueError: no row of that update.
    """
    at = [i for i, row in enumerate(rows) if row.get("update") == update and "env_steps" in row]
    if not at:
        raise ValueError(f"no metrics row of update {update}")
    return float(rows[at[-1]]["env_steps"]), float(wall[at[-1]])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stages", nargs="+", help="the chain's runs (or checkpoints), first stage first")
    parser.add_argument("--board", help="beginner, intermediate, expert or HxWxM (default: the last stage's)")
    parser.add_argument("--games", type=cli_args.positive_int, default=1000, help="boards, each played by every checkpoint")
    parser.add_argument("--seed", type=cli_args.seed, default=0, help="picks the boards")
    parser.add_argument("--batch", type=cli_args.positive_int, default=500, help="games stepped together")
    parser.add_argument("-o", "--out", default="chain_win_rate_vs_compute.png", help="the PNG")
    parser.add_argument("--save", metavar="FILE.npz", help="every checkpoint's per-board outcomes")
    args = parser.parse_args(argv)

    from msjax import viz
    from msjax.run import checkpoint
    from msjax.run import agents as agents_lib
    from msjax import env as ms_env
    from msjax.env import board_config
    from msjax.stats import wilson_interval
    from msjax.viz.figures import wall_seconds

    stages = []
    for spec in args.stages:
        try:
            run_dir, steps = stage_checkpoints(spec)
            rows = viz.read_metrics(run_dir)
        except (checkpoint.CheckpointError, OSError, ValueError) as error:
            parser.error(f"{spec}: {error}")
        if not rows:
            parser.error(f"{spec}: its metrics.jsonl holds no rows")
        stages.append((spec, run_dir, steps, rows, wall_seconds(rows)))
    last_agent = agents_lib.load_agent(stages[-1][1])
    try:
        env_cfg = board_config(args.board, False, last_agent.env_cfg)
    except ValueError as error:
        parser.error(f"--board={args.board}: {error}")
    board = ms_env.board_name(ms_env.board_spec(env_cfg.H, env_cfg.W, env_cfg.mine_count))

    device = device_name()
    points, names, outcomes, starts = [], [], [], ([], [])
    spent_steps = spent_wall = 0.0
    for index, (spec, run_dir, steps, rows, wall) in enumerate(stages):
        if index:  # a stage after the first begins where the ones before it ended
            starts[0].append(spent_steps)
            starts[1].append(spent_wall)
        for step in steps:
            try:
                env_steps, seconds_in = cost_at(rows, wall, step)
            except ValueError as error:
                parser.error(f"{spec}: {error}")
            agent = agents_lib.load_agent(run_dir / "checkpoints" / str(step))
            began = time.perf_counter()
            won = agent_wins(agent, env_cfg, args.games, args.seed, args.batch)
            low, high = wilson_interval(int(won.sum()), won.size)
            point = {"bench": "chain_curve", "stage": run_dir.name, "update": step, "board": board, "seed": args.seed,
                     "games": args.games, "win_rate": float(won.mean()), "ci": [low, high],
                     "env_steps": spent_steps + env_steps, "wall_s": spent_wall + seconds_in,
                     "seconds": time.perf_counter() - began, "device": device}
            points.append(point)
            print(json.dumps(point), flush=True)
            names.append(f"{run_dir}/checkpoints/{step}")
            outcomes.append(won)
            if args.save:
                save_rows(args.save, names, outcomes, boards_played(env_cfg, args.seed))
        spent_steps += max(float(row.get("env_steps", 0)) for row in rows)
        spent_wall += float(wall.max())

    path = viz.plot_compute_curve(
        steps=[p["env_steps"] for p in points], wall=[p["wall_s"] for p in points],
        win=[p["win_rate"] for p in points], low=[p["ci"][0] for p in points], high=[p["ci"][1] for p in points],
        path=args.out, title=f"{board}: win rate against the chain's compute", starts=starts)
    print(f"{'stage':24} {'update':>7} {'env steps':>10} {'wall s':>8} {'win %':>7} {'95% CI':>16}")
    for p in points:
        ci = f"[{100 * p['ci'][0]:.2f}, {100 * p['ci'][1]:.2f}]"
        print(f"{p['stage'][-24:]:24} {p['update']:>7} {p['env_steps']:>10.3g} {p['wall_s']:>8.0f} {100 * p['win_rate']:>7.2f} {ci:>16}")
    print(path)


if __name__ == "__main__":
    main()

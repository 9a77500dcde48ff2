"""Imitation throughput: seconds per update of each config's imitation chunk, with the
learner's moves from the gradient pass (``ImitationConfig.share_forward``) and without.

For each config file it compiles the stage's chunk of ``--updates`` updates (the
program ``python -m msjax.train`` runs, from fresh parameters, on the config's own
board and games), once with ``share_forward=True`` and once with ``False`` where the
config can share the pass at all (``forward_is_shared``), then times ``--repeats`` calls
of each in turn, so that their ratio is taken side by side on one machine. Reported per
row: seconds per update (the fastest call, and the median), labelled states per second,
and compile_s (first call minus the fastest). One JSON line per row, then a table.

    python benchmarks/imitation_throughput.py configs/small.py
    python benchmarks/imitation_throughput.py configs/small_recycled.py configs/intermediate_cpu.py --repeats 3
    python benchmarks/imitation_throughput.py configs/small.py --quick     # smoke run
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

import jax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from msjax import config as config_lib  # noqa: E402
from benchmarks.train_throughput import device_name  # noqa: E402
from msjax.stages import imitation  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="+", help="config files (a get_config() each)")
    parser.add_argument("--updates", type=int, default=20, help="updates per timed chunk, >= 1")
    parser.add_argument("--repeats", type=int, default=4, help="timed calls of each chunk, >= 1")
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 updates, 1 repeat")
    args = parser.parse_args(argv)
    if args.quick:
        args.updates, args.repeats = 2, 1
    for name in ("updates", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)} must be >= 1")
    return args


def variants(cfg) -> list:
    """The config's imitation section as it is and, where it can share the forward pass,
    with ``share_forward`` the other way: ``[(share_forward, experiment config), ...]``."""
    own = cfg.imitation.share_forward
    rows = [(own, cfg)]
    other = dataclasses.replace(cfg.imitation, share_forward=not own)
    if cfg.imitation.forward_is_shared or other.forward_is_shared:
        rows.append((not own, dataclasses.replace(cfg, imitation=other)))
    return sorted(rows, key=lambda row: not row[0])


def compiled(cfg, updates: int):
    """``(chunk, state, first_call_s)``: the stage's jitted chunk, its state after one call."""
    chunk = jax.jit(imitation.stage_chunk_fn(cfg, updates), donate_argnums=0)
    state = imitation.init_stage_state(jax.random.key(cfg.run.seed), cfg)
    jax.block_until_ready(state)
    start = time.perf_counter()
    state, metrics = chunk(state)
    jax.block_until_ready(metrics)
    return chunk, state, time.perf_counter() - start


def measure(path: str, args: argparse.Namespace) -> list[dict]:
    """The rows of one config file, its variants timed in turn."""
    cfg = config_lib.load_config(path)
    if not cfg.imitation.enabled:
        raise SystemExit(f"{path}: imitation.enabled is False, no imitation stage to time")
    runs = []
    for share, variant in variants(cfg):
        chunk, state, first_call_s = compiled(variant, args.updates)
        runs.append({"share": share, "cfg": variant, "chunk": chunk, "state": state, "first": first_call_s, "times": []})
    for _ in range(args.repeats):
        for run in runs:
            start = time.perf_counter()
            run["state"], metrics = run["chunk"](run["state"])
            jax.block_until_ready(metrics)
            run["times"].append(time.perf_counter() - start)
    rows = []
    for run in runs:
        il_cfg = run["cfg"].imitation
        fastest, states = min(run["times"]), il_cfg.num_envs * il_cfg.steps_per_update * args.updates
        env_cfg = imitation.imitation_env(run["cfg"].env)
        rows.append({
            "device": device_name(),
            "config": path,
            "board": f"{env_cfg.H}x{env_cfg.W}x{env_cfg.mine_count}",
            "num_envs": il_cfg.num_envs,
            "channels": ",".join(str(c) for c in run["cfg"].model.channels),
            "recycles": run["cfg"].model.recycles,
            "share_forward": run["share"],
            "forward_is_shared": il_cfg.forward_is_shared,
            "update_s": round(fastest / args.updates, 4),
            "update_s_median": round(statistics.median(run["times"]) / args.updates, 4),
            "states_per_s": round(states / fastest, 1),
            "compile_s": round(max(run["first"] - fastest, 0.0), 2),
        })
    shared = [row for row in rows if row["forward_is_shared"]]
    if shared and len(rows) == 2:
        two_pass = next(row for row in rows if not row["forward_is_shared"])
        shared[0]["ratio_to_two_pass"] = round(shared[0]["update_s"] / two_pass["update_s"], 3)
    return rows


def main(argv=None) -> None:
    args = parse_args(argv)
    rows = []
    for path in args.configs:
        for row in measure(path, args):
            print(json.dumps(row), flush=True)
            rows.append(row)
    header = (
        f"{'device':<8} {'config':<30} {'board':<9} {'envs':>5} {'shared':>7} "
        f"{'s/update':>9} {'median':>8} {'states/s':>9} {'compile s':>10} {'ratio':>6}"
    )
    print("\n" + header + "\n" + "-" * len(header))
    for row in rows:
        ratio = f"{row['ratio_to_two_pass']:.3f}" if "ratio_to_two_pass" in row else ""
        print(
            f"{row['device']:<8} {row['config']:<30} {row['board']:<9} {row['num_envs']:>5} "
            f"{str(row['forward_is_shared']):>7} {row['update_s']:>9.4f} {row['update_s_median']:>8.4f} "
            f"{row['states_per_s']:>9,.0f} {row['compile_s']:>10.1f} {ratio:>6}"
        )


if __name__ == "__main__":
    main()

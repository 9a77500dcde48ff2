"""Imitation throughput: seconds per update of each config's imitation chunk, with the
learner's moves from the gradient pass (``ImitationConfig.share_forward``) and without,
and with each ``--conv-impls`` (``ModelConfig.conv_impl``) asked for.

For each config file it compiles the stage's chunk of ``--updates`` updates (the
program ``python -m msjax.train`` runs, from fresh parameters, on the config's own
board and games) for every variant: ``share_forward=True`` and ``False`` where the
config can share the pass at all (``forward_is_shared``), times each convolution, then
times ``--repeats`` calls of each in turn, so that their ratios are taken side by side on
one machine. Reported per row: seconds per update (the fastest call, and the median),
labelled states per second, compile_s (first call minus the fastest) and the ratio of
its fastest call to the config's first row (shared pass, first convolution). One JSON
line per row, then a table.

    python -m benchmarks.imitation_throughput configs/small.py
    python -m benchmarks.imitation_throughput configs/small_recycled.py configs/intermediate_cpu.py --repeats 3
    python -m benchmarks.imitation_throughput configs/small.py --conv-impls patches xla --no-two-pass
    python -m benchmarks.imitation_throughput configs/small.py --quick     # smoke run
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time

import jax

from msjax.run import config as config_lib
from msjax import distributed
from msjax.stages import imitation


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="+", help="config files (a get_config() each)")
    parser.add_argument("--updates", type=int, default=20, help="updates per timed chunk, >= 1")
    parser.add_argument("--repeats", type=int, default=4, help="timed calls of each chunk, >= 1")
    parser.add_argument("--conv-impls", nargs="+", default=None, choices=["auto", "xla", "patches"],
                        help="model.conv_impl values to time (default: the config's own)")
    parser.add_argument("--no-two-pass", action="store_true", help="time the config's own share_forward only")
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 updates, 1 repeat")
    args = parser.parse_args(argv)
    if args.quick:
        args.updates, args.repeats = 2, 1
    for name in ("updates", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)} must be >= 1")
    return args


def variants(cfg, conv_impls=None, two_pass: bool = True) -> list:
    """``[(share_forward, conv_impl, experiment config), ...]``: the config with each of
    ``conv_impls`` (default: its own) and, where it can share the forward pass and
    ``two_pass``, with ``share_forward`` the other way; the shared pass first."""
    can_share = dataclasses.replace(cfg.imitation, share_forward=True).forward_is_shared
    shares = [True, False] if two_pass and can_share else [cfg.imitation.share_forward]
    rows = []
    for share in shares:
        for impl in conv_impls or [cfg.model.conv_impl]:
            variant = dataclasses.replace(
                cfg, imitation=dataclasses.replace(cfg.imitation, share_forward=share),
                model=dataclasses.replace(cfg.model, conv_impl=impl),
            )
            rows.append((share, impl, variant))
    return rows


def compiled(cfg, updates: int):
    """``(chunk, state, first_call_s)``: the stage's chunk compiled as training compiles it
    on one device (``distributed.jit_chunk``), its state after one call."""
    chunk = distributed.jit_chunk(imitation.stage_chunk_fn(cfg, updates))
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
    for share, impl, variant in variants(cfg, args.conv_impls, not args.no_two_pass):
        chunk, state, first_call_s = compiled(variant, args.updates)
        runs.append({"share": share, "impl": impl, "cfg": variant, "chunk": chunk, "state": state,
                     "first": first_call_s, "times": []})
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
            "device": distributed.device_name(),
            "config": path,
            "board": f"{env_cfg.H}x{env_cfg.W}x{env_cfg.mine_count}",
            "num_envs": il_cfg.num_envs,
            "channels": ",".join(str(c) for c in run["cfg"].model.channels),
            "recycles": run["cfg"].model.recycles,
            "conv_impl": run["impl"],
            "share_forward": run["share"],
            "forward_is_shared": il_cfg.forward_is_shared,
            "update_s": round(fastest / args.updates, 4),
            "update_s_median": round(statistics.median(run["times"]) / args.updates, 4),
            "states_per_s": round(states / fastest, 1),
            "compile_s": round(max(run["first"] - fastest, 0.0), 2),
        })
    for row in rows:
        row["ratio_to_first"] = round(row["update_s"] / rows[0]["update_s"], 3)
    return rows


def main(argv=None) -> None:
    args = parse_args(argv)
    rows = []
    for path in args.configs:
        for row in measure(path, args):
            print(json.dumps(row), flush=True)
            rows.append(row)
    header = (
        f"{'device':<8} {'config':<30} {'board':<9} {'envs':>5} {'shared':>7} {'conv':>8} "
        f"{'s/update':>9} {'median':>8} {'states/s':>9} {'compile s':>10} {'ratio':>6}"
    )
    print("\n" + header + "\n" + "-" * len(header))
    for row in rows:
        print(
            f"{row['device']:<8} {row['config']:<30} {row['board']:<9} {row['num_envs']:>5} "
            f"{str(row['forward_is_shared']):>7} {row['conv_impl']:>8} {row['update_s']:>9.4f} "
            f"{row['update_s_median']:>8.4f} {row['states_per_s']:>9,.0f} {row['compile_s']:>10.1f} "
            f"{row['ratio_to_first']:>6.3f}"
        )


if __name__ == "__main__":
    main()

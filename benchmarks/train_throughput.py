"""Training throughput: env steps/s of the whole PPO loop (rollout + GAE + update).

For each board x ``num_envs`` it builds ``ppo.make_ppo_chunk`` for ``--updates``
updates, times the first call (compile + run) and then ``--repeats`` more calls of the
compiled chunk. Reported per row: env steps/s = ``num_envs * steps_per_env * updates``
per second of a steady-state chunk (the rollout's env steps; each update also trains
``ppo_epochs`` passes over them), and compile_s = first call minus one steady call.
One JSON line per row as it is measured, then a table.

    python -m benchmarks.train_throughput                           # 8x8x10, seed CNN, CPU-sized
    python -m benchmarks.train_throughput --boards 8x8x10 16x16x40 --num-envs 1024 4096  # GPU
    python -m benchmarks.train_throughput --channels 16,32,32 --steps-per-env 32 --quick
    python -m benchmarks.train_throughput --num-envs 256 --microbatch-sizes 0 512   # micro-batching's cost

With several ``--microbatch-sizes`` (``ppo.microbatch_size``, 0 = off) or ``--remat
false true`` each board x num_envs is measured once per value, in one process, so their
ratio is taken at equal work on the same machine.
"""

from __future__ import annotations

import argparse
import json
import time

import jax

from msjax import distributed
from msjax import env as ms_env
from msjax import models
from msjax.stages import ppo

def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", nargs="+", default=["8x8x10"], help="HxWxM or a standard board name")
    parser.add_argument("--num-envs", nargs="+", type=int, default=[64, 256])
    parser.add_argument("--steps-per-env", type=int, default=32)
    parser.add_argument("--mini-batches", type=int, default=4)
    parser.add_argument("--ppo-epochs", type=int, default=3)
    parser.add_argument("--updates", type=int, default=2, help="PPO updates per timed chunk")
    parser.add_argument("--repeats", type=int, default=2, help="steady-state chunks timed")
    parser.add_argument("--channels", default="32,64,64", help="plain CNN widths (the seed's by default)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--microbatch-sizes", nargs="+", type=int, default=[0], help="ppo.microbatch_size values")
    parser.add_argument("--remat", nargs="+", default=["false"], choices=["false", "true"], help="model.remat values")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 update, 1 repeat")
    return parser.parse_args(argv)


def measure(board: str, num_envs: int, args: argparse.Namespace, microbatch_size: int = 0, remat: bool = False) -> dict:
    """Times one configuration; returns its JSON row."""
    height, width, mines = ms_env.parse_board(board)
    env_cfg = ms_env.EnvConfig(H=height, W=width, mine_count=mines)
    model_cfg = models.ModelConfig(
        channels=tuple(int(c) for c in args.channels.split(",")), dtype=args.dtype, flag_actions=False, remat=remat
    )
    ppo_cfg = ppo.PPOConfig(
        num_envs=num_envs,
        steps_per_update=args.steps_per_env,
        mini_batches=args.mini_batches,
        ppo_epochs=args.ppo_epochs,
        frontier_mask_until_updates=0,
        microbatch_size=microbatch_size,
    )
    chunk = ppo.make_ppo_chunk(env_cfg, model_cfg, ppo_cfg, args.updates)
    state = ppo.init_ppo_state(jax.random.key(0), env_cfg, model_cfg, ppo_cfg)
    jax.block_until_ready(state)

    start = time.perf_counter()
    state, metrics = chunk(state)
    jax.block_until_ready(metrics)
    first_call_s = time.perf_counter() - start

    steady = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        state, metrics = chunk(state)
        jax.block_until_ready(metrics)
        steady.append(time.perf_counter() - start)
    chunk_s = min(steady)
    env_steps = num_envs * args.steps_per_env * args.updates
    return {
        "device": distributed.device_name(),
        "board": board,
        "num_envs": num_envs,
        "steps_per_env": args.steps_per_env,
        "channels": args.channels,
        "dtype": args.dtype,
        "microbatch_size": microbatch_size,
        "remat": remat,
        "env_steps_per_s": round(env_steps / chunk_s, 1),
        "update_s": round(chunk_s / args.updates, 3),
        "compile_s": round(max(first_call_s - chunk_s, 0.0), 2),
        "win_rate_train": round(float(metrics["win_rate_train"][-1]), 3),
    }


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.quick:
        args.updates, args.repeats = 1, 1
    rows = []
    for board in args.boards:
        for num_envs in args.num_envs:
            for microbatch_size in args.microbatch_sizes:
                for remat in args.remat:
                    row = measure(board, num_envs, args, microbatch_size, remat == "true")
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    header = (
        f"{'device':<10} {'board':<9} {'envs':>6} {'steps':>6} {'micro':>6} {'remat':>6} "
        f"{'env steps/s':>12} {'s/update':>9} {'compile s':>10}"
    )
    print("\n" + header + "\n" + "-" * len(header))
    for row in rows:
        print(
            f"{row['device']:<10} {row['board']:<9} {row['num_envs']:>6} {row['steps_per_env']:>6} "
            f"{row['microbatch_size']:>6} {str(row['remat']):>6} {row['env_steps_per_s']:>12,.0f} {row['update_s']:>9.3f} {row['compile_s']:>10.1f}"
        )


if __name__ == "__main__":
    main()

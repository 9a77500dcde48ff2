"""Scale-out: env steps/s of the PPO training loop on 1, 2, 4 ... devices at equal total work.

Every device count runs the same global batch (``--num-envs`` boards; each device steps
``num_envs / devices`` of them) in its own subprocess, so that on a CPU
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` can give it N simulated devices.
Each subprocess compiles ``ppo.ppo_chunk_fn`` for an N-device mesh (``distributed.jit_chunk``), times the first
call (compile + run) and ``--repeats`` steady calls of ``--updates`` updates. Reported
per row: env steps/s = ``num_envs * steps_per_env * updates`` per second of a steady
chunk, compile_s = first call minus one steady call, and ``vs_1`` = steps/s over the
1-device row's (1.0 = no sharding overhead; on N real accelerators the ideal is N, and
steps/s(N) / (N * steps/s(1)) is the scaling efficiency). ``--no-mesh`` adds a row for
the chunk built without a mesh (plain ``jax.jit``), the code path before scale-out.

Simulated CPU devices share the machine's cores, so at equal total work they measure
the overhead of sharding (partitioned program, collectives, per-device dispatch), not a
speed-up. On a GPU host run it with ``--devices 1 2 4 8`` and no XLA flag: each
subprocess then uses the first N GPUs (``run.num_devices``), and ``vs_1`` / N is the
scaling efficiency at equal total work; for weak scaling pass ``--per-device-envs``.

    python -m benchmarks.scaling                                # 8x8x10, 256 boards, 1/2/4 CPU devices
    python -m benchmarks.scaling --devices 1 2 4 8 --num-envs 4096 --real-devices   # GPUs
    python -m benchmarks.scaling --quick                        # smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", nargs="+", type=int, default=[1, 2, 4])
    parser.add_argument("--board", default="8x8x10", help="HxWxM or a standard board name")
    parser.add_argument("--num-envs", type=int, default=256, help="global batch (boards), the same for every row")
    parser.add_argument(
        "--per-device-envs", type=int, default=0,
        help="weak scaling: num_envs = this x devices (overrides --num-envs)",
    )
    parser.add_argument("--steps-per-env", type=int, default=32)
    parser.add_argument("--mini-batches", type=int, default=4)
    parser.add_argument("--ppo-epochs", type=int, default=3)
    parser.add_argument("--channels", default="32,64,64")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--updates", type=int, default=2, help="PPO updates per timed chunk")
    parser.add_argument("--repeats", type=int, default=3, help="steady-state chunks timed (best is kept)")
    parser.add_argument("--no-mesh", action="store_true", help="also time the chunk built without a mesh")
    parser.add_argument(
        "--real-devices", action="store_true",
        help="use the machine's own devices (GPUs) instead of simulated CPU devices",
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 64 boards, 1 update, 1 repeat")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.num_envs, args.updates, args.repeats, args.channels = 64, 1, 1, "16,16"
    return args


def measure(devices: int, args: argparse.Namespace) -> dict:
    """Times one device count in this process (``devices`` 0: no mesh, one device)."""
    import jax

    from msjax import distributed, models
    from msjax.stages import ppo
    from msjax import env as ms_env

    height, width, mines = ms_env.parse_board(args.board)
    num_envs = args.per_device_envs * max(devices, 1) if args.per_device_envs else args.num_envs
    env_cfg = ms_env.EnvConfig(H=height, W=width, mine_count=mines)
    model_cfg = models.ModelConfig(
        channels=tuple(int(c) for c in args.channels.split(",")), dtype=args.dtype, flag_actions=False
    )
    ppo_cfg = ppo.PPOConfig(
        num_envs=num_envs,
        steps_per_update=args.steps_per_env,
        mini_batches=args.mini_batches,
        ppo_epochs=args.ppo_epochs,
        num_updates=1000,
    )
    mesh = distributed.make_mesh(devices) if devices else None
    state = ppo.init_ppo_state(jax.random.key(0), env_cfg, model_cfg, ppo_cfg)
    chunk_fn = ppo.ppo_chunk_fn(env_cfg, model_cfg, ppo_cfg, args.updates)
    if mesh is None:
        chunk = ppo.make_ppo_chunk(env_cfg, model_cfg, ppo_cfg, args.updates)
    else:
        chunk = distributed.jit_chunk(chunk_fn, jax.eval_shape(lambda: state), mesh, "ppo.num_envs")
        state = distributed.place(state, mesh)

    def timed_call(state):
        started = time.perf_counter()
        state, metrics = chunk(state)
        jax.block_until_ready(metrics)
        return state, time.perf_counter() - started

    state, first = timed_call(state)
    steady = []
    for _ in range(args.repeats):
        state, seconds = timed_call(state)
        steady.append(seconds)
    best = min(steady)
    return {
        "device": distributed.device_name(),
        "devices": devices,
        "mesh": mesh is not None,
        "board": args.board,
        "batch": num_envs,
        "steps_per_env": args.steps_per_env,
        "updates": args.updates,
        "steps_per_s": num_envs * args.steps_per_env * args.updates / best,
        "compile_s": max(first - best, 0.0),
    }


def run_child(devices: int, args: argparse.Namespace, argv: list[str]) -> dict:
    """``measure(devices)`` in a fresh process with ``devices`` simulated CPU devices."""
    env = dict(os.environ)
    if not args.real_devices:
        count = max(devices, 1)
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={count}".strip()
        env["JAX_PLATFORMS"] = "cpu"
    command = [sys.executable, "-m", "benchmarks.scaling", *argv, "--child", str(devices)]
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{devices} device(s) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def print_table(rows: list[dict]) -> None:
    base = next((row["steps_per_s"] for row in rows if row["devices"] == 1 and row["mesh"]), None)
    print(f"\n{'device':<8} {'devices':>8} {'board':<8} {'batch':>6} {'steps/s':>10} {'vs_1':>6} {'compile_s':>9}")
    for row in rows:
        label = str(row["devices"]) if row["mesh"] else "no mesh"
        ratio = f"{row['steps_per_s'] / base:.2f}" if base else "-"
        print(
            f"{row['device']:<8} {label:>8} {row['board']:<8} {row['batch']:>6} "
            f"{row['steps_per_s']:>10.0f} {ratio:>6} {row['compile_s']:>9.1f}"
        )


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.child is not None:
        print(json.dumps(measure(args.child, args)))
        return
    counts = ([0] if args.no_mesh else []) + args.devices
    rows = []
    for devices in counts:
        row = run_child(devices, args, argv)
        print(json.dumps(row), flush=True)
        rows.append(row)
    print_table(rows)


if __name__ == "__main__":
    main()

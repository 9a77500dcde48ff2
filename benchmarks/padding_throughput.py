"""What padding costs: a board mix padded to 16x30 against the unpadded 16x30 env.

Every row steps ``--batch`` boards with random valid reveals and auto-reset (the work of
``env_throughput.py``'s msjax rows, same timing: compile apart from the steady state):

* ``16x30x99``: the unpadded expert env, the reference;
* ``mix (padded)``: the curriculum's three boards 8x8x10, 16x16x40 and 16x30x99 padded
  to 16x30 and dealt uniformly (``EnvConfig.boards``), the mixed-size batch a curriculum
  trains on;
* ``16x30x99 (padded)``: the expert board alone through the padded code path, i.e. the
  cost of the padding machinery itself on the same games;
* ``8x8x10`` and ``8x8x10 (padded)``: a small board alone, unpadded and padded to 16x30.

Reported per row: env steps/s, games/s, compile seconds, and env steps/s relative to the
unpadded 16x30x99 env (the issue's target: padding costs at most 2x, i.e. >= 0.5).

    python -m benchmarks.padding_throughput                 # ~2 min on a 2-core CPU
    python -m benchmarks.padding_throughput --batch 4096    # a GPU
"""

from __future__ import annotations

import argparse
import json

from benchmarks import env_throughput
from msjax import distributed
from msjax.env import STANDARD_BOARDS, EnvConfig, board_spec

BEGINNER, INTERMEDIATE, EXPERT = (board_spec(*STANDARD_BOARDS[name]) for name in ("beginner", "intermediate", "expert"))
PAD_H, PAD_W = EXPERT[:2]
CONFIGS = {
    "16x30x99": EnvConfig(H=PAD_H, W=PAD_W, mine_count=EXPERT[2]),
    "mix (padded)": EnvConfig(H=PAD_H, W=PAD_W, boards=(BEGINNER, INTERMEDIATE, EXPERT)),
    "16x30x99 (padded)": EnvConfig(H=PAD_H, W=PAD_W, boards=(EXPERT,)),
    "8x8x10": EnvConfig(H=BEGINNER[0], W=BEGINNER[1], mine_count=BEGINNER[2]),
    "8x8x10 (padded)": EnvConfig(H=PAD_H, W=PAD_W, boards=(BEGINNER,)),
}
REFERENCE = "16x30x99"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=1024, help="boards stepped together")
    parser.add_argument("--steps", type=int, default=None, help="env steps per timed call")
    parser.add_argument("--min-time", type=float, default=2.0, help="seconds of steady-state timing per row")
    parser.add_argument("--rows", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    num_steps = env_throughput.steps_per_call(args.batch, args.steps)
    rows = []
    for name in args.rows:
        rate, games, compile_s = env_throughput.bench_msjax(CONFIGS[name], args.batch, num_steps, args.min_time)
        row = {
            "env": name,
            "device": distributed.device_name(),
            "batch": args.batch,
            "env_steps_per_s": rate,
            "games_per_s": games,
            "compile_s": compile_s,
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    reference = next((row["env_steps_per_s"] for row in rows if row["env"] == REFERENCE), None)
    print()
    header = f"{'env':<18} {'batch':>6} {'env steps/s':>12} {'games/s':>10} {'compile s':>9} {'vs 16x30x99':>11}"
    print(header)
    print("-" * len(header))
    for row in rows:
        ratio = f"{row['env_steps_per_s'] / reference:.2f}" if reference else "-"
        print(
            f"{row['env']:<18} {row['batch']:>6} {row['env_steps_per_s']:>12.3g} {row['games_per_s']:>10.3g} "
            f"{row['compile_s']:>9.2f} {ratio:>11}"
        )
    return rows


if __name__ == "__main__":
    main()

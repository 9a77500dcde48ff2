"""The reference player and the JAX solver on exact probabilities, on the same boards.

Two win rates measured on different boards differ by their noise as well as by the
players (two runs of 20,000 expert games: about +-0.7 points each at 95%). Here both
players play the same opening-start layouts, drawn once on the host: the host player with
``msjax.reference.play_board`` (``--workers`` processes), the JAX solver
(``SolverConfig(probabilities="exact", ...)`` with the host player's first click and the
``--solver`` fields) on ``msjax.env.from_mines`` games, ``--batch`` boards at a time on
the device. Most games end alike; the table gives the games each player won alone and the
paired difference of the win rates with its 95% interval (normal approximation on the
per-board differences), far narrower than the two separate intervals.

``--baseline FIELD=VALUE,...`` puts a second JAX solver (those ``SolverConfig`` and
``search.SearchConfig`` fields) in the host player's place, to measure what one option is worth on the same boards:

    python -m benchmarks.paired_exact --board expert --games 4096 --workers 2 --solver lookahead_candidates=6
    python -m benchmarks.paired_exact --board beginner --games 20000 --batch 1024 \
        --solver lookahead_candidates=6,endgame_layouts=8 --baseline lookahead_candidates=6
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from msjax.cli import args as cli_args
from msjax.distributed import device_name
from msjax.env import STANDARD_BOARDS
from msjax.evaluate.layouts import device_solver_config, device_wins, draw_layouts, host_wins
from msjax.evaluate.paired import paired_row


def device_progress(games: int):
    """``device_wins``'s ``on_batch``: the games played so far, on one line of stderr."""
    end = lambda wins: "\n" if len(wins) >= games else ""  # noqa: E731
    return lambda wins: print(f"\r{len(wins)}/{games} device games", end=end(wins), file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line; a bad value is one argparse ``error:`` line (exit status 2) naming
    the flag and what it allows; ``--solver`` and ``--baseline`` are read into
    ``solver_options`` and ``baseline_options`` (None: the host player) and checked by
    building their configs before any game."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.paired_exact", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", default="expert", choices=tuple(STANDARD_BOARDS))
    parser.add_argument("--games", type=cli_args.at_least_two, default=1024, help="boards, each played by both (>= 2)")
    parser.add_argument("--seed", type=cli_args.seed, default=0, help=f"picks the layouts, 0..{cli_args.MAX_SEED}")
    parser.add_argument("--workers", type=cli_args.positive_int, default=1, help="processes for the host player")
    parser.add_argument("--batch", type=cli_args.positive_int, default=1024, help="boards per device call")
    parser.add_argument("--solver", default="lookahead_candidates=6", metavar="FIELD=VALUE,...",
                        help="SolverConfig and search.SearchConfig fields of the JAX player (probabilities='exact' always)")
    parser.add_argument("--baseline", default="host", metavar="host|FIELD=VALUE,...",
                        help="the reference player on the host (default), or a second JAX solver with these fields")
    args = parser.parse_args(argv)
    height, width, _ = STANDARD_BOARDS[args.board]

    def checked_options(flag: str, text: str) -> dict:
        try:
            options = cli_args.solver_fields(text)
            device_solver_config(height, width, options)
        except (argparse.ArgumentTypeError, TypeError, ValueError) as error:
            parser.error(f"argument {flag}: {error}")
        return options

    args.solver_options = checked_options("--solver", args.solver)
    args.baseline_options = None if args.baseline == "host" else checked_options("--baseline", args.baseline)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)

    height, width, mines = STANDARD_BOARDS[args.board]
    layouts = draw_layouts(height, width, mines, args.games, args.seed)
    began = time.perf_counter()
    baseline_compile_s = 0.0
    if args.baseline_options is None:
        baseline = host_wins(layouts, args.workers)
    else:
        baseline, baseline_compile_s = device_wins(layouts, args.baseline_options, args.batch,
                                                     on_batch=device_progress(args.games))
    baseline_s = time.perf_counter() - began - baseline_compile_s
    began = time.perf_counter()
    device, compile_s = device_wins(layouts, args.solver_options, args.batch, on_batch=device_progress(args.games))
    device_s = time.perf_counter() - began - compile_s
    row = {"bench": "paired_exact", "board": f"{height}x{width}x{mines}", "seed": args.seed,
           "solver": args.solver, "baseline": args.baseline, **paired_row(baseline, device),
           "baseline_games_per_s": args.games / baseline_s, "device_games_per_s": args.games / device_s,
           "compile_s": compile_s, "batch": args.batch, "workers": args.workers,
           "device": device_name()}
    pct = lambda x: f"{100 * x:.2f}"
    name = "host" if args.baseline_options is None else "base"
    print(f"{'board':10} {'games':>6} {name + ' %':>7} {'JAX %':>7} {name + ' only':>9} {'JAX only':>8} "
          f"{'JAX - ' + name:>10} {'95% CI':>16}")
    low, high = row["difference_ci"]
    print(f"{row['board']:10} {args.games:>6} {pct(row['baseline_win_rate']):>7} {pct(row['device_win_rate']):>7} "
          f"{row['baseline_only']:>9} {row['device_only']:>8} {pct(row['difference']):>10} [{pct(low)}, {pct(high)}]")
    print(json.dumps(row))


if __name__ == "__main__":
    main()

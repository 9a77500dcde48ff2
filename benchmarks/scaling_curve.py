"""A recipe's scaling curve: the final agents of the same chain trained at 1x, 2x, 4x ... its
updates, on the same boards, against the whole chain's env steps and wall seconds.

Each ``--chain LABEL=RUN,RUN,...`` is one point: the chain's runs, first stage first (each
warm-started from the one before); a label ``SERIES/POINT`` puts the point on the line of
``SERIES`` (several recipes' curves in one figure), a label without ``/`` on the unnamed line.
The point's agent is the last run's (its final checkpoint), its cost the sum of every run's
env steps and wall seconds (``metrics.jsonl``'s last row, the final evaluation included).
Every point plays the same ``--games`` boards of ``--board`` greedily with its own first
click (``msjax.evaluate.paired.agent_wins``), so the points are paired: each is also given as
a difference to the first with its 95% interval.
``--saved FILE.npz`` (repeatable) reuses rows that ``msjax paired --save`` wrote on the same
boards (a row whose name is the last run's path, its first ``--games`` games) instead of
playing them again. ``--level NAME=WIN`` draws a horizontal line (a teacher's or a solver's
win rate on the board, measured elsewhere) and ``--peer NAME=WIN@STEPS`` marks another
system's published point on the env-steps panel.

    python -m benchmarks.scaling_curve \\
        --chain 1x=runs/small_recycled,runs/intermediate_cpu \\
        --chain 2x=runs/small_recycled,runs/s88/plain_2x \\
        --chain 4x=runs/small_recycled,runs/s88/plain_4x \\
        --board intermediate --games 2000 --seed 7 --saved runs/s88/base_s7.npz \\
        --level "rule solver=0.8733" --level "search player=0.8914" \\
        --peer "PPO, residual CNN=0.872@32.8e6" -o benchmarks/figures/scaling_16x16.png

Output: a table, one JSON line per point (its ``series``: null without one), and the PNG
(``msjax.viz.plot_compute_curve``, env steps on a log axis, one line per series).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from msjax.cli import args as cli_args
from msjax.distributed import device_name


def labelled(text: str) -> tuple[str, str]:
    """argparse type: ``LABEL=VALUE`` as ``(LABEL, VALUE)``."""
    label, sep, value = text.partition("=")
    if not sep or not label or not value:
        raise argparse.ArgumentTypeError(f"{text!r} must be LABEL=VALUE")
    return label, value


def label_series(label: str) -> str | None:
    """The series of a point labelled ``SERIES/POINT`` (the text before the first ``/``),
    or None for a label without ``/``."""
    series, sep, _ = label.partition("/")
    return series if sep else None


def chain_cost(runs: list[Path]) -> tuple[float, float]:
    """``(env steps, wall seconds)`` a chain of runs spent: every run's last metrics row
    (``msjax.viz.figures.wall_seconds``), summed.

    Raises:
      ValueError: a run with no metrics rows.
    """
    from msjax import viz
    from msjax.viz.figures import wall_seconds

    steps = wall = 0.0
    for run in runs:
        rows = viz.read_metrics(run)
        if not rows:
            raise ValueError(f"{run}: its metrics.jsonl holds no rows")
        steps += max(float(row.get("env_steps", 0)) for row in rows)
        wall += float(wall_seconds(rows).max())
    return steps, wall


def saved_row(saved: list[dict[str, np.ndarray]], run: Path) -> np.ndarray | None:
    """bool[games]: the first row of the files ``saved`` (``msjax.evaluate.paired.saved_games``
    each) whose name is ``run``'s path (resolved), or None."""
    for rows in saved:
        for name, wins in zip(rows["rows"], rows["wins"]):
            if Path(str(name)).resolve() == run.resolve():
                return np.asarray(wins, bool)
    return None


def peer_point(text: str) -> tuple[str, float, float]:
    """argparse type: ``NAME=WIN@STEPS`` as ``(NAME, STEPS, WIN)``."""
    name, value = labelled(text)
    win, sep, steps = value.partition("@")
    try:
        return name, float(steps), float(win)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} must be NAME=WIN@STEPS (e.g. peer=0.872@32.8e6)") from None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chain", action="append", type=labelled, required=True, metavar="LABEL=RUN,RUN",
                        help="one point: a chain's runs, first stage first (repeatable; the first is the baseline; "
                             "LABEL as SERIES/POINT: one line per series)")
    parser.add_argument("--board", help="beginner, intermediate, expert or HxWxM (default: the first point's)")
    parser.add_argument("--games", type=cli_args.at_least_two, default=2000, help="boards, each played by every point")
    parser.add_argument("--seed", type=cli_args.seed, default=7, help="picks the boards")
    parser.add_argument("--batch", type=cli_args.positive_int, default=500, help="games stepped together")
    parser.add_argument("--saved", action="append", default=[], metavar="FILE.npz",
                        help="rows saved by msjax paired --save on the same boards (repeatable)")
    parser.add_argument("--level", action="append", default=[], type=labelled, metavar="NAME=WIN",
                        help="a horizontal line: another player's win rate on the board (repeatable)")
    parser.add_argument("--peer", action="append", default=[], type=peer_point, metavar="NAME=WIN@STEPS",
                        help="another system's point on the env-steps panel (repeatable)")
    parser.add_argument("-o", "--out", default="scaling_curve.png", help="the PNG")
    args = parser.parse_args(argv)

    from msjax import env as ms_env
    from msjax import viz
    from msjax.env import board_config
    from msjax.evaluate.paired import agent_wins, boards_played, saved_games, unrecorded_warning
    from msjax.run import agents as agents_lib
    from msjax.stats import paired_difference, wilson_interval

    try:
        levels = [(name, float(win)) for name, win in args.level]
    except ValueError:
        parser.error(f"--level: {args.level} must be NAME=WIN with WIN a number in [0, 1]")
    chains = [(label, [Path(run) for run in runs.split(",")]) for label, runs in args.chain]
    try:
        costs = [chain_cost(runs) for _, runs in chains]
        first_agent = agents_lib.load_agent(chains[0][1][-1])
        env_cfg = board_config(args.board, False, first_agent.env_cfg)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    board = ms_env.board_name(ms_env.board_spec(env_cfg.H, env_cfg.W, env_cfg.mine_count))
    boards, saved = boards_played(env_cfg, args.seed), []
    for path in args.saved:
        try:
            rows, unrecorded = saved_games(path, args.games, boards)
        except ValueError as error:
            parser.error(f"--saved {path}: {error}")
        if unrecorded:
            print(unrecorded_warning(f"--saved {path}", unrecorded, boards), file=sys.stderr)
        saved.append(rows)

    device, points, outcomes = device_name(), [], []
    for (label, runs), (env_steps, wall_s) in zip(chains, costs):
        began = time.perf_counter()
        won = saved_row(saved, runs[-1])
        if won is None:
            won = agent_wins(agents_lib.load_agent(runs[-1]), env_cfg, args.games, args.seed, args.batch)
        outcomes.append(won)
        low, high = wilson_interval(int(won.sum()), won.size)
        difference, (d_low, d_high) = paired_difference(outcomes[0], won)
        point = {"bench": "scaling_curve", "label": label, "series": label_series(label), "agent": str(runs[-1]),
                 "board": board, "seed": args.seed, "games": args.games, "win_rate": float(won.mean()), "ci": [low, high],
                 "vs_first": [difference, d_low, d_high], "env_steps": env_steps, "wall_s": wall_s,
                 "seconds": time.perf_counter() - began, "device": device}
        points.append(point)
        print(json.dumps(point), flush=True)

    path = viz.plot_compute_curve(
        steps=[p["env_steps"] for p in points], wall=[p["wall_s"] for p in points],
        win=[p["win_rate"] for p in points], low=[p["ci"][0] for p in points], high=[p["ci"][1] for p in points],
        path=args.out, title=f"{board}: the recipe's final agents against the chain's compute",
        levels=levels, peers=args.peer, log_steps=True,
        series=[p["series"] for p in points])  # all None: the one unnamed line
    print(f"{'point':16} {'env steps':>10} {'wall s':>8} {'win %':>7} {'95% CI':>16} {'vs first, paired':>24}")
    for p in points:
        ci = f"[{100 * p['ci'][0]:.2f}, {100 * p['ci'][1]:.2f}]"
        d, lo, hi = (100 * v for v in p["vs_first"])
        vs = f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}]"
        print(f"{p['label'][:16]:16} {p['env_steps']:>10.3g} {p['wall_s']:>8.0f} {100 * p['win_rate']:>7.2f} {ci:>16} {vs:>24}")
    print(path)


if __name__ == "__main__":
    main()

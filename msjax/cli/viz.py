"""``python -m msjax viz``: writes a PNG figure and prints its path.

Usage::

    python -m msjax viz curves runs/NAME            # -> runs/NAME/training_curves.png,
                                                    #    runs/NAME/win_rate_vs_compute.png
    python -m msjax viz heatmap --solver --seed 4 --move 8   # -> mine_probabilities.png
    python -m msjax viz calibration --agent runs/NAME --games 100   # -> reliability.png
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from msjax.evaluate import calibration
from msjax.run import log as runlog
from msjax import evaluate as evaluate_lib
from msjax import viz
from msjax.cli.args import positive_int
from msjax.cli.args import seed as seed_type
from msjax.env import board_config

PROG = "python -m msjax viz"
USAGE = """\
python -m msjax viz curves runs/NAME [-o PNG] [--compute-out PNG]
       python -m msjax viz heatmap (--agent runs/NAME | --solver) [--board B] [--seed N] [--move K] [-o PNG]
       python -m msjax viz calibration (--agent runs/NAME | --solver) [--board B] [--games N] [--seed N] [-o PNG]"""
DESCRIPTION = "Pictures of boards and training: terminal views with overlays, and PNG figures."


def _player_options(parser: argparse.ArgumentParser) -> None:
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument("--agent", metavar="RUN", help="the agent saved in runs/NAME")
    who.add_argument("--solver", action="store_true", help="the rule solver")
    parser.add_argument("--board", help="beginner, intermediate, expert or HxWxM (an agent: its own board)")
    parser.add_argument("--safe-first-click", action="store_true", help="only the first clicked cell is safe")
    parser.add_argument("--seed", type=seed_type, default=0, metavar="N", help="the game (default 0)")


def _turns(args: argparse.Namespace):
    """``(take_turn, cfg, name)`` for the ``--agent``/``--solver`` options (see ``msjax.cli.play``)."""
    if args.agent:
        from msjax.run.agents import load_agent

        agent = load_agent(args.agent)
        cfg = board_config(args.board, args.safe_first_click, base=agent.env_cfg)
        return evaluate_lib.agent_turns(agent.for_board(cfg), args.seed), cfg, f"agent {Path(args.agent).name}"
    cfg = board_config(args.board, args.safe_first_click)
    return evaluate_lib.solver_turns(cfg, args.seed), cfg, "solver"


def _figure(figures: Any, name: str, description: str) -> argparse.ArgumentParser:
    """A figure's subcommand, whose --help shows ``description``."""
    return figures.add_parser(name, help=description[0].lower() + description[1:-1], description=description)


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser (the README's commands are checked against it)."""
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION, usage=USAGE)
    # prog: each figure's usage starts "python -m msjax viz FIGURE" (not the whole USAGE)
    figures = parser.add_subparsers(dest="figure", required=True, metavar="FIGURE", prog=PROG)
    curves = _figure(
        figures, "curves", "Training curves of a run, and its evaluations' win rate against env steps and wall seconds."
    )
    curves.add_argument("run", metavar="RUN", help="run directory (runs/NAME) or its metrics.jsonl")
    curves.add_argument("-o", "--out", metavar="PNG", help="PNG path (default RUN/training_curves.png)")
    curves.add_argument("--compute-out", metavar="PNG", help="PNG path of the win rate against compute (default RUN/win_rate_vs_compute.png)")
    heatmap = _figure(figures, "heatmap", "A player's mine probabilities beside the board, at one move of a game.")
    _player_options(heatmap)
    heatmap.add_argument("--move", type=int, default=5, metavar="K", help="the position before this move (1 = the opening)")
    heatmap.add_argument("-o", "--out", metavar="PNG", default="mine_probabilities.png", help="PNG path (default %(default)s)")
    reliability = _figure(figures, "calibration", "Reliability diagram of a player's mine probabilities over its games.")
    _player_options(reliability)
    reliability.add_argument("--games", type=positive_int, default=50, metavar="N", help="games to play (default 50)")
    reliability.add_argument("--bins", type=positive_int, default=10, metavar="N", help="probability bins (default 10)")
    reliability.add_argument("-o", "--out", metavar="PNG", default="reliability.png", help="PNG path (default %(default)s)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Writes the PNG the command line asks for and prints its path; returns the exit
    status (0, or 2 after a one-line error)."""
    args = build_parser().parse_args(argv)
    try:
        if args.figure == "curves":
            print(viz.plot_training_curves(args.run, args.out))
            if not any(row.get("kind") == "eval" for row in viz.read_metrics(args.run)):
                return 0
            path = viz.plot_win_rate_vs_compute(args.run, args.compute_out)
        elif args.figure == "heatmap":
            path = _heatmap_command(args)
        else:
            path = _calibration_command(args)
    except (ValueError, FileNotFoundError, ImportError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(path)
    return 0


def _heatmap_command(args: argparse.Namespace) -> Path:
    if args.move < 1:
        raise ValueError(f"--move {args.move} must be >= 1")
    take_turn, cfg, name = _turns(args)
    turns, _ = evaluate_lib.record_turns(take_turn, cfg, args.seed)
    state, turn = turns[min(args.move, len(turns)) - 1]
    kind, row, col = viz.describe_action(turn.action, cfg)
    title = f"{name}, seed {args.seed}, before move {min(args.move, len(turns))}: {kind} ({row}, {col})"
    return viz.plot_mine_probabilities(state, turn.mine_probabilities, args.out, title=title, mark=(row, col))


def _calibration_command(args: argparse.Namespace) -> Path:
    take_turn, cfg, name = _turns(args)
    with runlog.CountProgress(args.games, "games", f"{name} on {cfg.H}x{cfg.W}x{cfg.mine_count}") as progress:
        predicted, labels = calibration.calibration_data(take_turn, cfg, args.games, args.seed, progress.advance)
    title = f"{name}, {cfg.H}x{cfg.W}x{cfg.mine_count}, {args.games} games"
    return viz.plot_reliability(predicted, labels, args.out, args.bins, title=title)

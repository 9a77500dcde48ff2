"""Ship a run's agent inside the package under a name, replacing the agent of that name.

``msjax.load_agent(NAME)`` then loads it.

Usage::

    python -m msjax ship runs/NAME --name beginner|intermediate|expert
                         [--evaluation FILE] [--device TEXT] [--to DIR]

Writes ``msjax/shipped/NAME/`` (``--to`` another folder of shipped agents): the parameters
of the checkpoint the run's final evaluation measured, its config, and its card: the win
rate with interval and games (``final_eval.json``, or ``--evaluation``: a file holding the
JSON line of ``python -m msjax evaluate --agent RUN --episodes N``, or of ``python -m msjax
paired RUN``: its last row), the chain of runs that
trained it, their environment steps and wall time, the device and the dates. A name of a
standard board takes only a run of that board. Run it in a checkout of msjax and commit
the folder.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from msjax import shipped


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m msjax ship", description=__doc__.split("\n")[0])
    parser.add_argument("run", metavar="RUN", help="the run directory (runs/NAME) whose agent ships")
    parser.add_argument("--name", required=True, help="the shipped agent's name: beginner, intermediate or expert")
    parser.add_argument("--evaluation", metavar="FILE",
                        help="a file holding the JSON line of python -m msjax evaluate, or paired's rows (the last is the run's), for the card (default: the run's final_eval.json)")
    parser.add_argument("--device", metavar="TEXT", help="what the run trained on (default: this machine's device)")
    parser.add_argument("--to", metavar="DIR", help=f"the folder of shipped agents (default: the package's, or ${shipped.SHIPPED_DIR_VARIABLE})")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Ships the run; returns the exit status (0, or 2 after a one-line error)."""
    args = parse_args(argv)
    from msjax.run.checkpoint import CheckpointError
    from msjax.shipped import from_run

    try:
        folder = from_run.ship_run(args.run, args.name, args.to, args.evaluation, args.device)
    except (ValueError, OSError, CheckpointError) as err:
        print(f"python -m msjax ship: error: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    card = shipped.card(args.name, folder.parent)
    size = sum(entry["bytes"] for entry in card["files"].values()) + (folder / "card.json").stat().st_size
    print(shipped.describe(card))
    print(f"shipped to {folder} ({size:,} bytes); load it with msjax.load_agent({args.name!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

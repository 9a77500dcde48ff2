"""``msjax COMMAND ...`` (or ``python -m msjax COMMAND ...``): every command line of msjax.

Each command is ``msjax.cli.COMMAND.main`` and takes its own ``--help``. ``python -m
msjax.train`` stays as the one alias: the main job's command since the first day.
"""

from __future__ import annotations

import importlib
import sys
from typing import Sequence

COMMANDS = {
    "train": "train an agent: imitation of the rule solver, then PPO (a config file)",
    "evaluate": "a player's win rate with its 95% interval, and what its games tell",
    "paired": "players on the same boards: win rates and their paired differences",
    "play": "play a game in the terminal, or step through an agent's or the solver's",
    "serve": "the browser inspector: play, or watch an agent with its beliefs overlaid",
    "viz": "figures: training curves, a belief heatmap, calibration",
    "memory": "the device memory each stage's compiled chunk needs, before it runs",
    "ship": "ship a run's agent inside the package under a name (msjax.load_agent)",
}


def usage() -> str:
    """The top-level help: the commands, one line each."""
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {text}" for name, text in COMMANDS.items()]
    return "\n".join(
        ["usage: msjax COMMAND [ARGS ...]   (or python -m msjax COMMAND)", "", "commands:", *lines, "",
         "msjax COMMAND --help says what each takes."]
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command ``argv[0]`` with the rest of ``argv``; returns its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"msjax: error: unknown command {name!r}; use one of {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    command = importlib.import_module(f"msjax.cli.{name}")
    status = command.command(rest) if name == "train" else command.main(rest)
    return status if isinstance(status, int) else 0


if __name__ == "__main__":
    sys.exit(main())

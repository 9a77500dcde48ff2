"""Minesweeper in the terminal: play a game yourself, or watch an agent or the solver play.

Usage::

    python -m msjax play [--board beginner|intermediate|expert|HxWxM] [--seed N]
                         [--safe-first-click] [--agent runs/NAME|NAME | --solver]
                         [--top-k K] [--color auto|always|never]

Without ``--agent`` or ``--solver`` you play: ``r ROW COL`` reveals a cell, ``f ROW COL``
toggles a flag, ``p`` shows the solver's mine probabilities (a hint), ``h`` prints help
and ``q`` quits. Rows and columns count from 0, as on the board's margins. With
``--agent`` or ``--solver`` the program plays and stops before each move, showing the
board, the player's mine probabilities (and, for an agent, its most likely moves; for
the solver, the layer that chose the move): Enter plays the move, ``c`` plays the rest
of the game without stopping, ``q`` quits.

Boards: beginner 8x8 with 10 mines, intermediate 16x16 with 40, expert 16x30 with 99,
or any ``HxWxM``. The first click opens a region (it and its neighbours hold no mine)
unless ``--safe-first-click``, which keeps only the clicked cell safe. ``--seed`` fixes
the game: the same seed and first click give the same layout (the game's key is
``jax.random.key(seed)``, see ``msjax.evaluate.new_game``). An agent plays its own training board
unless ``--board`` says otherwise. ``--agent`` takes a run directory or the name of an agent
shipped with msjax (beginner, intermediate, expert: ``msjax.shipped``).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import NamedTuple, Sequence, TextIO

import numpy as np

from msjax import env as ms_env
from msjax import evaluate as evaluate_lib
from msjax import solver as solver_lib
from msjax import viz
from msjax.cli.args import seed as seed_type
from msjax.env import board_config
from msjax.env import EnvConfig, EnvState
from msjax.evaluate import TakeTurn, Turn, apply_move, new_game

HELP = (
    "commands: r ROW COL reveal | f ROW COL flag/unflag | p mine probabilities (solver hint) | "
    "h help | q quit   (rows and columns count from 0)"
)
# ----------------------------------------------------------------------------- input


class Move(NamedTuple):
    """A parsed command: ``kind`` is reveal, flag, probabilities, help or quit."""

    kind: str
    row: int = -1
    col: int = -1


_COMMANDS = {
    "r": "reveal", "reveal": "reveal",
    "f": "flag", "flag": "flag",
    "p": "probabilities", "prob": "probabilities", "hint": "probabilities",
    "h": "help", "help": "help", "?": "help",
    "q": "quit", "quit": "quit", "exit": "quit",
}  # fmt: skip


def parse_move(line: str, view: viz.BoardView) -> Move:
    """The command on ``line`` for the board ``view``.

    Raises:
      ValueError: with a one-line explanation a player can act on.
    """
    words = line.replace(",", " ").split()
    if not words:
        raise ValueError("type r ROW COL to reveal, f ROW COL to flag, q to quit (h for help)")
    kind = _COMMANDS.get(words[0].lower())
    if kind is None:
        raise ValueError(f"unknown command {words[0]!r}: use r ROW COL, f ROW COL, p, h or q")
    if kind not in ("reveal", "flag"):
        if len(words) > 1:
            raise ValueError(f"{words[0]!r} takes no row or column")
        return Move(kind)
    if len(words) != 3:
        raise ValueError(f"{words[0]!r} needs a row and a column, e.g. {words[0]} 3 4")
    row, col = (_parse_index(text, name, size) for text, name, size in zip(words[1:], ("row", "column"), view.shape))
    if view.revealed[row, col]:
        raise ValueError(f"({row}, {col}) is already revealed")
    if kind == "reveal" and view.flags[row, col]:
        raise ValueError(f"({row}, {col}) is flagged; unflag it first with f {row} {col}")
    return Move(kind, row, col)


def _parse_index(text: str, name: str, size: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {text!r}") from None
    if not 0 <= value < size:
        raise ValueError(f"{name} {value} is off the board: {name}s run from 0 to {size - 1}")
    return value


def action_of(move: Move, cfg: EnvConfig) -> int:
    """The env action of a reveal or flag ``move``."""
    return ms_env.encode_action(move.row * cfg.W + move.col, move.kind == "flag", cfg)


class Terminal:
    """Where a game talks: lines out, one line in per prompt (None at end of input)."""

    def __init__(self, stdin: TextIO, stdout: TextIO, color: bool):
        self.stdin, self.stdout, self.color = stdin, stdout, color

    def say(self, text: str = "") -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    def ask(self, prompt: str) -> str | None:
        self.stdout.write(prompt)
        self.stdout.flush()
        line = self.stdin.readline()
        if not line:  # end of input
            self.stdout.write("\n")
            return None
        if not _is_tty(self.stdin):  # piped input is not echoed: echo it so transcripts read well
            self.stdout.write(line if line.endswith("\n") else line + "\n")
        return line.strip()


def _is_tty(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


# ----------------------------------------------------------------------------- a person plays


def game_over_text(state: EnvState, moves: int, who: str = "You") -> str:
    """The result line of a game: won, which mine was hit, or stopped."""
    view = viz.board_view(state)
    if view.won:
        result = f"{who} won in {moves} moves."
    elif view.done and (view.revealed & view.mine_mask).any():
        row, col = (int(x[0]) for x in np.nonzero(view.revealed & view.mine_mask))
        result = f"BOOM: ({row}, {col}) was a mine. {who} lost after {moves} moves."
    elif view.done:
        result = f"{who} ran out of steps after {moves} moves."
    else:
        result = f"Game stopped after {moves} moves."
    return result


def _final_board(term: Terminal, state: EnvState, moves: int, who: str) -> None:
    term.say(game_over_text(state, moves, who))
    term.say(viz.render_board(state, color=term.color))


def play_human(cfg: EnvConfig, seed: int, term: Terminal) -> int:
    """A person plays one game through ``term``; returns the exit status (0). The game
    has no move cap: it ends when it is over or the person quits."""
    term.say(f"{cfg.H}x{cfg.W} board, {cfg.mine_count} mines, seed {seed}. {HELP}")

    def choose(state: EnvState, moves: int) -> Move:
        return _next_move(term, state, cfg)

    def advance(state: EnvState, move: Move) -> EnvState:
        return apply_move(state, action_of(move, cfg), cfg)

    over = lambda state: bool(state.done)  # noqa: E731
    for moves, (state, move) in enumerate(evaluate_lib.play_out(new_game(seed, cfg), choose, advance, over, sys.maxsize)):
        if move is not None and move.kind == "quit":
            term.say(f"Quit after {moves} moves.")
            return 0
    _final_board(term, state, moves, "You")
    return 0


def _next_move(term: Terminal, state: EnvState, cfg: EnvConfig) -> Move:
    """Shows the board and answers help and hints until a reveal, a flag or quit comes."""
    while True:
        view = viz.board_view(state)
        term.say(viz.render_board(view, color=term.color))
        move = _ask_move(term, view)
        if move is None or move.kind == "quit":
            return Move("quit")
        if move.kind == "help":
            term.say(HELP)
        elif move.kind == "probabilities":
            probs = evaluate_lib.solver_hint(state, cfg)
            term.say(viz.render_probabilities(probs, view, term.color))
        else:
            return move


def _ask_move(term: Terminal, view: viz.BoardView) -> Move | None:
    """Prompts until a valid command arrives; None at end of input."""
    while True:
        line = term.ask("move> ")
        if line is None:
            return None
        try:
            return parse_move(line, view)
        except ValueError as err:
            term.say(f"  {err}")


# ----------------------------------------------------------------------------- watching a player


def turn_text(state: EnvState, turn: Turn, move: int, cfg: EnvConfig, top_k: int, color: bool) -> str:
    """The board with the player's beliefs, and a line naming the move and why."""
    kind, row, col = viz.describe_action(turn.action, cfg)
    view = viz.board_view(state)
    picture = viz.render_turn(
        view,
        mine_probabilities=turn.mine_probabilities,
        action_probabilities=turn.action_probabilities,
        top_k=top_k,
        mark=(row, col),
        color=color,
    )
    line = f"move {move + 1}: {kind} ({row}, {col})"
    if turn.layer is not None:
        line += f"  layer {turn.layer}: {viz.LAYER_NAMES.get(turn.layer, '?')}"
    line += f"  P(mine) {float(turn.mine_probabilities[row, col]):.2f}"
    return picture + "\n" + line


def watch(take_turn: TakeTurn, cfg: EnvConfig, seed: int, term: Terminal, who: str, top_k: int = 3) -> int:
    """Steps through game ``seed`` of ``take_turn`` (``evaluate.solver_turns`` or
    ``evaluate.agent_turns``), pausing before each move; returns the exit status.

    The game stops at ``env.move_limit(cfg)`` moves (a policy may toggle flags forever).
    """
    term.say(f"{who} plays a {cfg.H}x{cfg.W} board with {cfg.mine_count} mines, seed {seed}.")
    term.say("Enter: play the move | c: play to the end | q: quit")
    records: list[solver_lib.ActionRecord] = []
    pause = True
    for move, (state, turn) in enumerate(evaluate_lib.game_turns(take_turn, cfg, seed)):
        if turn is None:
            break
        term.say(turn_text(state, turn, move, cfg, top_k, term.color))
        if pause:
            answer = _ask_step(term)
            if answer == "quit":
                term.say(f"Quit after {move} moves.")
                return 0
            pause = answer != "continue"
        kind, row, col = viz.describe_action(turn.action, cfg)
        records.append(solver_lib.ActionRecord(kind.upper(), row, col, turn.layer if turn.layer is not None else -1))
    _final_board(term, state, len(records), who)
    if records and records[0].layer >= 0:
        term.say(layer_summary_text(records))
    return 0


def _ask_step(term: Terminal) -> str:
    """``"next"``, ``"continue"`` or ``"quit"`` (also at end of input)."""
    while True:
        line = term.ask("[Enter/c/q]> ")
        if line is None:
            return "quit"
        answer = {"": "next", "n": "next", "c": "continue", "q": "quit", "quit": "quit"}.get(line.lower())
        if answer is not None:
            return answer
        term.say("  press Enter for the next move, c to play to the end, q to quit")


def layer_summary_text(records: list[solver_lib.ActionRecord]) -> str:
    """Moves per solver layer, in seed 001's format."""
    lines = ["Action Summary by Layer:"]
    for layer, counts in sorted(solver_lib.layer_summary(records).items()):
        lines.append(
            f"  Layer {layer}: {counts['REVEAL']} reveals, {counts['FLAG']} flags, {counts['total']} total"
            f"  ({viz.LAYER_NAMES.get(layer, '?')})"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- command line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m msjax play", description=__doc__.split("\n")[0],
        epilog="While you play: " + HELP,
    )  # fmt: skip
    parser.add_argument("--board", help="beginner (8x8x10, default), intermediate, expert, or HxWxM")
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--agent", metavar="RUN|NAME",
                     help="watch the agent saved in runs/NAME, or a shipped one: beginner, intermediate, expert")
    who.add_argument("--solver", action="store_true", help="watch the rule solver")
    parser.add_argument("--seed", type=seed_type, help="fixes the game (default: a random seed, printed)")
    parser.add_argument(
        "--safe-first-click", action="store_true",
        help="only the first clicked cell is safe (default: its neighbours too, opening a region)",
    )  # fmt: skip
    parser.add_argument("--top-k", type=int, default=3, help="an agent's most likely moves to show (default 3)")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    args = parser.parse_args(argv)
    if args.top_k < 1:
        parser.error(f"--top-k {args.top_k} must be >= 1")
    return args


def main(argv: Sequence[str] | None = None, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Runs the command line; returns the exit status (0, or 2 for a bad option)."""
    args = parse_args(argv)
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    color = {"always": True, "never": False}.get(args.color, viz.use_color(stdout))
    term = Terminal(stdin, stdout, color)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "little")
    try:
        if args.agent:
            from msjax.run.agents import load_agent  # only the agent mode needs checkpoints

            agent = load_agent(args.agent)
            cfg = board_config(args.board, args.safe_first_click, base=agent.env_cfg)
            agent = agent.for_board(cfg)
            return watch(evaluate_lib.agent_turns(agent, seed), cfg, seed, term, "The agent", args.top_k)
        cfg = board_config(args.board, args.safe_first_click)
        if args.solver:
            return watch(evaluate_lib.solver_turns(cfg, seed), cfg, seed, term, "The solver", args.top_k)
        return play_human(cfg, seed, term)
    except (ValueError, FileNotFoundError) as err:  # bad board; missing or unreadable checkpoint
        stdout.write(f"error: {err}\n")
        return 2
    except KeyboardInterrupt:
        stdout.write("\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())

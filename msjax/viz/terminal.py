"""Terminal views of one board: what a player sees, with overlays of beliefs.

Views work on one ``EnvState`` on the host. ``render_board`` draws what a player sees
(numbers, flags, hidden cells, and every mine once the game is over);
``render_probabilities`` draws mine probabilities as digits (tenths) on the hidden cells;
``render_top_actions`` marks a policy's ``k`` most likely moves with letters; and
``render_turn`` puts them side by side (stacked when the terminal is too narrow). Every
view is plain ASCII with ``color=False`` (what tests and pipes get) and ANSI-coloured
with ``color=True``; ``use_color(stream)`` says which a stream wants.

Symbols, ``env.board_symbols``'s as in ``env.render``: ``#`` hidden, ``F`` flag, ``.`` revealed zero, ``1``-``8``
numbers; once the game is over ``*`` a mine, ``X`` the mine that was hit, ``x`` a flag
on a safe cell. Rows and columns are numbered from 0 on the margins.
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Any, NamedTuple, Sequence

import numpy as np

from msjax import env as ms_env
from msjax.env import EnvConfig, EnvState

# ----------------------------------------------------------------------------- colours

_RESET = "\x1b[0m"
_ANSI_PATTERN = re.compile(r"\x1b\[[0-9;]*m")
# The classic Windows Minesweeper palette, as near as 16-colour ANSI gets.
_NUMBER_STYLE = {
    1: "1;34",  # blue
    2: "32",  # green
    3: "1;31",  # red
    4: "35",  # dark blue -> magenta
    5: "31",  # maroon
    6: "36",  # cyan
    7: "1;37",  # black -> bright white (dark terminals)
    8: "90",  # grey
}
_SYMBOL_STYLE = {
    "#": "90",  # hidden: grey
    ".": "2",  # revealed zero: dim
    "F": "1;31",  # flag: bold red
    "*": "1;31",  # mine: bold red
    "X": "1;97;41",  # the mine that was hit: white on red
    "x": "1;33",  # wrong flag: yellow
}
LAYER_NAMES = {
    0: "opening click",
    1: "single-cell rules",
    2: "subset reasoning",
    3: "global mine count",
    4: "probability guess",
}


def use_color(stream: Any) -> bool:
    """Whether ``stream`` is a terminal that wants ANSI colour (honours ``NO_COLOR`` and
    ``TERM=dumb``)."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, style: str | None, color: bool) -> str:
    """``text`` wrapped in the ANSI SGR ``style`` (e.g. ``"1;31"``) when ``color``."""
    if not color or not style:
        return text
    return f"\x1b[{style}m{text}{_RESET}"


def strip_ansi(text: str) -> str:
    """``text`` without its ANSI colour escapes."""
    return _ANSI_PATTERN.sub("", text)


def visible_width(text: str) -> int:
    """Printed width of one line, ANSI escapes left out."""
    return len(strip_ansi(text))


def _probability_style(probability: float) -> str:
    """A 256-colour background from green (safe) through yellow to red (mine)."""
    p = min(max(probability, 0.0), 1.0)
    red = round(5 * min(1.0, 2 * p))
    green = round(5 * min(1.0, 2 * (1 - p)))
    return f"30;48;5;{16 + 36 * red + 6 * green}"


# ----------------------------------------------------------------------------- the board


class BoardView(NamedTuple):
    """One board on the host, as numpy arrays.

    Attributes:
      revealed, flags, mine_mask: bool[H, W].
      counts: int[H, W], mine neighbours (meaningful where revealed).
      mine_count: mines in the game (known to the player).
      done, won: the game's outcome so far.
    """

    revealed: np.ndarray
    flags: np.ndarray
    mine_mask: np.ndarray
    counts: np.ndarray
    mine_count: int
    done: bool
    won: bool

    @property
    def shape(self) -> tuple[int, int]:
        return self.revealed.shape


def board_view(state: EnvState) -> BoardView:
    """The host copy of one (unbatched) ``EnvState`` that the renderers read."""
    revealed = np.asarray(state.revealed, bool)
    if revealed.ndim != 2:
        raise ValueError(f"state.revealed has shape {revealed.shape}; viz draws one board (no batch axis)")
    return BoardView(
        revealed=revealed,
        flags=np.asarray(state.flags, bool),
        mine_mask=np.asarray(state.mine_mask, bool),
        counts=np.asarray(state.counts, np.int32),
        mine_count=int(np.asarray(state.mine_count)),
        done=bool(np.asarray(state.done)),
        won=bool(np.asarray(state.won)),
    )


def cell_symbols(view: BoardView) -> np.ndarray:
    """str[H, W]: the symbol of each cell (``env.board_symbols``). Mines show only once
    the game is over."""
    return ms_env.board_symbols(view.revealed, view.flags, view.mine_mask, view.counts, view.done)


def _symbol_style(symbol: str) -> str | None:
    if symbol.isdigit():
        return _NUMBER_STYLE.get(int(symbol))
    return _SYMBOL_STYLE.get(symbol)


def _slot_width(width: int) -> int:
    """Characters per cell: a leading space (or marker) and room for the widest column number."""
    return 1 + len(str(width - 1))


def _grid(
    texts: np.ndarray,
    styles: np.ndarray,
    color: bool,
    marks: dict[tuple[int, int], str] | None = None,
) -> list[str]:
    """Lines of a grid with row and column numbers.

    Args:
      texts: str[H, W], one character per cell.
      styles: object[H, W], an ANSI style per cell (or None).
      color: emit ANSI escapes.
      marks: ``{(row, col): char}``, a marker printed just left of the cell (``>``).
    """
    height, width = texts.shape
    slot = _slot_width(width)
    label = len(str(height - 1))
    marks = marks or {}
    header = " " * (label + 1) + "".join(f"{c:>{slot}}" for c in range(width))
    lines = [paint(header, "2", color)]
    for r in range(height):
        cells = []
        for c in range(width):
            pad = " " * (slot - 1)
            marker = marks.get((r, c))
            text = paint(texts[r, c], styles[r, c], color)
            if marker is not None:
                pad = " " * (slot - 2) + paint(marker, "1;7", color) if color else " " * (slot - 2) + marker
            cells.append(pad + text)
        lines.append(paint(f"{r:>{label}} ", "2", color) + "".join(cells))
    return lines


def _board_styles(symbols: np.ndarray) -> np.ndarray:
    styles = np.empty(symbols.shape, dtype=object)
    for index, symbol in np.ndenumerate(symbols):
        styles[index] = _symbol_style(symbol)
    return styles


def render_board(
    state: EnvState | BoardView,
    color: bool = False,
    mark: tuple[int, int] | None = None,
    status: bool = True,
) -> str:
    """The board as a player sees it, with row and column numbers.

    Args:
      state: one game (``EnvState`` without a batch axis, or a ``BoardView``).
      color: ANSI colours (numbers in the classic palette, flags and mines red).
      mark: ``(row, col)`` of a cell to point at with ``>`` (the next move).
      status: end with a line giving the game's status.
    """
    view = state if isinstance(state, BoardView) else board_view(state)
    symbols = cell_symbols(view)
    marks = {mark: ">"} if mark is not None else None
    lines = _grid(symbols, _board_styles(symbols), color, marks)
    if status:
        lines.append(status_line(view))
    return "\n".join(lines)


def status_line(view: BoardView) -> str:
    """``[playing]``, ``[won]`` or ``[lost]`` with the mines and flags a player can count."""
    outcome = "won" if view.won else ("lost" if view.done else "playing")
    return f"[{outcome}] mines {view.mine_count}, flags {int(view.flags.sum())}"


def probability_digits(probabilities: np.ndarray) -> np.ndarray:
    """str[H, W]: each probability in tenths, ``"0"`` (under 10%) to ``"9"`` (90% or more)."""
    tenths = np.clip(np.floor(np.asarray(probabilities, np.float64) * 10.0 + 1e-9), 0, 9).astype(int)
    return tenths.astype(str)


def render_probabilities(
    probabilities: Any,
    state: EnvState | BoardView,
    color: bool = False,
    mark: tuple[int, int] | None = None,
    legend: bool = True,
) -> str:
    """Mine probabilities of the hidden cells as digits 0-9 (tenths), beside-the-board style.

    Revealed cells show ``.``; hidden cells a digit, on a green-to-red background with
    ``color``.

    Args:
      probabilities: f32[H, W], P(mine) per cell (only hidden cells are drawn).
      state: the board the probabilities describe.
      color: ANSI shading.
      mark: ``(row, col)`` to point at with ``>``.
      legend: end with a line explaining the digits.
    """
    view = state if isinstance(state, BoardView) else board_view(state)
    probabilities = np.asarray(probabilities, np.float64)
    if probabilities.shape != view.shape:
        raise ValueError(f"probabilities have shape {probabilities.shape}, the board is {view.shape}")
    hidden = ~view.revealed
    texts = np.where(hidden, probability_digits(probabilities), ".")
    styles = np.empty(view.shape, dtype=object)
    for index in zip(*np.nonzero(hidden)):
        styles[index] = _probability_style(probabilities[index])
    for index in zip(*np.nonzero(~hidden)):
        styles[index] = "2"
    lines = _grid(texts, styles, color, {mark: ">"} if mark is not None else None)
    if legend:
        lines.append("P(mine) in tenths: 0 <10% .. 9 >=90%")
    return "\n".join(lines)


def describe_action(action: int, cfg: EnvConfig) -> tuple[str, int, int]:
    """``(kind, row, col)`` of an env action (host int): kind "reveal" or "flag"."""
    cell, is_flag = ms_env.decode_action(action, cfg)
    row, col = divmod(int(cell), cfg.W)
    return ("flag" if is_flag else "reveal"), row, col


class RankedAction(NamedTuple):
    """One of a policy's most likely moves: ``kind`` is "reveal" or "flag"."""

    letter: str
    kind: str
    row: int
    col: int
    probability: float


def top_actions(action_probabilities: Any, shape: tuple[int, int], k: int = 3) -> list[RankedAction]:
    """The ``k`` most likely actions with non-zero probability, best first, lettered ``a``,
    ``b``, ... (ties keep the lower action index first).

    Args:
      action_probabilities: f32[2*H*W], reveals (row-major) then flags.
      shape: ``(H, W)``.
      k: how many, >= 1.
    """
    if k < 1:
        raise ValueError(f"k={k} must be >= 1")
    probs = np.asarray(action_probabilities, np.float64).reshape(-1)
    height, width = shape
    cells = height * width
    if probs.shape[0] != 2 * cells:
        raise ValueError(f"action_probabilities has {probs.shape[0]} entries; a {height}x{width} board has {2 * cells}")
    order = np.argsort(-probs, kind="stable")[: min(k, 26)]
    cfg = ms_env.EnvConfig(H=height, W=width, mine_count=1, guarantee_safe_neighborhood=False)
    ranked = []
    for rank, action in enumerate(order):
        if probs[action] <= 0.0:
            break
        kind, row, col = describe_action(int(action), cfg)
        ranked.append(RankedAction(chr(ord("a") + rank), kind, row, col, float(probs[action])))
    return ranked


def render_top_actions(
    action_probabilities: Any,
    state: EnvState | BoardView,
    k: int = 3,
    color: bool = False,
) -> str:
    """The board with the policy's ``k`` most likely moves lettered on their cells
    (``a`` the most likely), and a list of them with their probabilities.

    Args:
      action_probabilities: f32[2*H*W], the policy over actions (reveals, then flags).
      state: the board.
      k: how many moves to show.
      color: ANSI colours (the lettered cells in reverse video).
    """
    view = state if isinstance(state, BoardView) else board_view(state)
    ranked = top_actions(action_probabilities, view.shape, k)
    symbols = cell_symbols(view)
    styles = _board_styles(symbols)
    for move in ranked:
        if symbols[move.row, move.col] in "#F":  # a cell holds at most one letter: its best move
            symbols[move.row, move.col] = move.letter if move.kind == "reveal" else move.letter.upper()
            styles[move.row, move.col] = "1;30;46" if move.kind == "reveal" else "1;30;45"
    lines = _grid(symbols, styles, color)
    for move in ranked:
        letter = move.letter if move.kind == "reveal" else move.letter.upper()
        lines.append(f"{letter} {move.kind:<6} ({move.row}, {move.col}) {move.probability:6.1%}")
    return "\n".join(lines)


def beside(blocks: Sequence[str], gap: int = 4) -> str:
    """Multi-line strings joined left to right, each padded to its widest line (ANSI-aware)."""
    split = [block.split("\n") for block in blocks]
    widths = [max(visible_width(line) for line in lines) for lines in split]
    height = max(len(lines) for lines in split)
    rows = []
    for i in range(height):
        parts = []
        for lines, width in zip(split, widths):
            line = lines[i] if i < len(lines) else ""
            parts.append(line + " " * (width - visible_width(line)))
        rows.append((" " * gap).join(parts).rstrip())
    return "\n".join(rows)


def _titled(title: str, block: str, color: bool) -> str:
    return paint(title, "1", color) + "\n" + block


def render_turn(
    state: EnvState | BoardView,
    mine_probabilities: Any | None = None,
    action_probabilities: Any | None = None,
    top_k: int = 3,
    mark: tuple[int, int] | None = None,
    color: bool = False,
    width: int | None = None,
) -> str:
    """The board with whichever overlays are given, side by side when they fit in
    ``width`` columns (default: the terminal's), else one above the other.

    Args:
      state: the board.
      mine_probabilities: f32[H, W] or None.
      action_probabilities: f32[2*H*W] or None (a policy: its top ``top_k`` moves are shown).
      mark: ``(row, col)`` of the move about to be played, pointed at with ``>``.
      color: ANSI colours.
      width: columns available.
    """
    view = state if isinstance(state, BoardView) else board_view(state)
    blocks = [_titled("board", render_board(view, color, mark), color)]
    if action_probabilities is not None:
        policy = render_top_actions(action_probabilities, view, top_k, color)
        blocks.append(_titled(f"policy top {top_k}", policy, color))
    if mine_probabilities is not None:
        blocks.append(_titled("mine probability", render_probabilities(mine_probabilities, view, color, mark), color))
    width = width or shutil.get_terminal_size((120, 40)).columns
    joined = beside(blocks)
    if max(visible_width(line) for line in joined.split("\n")) <= width:
        return joined
    return "\n\n".join(blocks)


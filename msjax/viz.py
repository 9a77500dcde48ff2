"""Pictures of boards and training: terminal views with overlays, and PNG figures.

Terminal views work on one ``EnvState`` on the host. ``render_board`` draws what a player
sees (numbers, flags, hidden cells, and every mine once the game is over);
``render_probabilities`` draws mine probabilities as digits (tenths) on the hidden cells;
``render_top_actions`` marks a policy's ``k`` most likely moves with letters; and
``render_turn`` puts them side by side (stacked when the terminal is too narrow). Every
view is plain ASCII with ``color=False`` (what tests and pipes get) and ANSI-coloured
with ``color=True``; ``use_color(stream)`` says which a stream wants.

The figures (mine-probability heatmap beside the board, training curves from a run's
``metrics.jsonl``, a reliability diagram) are drawn with matplotlib, imported only inside
those functions, so the rest of msjax does not need it.

Symbols, as in ``env.render``: ``#`` hidden, ``F`` flag, ``.`` revealed zero, ``1``-``8``
numbers; once the game is over ``*`` a mine, ``X`` the mine that was hit, ``x`` a flag
on a safe cell. Rows and columns are numbered from 0 on the margins.

Command line (each prints the PNG's path)::

    python -m msjax.viz curves runs/NAME            # -> runs/NAME/training_curves.png
    python -m msjax.viz heatmap --solver --seed 4 --move 8   # -> mine_probabilities.png
    python -m msjax.viz calibration --agent runs/NAME --games 100   # -> reliability.png
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

from msjax.env import EnvState

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


def visible_width(text: str) -> int:
    """Printed width of one line, ANSI escapes left out."""
    return len(_ANSI_PATTERN.sub("", text))


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
    """str[H, W]: the symbol of each cell (see the module docstring). Mines show only
    once the game is over."""
    height, width = view.shape
    symbols = np.full((height, width), "#", dtype="<U1")
    symbols[view.flags] = "F"
    numbers = view.revealed & ~view.mine_mask
    for r, c in zip(*np.nonzero(numbers)):
        symbols[r, c] = "." if view.counts[r, c] == 0 else str(view.counts[r, c])
    symbols[view.revealed & view.mine_mask] = "X"
    if view.done:
        symbols[~view.revealed & view.mine_mask & ~view.flags] = "*"
        symbols[view.flags & ~view.mine_mask] = "x"
    return symbols


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
    ranked = []
    for rank, action in enumerate(order):
        if probs[action] <= 0.0:
            break
        cell = int(action) % cells
        kind = "flag" if action >= cells else "reveal"
        ranked.append(RankedAction(chr(ord("a") + rank), kind, cell // width, cell % width, float(probs[action])))
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


# ----------------------------------------------------------------------------- figures


def _figure(**kwargs):
    """A matplotlib ``Figure`` on the Agg canvas (no pyplot state, no display needed)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as err:  # pragma: no cover - depends on the install
        raise ImportError(
            "msjax.viz figures need matplotlib: pip install matplotlib (or pip install 'msjax[plot]')"
        ) from err
    return Figure(**kwargs)


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path


_NUMBER_COLOURS = {
    1: "#0000ff",
    2: "#008000",
    3: "#ff0000",
    4: "#000080",
    5: "#800000",
    6: "#008080",
    7: "#000000",
    8: "#808080",
}


def _draw_board(ax, view: BoardView) -> None:
    """The board on ``ax``: hidden cells dark, revealed light, numbers in the classic colours."""
    height, width = view.shape
    shade = np.where(view.revealed, 0.92, 0.55)
    ax.imshow(shade, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
    symbols = cell_symbols(view)
    size = max(5.0, min(12.0, 160.0 / max(height, width)))
    for (r, c), symbol in np.ndenumerate(symbols):
        if symbol in "#.":
            continue
        colour = _NUMBER_COLOURS.get(int(symbol), "black") if symbol.isdigit() else "#c00000"
        ax.text(c, r, symbol, ha="center", va="center", color=colour, fontsize=size, fontweight="bold")
    _grid_axes(ax, height, width)


def _grid_axes(ax, height: int, width: int) -> None:
    ax.set_xticks(range(width))
    ax.set_yticks(range(height))
    ax.tick_params(labelsize=6, length=0)
    ax.set_xticks(np.arange(-0.5, width), minor=True)
    ax.set_yticks(np.arange(-0.5, height), minor=True)
    ax.grid(which="minor", color="white", linewidth=0.5)


def plot_mine_probabilities(
    state: EnvState | BoardView,
    probabilities: Any,
    path: str | Path,
    title: str | None = None,
    annotate: bool | None = None,
    mark: tuple[int, int] | None = None,
) -> Path:
    """Saves a PNG: the board on the left, a heatmap of P(mine) on its hidden cells on the right.

    Args:
      state: the board.
      probabilities: f32[H, W].
      path: where to write the PNG.
      title: figure title.
      annotate: print each hidden cell's probability in it (default: boards up to 16x16).
      mark: ``(row, col)`` of the next move, outlined in blue on both panels.

    Returns:
      ``path``.
    """
    view = state if isinstance(state, BoardView) else board_view(state)
    probabilities = np.asarray(probabilities, np.float64)
    if probabilities.shape != view.shape:
        raise ValueError(f"probabilities have shape {probabilities.shape}, the board is {view.shape}")
    height, width = view.shape
    annotate = height * width <= 256 if annotate is None else annotate
    fig = _figure(figsize=(2 * (1.0 + 0.45 * width) + 1.0, 1.0 + 0.45 * height))
    board_ax, heat_ax = fig.subplots(1, 2)
    _draw_board(board_ax, view)
    board_ax.set_title("board")
    hidden_probs = np.ma.masked_where(view.revealed, probabilities)
    image = heat_ax.imshow(hidden_probs, cmap="RdYlGn_r", vmin=0.0, vmax=1.0, interpolation="nearest")
    heat_ax.set_facecolor("#e8e8e8")
    if annotate:
        for r, c in zip(*np.nonzero(~view.revealed)):
            heat_ax.text(c, r, _short_probability(probabilities[r, c]), ha="center", va="center", fontsize=6)
    _grid_axes(heat_ax, height, width)
    heat_ax.set_title("P(mine), hidden cells")
    if mark is not None:
        from matplotlib.patches import Rectangle

        for ax in (board_ax, heat_ax):
            corner = (mark[1] - 0.5, mark[0] - 0.5)
            ax.add_patch(Rectangle(corner, 1, 1, fill=False, edgecolor="#0050ff", linewidth=2.5))
    fig.colorbar(image, ax=heat_ax, fraction=0.046, pad=0.04)
    if title:
        fig.suptitle(title)
    return _save(fig, path)


def _short_probability(p: float) -> str:
    """``.33`` style; exactly 0 and 1 as ``0`` and ``1``."""
    text = f"{p:.2f}"
    return {"0.00": "0", "1.00": "1"}.get(text, text.lstrip("0"))


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a run's ``metrics.jsonl`` (``path`` is the run directory or the file)."""
    path = Path(path)
    if path.is_dir():
        path = path / "metrics.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (train.py writes metrics.jsonl in the run directory)")
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{number} is not a JSON row: {err}") from err
    return rows


def _series(rows: Iterable[dict[str, Any]], name: str, kind: str | None = None, stage: str | None = None):
    """``(env_steps, values)`` of metric ``name`` over the rows that have it (finite values)."""
    xs, ys = [], []
    for row in rows:
        if kind is not None and row.get("kind") != kind:
            continue
        if stage is not None and row.get("stage") != stage:
            continue
        value = row.get(name)
        if isinstance(value, (int, float)) and math.isfinite(value) and "env_steps" in row:
            xs.append(row["env_steps"])
            ys.append(value)
    return np.asarray(xs, np.float64), np.asarray(ys, np.float64)


# metric name -> label, for each panel of the training-curves figure (only those logged are drawn)
_LOSS_METRICS = {
    "loss": "total loss",
    "policy_loss": "policy loss",
    "value_loss": "value loss",
    "policy_ce": "imitation: policy CE",
    "guess_ce": "imitation: guess CE",
}
_AUX_METRICS = {"mine_bce": "mine-head BCE", "entropy": "policy entropy"}


def plot_training_curves(run: str | Path, path: str | Path | None = None) -> Path:
    """Saves a PNG of a run's learning curves against environment steps.

    Four panels, from ``metrics.jsonl`` as ``msjax.train`` writes it: win rate (training
    rollouts, the solver during imitation, and greedy evaluations with their 95% band);
    return (evaluation mean return per game, training mean reward per step); losses;
    mine-head BCE and policy entropy. Stage changes are dashed vertical lines.

    Args:
      run: the run directory (``runs/NAME``) or its ``metrics.jsonl``.
      path: where to write the PNG (default ``<run dir>/training_curves.png``).

    Returns:
      The PNG's path.
    """
    rows = read_metrics(run)
    if not rows:
        raise ValueError(f"{run} holds no metrics rows yet")
    run_dir = Path(run) if Path(run).is_dir() else Path(run).parent
    path = Path(path) if path is not None else run_dir / "training_curves.png"
    fig = _figure(figsize=(11, 7))
    (win_ax, return_ax), (loss_ax, aux_ax) = fig.subplots(2, 2, sharex=True)

    x, y = _series(rows, "win_rate_train", "train")
    if len(x):
        win_ax.plot(x, y, lw=0.8, alpha=0.7, label="train rollouts")
    x, y = _series(rows, "solver_win_rate", "train", "imitation")
    keep = y >= 0  # -1 marks updates where no game finished
    if keep.any():
        win_ax.plot(x[keep], y[keep], lw=0.8, alpha=0.7, label="solver (imitation data)")
    x, y = _series(rows, "win_rate", "eval")
    if len(x):
        _, low = _series(rows, "win_rate_low", "eval")
        _, high = _series(rows, "win_rate_high", "eval")
        win_ax.plot(x, y, "o-", ms=3, color="black", label="greedy evaluation")
        if len(low) == len(x) and len(high) == len(x):
            win_ax.fill_between(x, low, high, color="gray", alpha=0.3, label="95% interval")
    win_ax.set_ylim(-0.02, 1.02)
    win_ax.set_ylabel("win rate")

    x, y = _series(rows, "mean_return", "eval")
    if len(x):
        return_ax.plot(x, y, "o-", ms=3, color="black", label="evaluation: return per game")
    x, y = _series(rows, "mean_reward", "train")
    if len(x):
        return_ax.plot(x, y, lw=0.8, label="train: reward per step")
    return_ax.set_ylabel("return")

    for name, label in _LOSS_METRICS.items():
        x, y = _series(rows, name, "train")
        if len(x):
            loss_ax.plot(x, y, lw=0.8, label=label)
    loss_ax.set_ylabel("loss")
    for name, label in _AUX_METRICS.items():
        x, y = _series(rows, name, "train")
        if len(x):
            aux_ax.plot(x, y, lw=0.8, label=label)
    aux_ax.set_ylabel("BCE / entropy (nats)")

    boundaries = _stage_starts(rows)
    for ax in (win_ax, return_ax, loss_ax, aux_ax):
        for step in boundaries:
            ax.axvline(step, color="gray", ls="--", lw=0.8)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    for ax in (loss_ax, aux_ax):
        ax.set_xlabel("environment steps")
    fig.suptitle(f"training curves: {run_dir.name}")
    return _save(fig, path)


def _stage_starts(rows: list[dict[str, Any]]) -> list[float]:
    """Env steps at which the stage changes (e.g. imitation -> ppo)."""
    starts, previous = [], None
    for row in rows:
        stage = row.get("stage")
        if previous is not None and stage != previous:
            starts.append(row["env_steps"])
        previous = stage
    return starts


class CalibrationBins(NamedTuple):
    """Predictions grouped into equal-width probability bins.

    Attributes:
      edges: f64[B + 1], bin edges over [0, 1].
      mean_predicted: f64[B], mean prediction per bin (NaN where empty).
      observed: f64[B], fraction of positive labels per bin (NaN where empty).
      counts: int[B], predictions per bin.
      ece: expected calibration error, sum over bins of count/N * |observed - predicted|.
    """

    edges: np.ndarray
    mean_predicted: np.ndarray
    observed: np.ndarray
    counts: np.ndarray
    ece: float


def calibration_bins(probabilities: Any, labels: Any, num_bins: int = 10) -> CalibrationBins:
    """Bins predictions ``probabilities`` (f[N], in [0, 1]) against ``labels`` (bool[N])."""
    probs = np.asarray(probabilities, np.float64).reshape(-1)
    labels = np.asarray(labels).reshape(-1).astype(np.float64)
    if probs.shape != labels.shape:
        raise ValueError(f"{probs.shape[0]} probabilities but {labels.shape[0]} labels")
    if num_bins < 1:
        raise ValueError(f"num_bins={num_bins} must be >= 1")
    if probs.size and (probs.min() < 0.0 or probs.max() > 1.0):
        raise ValueError("probabilities must lie in [0, 1]")
    edges = np.linspace(0.0, 1.0, num_bins + 1)
    index = np.clip(np.searchsorted(edges, probs, side="right") - 1, 0, num_bins - 1)
    counts = np.bincount(index, minlength=num_bins)
    sums = np.bincount(index, weights=probs, minlength=num_bins)
    positives = np.bincount(index, weights=labels, minlength=num_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_predicted = np.where(counts > 0, sums / counts, np.nan)
        observed = np.where(counts > 0, positives / counts, np.nan)
    filled = counts > 0
    total = max(int(counts.sum()), 1)
    ece = float(np.sum(counts[filled] / total * np.abs(observed[filled] - mean_predicted[filled])))
    return CalibrationBins(edges, mean_predicted, observed, counts, ece)


def plot_reliability(
    probabilities: Any,
    labels: Any,
    path: str | Path,
    num_bins: int = 10,
    title: str = "mine-probability calibration",
) -> Path:
    """Saves a reliability diagram PNG: observed mine frequency against mean predicted
    probability per bin (the diagonal is perfect calibration), with the expected
    calibration error in the title and the predictions per bin below.

    Args:
      probabilities: f[N], predicted P(mine) of hidden cells.
      labels: bool[N], whether each cell held a mine.
      path: where to write the PNG.
      num_bins: equal-width bins over [0, 1].

    Returns:
      ``path``.
    """
    bins = calibration_bins(probabilities, labels, num_bins)
    fig = _figure(figsize=(5, 6))
    curve_ax, count_ax = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    centres = (bins.edges[:-1] + bins.edges[1:]) / 2
    filled = bins.counts > 0
    curve_ax.plot([0, 1], [0, 1], ls="--", color="gray", label="perfect calibration")
    curve_ax.bar(
        centres[filled], bins.observed[filled], width=1.0 / num_bins, alpha=0.35, edgecolor="black", label="observed"
    )
    curve_ax.plot(bins.mean_predicted[filled], bins.observed[filled], "o-", color="C3", label="per bin")
    curve_ax.set_xlim(0, 1)
    curve_ax.set_ylim(0, 1)
    curve_ax.set_ylabel("observed mine frequency")
    curve_ax.legend(fontsize=8, loc="upper left")
    curve_ax.set_title(f"{title}\nECE {bins.ece:.3f} over {int(bins.counts.sum())} predictions")
    count_ax.bar(centres, bins.counts, width=1.0 / num_bins, color="gray", edgecolor="black")
    if bins.counts.max(initial=0) > 0:
        count_ax.set_yscale("log")
        count_ax.set_ylim(bottom=0.8)
    count_ax.set_xlabel("predicted P(mine)")
    count_ax.set_ylabel("count")
    return _save(fig, path)


# ----------------------------------------------------------------------------- command line

USAGE = """\
python -m msjax.viz curves runs/NAME [-o PNG]
python -m msjax.viz heatmap (--agent runs/NAME | --solver) [--board B] [--seed N] [--move K] [-o PNG]
python -m msjax.viz calibration (--agent runs/NAME | --solver) [--board B] [--games N] [--seed N] [-o PNG]"""


def _player_options(parser: argparse.ArgumentParser) -> None:
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument("--agent", metavar="RUN", help="the agent saved in runs/NAME")
    who.add_argument("--solver", action="store_true", help="the rule solver")
    parser.add_argument("--board", help="beginner, intermediate, expert or HxWxM (an agent: its own board)")
    parser.add_argument("--safe-first-click", action="store_true", help="only the first clicked cell is safe")
    parser.add_argument("--seed", type=int, default=0)


def _player(args: argparse.Namespace):
    """``(player, cfg, name)`` for the ``--agent``/``--solver`` options (see ``msjax.play``)."""
    from msjax import play

    if args.agent:
        from msjax.agent import load_agent

        agent = load_agent(args.agent)
        cfg = play.board_config(args.board, args.safe_first_click, base=agent.env_cfg)
        return play.agent_player(agent.for_board(cfg), args.seed), cfg, f"agent {Path(args.agent).name}"
    cfg = play.board_config(args.board, args.safe_first_click)
    return play.solver_player(cfg, args.seed), cfg, "solver"


def calibration_data(player, cfg, games: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(predicted f32[N], is_mine bool[N])`` over the hidden cells of every position the
    player met in ``games`` games (seeds ``seed, seed+1, ...``) once mines were placed.

    ``player`` is ``(state, move) -> Turn`` as in ``msjax.play``; its seed is fixed, so
    different games come from different board seeds.
    """
    from msjax import play

    predicted, labels = [], []
    for game in range(games):
        turns, _ = play.record_game(player, cfg, seed + game)
        for state, turn in turns:
            view = board_view(state)
            if not view.mine_mask.any():  # before the first reveal nothing is placed
                continue
            hidden = ~view.revealed
            predicted.append(np.clip(turn.mine_probabilities[hidden], 0.0, 1.0))
            labels.append(view.mine_mask[hidden])
    if not predicted:
        return np.zeros(0, np.float32), np.zeros(0, bool)
    return np.concatenate(predicted), np.concatenate(labels)


def main(argv: Sequence[str] | None = None) -> int:
    """Writes the PNG the command line asks for and prints its path."""
    parser = argparse.ArgumentParser(prog="python -m msjax.viz", description=__doc__.split("\n")[0], usage=USAGE)
    figures = parser.add_subparsers(dest="figure", required=True)
    curves = figures.add_parser("curves", help="training curves of a run")
    curves.add_argument("run", help="run directory (runs/NAME) or its metrics.jsonl")
    curves.add_argument("-o", "--out", help="PNG path (default RUN/training_curves.png)")
    heatmap = figures.add_parser("heatmap", help="mine probabilities beside the board, at one move of a game")
    _player_options(heatmap)
    heatmap.add_argument("--move", type=int, default=5, help="the position before this move (1 = the opening)")
    heatmap.add_argument("-o", "--out", default="mine_probabilities.png")
    calibration = figures.add_parser("calibration", help="reliability diagram of the mine probabilities")
    _player_options(calibration)
    calibration.add_argument("--games", type=int, default=50)
    calibration.add_argument("--bins", type=int, default=10)
    calibration.add_argument("-o", "--out", default="reliability.png")
    args = parser.parse_args(argv)
    try:
        if args.figure == "curves":
            path = plot_training_curves(args.run, args.out)
        elif args.figure == "heatmap":
            path = _heatmap_command(args)
        else:
            player, cfg, name = _player(args)
            predicted, labels = calibration_data(player, cfg, args.games, args.seed)
            title = f"{name}, {cfg.H}x{cfg.W}x{cfg.mine_count}, {args.games} games"
            path = plot_reliability(predicted, labels, args.out, args.bins, title=title)
    except (ValueError, FileNotFoundError, ImportError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(path)
    return 0


def _heatmap_command(args: argparse.Namespace) -> Path:
    from msjax import play

    if args.move < 1:
        raise ValueError(f"--move {args.move} must be >= 1")
    player, cfg, name = _player(args)
    turns, final = play.record_game(player, cfg, args.seed)
    state, turn = turns[min(args.move, len(turns)) - 1]
    kind, row, col = play.describe_action(turn.action, cfg)
    title = f"{name}, seed {args.seed}, before move {min(args.move, len(turns))}: {kind} ({row}, {col})"
    return plot_mine_probabilities(state, turn.mine_probabilities, args.out, title=title, mark=(row, col))


if __name__ == "__main__":
    sys.exit(main())

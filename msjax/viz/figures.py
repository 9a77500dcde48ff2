"""PNG figures: the mine-probability heatmap beside the board, training curves from a
run's ``metrics.jsonl``, and a reliability diagram of mine probabilities.

They are drawn with matplotlib on the Agg canvas, imported only inside these functions,
so the rest of msjax does not need it.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from msjax.env import EnvState
from msjax.stats import calibration_bins
from msjax.viz.terminal import BoardView, board_view, cell_symbols

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
        raise FileNotFoundError(f"{path} not found (python -m msjax.train writes metrics.jsonl in the run directory)")
    try:
        text = path.read_text()
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is not a metrics file (not UTF-8 text: {err.reason} at byte {err.start})") from err
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{number} is not a JSON row: {err}") from err
    return rows


def _series(rows: Iterable[dict[str, Any]], name: str, kind: str | None = None):
    """``(env_steps, values)`` of metric ``name`` over the rows that have it (finite values)."""
    xs, ys = [], []
    for row in rows:
        if kind is not None and row.get("kind") != kind:
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

    Four panels, from ``metrics.jsonl`` as ``msjax.run.loop`` writes it: win rate (training
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
    _plot_win_rates(win_ax, rows)

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


def _plot_win_rates(win_ax, rows: list[dict[str, Any]]) -> None:
    """The win-rate panel: training rollouts, the solver during imitation, and greedy
    evaluations with their 95% band."""
    x, y = _series(rows, "win_rate_train", "train")
    if len(x):
        win_ax.plot(x, y, lw=0.8, alpha=0.7, label="train rollouts")
    x, y = _series(rows, "solver_win_rate", "train")  # the stages that play a solver log it
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


def wall_seconds(rows: list[dict[str, Any]]) -> np.ndarray:
    """float64[rows]: each row's ``wall_s`` (training seconds, compilation included); for
    rows written before ``wall_s`` existed, the seconds since the first row."""
    first = rows[0].get("time", 0.0) if rows else 0.0
    return np.asarray([row.get("wall_s", row.get("time", first) - first) for row in rows], np.float64)


def plot_win_rate_vs_compute(run: str | Path, path: str | Path | None = None) -> Path:
    """Saves a PNG of the greedy evaluations' win rate (with its 95% band) against
    environment steps and against wall seconds of training, side by side; stage changes
    (imitation -> PPO) are dashed vertical lines.

    Args:
      run: the run directory (``runs/NAME``) or its ``metrics.jsonl``.
      path: where to write the PNG (default ``<run dir>/win_rate_vs_compute.png``).

    Returns:
      The PNG's path.
    """
    rows = read_metrics(run)
    at = [i for i, row in enumerate(rows) if row.get("kind") == "eval" and isinstance(row.get("win_rate"), (int, float))]
    if not at:
        raise ValueError(f"{run} holds no evaluation rows yet (python -m msjax.train writes one every run.eval_every_updates)")
    run_dir = Path(run) if Path(run).is_dir() else Path(run).parent
    path = Path(path) if path is not None else run_dir / "win_rate_vs_compute.png"
    all_wall = wall_seconds(rows)
    evals = [rows[i] for i in at]
    return plot_compute_curve(
        steps=[row["env_steps"] for row in evals],
        wall=all_wall[at],
        win=[row["win_rate"] for row in evals],
        low=[row.get("win_rate_low", row["win_rate"]) for row in evals],
        high=[row.get("win_rate_high", row["win_rate"]) for row in evals],
        path=path,
        title=f"win rate against compute: {run_dir.name}",
        starts=(_stage_starts(rows), all_wall[_stage_changes(rows)]),
    )


def plot_compute_curve(
    steps: Any,
    wall: Any,
    win: Any,
    low: Any,
    high: Any,
    path: str | Path,
    title: str,
    starts: tuple[Any, Any] = ((), ()),
    levels: Iterable[tuple[str, float]] = (),
    peers: Iterable[tuple[str, float, float]] = (),
    log_steps: bool = False,
    series: Sequence[str | None] | None = None,
) -> Path:
    """Saves a PNG of win rates (with their 95% band) against environment steps and
    against wall seconds, side by side.

    Args:
      steps: float[N], the environment steps of each point.
      wall: float[N], the wall seconds of each point.
      win: float[N], each point's win rate (0 to 1).
      low: float[N], the lower end of its 95% interval.
      high: float[N], the upper end of its 95% interval.
      path: where to write the PNG.
      title: the figure's title.
      starts: ``(env steps, wall seconds)``, each float[K]: where a stage begins, drawn
        as dashed vertical lines.
      levels: ``(name, win rate)`` pairs drawn as labelled horizontal lines (a teacher's
        or a solver's win rate on the same board) on both panels.
      peers: ``(name, env steps, win rate)`` of other systems, marked on the env-steps
        panel only (their wall seconds were spent on other machines).
      log_steps: a logarithmic env-steps axis (points spread over orders of magnitude).
      series: str[N], each point's series: one line (and band) per series, in the order the
        series first come, its points joined in their order; a point whose series is None
        joins the unnamed line. None: every point on one line.

    Returns:
      The PNG's path.

    Raises:
      ValueError: ``series`` not one per point.
    """
    levels, peers = list(levels), list(peers)
    steps, wall = np.asarray(steps, np.float64), np.asarray(wall, np.float64)
    win, low, high = (np.asarray(v, np.float64) for v in (win, low, high))
    if series is not None and len(series) != len(win):
        raise ValueError(f"series names {len(series)} points, but there are {len(win)} win rates")
    series_points = [(None, np.arange(len(win)))] if series is None else [
        (name, np.flatnonzero([point == name for point in series])) for name in dict.fromkeys(series)]
    fig = _figure(figsize=(11, 4))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, x, label, lines in zip(axes, (steps, wall), ("environment steps", "wall seconds"), starts):
        for start in lines:
            ax.axvline(start, color="gray", ls="--", lw=0.8)
        for line, ((name, at), (colour, band, marker)) in enumerate(zip(series_points, itertools.cycle(_SERIES_STYLES))):
            ax.plot(x[at], win[at], f"{marker}-", ms=3, color=colour,
                    label="greedy evaluation" if name is None else name)
            ax.fill_between(x[at], low[at], high[at], color=band, alpha=0.3 if len(series_points) == 1 else 0.2,
                            label="95% interval" if line == 0 else None)
        for (name, level), colour in zip(levels, _LEVEL_COLOURS):
            ax.axhline(level, color=colour, ls=":", lw=1.2, label=name)
        if ax is axes[0]:
            for (name, peer_steps, peer_win), marker in zip(peers, "s^Dv"):
                ax.plot([peer_steps], [peer_win], marker, color="tab:red", ms=6, label=name)
        ax.set_xlabel(label)
        if ax is axes[0] and log_steps:
            ax.set_xscale("log")  # ticks at the points (and peers), not crowded sub-decade labels
            ticks = sorted({*x, *(peer_steps for _, peer_steps, _ in peers)})
            from matplotlib.ticker import NullFormatter

            ax.xaxis.set_minor_formatter(NullFormatter())
            labels, last = [], 0.0
            for tick in ticks:  # a label only where it clears the last one (x1.2 on the axis)
                labels.append(f"{tick:.3g}" if tick >= 1.2 * last else "")
                last = tick if labels[-1] else last
            ax.set_xticks(ticks, labels, rotation=30, fontsize=8)
        else:
            ax.set_xlim(left=0)  # the whole cost, from nothing spent
        zoom = [*win, *low, *high, *(level for _, level in levels), *(w for *_, w in peers)]
        ax.set_ylim(*((-0.02, 1.02) if not (levels or peers) else (max(0.0, min(zoom) - 0.03), min(1.0, max(zoom) + 0.03))))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    if not log_steps:
        axes[0].ticklabel_format(axis="x", style="sci", scilimits=(0, 0))  # env steps: 1e5, not 100000
    axes[0].set_ylabel("win rate")
    fig.suptitle(title)
    return _save(fig, path)


_SERIES_STYLES = (("black", "gray", "o"), ("tab:brown", "tab:brown", "s"), ("tab:cyan", "tab:cyan", "^"),
                  ("tab:olive", "tab:olive", "D"), ("tab:pink", "tab:pink", "v"))
"""``plot_compute_curve``'s series: line colour, band colour and marker, in the order the
series come (then again), apart from the levels' colours and the peers' red."""

_LEVEL_COLOURS = ("tab:blue", "tab:green", "tab:purple", "tab:orange")
"""The horizontal lines' colours, in the order ``plot_compute_curve``'s ``levels`` come."""


def _stage_changes(rows: list[dict[str, Any]]) -> list[int]:
    """Indices of the rows at which the stage changes (e.g. imitation -> ppo)."""
    changes, previous = [], None
    for index, row in enumerate(rows):
        stage = row.get("stage")
        if previous is not None and stage != previous:
            changes.append(index)
        previous = stage
    return changes


def _stage_starts(rows: list[dict[str, Any]]) -> list[float]:
    """Env steps at which the stage changes (e.g. imitation -> ppo)."""
    return [rows[index]["env_steps"] for index in _stage_changes(rows)]



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


"""What a training run tells: metrics rows (``metrics.jsonl``, TensorBoard) and progress
for people (a tqdm bar on a terminal, plain lines elsewhere).

``MetricsWriter`` writes process 0's rows; ``NoWriter`` is the writer of the other
processes of a multi-process run and writes nothing. Both are ``RunWriter``s: the
training loop calls only the methods that protocol names, so either serves. A row
counts its ``step`` across the stages of a run (``StageInfo`` says where a stage
starts); its ``kind`` is ``train`` (one per update), ``eval`` or ``promotion``.
``TextLog`` copies what is printed into ``train.log`` (the bar's frames excepted).
``CountProgress`` shows any other long command's progress (games done of all, rate, time left).
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Protocol, Sequence, TextIO

import numpy as np

from msjax.run import files as runfiles
from msjax.stages import StageSpec


class StageInfo(Protocol):
    """A training stage (``spec``) and where it sits in its run (``train.Stage`` has these
    fields)."""

    spec: StageSpec
    name: str
    num_updates: int
    first_step: int
    first_env_step: int
    env_steps_per_update: int


class RunWriter(Protocol):
    """Every method the training loop calls on its metrics writer."""

    def write_updates(self, stage: StageInfo, first_update: int, metrics: dict[str, np.ndarray]) -> None: ...

    def write_eval(self, stage: StageInfo, update: int, results: dict[str, Any]) -> None: ...

    def write_promotion(self, stage: StageInfo, update: int, to_level: int, board: str, win_rate: float) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


def finite_or_none(value: float | None) -> float | None:
    """``value``, or None for NaN and infinities (JSON has neither)."""
    return value if value is None or math.isfinite(value) else None


class MetricsWriter:
    """Writes metrics rows to ``metrics.jsonl`` and, optionally, TensorBoard (``tb/``).

    Every row carries ``time`` (the clock) and ``wall_s``, the seconds the run has been
    training, counted from the writer's creation (compilation included) and carried
    over a resume, so that the pause between the two is not counted.

    Args:
      run_dir: the run directory.
      tensorboard: also write TensorBoard event files.
      resume_step: when resuming, the checkpoint's step: rows written after it are dropped.
    """

    def __init__(self, run_dir: Path, tensorboard: bool, resume_step: int | None):
        self.path = run_dir / "metrics.jsonl"
        # a resume carries on the training seconds of the last row it keeps
        last_row = _drop_rows_after(self.path, resume_step) if resume_step is not None else None
        self._wall_offset = float(last_row.get("wall_s", 0.0)) if last_row else 0.0
        self._start = time.monotonic()
        self._file = open(self.path, "a")
        self._tb = None
        if tensorboard:
            from tensorboardX import SummaryWriter

            self._tb = SummaryWriter(str(run_dir / "tb"))

    def write_updates(self, stage: StageInfo, first_update: int, metrics: dict[str, np.ndarray]) -> None:
        """One row per update of a chunk; ``metrics`` maps names to arrays ``[updates]``."""
        count = len(next(iter(metrics.values())))
        for i in range(count):
            update = first_update + i + 1
            values = {name: float(values[i]) for name, values in metrics.items()}
            self._write("train", stage, update, values)

    def write_eval(self, stage: StageInfo, update: int, results: dict[str, Any]) -> None:
        """An evaluation; a dict value (reward components) becomes one column per entry."""
        low, high = results["win_rate_ci95"]
        values = {}
        for name, value in results.items():
            if isinstance(value, dict):
                values.update({f"{name}/{part}": v for part, v in value.items()})
            elif name != "win_rate_ci95":
                values[name] = value
        self._write("eval", stage, update, {**values, "win_rate_low": low, "win_rate_high": high})

    def write_promotion(self, stage: StageInfo, update: int, to_level: int, board: str, win_rate: float) -> None:
        """A curriculum promotion: the level (board index) entered, stored as
        ``promoted_to``, and the win rate that earned it."""
        values = {"promoted_to": float(to_level), "win_rate": win_rate}
        self._write("promotion", stage, update, values, labels={"board": board})

    def _write(
        self, kind: str, stage: StageInfo, update: int, values: dict[str, float], labels: dict[str, str] | None = None
    ) -> None:
        step = stage.first_step + update
        row = {
            "kind": kind,
            "stage": stage.name,
            "step": step,
            "update": update,
            "env_steps": stage.first_env_step + update * stage.env_steps_per_update,
            "time": time.time(),
            "wall_s": self._wall_offset + time.monotonic() - self._start,
            **(labels or {}),
            **{name: finite_or_none(value) for name, value in values.items()},
        }
        self._file.write(json.dumps(row) + "\n")
        if self._tb is not None:
            prefix = "eval" if kind == "eval" else stage.name
            for name, value in values.items():
                if value is not None and math.isfinite(value):
                    self._tb.add_scalar(f"{prefix}/{name}", value, step)

    def flush(self) -> None:
        self._file.flush()
        if self._tb is not None:
            self._tb.flush()

    def close(self) -> None:
        self._file.close()
        if self._tb is not None:
            self._tb.close()


def _drop_rows_after(path: Path, step: int) -> dict[str, Any] | None:
    """Removes metrics rows past ``step`` (written after the checkpoint a resume starts
    from); returns the last row kept (None without one)."""
    if not path.is_file():
        return None
    lines, rows = runfiles.read_jsonl(path)  # a row cut short by a crash is dropped, and named
    kept = [(line, row) for line, row in zip(lines, rows) if row.get("step", 0) <= step]
    runfiles.write_text_atomic(path, "".join(line + "\n" for line, _ in kept))
    return kept[-1][1] if kept else None


class NoWriter:
    """``RunWriter`` that writes nothing (processes other than 0)."""

    def write_updates(self, stage: StageInfo, first_update: int, metrics: dict[str, np.ndarray]) -> None:
        pass

    def write_eval(self, stage: StageInfo, update: int, results: dict[str, Any]) -> None:
        pass

    def write_promotion(self, stage: StageInfo, update: int, to_level: int, board: str, win_rate: float) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class _TeeStream:
    """A text stream that writes to ``terminal`` and to ``log`` too."""

    def __init__(self, terminal: TextIO, log: TextIO):
        self.terminal, self._log = terminal, log

    def write(self, text: str) -> int:
        with contextlib.suppress(OSError):  # a full disk must not stop the terminal's lines
            self._log.write(text)
            self._log.flush()
        return self.terminal.write(text)

    def flush(self) -> None:
        self.terminal.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.terminal, name)


class TextLog:
    """While entered, everything printed to stdout and stderr also goes to ``path``
    (appended), so a run under nohup can be followed with ``tail -f``; the progress bar
    draws on the terminal alone (``Progress``). An error that ends the block (a
    ``SystemExit`` with a message, a ``ValueError`` or ``OSError``) is logged as its
    ``error:`` line."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self) -> "TextLog":
        self._file = open(self.path, "a")
        self._streams = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _TeeStream(sys.stdout, self._file), _TeeStream(sys.stderr, self._file)
        return self

    def __exit__(self, kind, error, traceback) -> None:
        sys.stdout, sys.stderr = self._streams
        with contextlib.suppress(OSError):  # a full disk: the error still reaches the terminal
            if isinstance(error, SystemExit) and isinstance(error.code, str):
                self._file.write(error.code + "\n")
            elif isinstance(error, (ValueError, OSError)):
                self._file.write(f"error: {error}\n")
            self._file.close()


class Progress:
    """Progress for people, after each chunk and each evaluation.

    On a terminal: a tqdm bar over all updates of all stages with live figures, and the
    evaluations as lines above it. Elsewhere (a log file, CI, nohup): no bar, which
    would write a carriage-return frame per chunk, but one plain line per evaluation
    and one at the end of each stage.

    Args:
      stages: the run's stages; done: updates already done (resuming).
      enabled: show progress at all (``run.progress_bar``, process 0).
      printing: print the evaluation lines (False on processes other than 0).
      interactive: draw the bar; default: whether stdout is a terminal.
    """

    def __init__(
        self,
        stages: Sequence[StageInfo],
        done: int,
        enabled: bool,
        printing: bool = True,
        interactive: bool | None = None,
    ):
        from tqdm.auto import tqdm

        self._printing = printing
        self._interactive = sys.stdout.isatty() if interactive is None else interactive
        self._plain = enabled and printing and not self._interactive
        total = sum(stage.num_updates for stage in stages)
        disable = not (enabled and self._interactive)
        # The bar's frames go to the terminal, never into a TextLog.
        terminal = getattr(sys.stderr, "terminal", sys.stderr)
        self._bar = tqdm(total=total, initial=done, unit="upd", disable=disable, dynamic_ncols=True, file=terminal)
        self._win_rate = None

    def _line(self, text: str) -> None:
        if self._interactive:
            self._bar.write(text)
        else:
            print(text, flush=True)

    def chunk_done(self, stage: StageInfo, update: int, updates: int, seconds: float) -> None:
        """A chunk of ``updates`` updates ended at ``update``, after ``seconds``."""
        self._bar.update(updates)
        env_steps = stage.first_env_step + update * stage.env_steps_per_update
        steps_per_second = updates * stage.env_steps_per_update / max(seconds, 1e-9)
        if self._plain and update == stage.num_updates:
            self._line(
                f"{stage.name} done: {update} updates, {env_steps:.3g} env steps, {steps_per_second:.3g} steps/s"
            )
        figures = {"stage": stage.name, "env_steps": f"{env_steps:.3g}", "steps/s": f"{steps_per_second:.3g}"}
        if self._win_rate is not None:
            figures["eval_win"] = f"{self._win_rate:.1%}"
        self._bar.set_postfix(figures, refresh=True)

    def evaluating(self, stage: StageInfo, update: int, episodes: int) -> None:
        """An evaluation of ``episodes`` games starts (the bar stands still meanwhile): the
        bar says so; off a terminal, one at the end of a stage (the run's final one is
        the longest) gets a line."""
        text = f"{stage.name} update {update}: evaluating on {episodes} games"
        self._bar.set_postfix_str(text, refresh=True)
        if self._plain and update == stage.num_updates:
            self._line(text)

    def evaluated(self, stage: StageInfo, update: int, results: dict[str, Any]) -> None:
        """Shows the evaluation on the bar and as a line."""
        self._win_rate = results["win_rate"]
        low, high = results["win_rate_ci95"]
        if not self._printing:
            return
        self._line(
            f"{stage.name} update {update}: win rate {results['win_rate']:.1%} [{low:.1%}-{high:.1%}] "
            f"over {results['episodes']} games, safe cells revealed {results['revealed_fraction']:.1%}"
        )
        per_board = {
            key.split("/")[1]: value
            for key, value in results.items()
            if key.startswith("win_rate/") and key.count("/") == 1
        }
        if per_board:
            self._line("  win rate per board: " + ", ".join(f"{b} {v:.1%}" for b, v in per_board.items()))

    def promoted(self, stage: StageInfo, update: int, board: str) -> None:
        """The curriculum moved on to ``board``."""
        if self._printing:
            self._line(f"{stage.name} update {update}: curriculum promoted to {board}")

    def close(self) -> None:
        self._bar.close()


def format_duration(seconds: float) -> str:
    """``seconds`` for people: ``"45 s"``, ``"3 min 20 s"``, ``"1 h 05 min"``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def count_line(label: str, done: int, total: int, unit: str, seconds: float) -> str:
    """One plain progress line: ``"LABEL: 256/1000 games, 3.1 games/s, about 4 min 00 s left"``."""
    rate = done / seconds if seconds > 0 else 0.0
    line = f"{label}: {done}/{total} {unit}, {rate:.3g} {unit}/s"
    if 0 < done < total and rate > 0:
        line += f", about {format_duration((total - done) / rate)} left"
    elif done >= total:
        line += f", {format_duration(seconds)} in all"
    return line


class CountProgress:
    """Progress of a command that works through a known count of things (games, positions).

    On a terminal: a tqdm bar with the count, the rate and the time left. Elsewhere (a
    log file, CI, a pipe): a plain ``count_line`` at most every ``every_s`` seconds and
    one at the end. Everything goes to stderr, so a command's results on stdout stay
    clean for a pipe.

    Args:
      total: how many things in all; unit: their name (``"games"``).
      label: what is counted, for the lines and the bar.
      interactive: draw the bar; default: whether stderr is a terminal.
      every_s: the least seconds between plain lines.

    A context manager: the bar is closed on leaving the block.
    """

    def __init__(self, total: int, unit: str, label: str, interactive: bool | None = None, every_s: float = 10.0):
        from tqdm.auto import tqdm

        self.total, self.unit, self.label, self.done = total, unit, label, 0
        self._interactive = sys.stderr.isatty() if interactive is None else interactive
        self._every_s = every_s
        self._start = self._last_line = time.monotonic()
        terminal = getattr(sys.stderr, "terminal", sys.stderr)  # never into a TextLog
        self._bar = tqdm(
            total=total, unit=f" {unit}", desc=label, disable=not self._interactive, dynamic_ncols=True, file=terminal
        )

    def advance(self, count: int) -> None:
        """``count`` more things are done."""
        self.done += count
        if self._interactive:
            self._bar.update(count)
            return
        now = time.monotonic()
        if self.done >= self.total or now - self._last_line >= self._every_s:
            self._last_line = now
            print(count_line(self.label, self.done, self.total, self.unit, now - self._start), file=sys.stderr, flush=True)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> "CountProgress":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

"""Crash-safe reading and writing of a run's JSON files.

A process killed mid-write (a full disk, a power cut, ``kill -9``) must not leave a file
that blocks the next command. ``write_text_atomic`` writes a temporary file beside the
target, flushes it to disk (``fsync``) and renames it over the target, so the target
holds either the old or the new text, never half of one. ``read_json`` names the file in
its error. ``read_jsonl`` reads ``metrics.jsonl``, whose rows are appended as training
goes: a last line cut short by a crash is dropped (and named); a damaged line anywhere
else is an error naming the file and the line.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import tempfile
from pathlib import Path
from typing import Any, Callable

__all__ = ["write_text_atomic", "write_json_atomic", "read_json", "read_jsonl", "resume_command"]


def write_text_atomic(path: str | Path, text: str) -> None:
    """Replaces ``path``'s content with ``text`` in one step (temporary file in the same
    directory, ``fsync``, ``os.replace``); the temporary file is removed if anything fails.

    Raises:
      OSError: the directory cannot be written (the target is left as it was).
    """
    path = Path(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(handle, _file_mode(path))  # mkstemp makes it private; keep the usual mode
        with os.fdopen(handle, "w") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _file_mode(path: Path) -> int:
    """``path``'s permission bits, or those a new file gets under the current umask."""
    with contextlib.suppress(OSError):
        return path.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_json_atomic(path: str | Path, data: Any) -> None:
    """``data`` as indented JSON (and a newline), written with ``write_text_atomic``."""
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def read_json(path: str | Path) -> Any:
    """The JSON value in ``path``.

    Raises:
      ValueError: the file is not valid JSON (cut short by a crash?); the message names
        the file, the line and the column.
    """
    path = Path(path)
    text = path.read_text()
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(
            f"{path} is not valid JSON ({err.msg} at line {err.lineno} column {err.colno}; "
            "cut short by a crash or a full disk?)"
        ) from None


def read_jsonl(path: str | Path, say: Callable[[str], None] = print) -> tuple[list[str], list[dict]]:
    """``(lines, rows)`` of a JSON-lines file, one row (a dict) per non-blank line.

    A last line that does not parse (a row cut short by a crash) is dropped and named
    in one line to ``say``; the file itself is not changed.

    Raises:
      ValueError: a line before the last does not parse, or a row is not an object;
        the message names the file and the line.
    """
    path = Path(path)
    numbered = [(number, line) for number, line in enumerate(path.read_text().splitlines(), 1) if line.strip()]
    lines, rows = [], []
    for index, (number, line) in enumerate(numbered):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            if index == len(numbered) - 1:
                say(f"{path} line {number} is cut short (a crash while writing?); dropped it: {line[:60]!r}")
                break
            raise ValueError(f"{path} line {number} is not valid JSON ({err.msg}); remove or repair that line") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path} line {number} is not a JSON object; remove or repair that line")
        lines.append(line)
        rows.append(row)
    return lines, rows


def resume_command(run_dir: str | Path, *overrides: str) -> str:
    """The command that continues the run in ``run_dir`` (with ``--config.`` ``overrides``),
    quoted for a shell: a directory with spaces pastes as one argument."""
    return shlex.join(["python", "-m", "msjax.train", "--workdir", str(run_dir), "--resume", *overrides])

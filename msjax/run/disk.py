"""A full disk while a run writes: told apart from other errors, and said in one line.

The disk can fill while Orbax saves a checkpoint (TensorStore reports it as a
``ValueError`` whose text holds ``No space left on device``), while metrics rows are
flushed, or while a JSON file is rewritten (an ``OSError`` with ``errno.ENOSPC``).
``is_out_of_space`` recognises all of these; ``out_of_space_line`` is the one line the
command prints: the run directory, the bytes the failed write needed when the error
says, the newest checkpoint that was saved whole (it is kept) and how to continue.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path

from msjax.run.files import resume_command

__all__ = ["is_out_of_space", "needed_bytes", "out_of_space_line"]

_NO_SPACE = ("No space left on device", "os_error_code='28'", "ENOSPC")


def is_out_of_space(err: BaseException) -> bool:
    """Whether ``err`` (or an error it was raised from) is a full disk."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, OSError) and err.errno == errno.ENOSPC:
            return True
        if any(marker in str(err) for marker in _NO_SPACE):
            return True
        err = err.__cause__ or err.__context__
    return False


def needed_bytes(err: BaseException) -> int | None:
    """The size of the write that failed, when the error's text says it (TensorStore's
    ``Failed to write N bytes``), else None."""
    found = re.search(r"[Ff]ailed to write (\d+) bytes", str(err))
    return int(found.group(1)) if found else None


def newest_saved_step(checkpoints_dir: Path) -> int | None:
    """The highest step folder that Orbax finished (a plain number; a ``.orbax-checkpoint-tmp``
    folder is a save cut short), or None."""
    if not checkpoints_dir.is_dir():
        return None
    steps = [int(child.name) for child in checkpoints_dir.iterdir() if child.name.isdigit()]
    return max(steps, default=None)


def out_of_space_line(run_dir: Path, err: BaseException) -> str:
    """The one line (without ``error:``) a command prints when ``err`` is a full disk
    while writing in ``run_dir``."""
    size = needed_bytes(err)
    needed = f"; the failed write needed {size:,} bytes" if size is not None else ""
    step = newest_saved_step(run_dir / "checkpoints")
    resume = resume_command(run_dir)
    where = f"no space left on the device holding {run_dir}{needed}"
    if step is None:
        return f"{where}; no checkpoint was saved yet; free some space, then start the run again"
    kept = f"the newest checkpoint, {run_dir / 'checkpoints' / str(step)}, is intact and kept"
    return f"{where}; {kept}; free some space, then continue with: {resume}"

"""One writer per run directory: an advisory lock on ``RUN_DIR/run.lock``.

A new run, a resume, and process 0 of a multi-process run take the lock before they
write anything in the run directory, and hold it until they exit. The lock is
``fcntl.flock`` on an open file: the operating system releases it when the process
dies, however it dies, so a killed run never leaves a stale lock behind (the file
itself stays; it is the lock's place, not the lock). The file holds the holder's process
id, so that a second writer can name it. Readers (``load_agent``, ``evaluate``, ``viz``,
the inspector) never take the lock.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

__all__ = ["LOCK_FILE", "RunDirBusy", "RunDirLock"]

LOCK_FILE = "run.lock"


class RunDirBusy(Exception):
    """Another live process holds the run directory's lock; the text says which."""


class RunDirLock:
    """The lock of one run directory, taken by ``acquire`` and released by ``release``
    (or on leaving a ``with`` block); releasing a lock never taken does nothing."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self._fd: int | None = None

    def acquire(self, run_dir: Path) -> None:
        """Takes ``run_dir``'s lock (the directory must exist) and records this process's id.

        Raises:
          RunDirBusy: another process holds it; the message names the directory and the
            holder's process id.
        """
        path = Path(run_dir) / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise RunDirBusy(
                f"{run_dir} is in use by another run (process {holder}, still alive); wait for it to end "
                "(or stop it) before resuming there, or pass another --workdir"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.path, self._fd = path, fd

    def release(self) -> None:
        """Lets go of the lock (the file stays, so no other process's lock is broken)."""
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    def __enter__(self) -> "RunDirLock":
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    """The process id written in the lock file, or ``"id unknown"``."""
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return text if text.isdigit() else "id unknown"

"""The inspector's compiled programs, kept for a bounded number of boards.

Every distinct board (``HxWxM`` and first-click rule) needs its own compiled programs: a
few hundred megabytes of XLA executables for a large one. Compiled once per board and
kept forever (as jit's own cache keeps them), a client that asks for one new board after
another exhausts the server's memory. ``CompiledBoards`` keeps the programs of the
standard boards (pinned: a stream of custom boards cannot push them out, so their games
never wait for a compile again) and of the ``MAX_BOARDS`` other boards used most
recently; the programs of the one used longest ago are dropped (their executables freed
with them) when another needs room, and compiled again if that board comes back.

The programs are built without compiling (``jax.jit`` compiles on first call), so
the cache's lock is held only for the bookkeeping; the compile itself runs under the
lock of the one game that needs it (``msjax.web.games``), never under one that other
games wait on.
"""

from __future__ import annotations

import collections
import threading
from typing import Callable, Generic, Hashable, Iterable, TypeVar

__all__ = ["MAX_BOARDS", "CompiledBoards"]

MAX_BOARDS = 8
"""Custom boards (not pinned) whose compiled programs the inspector keeps, besides the
standard boards'."""

Programs = TypeVar("Programs")


class CompiledBoards(Generic[Programs]):
    """An LRU of ``build(board) -> programs`` over at most ``max_boards`` boards, besides
    the pinned ones, which are kept for good.

    Args:
      build: makes a board's programs (jitted functions; cheap: nothing compiles yet).
      max_boards: boards kept that are not pinned; the one used longest ago is dropped first.
      pinned: the boards that are never dropped (and do not count in ``max_boards``).

    Safe to call from several threads.
    """

    def __init__(
        self, build: Callable[[Hashable], Programs], max_boards: int = MAX_BOARDS, pinned: Iterable[Hashable] = ()
    ):
        if max_boards < 1:
            raise ValueError(f"max_boards={max_boards} must be >= 1")
        self.build, self.max_boards, self.pinned = build, max_boards, frozenset(pinned)
        self._entries: collections.OrderedDict[Hashable, Programs] = collections.OrderedDict()
        self._kept: dict[Hashable, Programs] = {}
        self._lock = threading.Lock()

    def get(self, board: Hashable) -> Programs:
        """``board``'s programs, built if they are not kept; marks them used."""
        with self._lock:
            if board in self.pinned:
                if board not in self._kept:
                    self._kept[board] = self.build(board)
                return self._kept[board]
            if board in self._entries:
                self._entries.move_to_end(board)
                return self._entries[board]
            programs = self._entries[board] = self.build(board)
            while len(self._entries) > self.max_boards:
                self._entries.popitem(last=False)
            return programs

    def boards(self) -> list[Hashable]:
        """The boards kept that are not pinned, the one used longest ago first."""
        with self._lock:
            return list(self._entries)

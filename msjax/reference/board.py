"""One game of Minesweeper in plain NumPy, with ``msjax.env``'s rules, for the reference player.

The reference player analyses a position per move; a jitted call per move would cost more than
the analysis itself, so its games run on the host. ``tests/test_conformance.py`` checks
that ``Board`` plays the same games as ``msjax.env`` (reveals only: it has no flags,
rewards or move cap, and refuses an illegal reveal instead of penalising it).
"""

from __future__ import annotations

import numpy as np

from msjax.reference.grid import neighbour_lists


class Board:
    """One game with ``msjax.env``'s rules, on the host.

    Mines are given (``mine_mask``) or placed at the first reveal uniformly among the
    cells the first-click rule allows, like ``msjax.env``: with ``safe_neighbourhood`` the
    first click and its neighbours stay clear, else only the first click.

    Args:
      height: the board's rows.
      width: the board's columns.
      mine_count: mines to place at the first reveal (ignored with ``mine_mask``).
      safe_neighbourhood: the first-click rule.
      rng: source of the placement (a fresh ``np.random.default_rng()`` when None).
      mine_mask: bool[H, W], a fixed layout; nothing moves at the first reveal.

    Attributes:
      mine_mask: bool[H, W] (None before the first reveal); counts: int8[H, W];
      revealed: bool[H, W]; lost, won: the game's outcome so far.
    """

    def __init__(
        self,
        height: int,
        width: int,
        mine_count: int,
        safe_neighbourhood: bool,
        rng: np.random.Generator | None = None,
        mine_mask: np.ndarray | None = None,
    ):
        self.height, self.width, self.mine_count = height, width, mine_count
        self.safe_neighbourhood = safe_neighbourhood
        self.rng = rng if rng is not None else np.random.default_rng()
        self.neighbours = neighbour_lists(height, width)
        self.revealed = np.zeros((height, width), bool)
        self.lost = self.won = False
        self.mine_mask = None
        if mine_mask is not None:
            self._set_mines(np.asarray(mine_mask, bool))

    def _set_mines(self, mine_mask: np.ndarray) -> None:
        self.mine_mask = mine_mask
        padded = np.pad(mine_mask.astype(np.int8), 1)
        counts = sum(
            padded[dr : dr + self.height, dc : dc + self.width]
            for dr in range(3)
            for dc in range(3)
            if (dr, dc) != (1, 1)
        )
        self.counts = counts.astype(np.int8)
        self._flat_mines = mine_mask.reshape(-1).tolist()
        self._flat_counts = self.counts.reshape(-1).tolist()
        self.mine_count = int(mine_mask.sum())

    def _place_mines(self, cell: int) -> None:
        excluded = {cell}
        if self.safe_neighbourhood:
            excluded.update(self.neighbours[cell])
        allowed = np.array([i for i in range(self.height * self.width) if i not in excluded])
        chosen = self.rng.choice(allowed, size=self.mine_count, replace=False)
        mine_mask = np.zeros(self.height * self.width, bool)
        mine_mask[chosen] = True
        self._set_mines(mine_mask.reshape(self.height, self.width))

    def reveal(self, cell: int) -> int:
        """Opens ``cell`` (row-major) and, from a zero, its zero region and border.

        Returns the number of newly opened safe cells; sets ``lost``/``won``.

        Raises:
          ValueError: the cell is already revealed or the game is over (an illegal move).
        """
        flat = self.revealed.reshape(-1)
        if self.lost or self.won:
            raise ValueError(f"Board.reveal({cell}) on a finished game")
        if flat[cell]:
            raise ValueError(f"Board.reveal({cell}): the cell is already revealed")
        if self.mine_mask is None:
            self._place_mines(cell)
        if self._flat_mines[cell]:
            flat[cell] = True
            self.lost = True
            return 0
        opened = 0
        stack = [cell]
        flat[cell] = True
        while stack:
            current = stack.pop()
            opened += 1
            if self._flat_counts[current] == 0:
                for n in self.neighbours[current]:
                    if not flat[n]:
                        flat[n] = True
                        stack.append(n)
        safe_cells = self.height * self.width - self.mine_count
        self.won = int(np.count_nonzero(flat)) == safe_cells
        return opened

"""The game a command line names: ``--board`` and ``--safe-first-click`` over a base config."""

from __future__ import annotations

import dataclasses
from typing import Any

from msjax import env as ms_env
from msjax.env import EnvConfig


def board_config(board: str | None, safe_first_click: bool, base: EnvConfig | None = None) -> EnvConfig:
    """The game to play: ``base`` (an agent's training game, default ``EnvConfig()``) with
    the board of ``board`` (None keeps ``base``'s; default beginner without a base) and
    the first-click rule.

    An agent trained on a board mix (``base.boards``) plays the board alone, unpadded but
    with the mix's observation channels (default: the mix's last board at its fewest
    mines), so the solver-based diagnostics see whole boards.

    Raises:
      ValueError: an unknown board, or mines that do not fit it.
    """
    if base is None:
        base = EnvConfig()
        board = board or "beginner"
    changes: dict[str, Any] = {}
    if base.boards:
        last = base.boards[-1]
        height, width, mines = ms_env.parse_board(board) if board is not None else (last.rows, last.cols, last.fewest)
        changes.update(H=height, W=width, mine_count=mines, boards=((height, width, mines, mines),))
    elif board is not None:
        height, width, mines = ms_env.parse_board(board)
        changes.update(H=height, W=width, mine_count=mines, density_band=None)
    if safe_first_click:
        changes["guarantee_safe_neighborhood"] = False
    return dataclasses.replace(base, **changes)

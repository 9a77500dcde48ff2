"""The game a command line names: ``--board`` and ``--safe-first-click`` over a base config."""

from __future__ import annotations

import dataclasses

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
    if safe_first_click:  # first: turning the guarantee off only lets more mines fit
        base = dataclasses.replace(base, guarantee_safe_neighborhood=False)
    if base.boards:
        if board is None:
            return ms_env.board_env(base, -1, base.boards[-1].fewest, padded=False)
        height, width, mines = ms_env.parse_board(board)
        return ms_env.board_env(base, (height, width, mines, mines), padded=False)
    if board is not None:
        height, width, mines = ms_env.parse_board(board)
        return dataclasses.replace(base, H=height, W=width, mine_count=mines, density_band=None)
    return base

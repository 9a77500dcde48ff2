"""Which board a game plays: the standard boards by name, and the boards of a mix.

With ``EnvConfig.boards`` one config plays boards of several sizes and mine counts in one
batch, each padded into the top-left ``rows x cols`` corner of the ``H x W`` arrays (the
padding contract is in the package docstring). The functions here read a game's board
from ``EnvState.board`` and the config's static table; without ``boards`` they return
static shapes, so unpadded code compiles as if they were not there.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import chex
import jax
import jax.numpy as jnp

from msjax.env.config import BoardSpec, EnvConfig
from msjax.env.state import EnvState

STANDARD_BOARDS = {"beginner": (8, 8, 10), "intermediate": (16, 16, 40), "expert": (16, 30, 99)}
"""The standard boards by name: ``(H, W, mines)``."""


def parse_board(text: str) -> tuple[int, int, int]:
    """``(H, W, mines)`` from a board name of ``STANDARD_BOARDS`` or ``HxWxM`` text.

    Raises:
      ValueError: neither a known name nor three integers joined by ``x``.
    """
    name = text.strip().lower()
    if name in STANDARD_BOARDS:
        return STANDARD_BOARDS[name]
    parts = name.split("x")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        raise ValueError(f"board {text!r}: use {', '.join(STANDARD_BOARDS)} or HxWxM such as 9x9x10")
    return int(parts[0]), int(parts[1]), int(parts[2])


def board_table(cfg: EnvConfig, column: int) -> jax.Array:
    """int32[K]: one column (0 rows, 1 cols, 2 fewest, 3 most) of ``cfg.boards``."""
    return jnp.asarray([board[column] for board in cfg.boards], jnp.int32)


def board_shape(state: EnvState, cfg: EnvConfig) -> tuple[Any, Any]:
    """``(rows, cols)`` of the board a game plays: int32[] each with ``boards``, else the
    static ``(H, W)`` as Python ints (so unpadded code compiles as before)."""
    if not cfg.boards:
        return cfg.H, cfg.W
    return board_table(cfg, 0)[state.board], board_table(cfg, 1)[state.board]


def playable(state: EnvState, cfg: EnvConfig) -> jax.Array:
    """bool[H, W]: the cells of the game's board (all of them without ``boards``)."""
    if not cfg.boards:
        return jnp.ones((cfg.H, cfg.W), bool)
    rows, cols = board_shape(state, cfg)
    return (jnp.arange(cfg.H)[:, None] < rows) & (jnp.arange(cfg.W)[None, :] < cols)


def playable_rows(state: EnvState, cfg: EnvConfig) -> jax.Array:
    """uint32[H]: ``playable`` bit-packed (padded configs only)."""
    rows, cols = board_shape(state, cfg)
    shift = jnp.minimum(cols, 31).astype(jnp.uint32)
    full_row = jnp.where(cols >= 32, jnp.uint32(0xFFFFFFFF), jnp.left_shift(jnp.uint32(1), shift) - 1)
    return jnp.where(jnp.arange(cfg.H) < rows, full_row, jnp.uint32(0))


def num_board_cells(state: EnvState, cfg: EnvConfig) -> Any:
    """Cells of the game's board: int32[] with ``boards``, else the static ``H*W``."""
    rows, cols = board_shape(state, cfg)
    return rows * cols


def draw_board(key: jax.Array, cfg: EnvConfig, board_weights: jax.Array | None) -> jax.Array:
    """int32[]: an index into ``cfg.boards``, uniform or drawn by ``board_weights`` (float[K],
    non-negative, not all zero; they need not sum to 1)."""
    if board_weights is None:
        return jax.random.randint(key, (), 0, len(cfg.boards), dtype=jnp.int32)
    chex.assert_shape(board_weights, (len(cfg.boards),))
    return jax.random.categorical(key, jnp.log(board_weights)).astype(jnp.int32)


def board_name(board: BoardSpec | tuple[int, int, int, int]) -> str:
    """``"16x30x99"`` for a fixed mine count, ``"16x30x58-96"`` for a range."""
    board = BoardSpec(*board)
    mines = str(board.fewest) if board.fewest == board.most else f"{board.fewest}-{board.most}"
    return f"{board.rows}x{board.cols}x{mines}"


def board_env(
    cfg: EnvConfig, board: int | tuple[int, int, int, int], mines: int | None = None, padded: bool = True
) -> EnvConfig:
    """``cfg`` dealing only one board, with the mix's observation channels: ``board`` is
    an index into ``cfg.boards`` or a ``BoardSpec`` (any board), with exactly ``mines``
    mines if given. ``padded``: in the mix's ``H x W`` arrays (the same observation shape,
    for playing one board of a mix); else unpadded, ``H x W`` the board's own with its
    fewest mines as ``mine_count`` (for code that reads whole boards, such as the solver).

    Raises:
      ValueError: a board or mine count that ``EnvConfig`` does not allow.
    """
    spec = cfg.boards[board] if isinstance(board, int) else board
    if mines is not None:
        spec = BoardSpec(*spec)._replace(fewest=mines, most=mines)
    if padded:
        return dataclasses.replace(cfg, boards=(spec,))
    rows, cols, fewest, _ = spec
    return dataclasses.replace(cfg, H=rows, W=cols, mine_count=fewest, boards=(spec,))


def board_config(board: str | None, safe_first_click: bool = False, base: EnvConfig | None = None) -> EnvConfig:
    """The game a command line, the inspector or an adapter names: ``base`` (an agent's
    training game, default ``EnvConfig()``) with the board of ``board`` (a name of
    ``STANDARD_BOARDS`` or ``HxWxM`` text; None keeps ``base``'s, default beginner without a
    base) and the first-click rule.

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
            return board_env(base, -1, base.boards[-1].fewest, padded=False)
        height, width, mines = parse_board(board)
        return board_env(base, (height, width, mines, mines), padded=False)
    if board is not None:
        height, width, mines = parse_board(board)
        return dataclasses.replace(base, H=height, W=width, mine_count=mines, density_band=None)
    return base

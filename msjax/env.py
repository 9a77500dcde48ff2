"""Minesweeper as pure JAX functions: one board per call, batched with ``jax.vmap``.

The game follows the core spec (seed 000): a board of ``H x W`` cells holding
``mine_count`` mines that are placed at the first reveal, so the first click is
always safe (and, with ``guarantee_safe_neighborhood``, opens a region). Revealing a
zero opens its connected zero region and the numbers on its border. An action
``a < H*W`` reveals cell ``a`` (row-major); ``a >= H*W`` toggles the flag on cell
``a - H*W``.

Choices the seed leaves open, fixed here:

* Revealing a flagged cell is legal: the flag is removed and the cell revealed (the
  seed masks only revealed cells). A cascade likewise reveals flagged cells it reaches,
  which are provably safe, and clears their flags, so ``flags`` never covers a revealed
  cell.
* Every valid step costs ``step_penalty``. A reveal earns ``progress_reward`` per newly
  revealed safe cell (the cascade included, each cell counted once); the terminal step
  adds ``win_reward`` or ``loss_reward`` on top of its own progress reward. Reaching
  ``max_steps`` ends the game as a loss, with ``loss_reward``.
* With ``use_flag_shaping``, placing a flag earns ``flag_correct_reward`` on a mine and
  ``flag_incorrect_reward`` elsewhere; removing it pays the same amount back, so
  toggling a flag on and off nets zero. Before the first reveal there are no mines yet,
  so flags earn nothing then.
* An invalid action (any action on a revealed cell, i.e. one ``action_mask`` rules out)
  costs ``invalid_penalty``, leaves the board unchanged, and sets ``info["invalid"]``;
  it still counts as a step towards ``max_steps``. A step on a finished game does
  nothing and returns reward 0.
* ``frontier_only_reveals`` narrows the *action mask* to hidden cells next to a revealed
  one (a curriculum aid for the agent); it is not a rule of the game, so ``step`` still
  accepts any hidden cell.

Flood fill runs on bit-packed rows (one ``uint32`` per row), so ``W <= 32``.

**Board mixes (padding).** With ``boards`` set, one config plays boards of several sizes
and mine counts in one batch: every board lives in the top-left ``rows x cols`` corner of
an ``H x W`` array, and ``EnvState.board`` says which entry of ``boards`` it plays. The
cells outside that rectangle (the *padding*) never hold a mine, are never revealed (the
flood fill stops at the playable edge), do not count towards the win, are never legal
actions (``step`` treats an action on one as invalid), and ``observe`` adds a channel
marking the playable cells. A game on a padded board is the game on the unpadded board:
same mines for the same key, same moves, same rewards (tested). Without ``boards`` none of
this code runs: the state's ``board`` is None and the compiled step is unchanged.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import chex
import jax
import jax.numpy as jnp
from flax import struct

MAX_WIDTH = 32
NUM_BASE_CHANNELS = 11  # revealed, flags, one-hot counts 0..8
STANDARD_BOARDS = {"beginner": (8, 8, 10), "intermediate": (16, 16, 40), "expert": (16, 30, 99)}
"""The standard boards by name: ``(H, W, mines)``."""
MOVES_PER_CELL = 4  # a game with no ``max_steps`` is cut off after this many moves per cell


@dataclasses.dataclass(frozen=True)
class EnvConfig:
    """Static description of a game: board, mines, rewards and observation options.

    Frozen and hashable, so it is passed to jitted functions as a static argument.

    Attributes:
      H, W: board height and width (1 <= H, 1 <= W <= 32, H*W >= 2).
      mine_count: mines per game (ignored when ``density_band`` is set).
      guarantee_safe_neighborhood: the first click and its 8 neighbours hold no mine.
      progress_reward: reward per newly revealed safe cell.
      win_reward, loss_reward: added on the terminal step.
      step_penalty: subtracted on every valid step.
      invalid_penalty: subtracted (alone) on an invalid action.
      flag_correct_reward, flag_incorrect_reward: flag shaping, when ``use_flag_shaping``.
      obs_frontier: add a frontier channel (hidden cells next to a revealed cell).
      obs_scalars: add two broadcast channels, ``remaining_mines_ratio`` and ``progress``.
      frontier_only_reveals: restrict the action mask's reveals to the frontier.
      density_band: ``(low, high)`` mine densities; each game draws its mine count
        uniformly from the integers in ``[ceil(low*H*W), floor(high*H*W)]``.
      max_steps: end a game (lost, not won) after this many steps; 0 means no limit.
      boards: a board mix, ``((rows, cols, fewest_mines, most_mines), ...)``, each board
        padded to ``H x W`` (``rows <= H``, ``cols <= W``; ``board_spec`` builds an entry
        from a mine count or a density band). Each game plays one of them, drawn at reset
        from traced weights (``reset``, ``batch_step``), with a mine count drawn uniformly
        from its ``[fewest, most]``. Empty (default): one unpadded ``H x W`` board with
        ``mine_count`` or ``density_band`` mines; with boards, ``mine_count`` is unused and
        ``density_band`` must be None.
    """

    H: int = 8
    W: int = 8
    mine_count: int = 10
    guarantee_safe_neighborhood: bool = True
    progress_reward: float = 0.01
    win_reward: float = 1.0
    loss_reward: float = -1.0
    step_penalty: float = 1e-4
    invalid_penalty: float = 1e-3
    flag_correct_reward: float = 0.002
    flag_incorrect_reward: float = -0.002
    use_flag_shaping: bool = False
    obs_frontier: bool = False
    obs_scalars: bool = False
    frontier_only_reveals: bool = False
    density_band: tuple[float, float] | None = None
    max_steps: int = 0
    boards: tuple[tuple[int, int, int, int], ...] = ()

    def __post_init__(self):
        validate_config(self)

    @property
    def num_cells(self) -> int:
        return self.H * self.W

    @property
    def num_actions(self) -> int:
        return 2 * self.H * self.W

    @property
    def max_mines_allowed(self) -> int:
        """Most mines that fit once the first click (and its neighbourhood) is kept clear.

        The largest cleared area is a full 3x3 block when the board allows one.
        """
        return max_mines(self.H, self.W, self.guarantee_safe_neighborhood)

    @property
    def padded(self) -> bool:
        """The config plays a board mix padded to ``H x W`` (``boards`` is set)."""
        return bool(self.boards)

    @property
    def mine_count_range(self) -> tuple[int, int]:
        """Smallest and largest mine count a game of this config can have."""
        if self.boards:
            return min(b[2] for b in self.boards), max(b[3] for b in self.boards)
        if self.density_band is None:
            return self.mine_count, self.mine_count
        low, high = self.density_band
        return math.ceil(low * self.num_cells - 1e-9), math.floor(high * self.num_cells + 1e-9)


def max_mines(rows: int, cols: int, guarantee_safe_neighborhood: bool) -> int:
    """Most mines a ``rows x cols`` board holds once the first click (and, with the
    guarantee, its neighbourhood: a full 3x3 block where the board allows one) is clear."""
    cleared = min(rows, 3) * min(cols, 3) if guarantee_safe_neighborhood else 1
    return rows * cols - cleared


def board_spec(
    rows: int, cols: int, mines: int | None = None, density_band: tuple[float, float] | None = None
) -> tuple[int, int, int, int]:
    """An entry of ``EnvConfig.boards``: ``(rows, cols, fewest, most)`` mines.

    Give either ``mines`` (a fixed count) or ``density_band`` ``(low, high)``, which allows
    the whole mine counts in ``[ceil(low*rows*cols), floor(high*rows*cols)]`` (as
    ``EnvConfig.density_band`` does).
    """
    if (mines is None) == (density_band is None):
        raise ValueError(f"board_spec({rows}, {cols}): give exactly one of mines and density_band")
    if mines is not None:
        return (rows, cols, mines, mines)
    low, high = density_band
    cells = rows * cols
    return (rows, cols, math.ceil(low * cells - 1e-9), math.floor(high * cells + 1e-9))


def _validate_boards(cfg: EnvConfig) -> None:
    if cfg.density_band is not None:
        raise ValueError(
            f"EnvConfig.density_band={cfg.density_band!r} must be None when boards is set "
            "(give each board its own mine range with board_spec)"
        )
    if not isinstance(cfg.boards, tuple):
        raise ValueError(f"EnvConfig.boards={cfg.boards!r} must be a tuple of (rows, cols, fewest, most)")
    for i, board in enumerate(cfg.boards):
        if (
            not isinstance(board, tuple)
            or len(board) != 4
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in board)
        ):
            raise ValueError(f"EnvConfig.boards[{i}]={board!r} must be four ints (rows, cols, fewest, most)")
        rows, cols, fewest, most = board
        if not (1 <= rows <= cfg.H and 1 <= cols <= cfg.W and rows * cols >= 2):
            raise ValueError(
                f"EnvConfig.boards[{i}]={board!r}: rows must be in [1, H={cfg.H}], cols in "
                f"[1, W={cfg.W}], and the board needs at least 2 cells"
            )
        most_allowed = max_mines(rows, cols, cfg.guarantee_safe_neighborhood)
        if not 1 <= fewest <= most <= most_allowed:
            raise ValueError(
                f"EnvConfig.boards[{i}]={board!r}: mines must satisfy 1 <= fewest <= most <= "
                f"{most_allowed} on a {rows}x{cols} board"
            )


def validate_config(cfg: EnvConfig) -> None:
    """Raises ``ValueError`` naming the offending field and its allowed range."""
    for name in ("H", "W", "mine_count", "max_steps"):
        value = getattr(cfg, name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"EnvConfig.{name} must be an int, got {value!r}")
    if cfg.H < 1:
        raise ValueError(f"EnvConfig.H={cfg.H} must be >= 1")
    if not 1 <= cfg.W <= MAX_WIDTH:
        raise ValueError(
            f"EnvConfig.W={cfg.W} must be in [1, {MAX_WIDTH}] (rows are bit-packed into uint32)"
        )
    if cfg.H * cfg.W < 2:
        raise ValueError(f"EnvConfig: a {cfg.H}x{cfg.W} board has fewer than 2 cells")
    if cfg.max_steps < 0:
        raise ValueError(f"EnvConfig.max_steps={cfg.max_steps} must be >= 0 (0 = no limit)")
    if cfg.boards:
        _validate_boards(cfg)
    most = cfg.max_mines_allowed
    rule = "a safe first-click neighbourhood" if cfg.guarantee_safe_neighborhood else "a safe first click"
    if cfg.density_band is None:
        if not 1 <= cfg.mine_count <= most:
            raise ValueError(
                f"EnvConfig.mine_count={cfg.mine_count} does not fit a {cfg.H}x{cfg.W} board "
                f"with {rule}: allowed range is [1, {most}]"
            )
        return
    band = cfg.density_band
    if len(band) != 2 or not all(isinstance(x, (int, float)) for x in band):
        raise ValueError(f"EnvConfig.density_band={band!r} must be a pair (low, high) of floats")
    low, high = band
    if not 0.0 < low <= high < 1.0:
        raise ValueError(f"EnvConfig.density_band={band!r} must satisfy 0 < low <= high < 1")
    fewest, most_drawn = cfg.mine_count_range
    if fewest > most_drawn:
        raise ValueError(
            f"EnvConfig.density_band={band!r} holds no whole mine count on a {cfg.H}x{cfg.W} board"
        )
    if fewest < 1 or most_drawn > most:
        raise ValueError(
            f"EnvConfig.density_band={band!r} gives {fewest}..{most_drawn} mines; a {cfg.H}x{cfg.W} "
            f"board with {rule} allows [1, {most}]"
        )


@struct.dataclass
class EnvState:
    """One game. Batched states carry a leading batch axis on every field.

    Attributes:
      mine_mask: bool[H, W], the hidden mines (all False until the first reveal).
      counts: int8[H, W], mines among each cell's 8 neighbours (valid once placed).
      revealed: bool[H, W], cells the player has opened.
      flags: bool[H, W], the player's flags (never on a revealed cell).
      first_click_done: bool[], mines have been placed.
      step_count: int32[], steps taken in this game, invalid ones included.
      done: bool[], the game is over.
      won: bool[], every safe cell is revealed.
      mine_count: int32[], mines in this game.
      key: PRNG key of this game (mine placement; the next game's key under auto-reset).
      board: int32[], the entry of ``cfg.boards`` this game plays; None without boards.
    """

    mine_mask: jax.Array
    counts: jax.Array
    revealed: jax.Array
    flags: jax.Array
    first_click_done: jax.Array
    step_count: jax.Array
    done: jax.Array
    won: jax.Array
    mine_count: jax.Array
    key: jax.Array
    board: jax.Array | None = None


# ----------------------------------------------------------------------------- bit rows


def _row_mask(cfg: EnvConfig) -> jax.Array:
    return jnp.uint32((1 << cfg.W) - 1 if cfg.W < 32 else 0xFFFFFFFF)


def pack_rows(cells: jax.Array) -> jax.Array:
    """bool[..., H, W] -> uint32[..., H], bit ``c`` of row ``r`` is cell ``(r, c)``."""
    width = cells.shape[-1]
    weights = jnp.left_shift(jnp.uint32(1), jnp.arange(width, dtype=jnp.uint32))
    return jnp.sum(jnp.where(cells, weights, jnp.uint32(0)), axis=-1, dtype=jnp.uint32)


def unpack_rows(rows: jax.Array, width: int) -> jax.Array:
    """uint32[..., H] -> bool[..., H, W], the inverse of ``pack_rows``."""
    shifts = jnp.arange(width, dtype=jnp.uint32)
    return (jnp.right_shift(rows[..., None], shifts) & jnp.uint32(1)).astype(bool)


def _dilate_rows(rows: jax.Array, cfg: EnvConfig) -> jax.Array:
    """uint32[H] -> uint32[H]: each set cell and its 8 neighbours."""
    wide = (rows | (rows << 1) | (rows >> 1)) & _row_mask(cfg)
    zero = jnp.zeros((1,), jnp.uint32)
    above = jnp.concatenate([wide[1:], zero])
    below = jnp.concatenate([zero, wide[:-1]])
    return wide | above | below


def neighbour_sum(cells: jax.Array) -> jax.Array:
    """bool|int[..., H, W] -> int32[..., H, W]: sum over each cell's 8 neighbours."""
    padded = jnp.pad(cells.astype(jnp.int32), [(0, 0)] * (cells.ndim - 2) + [(1, 1), (1, 1)])
    height, width = cells.shape[-2:]
    total = jnp.zeros(cells.shape, jnp.int32)
    for dr in (0, 1, 2):
        for dc in (0, 1, 2):
            if (dr, dc) != (1, 1):
                total = total + padded[..., dr : dr + height, dc : dc + width]
    return total


def dilate(cells: jax.Array) -> jax.Array:
    """bool[..., H, W] -> bool[..., H, W]: each set cell and its 8 neighbours."""
    return (neighbour_sum(cells) > 0) | cells


# ----------------------------------------------------------------------------- board mixes


def _board_table(cfg: EnvConfig, column: int) -> jax.Array:
    """int32[K]: one column (0 rows, 1 cols, 2 fewest, 3 most) of ``cfg.boards``."""
    return jnp.asarray([board[column] for board in cfg.boards], jnp.int32)


def board_shape(state: EnvState, cfg: EnvConfig) -> tuple[Any, Any]:
    """``(rows, cols)`` of the board a game plays: int32[] each with ``boards``, else the
    static ``(H, W)`` as Python ints (so unpadded code compiles as before)."""
    if not cfg.boards:
        return cfg.H, cfg.W
    return _board_table(cfg, 0)[state.board], _board_table(cfg, 1)[state.board]


def playable(state: EnvState, cfg: EnvConfig) -> jax.Array:
    """bool[H, W]: the cells of the game's board (all of them without ``boards``)."""
    if not cfg.boards:
        return jnp.ones((cfg.H, cfg.W), bool)
    rows, cols = board_shape(state, cfg)
    return (jnp.arange(cfg.H)[:, None] < rows) & (jnp.arange(cfg.W)[None, :] < cols)


def _playable_rows(state: EnvState, cfg: EnvConfig) -> jax.Array:
    """uint32[H]: ``playable`` bit-packed (padded configs only)."""
    rows, cols = board_shape(state, cfg)
    shift = jnp.minimum(cols, 31).astype(jnp.uint32)
    full_row = jnp.where(cols >= 32, jnp.uint32(0xFFFFFFFF), jnp.left_shift(jnp.uint32(1), shift) - 1)
    return jnp.where(jnp.arange(cfg.H) < rows, full_row, jnp.uint32(0))


def _num_board_cells(state: EnvState, cfg: EnvConfig) -> Any:
    rows, cols = board_shape(state, cfg)
    return rows * cols


def _draw_board(key: jax.Array, cfg: EnvConfig, board_weights: jax.Array | None) -> jax.Array:
    """int32[]: an index into ``cfg.boards``, uniform or drawn by ``board_weights`` (float[K],
    non-negative, not all zero; they need not sum to 1)."""
    if board_weights is None:
        return jax.random.randint(key, (), 0, len(cfg.boards), dtype=jnp.int32)
    chex.assert_shape(board_weights, (len(cfg.boards),))
    return jax.random.categorical(key, jnp.log(board_weights)).astype(jnp.int32)


# ----------------------------------------------------------------------------- reset


def _draw_mine_count(key: jax.Array, cfg: EnvConfig) -> jax.Array:
    fewest, most = cfg.mine_count_range
    if fewest == most:
        return jnp.int32(fewest)
    return jax.random.randint(key, (), fewest, most + 1, dtype=jnp.int32)


def _empty_state(
    key: jax.Array, mine_count: jax.Array, cfg: EnvConfig, board: jax.Array | None = None
) -> EnvState:
    cells = jnp.zeros((cfg.H, cfg.W), bool)
    return EnvState(
        mine_mask=cells,
        counts=jnp.zeros((cfg.H, cfg.W), jnp.int8),
        revealed=cells,
        flags=cells,
        first_click_done=jnp.bool_(False),
        step_count=jnp.int32(0),
        done=jnp.bool_(False),
        won=jnp.bool_(False),
        mine_count=jnp.asarray(mine_count, jnp.int32),
        key=key,
        board=None if board is None else jnp.asarray(board, jnp.int32),
    )


def reset(key: jax.Array, cfg: EnvConfig, board_weights: jax.Array | None = None) -> EnvState:
    """A fresh game: nothing revealed, mines placed at the first reveal.

    Costs almost nothing: no random draw beyond the mine count of a density band (and,
    with ``boards``, the board: drawn by ``board_weights``, float[K], or uniformly when
    they are None; they are traced, so changing them does not recompile).
    """
    if cfg.boards:
        board_key, game_key = jax.random.split(key)
        return reset_on_board(game_key, cfg, _draw_board(board_key, cfg, board_weights))
    if cfg.density_band is None:
        return _empty_state(key, jnp.int32(cfg.mine_count), cfg)
    count_key, game_key = jax.random.split(key)
    return _empty_state(game_key, _draw_mine_count(count_key, cfg), cfg)


def reset_on_board(key: jax.Array, cfg: EnvConfig, board: Any) -> EnvState:
    """A fresh game on ``cfg.boards[board]`` (``board``: int or int32[], may be traced).

    With the same ``key`` it is the game ``reset(key, unpadded)`` deals on that board's own
    config (same mine count, same mines at the same first click), when all of ``boards``
    have fixed mine counts or all have ranges.
    """
    if not cfg.boards:
        raise ValueError("reset_on_board needs EnvConfig.boards; use reset for a single board")
    board = jnp.asarray(board, jnp.int32)
    fewest, most = _board_table(cfg, 2)[board], _board_table(cfg, 3)[board]
    if all(b[2] == b[3] for b in cfg.boards):
        return _empty_state(key, fewest, cfg, board)
    count_key, game_key = jax.random.split(key)
    count = jax.random.randint(count_key, (), fewest, most + 1, dtype=jnp.int32)
    return _empty_state(game_key, count, cfg, board)


def from_mines(
    mine_mask: jax.Array, cfg: EnvConfig, key: jax.Array | None = None, board: Any = None
) -> EnvState:
    """A game with exactly this layout (``bool[H, W]``); nothing moves at the first click.

    With ``cfg.boards``, ``board`` (an index into them) is required, and mines outside its
    playable cells are dropped.
    """
    mine_mask = jnp.asarray(mine_mask, bool)
    chex.assert_shape(mine_mask, (cfg.H, cfg.W))
    key = jax.random.key(0) if key is None else key
    if cfg.boards and board is None:
        raise ValueError("from_mines: EnvConfig.boards is set, so pass board= (an index into boards)")
    if not cfg.boards and board is not None:
        raise ValueError("from_mines: board= needs EnvConfig.boards")
    state = _empty_state(key, jnp.int32(0), cfg, board)
    if cfg.boards:
        mine_mask = mine_mask & playable(state, cfg)
    state = state.replace(mine_count=jnp.sum(mine_mask, dtype=jnp.int32))
    return state.replace(
        mine_mask=mine_mask,
        counts=neighbour_sum(mine_mask).astype(jnp.int8),
        first_click_done=jnp.bool_(True),
    )


def _place_mines(state: EnvState, cell: jax.Array, cfg: EnvConfig) -> EnvState:
    """Places ``state.mine_count`` mines uniformly among the cells the first click allows.

    Uses Floyd's algorithm, which draws a uniform k-subset of ``{0..n-1}`` with k random
    integers and no sort; the subset's indices are then mapped onto the allowed cells in
    row-major order. The cleared cells form a rectangle, so a cell's rank among the allowed
    cells is plain arithmetic (no prefix sum).
    """
    r, c = cell // cfg.W, cell % cfg.W
    # A padded board is its own rows x cols board: ranks count its cells only, so the same
    # draws give the same mines as on the unpadded board.
    board_rows, board_cols = board_shape(state, cfg)
    reach = 1 if cfg.guarantee_safe_neighborhood else 0
    top, bottom = jnp.maximum(r - reach, 0), jnp.minimum(r + reach, board_rows - 1)
    left, right = jnp.maximum(c - reach, 0), jnp.minimum(c + reach, board_cols - 1)
    block_width = right - left + 1
    rows = jnp.arange(cfg.H)[:, None]
    cols = jnp.arange(cfg.W)[None, :]
    in_rows = (rows >= top) & (rows <= bottom)
    excluded = in_rows & (cols >= left) & (cols <= right)
    cleared_before = jnp.clip(rows - top, 0, bottom - top + 1) * block_width + jnp.where(
        in_rows, jnp.clip(cols - left, 0, block_width), 0
    )
    rank = (rows * board_cols + cols - cleared_before).reshape(-1)
    num_allowed = board_rows * board_cols - (bottom - top + 1) * block_width

    k = state.mine_count
    _, most = cfg.mine_count_range
    place_key, next_key = jax.random.split(state.key)
    draws = jax.random.uniform(place_key, (most,))

    def floyd(i, chosen):
        j = num_allowed - k + i  # j runs over n-k .. n-1
        t = jnp.minimum((draws[i] * (j + 1)).astype(jnp.int32), j)
        pick = jnp.where(chosen[t], j, t)
        return jnp.where(i < k, chosen.at[pick].set(True), chosen)

    chosen = jax.lax.fori_loop(0, most, floyd, jnp.zeros(cfg.num_cells, bool))
    mine_mask = ~excluded & chosen[rank].reshape(cfg.H, cfg.W)
    if cfg.boards:
        mine_mask = mine_mask & playable(state, cfg)
    return state.replace(
        mine_mask=mine_mask,
        counts=neighbour_sum(mine_mask).astype(jnp.int8),
        first_click_done=jnp.bool_(True),
        key=next_key,
    )


# ----------------------------------------------------------------------------- step


def decode_action(action: Any, cfg: EnvConfig) -> tuple[Any, Any]:
    """``(cell, is_flag)`` of an action: ``a < H*W`` reveals cell ``a``, ``a >= H*W``
    toggles the flag on ``a - H*W``. Works on Python ints and on int arrays of any shape
    (``cell`` is a flat row-major index; ``divmod(cell, W)`` gives ``(row, col)``)."""
    return action % cfg.num_cells, action >= cfg.num_cells


def encode_action(cell: Any, is_flag: Any, cfg: EnvConfig) -> Any:
    """The action that reveals (``is_flag`` false) or flags flat ``cell``: the inverse of
    ``decode_action``. Python ints give an int; arrays give an array."""
    if isinstance(cell, int) and isinstance(is_flag, bool):
        return cell + cfg.num_cells if is_flag else cell
    return jnp.where(is_flag, cell + cfg.num_cells, cell)


def move_limit(cfg: EnvConfig) -> int:
    """Moves after which a game still running counts as lost: ``max_steps`` when set,
    else ``MOVES_PER_CELL * H * W`` (every cell revealed and flagged twice over)."""
    return cfg.max_steps or MOVES_PER_CELL * cfg.num_cells


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


def _decode(action: jax.Array, cfg: EnvConfig) -> tuple[jax.Array, jax.Array]:
    return decode_action(jnp.asarray(action, jnp.int32), cfg)


def _needs_mines(state: EnvState, action: jax.Array, cfg: EnvConfig) -> jax.Array:
    """bool[]: the action is the game's first reveal, so mines go down now."""
    cell, is_flag = _decode(action, cfg)
    hidden = ~state.revealed.reshape(-1)[cell]
    if cfg.boards:
        hidden = hidden & playable(state, cfg).reshape(-1)[cell]
    return ~state.done & ~state.first_click_done & ~is_flag & hidden


def _needs_cascade(state: EnvState, action: jax.Array, cfg: EnvConfig) -> jax.Array:
    """bool[]: the action reveals a hidden zero (mines already placed)."""
    cell, is_flag = _decode(action, cfg)
    zero = (state.counts.reshape(-1)[cell] == 0) & ~state.mine_mask.reshape(-1)[cell]
    hidden = ~state.revealed.reshape(-1)[cell]
    if cfg.boards:
        hidden = hidden & playable(state, cfg).reshape(-1)[cell]
    return ~state.done & ~is_flag & hidden & zero


def _zero_rows(state: EnvState, cfg: EnvConfig | None = None) -> jax.Array:
    """uint32[H]: the safe (playable) cells with no mine around them, bit-packed."""
    zero = (state.counts == 0) & ~state.mine_mask
    if cfg is not None and cfg.boards:
        zero = zero & playable(state, cfg)
    return pack_rows(zero)


def _click_rows(action: jax.Array, cfg: EnvConfig) -> jax.Array:
    """uint32[H]: the action's cell, bit-packed."""
    cell, _ = _decode(action, cfg)
    bit = jnp.left_shift(jnp.uint32(1), (cell % cfg.W).astype(jnp.uint32))
    return jnp.where(jnp.arange(cfg.H) == cell // cfg.W, bit, jnp.uint32(0))


def _cascade(zero_rows: jax.Array, click_rows: jax.Array, cfg: EnvConfig) -> jax.Array:
    """uint32[H]: the cells a reveal of the (safe) clicked cell opens: itself and, if it
    is a zero, its connected zero region and that region's border."""
    region = click_rows & zero_rows

    def grow(carry):
        _, current = carry
        return current, current | (_dilate_rows(current, cfg) & zero_rows)

    def changed(carry):
        previous, current = carry
        return jnp.any(previous != current)

    _, region = jax.lax.while_loop(changed, grow, (jnp.zeros_like(region), region))
    return _dilate_rows(region, cfg) | click_rows


def _place_if_needed(state: EnvState, action: jax.Array, cfg: EnvConfig) -> EnvState:
    cell, _ = _decode(action, cfg)
    placed = _place_mines(state, cell, cfg)
    needs = _needs_mines(state, action, cfg)
    return jax.tree.map(lambda new, old: jnp.where(needs, new, old), placed, state)


def _apply_action(
    state: EnvState, action: jax.Array, opened_rows: jax.Array, cfg: EnvConfig
) -> tuple[EnvState, jax.Array, jax.Array, dict[str, jax.Array]]:
    """The step once mines are in place; ``opened_rows`` (uint32[H]) is what revealing the
    action's cell opens if it is safe (``_cascade``)."""
    cell, is_flag = _decode(action, cfg)
    one_hot = (jnp.arange(cfg.num_cells) == cell).reshape(cfg.H, cfg.W)
    valid = ~state.done & ~state.revealed.reshape(-1)[cell]
    if cfg.boards:
        valid = valid & playable(state, cfg).reshape(-1)[cell]
    reveal = valid & ~is_flag
    toggle = valid & is_flag

    hit_mine = reveal & state.mine_mask.reshape(-1)[cell]
    opened = jnp.where(reveal & ~hit_mine, unpack_rows(opened_rows, cfg.W), one_hot & reveal)
    revealed = state.revealed | opened
    new_safe = jnp.sum(opened & ~state.revealed & ~state.mine_mask, dtype=jnp.int32)
    flags = jnp.where(toggle, state.flags ^ one_hot, state.flags) & ~revealed

    safe_cells = _num_board_cells(state, cfg) - state.mine_count
    won = ~hit_mine & (jnp.sum(revealed & ~state.mine_mask, dtype=jnp.int32) == safe_cells)
    won = won & state.first_click_done
    step_count = state.step_count + jnp.where(state.done, 0, 1)
    out_of_steps = (cfg.max_steps > 0) & (step_count >= cfg.max_steps) & ~state.done
    done = state.done | hit_mine | won | out_of_steps

    reward = cfg.progress_reward * new_safe - cfg.step_penalty
    if cfg.use_flag_shaping:
        on_mine = state.mine_mask.reshape(-1)[cell]
        shaping = jnp.where(on_mine, cfg.flag_correct_reward, cfg.flag_incorrect_reward)
        placing = ~state.flags.reshape(-1)[cell]
        shaping = jnp.where(placing, shaping, -shaping) * state.first_click_done
        reward = reward + jnp.where(toggle, shaping, 0.0)
    invalid = ~valid & ~state.done
    reward = jnp.where(invalid, -cfg.invalid_penalty, reward)
    # Running out of steps loses like a mine does, so stalling never beats trying.
    lost = hit_mine | (out_of_steps & ~won)
    reward = reward + jnp.where(won, cfg.win_reward, 0.0) + jnp.where(lost, cfg.loss_reward, 0.0)
    reward = jnp.where(state.done, 0.0, reward).astype(jnp.float32)

    next_state = state.replace(
        revealed=revealed,
        flags=flags,
        step_count=step_count,
        done=done,
        won=state.won | won,
    )
    info = {
        "invalid": invalid,
        "new_revealed": new_safe,
        "won": next_state.won,
        "lost": done & ~next_state.won,
        "steps": step_count,
        "revealed_fraction": jnp.sum(revealed & ~state.mine_mask, dtype=jnp.int32) / safe_cells,
    }
    return next_state, reward, done, info


def step(
    state: EnvState, action: jax.Array, cfg: EnvConfig
) -> tuple[EnvState, jax.Array, jax.Array, dict[str, jax.Array]]:
    """Plays one action on one board.

    Args:
      state: the game before the action.
      action: int32[], in ``[0, 2*H*W)``.
      cfg: the static config.

    Returns:
      ``(state, reward: float32[], done: bool[], info)``; ``info`` holds ``invalid``,
      ``new_revealed`` (safe cells opened by this step), ``won``, ``lost``, ``steps`` and
      ``revealed_fraction`` (of the safe cells), all scalars.
    """
    state = _place_if_needed(state, action, cfg)
    opened_rows = _cascade(_zero_rows(state, cfg), _click_rows(action, cfg), cfg)
    if cfg.boards:
        opened_rows = opened_rows & _playable_rows(state, cfg)
    return _apply_action(state, action, opened_rows, cfg)


# ----------------------------------------------------------------------------- batches


@functools.partial(jax.jit, static_argnums=(1, 2))
def batch_reset(
    key: jax.Array, cfg: EnvConfig, num_envs: int, board_weights: jax.Array | None = None
) -> EnvState:
    """``num_envs`` fresh games, each with its own key: an ``EnvState`` with a batch axis.

    With ``cfg.boards`` each game's board is drawn by ``board_weights`` (float[K]; uniform
    when None)."""
    keys = jax.random.split(key, num_envs)
    return jax.vmap(reset, in_axes=(0, None, None))(keys, cfg, board_weights)


def _map_pending(fn, pending: jax.Array, inputs: Any, outputs: Any) -> Any:
    """``outputs`` with ``outputs[i] = fn(inputs[i])`` for every board ``i`` in ``pending``.

    In a given step only some boards of a batch click for the first time or open a zero
    region, and under ``vmap`` the rare, costly work (mine placement, a cascade that loops
    until its slowest board converges) would run on every board. Instead the pending
    boards are gathered into chunks of a quarter of the batch and ``fn`` (batched) runs on
    those alone: a loop that usually runs once or twice, and not at all when no board is
    pending.

    Args:
      fn: batched function of the gathered inputs, returning a pytree shaped like one
        chunk of ``outputs``.
      pending: bool[B].
      inputs, outputs: pytrees of arrays with leading axis B.
    """
    num_envs = pending.shape[0]
    chunk = max(1, -(-num_envs // 4))

    def run_chunk(carry):
        outputs, pending = carry
        (index,) = jnp.nonzero(pending, size=chunk, fill_value=num_envs)
        gathered = jax.tree.map(lambda x: x[jnp.minimum(index, num_envs - 1)], inputs)
        results = fn(*gathered)
        outputs = jax.tree.map(lambda x, y: x.at[index].set(y, mode="drop"), outputs, results)
        return outputs, pending.at[index].set(False, mode="drop")

    outputs, _ = jax.lax.while_loop(lambda carry: jnp.any(carry[1]), run_chunk, (outputs, pending))
    return outputs


def _auto_reset(state: EnvState, cfg: EnvConfig, board_weights: jax.Array | None) -> EnvState:
    # Placement already moved ``key`` on to a fresh stream, and a game that ended before
    # its first reveal drew nothing from its key, so the next game may start from it.
    fresh = reset(state.key, cfg, board_weights)
    return jax.tree.map(lambda new, old: jnp.where(state.done, new, old), fresh, state)


@functools.partial(jax.jit, static_argnums=(2,))
def batch_step(
    states: EnvState, actions: jax.Array, cfg: EnvConfig, board_weights: jax.Array | None = None
) -> tuple[EnvState, jax.Array, jax.Array, dict[str, jax.Array]]:
    """Steps a batch of games and starts a new game on every board that finished.

    Equal to ``jax.vmap(step)`` followed by a reset of finished boards, but mine placement
    and cascades run only on the boards that need them (``_map_pending``), and the reset
    only when some board finished. The returned states of finished boards are already
    fresh games; the finished games' outcome is in ``done`` and ``info``.

    Args:
      states: ``EnvState`` with a leading batch axis ``[B]``.
      actions: int32[B].
      cfg: the static config.
      board_weights: float[K], with ``cfg.boards``: how the new games of finished boards
        pick their board (uniform when None). Traced: a curriculum changes them without
        recompiling.

    Returns:
      ``(states, reward: float32[B], done: bool[B], info)`` with ``info`` as in ``step``,
      each field ``[B]``.
    """
    chex.assert_shape(actions, states.done.shape)
    per_board = lambda fn: jax.vmap(fn, in_axes=(0, 0, None))  # noqa: E731
    cells = _decode(actions, cfg)[0]
    place = lambda s, c: jax.vmap(_place_mines, in_axes=(0, 0, None))(s, c, cfg)  # noqa: E731
    states = _map_pending(place, per_board(_needs_mines)(states, actions, cfg), (states, cells), states)

    click_rows = jax.vmap(_click_rows, in_axes=(0, None))(actions, cfg)
    zero_rows = jax.vmap(_zero_rows, in_axes=(0, None))(states, cfg)
    cascade = lambda z, c: jax.vmap(_cascade, in_axes=(0, 0, None))(z, c, cfg)  # noqa: E731
    needs_cascade = per_board(_needs_cascade)(states, actions, cfg)
    opened_rows = _map_pending(cascade, needs_cascade, (zero_rows, click_rows), click_rows)
    if cfg.boards:
        opened_rows = opened_rows & jax.vmap(_playable_rows, in_axes=(0, None))(states, cfg)

    apply = jax.vmap(_apply_action, in_axes=(0, 0, 0, None))
    states, reward, done, info = apply(states, actions, opened_rows, cfg)
    restart = jax.vmap(_auto_reset, in_axes=(0, None, None))
    states = jax.lax.cond(jnp.any(done), lambda s: restart(s, cfg, board_weights), lambda s: s, states)
    return states, reward, done, info


# ----------------------------------------------------------------------------- views


def frontier(state: EnvState, cfg: EnvConfig | None = None) -> jax.Array:
    """bool[H, W]: hidden cells next to a revealed cell (playable ones, given a padded ``cfg``)."""
    near = dilate(state.revealed) & ~state.revealed
    if cfg is not None and cfg.boards:
        near = near & playable(state, cfg)
    return near


def action_mask(state: EnvState, cfg: EnvConfig, frontier_only: Any = None) -> jax.Array:
    """bool[2*H*W]: the legal actions. Reveals and flags are legal on hidden cells.

    With ``frontier_only`` (default ``cfg.frontier_only_reveals``; may be a traced bool so a
    training loop can switch it off without recompiling) reveals are limited to the
    frontier whenever the frontier is not empty. A finished game has no legal action, and
    no padded cell ever is one.
    """
    hidden = ~state.revealed & ~state.done
    if cfg.boards:
        hidden = hidden & playable(state, cfg)
    if frontier_only is None:
        frontier_only = cfg.frontier_only_reveals
    near = frontier(state, cfg)
    restrict = jnp.asarray(frontier_only) & jnp.any(near)
    reveal_ok = jnp.where(restrict, hidden & near, hidden)
    return jnp.concatenate([reveal_ok.reshape(-1), hidden.reshape(-1)])


def num_channels(cfg: EnvConfig) -> int:
    """Channels of ``observe``: 11, plus 1 for the frontier, plus 2 for the scalars, plus 1
    for the playable cells of a board mix."""
    return NUM_BASE_CHANNELS + int(cfg.obs_frontier) + 2 * int(cfg.obs_scalars) + int(cfg.padded)


def observe(state: EnvState, cfg: EnvConfig) -> jax.Array:
    """float32[C, H, W], what the player sees.

    Channels: revealed, flags, one-hot of the number (0..8) on revealed cells; then the
    frontier (``obs_frontier``); then ``remaining_mines_ratio`` = (mines - flags) / mines
    and ``progress`` = revealed safe cells / safe cells, broadcast over the whole array
    (``obs_scalars``); then, with ``boards``, the playable cells (1 on the board, 0 on its
    padding), so the network tells the board's edge from hidden cells.
    """
    revealed = state.revealed
    numbers = (state.counts[None] == jnp.arange(9, dtype=jnp.int8)[:, None, None]) & revealed
    channels = [revealed[None], state.flags[None], numbers]
    if cfg.obs_frontier:
        channels.append(frontier(state, cfg)[None])
    planes = jnp.concatenate(channels).astype(jnp.float32)
    if cfg.obs_scalars:
        mines = jnp.maximum(state.mine_count, 1).astype(jnp.float32)
        remaining = (mines - jnp.sum(state.flags)) / mines
        progress = jnp.sum(revealed & ~state.mine_mask) / (_num_board_cells(state, cfg) - mines)
        scalars = jnp.stack([remaining, progress]).astype(jnp.float32)
        planes = jnp.concatenate([planes, jnp.broadcast_to(scalars[:, None, None], (2, cfg.H, cfg.W))])
    if cfg.boards:
        planes = jnp.concatenate([planes, playable(state, cfg)[None].astype(jnp.float32)])
    return planes


def render(state: EnvState, cfg: EnvConfig | None = None) -> str:
    """A plain-text picture of one board, for debugging and test messages.

    With a padded ``cfg``, only the game's board is drawn. ``#`` hidden, ``F`` flag, ``.``
    revealed zero, ``1``-``8`` numbers. Once the game is over the mines show: ``*`` a mine, ``X`` the mine that was hit, ``x`` a wrong flag.
    """
    import numpy as np  # host-side only

    rows, cols = np.asarray(state.revealed).shape
    if cfg is not None and cfg.boards:  # only the board, not its padding
        rows, cols = (int(x) for x in board_shape(state, cfg))
    revealed = np.asarray(state.revealed)[:rows, :cols]
    flags = np.asarray(state.flags)[:rows, :cols]
    mines = np.asarray(state.mine_mask)[:rows, :cols]
    counts = np.asarray(state.counts)[:rows, :cols]
    over = bool(np.asarray(state.done))
    lines = []
    for r in range(revealed.shape[0]):
        row = []
        for c in range(revealed.shape[1]):
            if revealed[r, c]:
                ch = "X" if mines[r, c] else ("." if counts[r, c] == 0 else str(counts[r, c]))
            elif over and mines[r, c]:
                ch = "F" if flags[r, c] else "*"
            elif flags[r, c]:
                ch = "x" if over else "F"
            else:
                ch = "#"
            row.append(ch)
        lines.append(" ".join(row))
    status = "won" if bool(np.asarray(state.won)) else ("lost" if over else "playing")
    lines.append(f"[{status}, step {int(np.asarray(state.step_count))}, {int(np.asarray(state.mine_count))} mines]")
    return "\n".join(lines)

"""The static description of a game (``EnvConfig``) and the checks that keep it playable.

A config is a frozen, hashable dataclass, passed to jitted functions as a static argument;
building one validates it, so a config that exists describes a game that can be dealt.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

from msjax.checks import check_fields, ints

MAX_WIDTH = 32
"""Widest board: a row of cells is bit-packed into one ``uint32``."""


class BoardSpec(NamedTuple):
    """An entry of ``EnvConfig.boards``: a board's size and its range of mine counts
    (a tuple, so it compares, hashes and serialises as ``(rows, cols, fewest, most)``)."""

    rows: int
    cols: int
    fewest: int
    most: int


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
      obs_counts: add two count channels: each revealed cell's number / 8 (0 on hidden
        cells), and each cell's hidden neighbours / 8 (on the board), so the first layer
        reads "as many hidden neighbours as the number" with the same weights for every
        number instead of one one-hot channel each. Off: on configs/small.py it changed
        nothing (docs/experiments/025-count-planes-in-the-observation.md).
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

    Raises:
      ValueError: on construction, naming the offending field and its allowed range.
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
    obs_counts: bool = False
    frontier_only_reveals: bool = False
    density_band: tuple[float, float] | None = None
    max_steps: int = 0
    boards: tuple[BoardSpec, ...] = ()

    def __post_init__(self):
        validate_config(self)
        # entries given as plain tuples (a config file, JSON) are read by field name
        object.__setattr__(self, "boards", tuple(BoardSpec(*board) for board in self.boards))

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


OBSERVATION_FIELDS = ("obs_frontier", "obs_counts", "obs_scalars")
"""The fields of ``EnvConfig`` that choose the observation's channels (with ``boards``)."""


def with_observation_of(cfg: EnvConfig, like: EnvConfig) -> EnvConfig:
    """``cfg``'s board and rules seen through ``like``'s observation channels: the config a
    network trained on ``like`` plays ``cfg``'s games with (the games, their draws and their
    outcomes do not depend on these fields)."""
    return dataclasses.replace(cfg, **{name: getattr(like, name) for name in OBSERVATION_FIELDS})


def max_mines(rows: int, cols: int, guarantee_safe_neighborhood: bool) -> int:
    """Most mines a ``rows x cols`` board holds once the first click (and, with the
    guarantee, its neighbourhood: a full 3x3 block where the board allows one) is clear."""
    cleared = min(rows, 3) * min(cols, 3) if guarantee_safe_neighborhood else 1
    return rows * cols - cleared


def board_spec(
    rows: int, cols: int, mines: int | None = None, density_band: tuple[float, float] | None = None
) -> BoardSpec:
    """An entry of ``EnvConfig.boards``: ``BoardSpec(rows, cols, fewest, most)`` mines.

    Give either ``mines`` (a fixed count) or ``density_band`` ``(low, high)``, which allows
    the whole mine counts in ``[ceil(low*rows*cols), floor(high*rows*cols)]`` (as
    ``EnvConfig.density_band`` does).

    Raises:
      ValueError: both or neither of ``mines`` and ``density_band`` given.
    """
    if (mines is None) == (density_band is None):
        raise ValueError(f"board_spec({rows}, {cols}): give exactly one of mines and density_band")
    if mines is not None:
        return BoardSpec(rows, cols, mines, mines)
    low, high = density_band
    cells = rows * cols
    return BoardSpec(rows, cols, math.ceil(low * cells - 1e-9), math.floor(high * cells + 1e-9))


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


def no_room_for_mines(rows: int, cols: int) -> str:
    """Why a ``rows x cols`` board holds no mine under the safe first-click neighbourhood
    (the first click and its neighbours are every cell), and what to do."""
    return (
        f"a {rows}x{cols} board holds no mine with a safe first-click neighbourhood (the first click "
        "and its neighbours clear every cell): use the safe-first-click option (--safe-first-click; "
        "EnvConfig.guarantee_safe_neighborhood=False) or a larger board"
    )


def _validate_density_band(cfg: EnvConfig, rule: str) -> None:
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
    most = cfg.max_mines_allowed
    if fewest < 1 or most_drawn > most:
        raise ValueError(
            f"EnvConfig.density_band={band!r} gives {fewest}..{most_drawn} mines; a {cfg.H}x{cfg.W} "
            f"board with {rule} allows [1, {most}]"
        )


def validate_config(cfg: EnvConfig) -> None:
    """Raises ``ValueError`` naming the offending field and its allowed range."""
    check_fields(cfg, (
        (ints(1), ("H",)),
        (ints(1, MAX_WIDTH).noted("rows are bit-packed into uint32"), ("W",)),
        (ints(), ("mine_count",)),
        (ints(0).noted("0 = no limit"), ("max_steps",)),
    ))
    if cfg.H * cfg.W < 2:
        raise ValueError(f"EnvConfig: a {cfg.H}x{cfg.W} board has fewer than 2 cells")
    if cfg.boards:
        _validate_boards(cfg)
    rule = "a safe first-click neighbourhood" if cfg.guarantee_safe_neighborhood else "a safe first click"
    if cfg.density_band is not None:
        _validate_density_band(cfg, rule)
        return
    most = cfg.max_mines_allowed
    if most < 1:
        raise ValueError(f"EnvConfig.mine_count={cfg.mine_count}: {no_room_for_mines(cfg.H, cfg.W)}")
    if not 1 <= cfg.mine_count <= most:
        raise ValueError(
            f"EnvConfig.mine_count={cfg.mine_count} does not fit a {cfg.H}x{cfg.W} board "
            f"with {rule}: allowed range is [1, {most}]"
        )

"""A curriculum over board sizes and mine densities, inside one compiled training loop.

The boards of a curriculum are the entries of ``EnvConfig.boards`` (padded to one
``H x W`` array, see ``msjax.env``), in order: level ``s`` trains mostly on board ``s``. (A *level* of the curriculum is
not a *stage* of training, imitation or PPO: the whole curriculum runs in the PPO stage.)
Which board each new game plays is drawn from *board weights* that the training state
carries as a traced array (``CurriculumState``), so one compiled training chunk serves
every level: a promotion replaces the weights, it never recompiles.

Between chunks, the runner evaluates the greedy policy on every board and calls
``promote``: when the win rate on the current level's board passes that level's
threshold (``promote_at``, the seed's "promote when eval win-rate > threshold"), the
next level starts and the weights follow ``mixture_weights``: the current board takes
what is left after ``replay_fraction`` (shared by the earlier boards, so they are not
forgotten) and ``preview_fraction`` (the next board, "mixed in" before its promotion).
The level, the weights and the update at which each level began are checkpointed with
the rest of the training state, so a resumed run keeps its level (stored as
``curriculum.stage``, the checkpoint's array name).

``evaluate_boards`` plays the greedy policy on every board of a mix, the evaluation that
``promote`` reads. Beyond that this module is pure bookkeeping: no files, no logging
(``msjax.train`` does those). The seed's other curriculum aid, random first clicks, is
``batchplay.random_first_clicks``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from msjax import env as ms_env
from msjax import evaluate as evaluate_lib


@dataclasses.dataclass(frozen=True)
class CurriculumConfig:
    """Promotion thresholds and the board mixture; the boards are ``env.boards``.

    Attributes:
      enabled: promote through ``env.boards`` in order; when False a board mix trains on
        all boards uniformly, with no levels.
      promote_at: eval win rate on board ``s`` (greedy policy, fresh boards) that must be
        exceeded to move on to level ``s + 1``; one threshold per board but the last,
        each in [0, 1].
      replay_fraction: share of new games dealt on the earlier boards (uniformly), in [0, 1).
      preview_fraction: share of new games dealt on the next board before its promotion,
        in [0, 1); ``replay_fraction + preview_fraction < 1``.
      eval_mines: the mine count each board is evaluated at (e.g. the standard 10, 40,
        99), one per board, within its range; empty: evaluate over each board's range.
    """

    enabled: bool = False
    promote_at: tuple[float, ...] = ()
    replay_fraction: float = 0.2
    preview_fraction: float = 0.1
    eval_mines: tuple[int, ...] = ()

    def __post_init__(self):
        if not isinstance(self.enabled, bool):
            raise ValueError(f"CurriculumConfig.enabled={self.enabled!r} must be a bool")
        if not isinstance(self.promote_at, tuple) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and 0.0 <= x <= 1.0 for x in self.promote_at
        ):
            raise ValueError(
                f"CurriculumConfig.promote_at={self.promote_at!r} must be a tuple of win rates in [0, 1]"
            )
        if not isinstance(self.eval_mines, tuple) or not all(
            isinstance(x, int) and not isinstance(x, bool) for x in self.eval_mines
        ):
            raise ValueError(f"CurriculumConfig.eval_mines={self.eval_mines!r} must be a tuple of ints")
        for name in ("replay_fraction", "preview_fraction"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise ValueError(f"CurriculumConfig.{name}={value!r} must be in [0, 1)")
        if self.replay_fraction + self.preview_fraction >= 1.0:
            raise ValueError(
                f"CurriculumConfig.replay_fraction + preview_fraction = "
                f"{self.replay_fraction + self.preview_fraction} must be < 1 (the current board needs a share)"
            )


def validate_with_env(cfg: CurriculumConfig, env_cfg: ms_env.EnvConfig) -> None:
    """Raises ``ValueError`` when the curriculum does not fit ``env_cfg.boards``."""
    if cfg.eval_mines:
        if len(cfg.eval_mines) != len(env_cfg.boards):
            raise ValueError(
                f"curriculum.eval_mines={cfg.eval_mines!r} needs one mine count per board of "
                f"env.boards ({len(env_cfg.boards)})"
            )
        for i, (mines, board) in enumerate(zip(cfg.eval_mines, env_cfg.boards)):
            if not board[2] <= mines <= board[3]:
                raise ValueError(
                    f"curriculum.eval_mines[{i}]={mines} is outside board {board_name(board)}'s "
                    f"range [{board[2]}, {board[3]}]"
                )
    if not cfg.enabled:
        return
    if len(env_cfg.boards) < 2:
        raise ValueError(
            f"curriculum.enabled needs at least 2 boards in env.boards, got {len(env_cfg.boards)}"
        )
    if len(cfg.promote_at) != len(env_cfg.boards) - 1:
        raise ValueError(
            f"curriculum.promote_at={cfg.promote_at!r} needs one threshold per board but the last: "
            f"{len(env_cfg.boards) - 1} for {len(env_cfg.boards)} boards"
        )


@struct.dataclass
class CurriculumState:
    """The curriculum's part of the training state (all traced arrays).

    Attributes:
      stage: int32[], the curriculum's level: the board being learnt (an index into
        ``env.boards``); named ``stage`` in checkpoints, so it keeps that name.
      board_weights: float32[K], how new games pick their board.
      entered_at: int32[K], the PPO update at which each level began (-1: not yet).
    """

    stage: jax.Array
    board_weights: jax.Array
    entered_at: jax.Array


def mixture_weights(level: int, num_boards: int, cfg: CurriculumConfig) -> np.ndarray:
    """float32[K]: the board weights of ``level`` (uniform when the curriculum is off)."""
    if not cfg.enabled:
        return np.full(num_boards, 1.0 / num_boards, np.float32)
    weights = np.zeros(num_boards, np.float64)
    if level > 0:
        weights[:level] = cfg.replay_fraction / level
    if level < num_boards - 1:
        weights[level + 1] = cfg.preview_fraction
    weights[level] = 1.0 - weights.sum()
    return weights.astype(np.float32)


def init_state(env_cfg: ms_env.EnvConfig, cfg: CurriculumConfig | None = None) -> CurriculumState | None:
    """Level 0 of a board mix (None without ``env_cfg.boards``)."""
    if not env_cfg.boards:
        return None
    cfg = CurriculumConfig() if cfg is None else cfg
    num_boards = len(env_cfg.boards)
    entered_at = np.full(num_boards, -1, np.int32)
    entered_at[0] = 0
    return CurriculumState(
        stage=jnp.int32(0),
        board_weights=jnp.asarray(mixture_weights(0, num_boards, cfg)),
        entered_at=jnp.asarray(entered_at),
    )


def promote(
    state: CurriculumState, win_rates: Sequence[float], update: int, cfg: CurriculumConfig
) -> tuple[CurriculumState, bool]:
    """The state after an evaluation, and whether it promoted.

    Args:
      state: the current curriculum state (concrete, host side).
      win_rates: eval win rate per board, ``[K]``.
      update: the PPO update counter at this evaluation.
      cfg: the curriculum.

    Promotes by one level at most, when the curriculum is on, the level is not the last
    and ``win_rates[level] > promote_at[level]``. The new arrays keep their shapes and
    dtypes, so the compiled chunk runs on unchanged.
    """
    level = int(state.stage)
    num_boards = int(state.board_weights.shape[0])
    if not cfg.enabled or level >= num_boards - 1 or not win_rates[level] > cfg.promote_at[level]:
        return state, False
    entered_at = np.asarray(state.entered_at).copy()
    entered_at[level + 1] = update
    promoted = CurriculumState(
        stage=jnp.int32(level + 1),
        board_weights=jnp.asarray(mixture_weights(level + 1, num_boards, cfg)),
        entered_at=jnp.asarray(entered_at, jnp.int32),
    )
    return promoted, True


# ----------------------------------------------------------------------------- boards


def board_name(board: tuple[int, int, int, int]) -> str:
    """``"16x30x99"`` for a fixed mine count, ``"16x30x58-96"`` for a range."""
    rows, cols, fewest, most = board
    mines = str(fewest) if fewest == most else f"{fewest}-{most}"
    return f"{rows}x{cols}x{mines}"


def board_env(env_cfg: ms_env.EnvConfig, board: int, mines: int | None = None) -> ms_env.EnvConfig:
    """``env_cfg`` dealing only ``boards[board]`` (with exactly ``mines`` mines, if given),
    padded as in training (same observation), for evaluating one board."""
    rows, cols, fewest, most = env_cfg.boards[board]
    if mines is not None:
        fewest = most = mines
    return dataclasses.replace(env_cfg, boards=((rows, cols, fewest, most),))


def imitation_env(env_cfg: ms_env.EnvConfig) -> ms_env.EnvConfig:
    """The game the imitation stage plays: a board mix's first board, unpadded (the rule
    solver reads whole boards) but with the same observation channels; else ``env_cfg``."""
    if not env_cfg.boards:
        return env_cfg
    rows, cols, fewest, most = env_cfg.boards[0]
    return dataclasses.replace(env_cfg, H=rows, W=cols, mine_count=fewest, boards=((rows, cols, fewest, most),))


# ----------------------------------------------------------------------------- evaluation


def evaluate_boards(
    agent: Any,
    env_cfg: ms_env.EnvConfig,
    episodes: int,
    seed: int,
    batch_size: int,
    eval_mines: Sequence[int | None],
) -> dict[str, Any]:
    """``episodes`` games on each board of a board mix, padded as in training, board ``i``
    with ``eval_mines[i]`` mines (None: over its range).

    Returns the last board's figures (the curriculum's target: its win rate is the run's
    headline and picks the best checkpoint) plus, per board NAME, ``win_rate/NAME`` and
    ``revealed_fraction/NAME``, and for a board with a mine range ``win_rate/NAME/sparse``
    and ``win_rate/NAME/dense`` (games with at most / more than the range's midpoint).
    """
    results: dict[str, Any] = {}
    for index, (board, mines) in enumerate(zip(env_cfg.boards, eval_mines)):
        board_cfg = board_env(env_cfg, index, mines)
        games = evaluate_lib.play_games(agent.for_board(board_cfg), board_cfg, episodes, seed, batch_size)
        summary = evaluate_lib.summarize_games(games)
        name = board_name(board)
        results.update(summary)  # the last board's figures stay
        results[f"win_rate/{name}"] = summary["win_rate"]
        results[f"revealed_fraction/{name}"] = summary["revealed_fraction"]
        fewest, most = board_cfg.boards[0][2:]
        if fewest < most:
            sparse = games["mine_count"] <= (fewest + most) / 2
            for label, games_here in (("sparse", sparse), ("dense", ~sparse)):
                won = games["won"][games_here]
                results[f"win_rate/{name}/{label}"] = float(won.mean()) if won.size else float("nan")
    return results


def board_win_rates(results: dict[str, Any], env_cfg: ms_env.EnvConfig) -> list[float]:
    """The ``win_rate/NAME`` of every board of the mix, in order (for ``promote``)."""
    return [results[f"win_rate/{board_name(board)}"] for board in env_cfg.boards]


def rollout_metrics(
    done: jax.Array, won: jax.Array, board: jax.Array, state: CurriculumState, board_names: list[str]
) -> dict[str, jax.Array]:
    """Scalars of one PPO rollout of a board mix: the curriculum's level (stored as
    ``curriculum_stage``) and, per board NAME of the mix, ``games_share/NAME`` (its share
    of the finished games) and ``win_rate_train/NAME``.

    Args:
      done, won: bool[steps, games], a game ended (was won) at that step.
      board: int32[steps, games], the board of the mix each game plays.
    """
    finished = jnp.sum(done, dtype=jnp.float32)
    metrics = {"curriculum_stage": state.stage.astype(jnp.float32)}
    for index, name in enumerate(board_names):
        ends_here = done & (board == index)
        games = jnp.sum(ends_here, dtype=jnp.float32)
        metrics[f"games_share/{name}"] = games / jnp.maximum(finished, 1.0)
        won_here = jnp.sum(won & ends_here, dtype=jnp.float32)
        metrics[f"win_rate_train/{name}"] = won_here / jnp.maximum(games, 1.0)
    return metrics

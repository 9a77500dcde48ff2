"""A curriculum over board sizes and mine densities, inside one compiled training loop.

The boards of a curriculum are the entries of ``EnvConfig.boards`` (padded to one
``H x W`` array, see ``msjax.env``), in order: level ``k`` trains mostly on board ``k``. (A *level* of the curriculum is
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
the rest of the training state, so a resumed run keeps its level.

``evaluate.evaluate_boards`` plays the greedy policy on every board of a mix, the
evaluation that ``promote`` reads (``evaluate.board_win_rates``). Beyond that this module is pure bookkeeping: no files, no logging
(``msjax.run.loop`` does those). The seed's other curriculum aid, random first clicks, is
``batchplay.random_first_clicks``.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from msjax import env as ms_env
from msjax.checks import BOOL, check_fields, ints, numbers, tuple_of


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
        check_fields(self, (
            (BOOL, ("enabled",)),
            (tuple_of(numbers(0, 1).noted("a win rate")), ("promote_at",)),
            (tuple_of(ints()), ("eval_mines",)),
            (numbers(0, 1, high_open=True), ("replay_fraction", "preview_fraction")),
        ))
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
            if not board.fewest <= mines <= board.most:
                raise ValueError(
                    f"curriculum.eval_mines[{i}]={mines} is outside board {ms_env.board_name(board)}'s "
                    f"range [{board.fewest}, {board.most}]"
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
      level: int32[], the curriculum's level: the board being learnt (an index into
        ``env.boards``); checkpoints written before it was renamed store it as
        ``curriculum.stage``, read as ``level`` (``msjax.run.integrity.RENAMED_ARRAYS``).
      board_weights: float32[K], how new games pick their board.
      entered_at: int32[K], the PPO update at which each level began (-1: not yet).
    """

    level: jax.Array
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
        level=jnp.int32(0),
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
    level = int(state.level)
    num_boards = int(state.board_weights.shape[0])
    if not cfg.enabled or level >= num_boards - 1 or not win_rates[level] > cfg.promote_at[level]:
        return state, False
    entered_at = np.asarray(state.entered_at).copy()
    entered_at[level + 1] = update
    promoted = CurriculumState(
        level=jnp.int32(level + 1),
        board_weights=jnp.asarray(mixture_weights(level + 1, num_boards, cfg)),
        entered_at=jnp.asarray(entered_at, jnp.int32),
    )
    return promoted, True


# ----------------------------------------------------------------------------- metrics


def board_mix_metrics(
    done: jax.Array, won: jax.Array, board: jax.Array, state: CurriculumState, board_names: list[str]
) -> dict[str, jax.Array]:
    """Scalars of one PPO rollout of a board mix: the curriculum's level
    (``curriculum_level``; ``curriculum_stage`` in runs written before the rename) and, per board NAME of the mix, ``games_share/NAME`` (its share
    of the finished games) and ``win_rate_train/NAME``.

    Args:
      done: bool[steps, games], a game ended at that step.
      won: bool[steps, games], a game was won at that step.
      board: int32[steps, games], the board of the mix each game plays.
    """
    finished = jnp.sum(done, dtype=jnp.float32)
    metrics = {"curriculum_level": state.level.astype(jnp.float32)}
    for index, name in enumerate(board_names):
        ends_here = done & (board == index)
        games = jnp.sum(ends_here, dtype=jnp.float32)
        metrics[f"games_share/{name}"] = games / jnp.maximum(finished, 1.0)
        won_here = jnp.sum(won & ends_here, dtype=jnp.float32)
        metrics[f"win_rate_train/{name}"] = won_here / jnp.maximum(games, 1.0)
    return metrics

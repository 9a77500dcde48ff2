"""Evaluation of every board of a board mix (``EnvConfig.boards``): the figures a run
logs for a mix, and that promote a curriculum to its next level."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from msjax import env as ms_env
from msjax.evaluate.games import play_games
from msjax.evaluate.summary import summarize_games


def evaluate_boards(
    agent: Any,
    env_cfg: ms_env.EnvConfig,
    episodes: int,
    seed: int,
    batch_size: int,
    eval_mines: Sequence[int | None],
    on_batch: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """``episodes`` games on each board of a board mix, padded as in training, board ``i``
    with ``eval_mines[i]`` mines (None: over its range); ``on_batch`` as in ``evaluate``.

    Returns the last board's figures (the curriculum's target: its win rate is the run's
    headline and picks the best checkpoint) plus, per board NAME, ``win_rate/NAME`` and
    ``revealed_fraction/NAME``, and for a board with a mine range ``win_rate/NAME/sparse``
    and ``win_rate/NAME/dense`` (games with at most / more than the range's midpoint).
    """
    results: dict[str, Any] = {}
    for index, (board, mines) in enumerate(zip(env_cfg.boards, eval_mines)):
        board_cfg = ms_env.board_env(env_cfg, index, mines)
        games = play_games(agent.for_board(board_cfg), board_cfg, episodes, seed, batch_size, on_batch=on_batch)
        summary = summarize_games(games)
        name = ms_env.board_name(board)
        results.update(summary)  # the last board's figures stay
        results[f"win_rate/{name}"] = summary["win_rate"]
        results[f"revealed_fraction/{name}"] = summary["revealed_fraction"]
        fewest, most = board_cfg.boards[0].fewest, board_cfg.boards[0].most
        if fewest < most:
            sparse = games["mine_count"] <= (fewest + most) / 2
            for label, games_here in (("sparse", sparse), ("dense", ~sparse)):
                won = games["won"][games_here]
                results[f"win_rate/{name}/{label}"] = float(won.mean()) if won.size else float("nan")
    return results


def board_win_rates(results: dict[str, Any], env_cfg: ms_env.EnvConfig) -> list[float]:
    """The ``win_rate/NAME`` of every board of the mix, in order (what a curriculum's
    promotion reads)."""
    return [results[f"win_rate/{ms_env.board_name(board)}"] for board in env_cfg.boards]

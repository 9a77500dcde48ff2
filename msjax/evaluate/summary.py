"""What a player's games tell: win rate with its interval, progress, speed, invalid
moves, and the return split into its reward components.

``evaluate`` plays ``episodes`` games with ``play_games`` and summarises them.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from msjax import env as ms_env
from msjax.evaluate.games import play_games
from msjax.stats import wilson_interval


def summarize_games(games: dict[str, np.ndarray]) -> dict[str, Any]:
    """The evaluation figures of per-game results from ``play_games``."""
    won = games["won"]
    episodes = int(won.size)
    wins = int(won.sum())
    lost = ~won
    steps = games["steps"]
    return {
        "episodes": episodes,
        "win_rate": wins / episodes,
        "win_rate_ci95": wilson_interval(wins, episodes),
        "revealed_fraction": float(games["revealed_fraction"].mean()),
        "steps_to_win": float(steps[won].mean()) if wins else float("nan"),
        "steps_to_loss": float(steps[lost].mean()) if wins < episodes else float("nan"),
        "invalid_action_rate": float(games["invalid"].sum() / max(1, steps.sum())),
        "mean_return": float(games["returns"].mean()),
        "unfinished": int((~games["finished"]).sum()),
    }


def reward_components(games: dict[str, np.ndarray], cfg: ms_env.EnvConfig) -> dict[str, float]:
    """The mean return per game split by where it came from (the env's reward rules).

    ``progress`` (``progress_reward`` per safe cell opened), ``win`` and ``loss`` (the
    terminal rewards), ``step_penalty`` (every valid move), ``invalid`` (invalid moves), and
    ``flag_shaping``: the rest of the return, which only flag shaping earns (0 without
    ``use_flag_shaping``, up to float rounding). Needs ``play_games``'s ``revealed_cells``.
    """
    won = games["won"]
    lost = games["finished"] & ~won
    valid_moves = games["steps"] - games["invalid"]
    parts = {
        "progress": cfg.progress_reward * games["revealed_cells"],
        "win": cfg.win_reward * won,
        "loss": cfg.loss_reward * lost,
        "step_penalty": -cfg.step_penalty * valid_moves,
        "invalid": -cfg.invalid_penalty * games["invalid"],
    }
    means = {name: float(np.mean(value)) for name, value in parts.items()}
    means["flag_shaping"] = float(games["returns"].mean()) - sum(means.values())
    return means


def evaluate(
    agent: Any,
    env_cfg: ms_env.EnvConfig,
    episodes: int = 1000,
    seed: int = 0,
    batch_size: int = 1024,
    max_steps: int | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Plays ``episodes`` games of ``env_cfg`` with ``agent`` and returns its figures.

    Args:
      agent: a ``msjax.agent.Player`` (an object with ``act(state, key) -> int32[]`` on one
        ``EnvState``, e.g. ``msjax.load_agent(...)``), or such an ``act`` function.
      env_cfg: the game to play.
      episodes: games to play, each on a fresh board.
      seed: picks the boards and the agent's keys.
      batch_size: games stepped together on the device.
      max_steps: a game still running after this many steps is a loss (default
        ``env.move_limit(env_cfg)``).
      on_batch: called after each batch with its number of games (``play_in_batches``);
        what it raises ends the evaluation there.

    Returns:
      ``win_rate``, ``win_rate_ci95`` (Wilson ``(low, high)``), ``revealed_fraction`` (mean
      fraction of safe cells revealed), ``steps_to_win`` and ``steps_to_loss`` (means, nan
      when there are none), ``invalid_action_rate`` (invalid actions per action taken),
      ``mean_return`` and its ``reward_components`` (``reward_components``), ``episodes``
      and ``unfinished`` (games stopped by the step cap). Guesses per game, avoidable
      guesses and calibration come from ``msjax.evaluate.diagnostics.diagnose``, which runs the
      solver on every position.

    Raises:
      ValueError: ``episodes``, ``batch_size`` or ``max_steps`` below 1.
    """
    games = play_games(agent, env_cfg, episodes, seed, batch_size, max_steps, on_batch)
    return {**summarize_games(games), "reward_components": reward_components(games, env_cfg)}

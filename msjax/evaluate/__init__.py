"""Plays whole games with a player on fresh boards and summarises how it did.

``evaluate(player, env_cfg, episodes)`` runs ``episodes`` games in vmapped batches on the
device, one game per batch slot (``games``), and returns the figures of ``summary``.
``evaluate_boards`` plays every board of a board mix. ``turns`` plays single games move by move on the host, for people and figures.
``python -m msjax evaluate`` is the command line (``msjax.cli.evaluate``).
"""

from msjax.evaluate.boards import board_win_rates, evaluate_boards
from msjax.evaluate.games import (
    MAX_GAMES,
    game_keys,
    play_batch,
    play_games,
    play_in_batches,
    player_actions,
    split_game_keys,
)
from msjax.evaluate.summary import evaluate, reward_components, summarize_games
from msjax.evaluate.turns import (
    TakeTurn,
    Turn,
    agent_beliefs,
    agent_turns,
    apply_move,
    game_turns,
    new_game,
    play_out,
    record_turns,
    solver_hint,
    solver_turns,
)

__all__ = [
    "MAX_GAMES",
    "TakeTurn",
    "Turn",
    "agent_beliefs",
    "agent_turns",
    "apply_move",
    "board_win_rates",
    "evaluate",
    "evaluate_boards",
    "game_keys",
    "game_turns",
    "new_game",
    "play_batch",
    "play_games",
    "play_in_batches",
    "play_out",
    "player_actions",
    "record_turns",
    "reward_components",
    "solver_hint",
    "solver_turns",
    "split_game_keys",
    "summarize_games",
]

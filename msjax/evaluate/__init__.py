"""Plays whole games with a player on fresh boards and summarises how it did.

``evaluate(player, env_cfg, episodes)`` runs ``episodes`` games in vmapped batches on the
device, one game per batch slot (``games``), and returns the figures of ``summary``.
``evaluate_boards`` plays every board of a board mix. ``turns`` plays single games move by move on the host, for people and figures.
``paired`` compares players on the same boards (per-board outcomes, the files that keep them,
the paired difference), ``layouts`` plays fixed mine layouts with the JAX solver and the
host's reference player. ``python -m msjax evaluate`` and ``python -m msjax paired`` are the
command lines (``msjax.cli.evaluate``, ``msjax.cli.paired``).
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
from msjax.evaluate.layouts import (
    block_mask,
    candidate_cells,
    coupled_layouts,
    device_solver_config,
    device_wins,
    draw_layouts,
    host_wins,
    opening_click,
)
from msjax.evaluate.paired import (
    agent_wins,
    boards_played,
    check_same_boards,
    load_saved,
    paired_row,
    percent_cells,
    save_rows,
    saved_board,
    saved_games,
    saved_outcomes,
    split_row_spec,
    unrecorded_warning,
    vs_first,
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
    "agent_beliefs",
    "agent_turns",
    "agent_wins",
    "apply_move",
    "block_mask",
    "board_win_rates",
    "boards_played",
    "candidate_cells",
    "check_same_boards",
    "coupled_layouts",
    "device_solver_config",
    "device_wins",
    "draw_layouts",
    "evaluate",
    "evaluate_boards",
    "game_keys",
    "game_turns",
    "host_wins",
    "load_saved",
    "new_game",
    "opening_click",
    "paired_row",
    "percent_cells",
    "play_batch",
    "play_games",
    "play_in_batches",
    "play_out",
    "player_actions",
    "record_turns",
    "reward_components",
    "save_rows",
    "saved_board",
    "saved_games",
    "saved_outcomes",
    "solver_hint",
    "solver_turns",
    "split_game_keys",
    "split_row_spec",
    "summarize_games",
    "TakeTurn",
    "Turn",
    "unrecorded_warning",
    "vs_first",
]

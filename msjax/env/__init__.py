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
* An invalid action (any action on a revealed cell, i.e. one ``action_mask`` rules out,
  or a number outside ``[0, 2*H*W)``) costs ``invalid_penalty``, leaves the board
  unchanged, and sets ``info["invalid"]``; it still counts as a step towards ``max_steps``. A step on a finished game does
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

Modules, in the order data flows: ``config`` (``EnvConfig`` and its checks), ``state``
(``EnvState``), ``bits`` (bit rows and neighbour sums), ``boards`` (standard boards by
name, the boards of a mix), ``rules`` (actions, new games, mine placement, the flood fill,
``step``), ``batch`` (``batch_reset``, ``batch_step`` with auto-reset,
``batch_random_first_clicks``, ``select_games``), ``views``
(``frontier``, ``action_mask``, ``observe``, ``board_symbols``, ``render``).
"""

from msjax.env.batch import batch_random_first_clicks, batch_random_reveals, batch_reset, batch_step, select_games
from msjax.env.bits import dilate, neighbour_sum, pack_rows, unpack_rows
from msjax.env.boards import STANDARD_BOARDS, board_config, board_env, board_name, board_shape, parse_board, playable
from msjax.env.config import (
    MAX_WIDTH,
    OBSERVATION_FIELDS,
    BoardSpec,
    EnvConfig,
    board_spec,
    max_mines,
    validate_config,
    with_observation_of,
)
from msjax.env.rules import (
    MOVES_PER_CELL,
    decode_action,
    encode_action,
    from_mines,
    move_limit,
    reset,
    reset_on_board,
    step,
)
from msjax.env.state import EnvState
from msjax.env.views import (
    NUM_BASE_CHANNELS,
    action_mask,
    board_symbols,
    frontier,
    known_safe,
    num_channels,
    observe,
    render,
    with_rule_certainties,
)

__all__ = [
    "MAX_WIDTH",
    "MOVES_PER_CELL",
    "NUM_BASE_CHANNELS",
    "OBSERVATION_FIELDS",
    "STANDARD_BOARDS",
    "EnvConfig",
    "EnvState",
    "action_mask",
    "batch_random_first_clicks",
    "batch_random_reveals",
    "batch_reset",
    "batch_step",
    "select_games",
    "board_shape",
    "board_symbols",
    "board_spec",
    "board_config",
    "board_env",
    "board_name",
    "BoardSpec",
    "decode_action",
    "dilate",
    "encode_action",
    "from_mines",
    "frontier",
    "known_safe",
    "max_mines",
    "move_limit",
    "neighbour_sum",
    "num_channels",
    "observe",
    "pack_rows",
    "parse_board",
    "playable",
    "render",
    "reset",
    "reset_on_board",
    "step",
    "unpack_rows",
    "validate_config",
    "with_observation_of",
    "with_rule_certainties",
]

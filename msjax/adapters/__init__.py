"""msjax's env behind the interfaces other JAX RL code speaks: gymnax and Jumanji.

``make(board, api)`` builds one (``APIS``). The adapter classes import gymnax or Jumanji
(optional extras), so they load on first use: ``import msjax.adapters`` needs neither.

Modules: ``core`` (shared, no extra: ``game_step``, which keeps the batch
step's speed under ``jax.vmap``, ``episode_end``, ``restart_ended``, and the checks at the
door, ``check_key``, ``check_board_shape``, ``check_bool``), ``gymnax_env``
(``GymnaxMinesweeper``), ``jumanji_env`` (``JumanjiMinesweeper``), ``factory`` (``make``).
"""

from msjax.adapters.core import (
    check_board_shape,
    check_bool,
    check_key,
    episode_end,
    game_step,
    restart_ended,
)
from msjax.adapters.factory import APIS, INSTALL, make

_LAZY = {
    "GymnaxMinesweeper": "gymnax_env",
    "LegacyGymnaxMinesweeper": "gymnax_env",
    "MinesweeperParams": "gymnax_env",
    "MinesweeperState": "gymnax_env",
    "legal_actions_in_observation": "gymnax_env",
    "params_of": "gymnax_env",
    "JumanjiMinesweeper": "jumanji_env",
    "MinesweeperObservation": "jumanji_env",
}

__all__ = [
    "APIS",
    "INSTALL",
    "GymnaxMinesweeper",
    "JumanjiMinesweeper",
    "LegacyGymnaxMinesweeper",
    "MinesweeperObservation",
    "MinesweeperParams",
    "MinesweeperState",
    "check_board_shape",
    "check_bool",
    "check_key",
    "episode_end",
    "game_step",
    "legal_actions_in_observation",
    "make",
    "params_of",
    "restart_ended",
]


def __getattr__(name):
    if _LAZY.get(name) == "gymnax_env":
        from msjax.adapters import gymnax_env

        return getattr(gymnax_env, name)
    if _LAZY.get(name) == "jumanji_env":
        from msjax.adapters import jumanji_env

        return getattr(jumanji_env, name)
    raise AttributeError(f"module 'msjax.adapters' has no attribute {name!r}")

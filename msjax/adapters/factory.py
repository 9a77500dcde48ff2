"""``make``: one call from a board name to an env for gymnax or Jumanji consumers.

It lives here, not in ``msjax.env``: the env is layer 0 and imports nothing above it,
not even inside a function (``tests/test_layers.py``), while the adapters are layer 1.
``msjax.env`` keeps the board table (``env.STANDARD_BOARDS``, ``env.parse_board``);
``make`` reads it and imports only the adapter asked for, so gymnax and Jumanji stay
optional.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from msjax import env
from msjax.adapters.core import check_bool
from msjax.env import EnvConfig

APIS = ("gymnax", "gymnax-legacy", "jumanji")
"""The interfaces ``make`` builds: gymnax 1.0 (six-value step), gymnax's five-value legacy
step (``LegacyGymnaxMinesweeper``, for PureJaxRL and rejax), Jumanji."""

INSTALL = {
    "gymnax": "pip install -e '.[gymnax]'",
    "gymnax-legacy": "pip install -e '.[gymnax]'",
    "jumanji": "pip install -e '.[jumanji]'",
}
"""The install line of each interface's extra."""


def make(board: str | EnvConfig = "beginner", api: str = "gymnax", **rules: Any) -> Any:
    """An msjax env for another library's training code, as that library's ``make`` returns it.

    Args:
      board: a name of ``env.STANDARD_BOARDS`` (``"beginner"``, ``"intermediate"``,
        ``"expert"``), ``HxWxM`` text (``"16x16x40"``) or an ``EnvConfig``.
      api: one of ``APIS``.
      rules: other ``EnvConfig`` fields (``max_steps=200``, ``win_reward=10.0``), and for
        gymnax ``mask_in_observation=True``.

    Returns:
      ``"gymnax"``: ``(GymnaxMinesweeper, MinesweeperParams)``, as ``gymnax.make``;
      ``"gymnax-legacy"``: ``(LegacyGymnaxMinesweeper, MinesweeperParams)``, five-value step;
      ``"jumanji"``: a ``JumanjiMinesweeper``, as ``jumanji.make``.

    Raises:
      TypeError: ``board`` is neither text nor an ``EnvConfig``; ``mask_in_observation`` is
        not a bool.
      ValueError: an unknown ``api`` or board, or a rule that is not an ``EnvConfig`` field.
      ImportError: the library is not installed; the message gives the install line.
    """
    if api not in APIS:
        raise ValueError(f"api={api!r}: use one of {', '.join(APIS)}")
    mask_in_observation = rules.pop("mask_in_observation", False)
    check_bool("mask_in_observation", mask_in_observation)
    if mask_in_observation and api == "jumanji":
        raise ValueError("mask_in_observation is for gymnax; Jumanji's observation always holds action_mask")
    cfg = _game_config(board, rules)
    try:
        if api == "jumanji":
            from msjax.adapters.jumanji_env import JumanjiMinesweeper

            return JumanjiMinesweeper(cfg)
        from msjax.adapters.gymnax_env import GymnaxMinesweeper, LegacyGymnaxMinesweeper
    except ImportError as error:
        raise ImportError(f"{error}; msjax's {api} adapter needs it: {INSTALL[api]}") from error
    kind = LegacyGymnaxMinesweeper if api == "gymnax-legacy" else GymnaxMinesweeper
    gymnax_env = kind(cfg, mask_in_observation=mask_in_observation)
    return gymnax_env, gymnax_env.default_params


def _game_config(board: str | EnvConfig, rules: dict[str, Any]) -> EnvConfig:
    """``make``'s game: ``env.board_config`` of a board name or ``HxWxM`` text with ``rules``
    (other ``EnvConfig`` fields) over it; an ``EnvConfig`` is returned as given (then no
    ``rules`` are allowed).

    Raises:
      TypeError: ``board`` is neither text nor an ``EnvConfig``.
      ValueError: an unknown board, an ``EnvConfig`` with ``rules``, a rule that is not an
        ``EnvConfig`` field (the valid ones are listed), or an unplayable config.
    """
    if isinstance(board, EnvConfig):
        if rules:
            raise ValueError(f"board is already an EnvConfig: give its fields there, not {sorted(rules)}")
        return board
    if not isinstance(board, str):
        raise TypeError(
            f"board={board!r}: use a name of {', '.join(env.STANDARD_BOARDS)}, HxWxM text such as '9x9x10', "
            "or an EnvConfig"
        )
    fields = set(EnvConfig.__dataclass_fields__) - {"H", "W", "mine_count"}
    unknown = sorted(set(rules) - fields)
    if unknown:
        raise ValueError(f"unknown EnvConfig field(s) {unknown}; valid: {sorted(fields)}")
    return dataclasses.replace(env.board_config(board), **rules)

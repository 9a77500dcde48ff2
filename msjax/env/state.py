"""One game's state (``EnvState``), a pytree that jitted functions take and return."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from msjax.env.config import EnvConfig


@struct.dataclass
class EnvState:
    """One game. Batched states carry a leading batch axis on every field.

    Attributes:
      mine_mask: bool[H, W], the hidden mines (all False until the first reveal).
      counts: int8[H, W], mines among each cell's 8 neighbours (valid once placed).
      revealed: bool[H, W], cells the player has opened.
      flags: bool[H, W], the player's flags (never on a revealed cell).
      first_click_done: bool[], mines have been placed.
      step_count: int32[], steps taken in this game, invalid ones included.
      done: bool[], the game is over.
      won: bool[], every safe cell is revealed.
      mine_count: int32[], mines in this game.
      key: PRNG key of this game (mine placement; the next game's key under auto-reset).
      board: int32[], the entry of ``cfg.boards`` this game plays; None without boards.
    """

    mine_mask: jax.Array
    counts: jax.Array
    revealed: jax.Array
    flags: jax.Array
    first_click_done: jax.Array
    step_count: jax.Array
    done: jax.Array
    won: jax.Array
    mine_count: jax.Array
    key: jax.Array
    board: jax.Array | None = None


def empty_state(
    key: jax.Array, mine_count: jax.Array, cfg: EnvConfig, board: jax.Array | None = None
) -> EnvState:
    """A game before its first reveal: no mines yet, nothing revealed or flagged.

    Args:
      key: the game's PRNG key.
      mine_count: int32[], the mines it will place.
      cfg: the static config (the arrays are ``H x W``).
      board: int32[], the entry of ``cfg.boards`` it plays, or None without boards.
    """
    cells = jnp.zeros((cfg.H, cfg.W), bool)
    return EnvState(
        mine_mask=cells,
        counts=jnp.zeros((cfg.H, cfg.W), jnp.int8),
        revealed=cells,
        flags=cells,
        first_click_done=jnp.bool_(False),
        step_count=jnp.int32(0),
        done=jnp.bool_(False),
        won=jnp.bool_(False),
        mine_count=jnp.asarray(mine_count, jnp.int32),
        key=key,
        board=None if board is None else jnp.asarray(board, jnp.int32),
    )

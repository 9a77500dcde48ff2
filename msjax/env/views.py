"""What a player sees of a game: the frontier, the legal actions, the observation planes
for the network, and a text picture for people."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from msjax.env.bits import dilate, neighbour_sum
from msjax.env.boards import board_shape, num_board_cells, playable
from msjax.env.config import EnvConfig
from msjax.env.state import EnvState

NUM_BASE_CHANNELS = 11
"""Channels every observation has: revealed, flags, one-hot counts 0..8."""


def frontier(state: EnvState, cfg: EnvConfig | None = None) -> jax.Array:
    """bool[H, W]: hidden cells next to a revealed cell (playable ones, given a padded ``cfg``)."""
    near = dilate(state.revealed) & ~state.revealed
    if cfg is not None and cfg.boards:
        near = near & playable(state, cfg)
    return near


def known_safe(state: EnvState) -> jax.Array:
    """bool[H, W]: the cells the rules prove safe to reveal next: the revealed ones and,
    before the first click, every cell.

    Mines are placed at the first reveal, away from the clicked cell (and, with
    ``guarantee_safe_neighborhood``, away from its neighbours, which that click then
    opens): whichever cell is revealed first holds no mine. So before the first click no
    cell is a risk to reveal, although the layout is not drawn yet.
    """
    return state.revealed | ~state.first_click_done


def with_rule_certainties(mine_probabilities: jax.Array, state: EnvState) -> jax.Array:
    """f32[H, W]: ``mine_probabilities`` (f32[H, W], of the next reveal) with the cells
    ``known_safe`` set to 0, so that a player's estimate never shows what the rules make
    certain as a risk (before the first click: 0 everywhere)."""
    return jnp.where(known_safe(state), 0.0, mine_probabilities).astype(jnp.float32)


def action_mask(state: EnvState, cfg: EnvConfig, frontier_only: Any = None) -> jax.Array:
    """bool[2*H*W]: the legal actions. Reveals and flags are legal on hidden cells.

    With ``frontier_only`` (default ``cfg.frontier_only_reveals``; may be a traced bool so a
    training loop can switch it off without recompiling) reveals are limited to the
    frontier whenever the frontier is not empty. A finished game has no legal action, and
    no padded cell ever is one.
    """
    hidden = ~state.revealed & ~state.done
    if cfg.boards:
        hidden = hidden & playable(state, cfg)
    if frontier_only is None:
        frontier_only = cfg.frontier_only_reveals
    near = frontier(state, cfg)
    restrict = jnp.asarray(frontier_only) & jnp.any(near)
    reveal_ok = jnp.where(restrict, hidden & near, hidden)
    return jnp.concatenate([reveal_ok.reshape(-1), hidden.reshape(-1)])


def num_channels(cfg: EnvConfig) -> int:
    """Channels of ``observe``: 11, plus 1 for the frontier, plus 2 for the counts, plus 2 for
    the scalars, plus 1 for the playable cells of a board mix."""
    optional = int(cfg.obs_frontier) + 2 * int(cfg.obs_counts) + 2 * int(cfg.obs_scalars)
    return NUM_BASE_CHANNELS + optional + int(cfg.padded)


def observe(state: EnvState, cfg: EnvConfig) -> jax.Array:
    """float32[C, H, W], what the player sees.

    Channels: revealed, flags, one-hot of the number (0..8) on revealed cells; then the
    frontier (``obs_frontier``); then each revealed cell's number / 8 and each cell's hidden
    neighbours on the board / 8 (``obs_counts``); then ``remaining_mines_ratio`` = (mines - flags) / mines
    and ``progress`` = revealed safe cells / safe cells, broadcast over the whole array
    (``obs_scalars``); then, with
    ``boards``, the playable cells (1 on the board, 0 on its padding), so the network tells
    the board's edge from hidden cells.
    """
    revealed = state.revealed
    numbers = (state.counts[None] == jnp.arange(9, dtype=jnp.int8)[:, None, None]) & revealed
    channels = [revealed[None], state.flags[None], numbers]
    if cfg.obs_frontier:
        channels.append(frontier(state, cfg)[None])
    planes = jnp.concatenate(channels).astype(jnp.float32)
    if cfg.obs_counts:
        on_board = playable(state, cfg) if cfg.boards else jnp.ones_like(revealed)
        number = jnp.where(revealed, state.counts, 0)
        hidden_neighbours = jnp.where(on_board, neighbour_sum(~revealed & on_board), 0)
        counts = jnp.stack([number, hidden_neighbours]).astype(jnp.float32) / 8.0
        planes = jnp.concatenate([planes, counts])
    if cfg.obs_scalars:
        mines = jnp.maximum(state.mine_count, 1).astype(jnp.float32)
        remaining = (mines - jnp.sum(state.flags)) / mines
        progress = jnp.sum(revealed & ~state.mine_mask) / (num_board_cells(state, cfg) - mines)
        scalars = jnp.stack([remaining, progress]).astype(jnp.float32)
        planes = jnp.concatenate([planes, jnp.broadcast_to(scalars[:, None, None], (2, cfg.H, cfg.W))])
    if cfg.boards:
        planes = jnp.concatenate([planes, playable(state, cfg)[None].astype(jnp.float32)])
    return planes


def board_symbols(revealed: Any, flags: Any, mine_mask: Any, counts: Any, over: bool) -> Any:
    """str[H, W] (a NumPy array, on the host): each cell's symbol in a text picture of a
    board. ``#`` hidden, ``F`` flag, ``.`` revealed zero, ``1``-``8`` numbers; once the game
    is ``over`` the mines show: ``*`` a mine, ``X`` the mine that was hit, ``x`` a flag on a
    safe cell. ``render`` and ``msjax.viz`` draw with it."""
    import numpy as np  # host-side only

    revealed, flags, mine_mask = (np.asarray(a, bool) for a in (revealed, flags, mine_mask))
    counts = np.asarray(counts)
    symbols = np.full(revealed.shape, "#", dtype="<U1")
    symbols[flags] = "F"
    if over:
        symbols[flags & ~mine_mask] = "x"
        symbols[~flags & mine_mask] = "*"
    for r, c in zip(*np.nonzero(revealed & ~mine_mask)):
        symbols[r, c] = "." if counts[r, c] == 0 else str(counts[r, c])
    symbols[revealed & mine_mask] = "X"
    return symbols


def render(state: EnvState, cfg: EnvConfig | None = None) -> str:
    """A plain-text picture of one board, for debugging and test messages.

    With a padded ``cfg``, only the game's board is drawn; the symbols are
    ``board_symbols``'s.
    """
    import numpy as np  # host-side only

    rows, cols = np.asarray(state.revealed).shape
    if cfg is not None and cfg.boards:  # only the board, not its padding
        rows, cols = (int(x) for x in board_shape(state, cfg))
    revealed = np.asarray(state.revealed)[:rows, :cols]
    flags = np.asarray(state.flags)[:rows, :cols]
    mines = np.asarray(state.mine_mask)[:rows, :cols]
    counts = np.asarray(state.counts)[:rows, :cols]
    over = bool(np.asarray(state.done))
    lines = [" ".join(row) for row in board_symbols(revealed, flags, mines, counts, over)]
    status = "won" if bool(np.asarray(state.won)) else ("lost" if over else "playing")
    lines.append(f"[{status}, step {int(np.asarray(state.step_count))}, {int(np.asarray(state.mine_count))} mines]")
    return "\n".join(lines)

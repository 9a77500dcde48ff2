"""The rules of one game: actions, new games, mine placement, the flood fill and ``step``.

Every function here works on one game with static shapes, so ``jax.vmap`` batches it;
``msjax.env.batch`` reuses the pieces of ``step`` to run the rare, costly ones (placement,
cascades) only on the games that need them.
"""

from __future__ import annotations

from typing import Any

import chex
import jax
import jax.numpy as jnp

from msjax.env.bits import dilate_rows, neighbour_sum, pack_rows, unpack_rows
from msjax.env.boards import board_shape, board_table, draw_board, num_board_cells, playable, playable_rows
from msjax.env.config import EnvConfig
from msjax.env.state import EnvState, empty_state

MOVES_PER_CELL = 4
"""A game with no ``max_steps`` is cut off after this many moves per cell (``move_limit``)."""

# ----------------------------------------------------------------------------- actions


def decode_action(action: Any, cfg: EnvConfig) -> tuple[Any, Any]:
    """``(cell, is_flag)`` of an action: ``a < H*W`` reveals cell ``a``, ``a >= H*W``
    toggles the flag on ``a - H*W``. Works on Python ints and on int arrays of any shape
    (``cell`` is a flat row-major index; ``divmod(cell, W)`` gives ``(row, col)``). It does
    not check the range: an action outside ``[0, 2*H*W)`` still decodes (modulo ``H*W``),
    and ``step`` treats it as invalid."""
    return action % cfg.num_cells, action >= cfg.num_cells


def encode_action(cell: Any, is_flag: Any, cfg: EnvConfig) -> Any:
    """The action that reveals (``is_flag`` false) or flags flat ``cell``: the inverse of
    ``decode_action``. Python ints give an int; arrays give an array."""
    if isinstance(cell, int) and isinstance(is_flag, bool):
        return cell + cfg.num_cells if is_flag else cell
    return jnp.where(is_flag, cell + cfg.num_cells, cell)


def move_limit(cfg: EnvConfig) -> int:
    """Moves after which a game still running counts as lost: ``max_steps`` when set,
    else ``MOVES_PER_CELL * H * W`` (every cell revealed and flagged twice over)."""
    return cfg.max_steps or MOVES_PER_CELL * cfg.num_cells


def _decode(action: jax.Array, cfg: EnvConfig) -> tuple[jax.Array, jax.Array]:
    return decode_action(jnp.asarray(action, jnp.int32), cfg)


def _names_open_cell(state: EnvState, action: jax.Array, cfg: EnvConfig) -> jax.Array:
    """bool[]: the action is in ``[0, 2*H*W)`` and names a hidden (and, with ``boards``,
    playable) cell, so that it is a valid move while the game runs. Out of range,
    ``decode_action`` would still name a cell (modulo ``H*W``), hence the range check."""
    action = jnp.asarray(action, jnp.int32)
    cell, _ = decode_action(action, cfg)
    open_cell = (action >= 0) & (action < cfg.num_actions) & ~state.revealed.reshape(-1)[cell]
    if cfg.boards:
        open_cell = open_cell & playable(state, cfg).reshape(-1)[cell]
    return open_cell


# ----------------------------------------------------------------------------- new games


def _draw_mine_count(key: jax.Array, cfg: EnvConfig) -> jax.Array:
    fewest, most = cfg.mine_count_range
    if fewest == most:
        return jnp.int32(fewest)
    return jax.random.randint(key, (), fewest, most + 1, dtype=jnp.int32)


def reset(key: jax.Array, cfg: EnvConfig, board_weights: jax.Array | None = None) -> EnvState:
    """A fresh game: nothing revealed, mines placed at the first reveal.

    Costs almost nothing: no random draw beyond the mine count of a density band (and,
    with ``boards``, the board: drawn by ``board_weights``, float[K], or uniformly when
    they are None; they are traced, so changing them does not recompile).
    """
    if cfg.boards:
        board_key, game_key = jax.random.split(key)
        return reset_on_board(game_key, cfg, draw_board(board_key, cfg, board_weights))
    if cfg.density_band is None:
        return empty_state(key, jnp.int32(cfg.mine_count), cfg)
    count_key, game_key = jax.random.split(key)
    return empty_state(game_key, _draw_mine_count(count_key, cfg), cfg)


def reset_on_board(key: jax.Array, cfg: EnvConfig, board: Any) -> EnvState:
    """A fresh game on ``cfg.boards[board]`` (``board``: int or int32[], may be traced).

    With the same ``key`` it is the game ``reset(key, unpadded)`` deals on that board's own
    config (same mine count, same mines at the same first click), when all of ``boards``
    have fixed mine counts or all have ranges.

    Raises:
      ValueError: ``cfg`` has no ``boards``.
    """
    if not cfg.boards:
        raise ValueError("reset_on_board needs EnvConfig.boards; use reset for a single board")
    board = jnp.asarray(board, jnp.int32)
    fewest, most = board_table(cfg, 2)[board], board_table(cfg, 3)[board]
    if all(b[2] == b[3] for b in cfg.boards):
        return empty_state(key, fewest, cfg, board)
    count_key, game_key = jax.random.split(key)
    count = jax.random.randint(count_key, (), fewest, most + 1, dtype=jnp.int32)
    return empty_state(game_key, count, cfg, board)


def from_mines(
    mine_mask: jax.Array, cfg: EnvConfig, key: jax.Array | None = None, board: Any = None
) -> EnvState:
    """A game with exactly this layout (``bool[H, W]``); nothing moves at the first click.

    With ``cfg.boards``, ``board`` (an index into them) is required, and mines outside its
    playable cells are dropped.

    Raises:
      ValueError: ``board`` missing with ``cfg.boards``, or given without them.
    """
    mine_mask = jnp.asarray(mine_mask, bool)
    chex.assert_shape(mine_mask, (cfg.H, cfg.W))
    key = jax.random.key(0) if key is None else key
    if cfg.boards and board is None:
        raise ValueError("from_mines: EnvConfig.boards is set, so pass board= (an index into boards)")
    if not cfg.boards and board is not None:
        raise ValueError("from_mines: board= needs EnvConfig.boards")
    state = empty_state(key, jnp.int32(0), cfg, board)
    if cfg.boards:
        mine_mask = mine_mask & playable(state, cfg)
    state = state.replace(mine_count=jnp.sum(mine_mask, dtype=jnp.int32))
    return state.replace(
        mine_mask=mine_mask,
        counts=neighbour_sum(mine_mask).astype(jnp.int8),
        first_click_done=jnp.bool_(True),
    )


# ----------------------------------------------------------------------------- mine placement


def place_mines(state: EnvState, cell: jax.Array, cfg: EnvConfig) -> EnvState:
    """Places ``state.mine_count`` mines uniformly among the cells the first click allows.

    Uses Floyd's algorithm, which draws a uniform k-subset of ``{0..n-1}`` with k random
    integers and no sort; the subset's indices are then mapped onto the allowed cells in
    row-major order. The cleared cells form a rectangle, so a cell's rank among the allowed
    cells is plain arithmetic (no prefix sum).
    """
    r, c = cell // cfg.W, cell % cfg.W
    # A padded board is its own rows x cols board: ranks count its cells only, so the same
    # draws give the same mines as on the unpadded board.
    board_rows, board_cols = board_shape(state, cfg)
    reach = 1 if cfg.guarantee_safe_neighborhood else 0
    top, bottom = jnp.maximum(r - reach, 0), jnp.minimum(r + reach, board_rows - 1)
    left, right = jnp.maximum(c - reach, 0), jnp.minimum(c + reach, board_cols - 1)
    block_width = right - left + 1
    rows = jnp.arange(cfg.H)[:, None]
    cols = jnp.arange(cfg.W)[None, :]
    in_rows = (rows >= top) & (rows <= bottom)
    excluded = in_rows & (cols >= left) & (cols <= right)
    cleared_before = jnp.clip(rows - top, 0, bottom - top + 1) * block_width + jnp.where(
        in_rows, jnp.clip(cols - left, 0, block_width), 0
    )
    rank = (rows * board_cols + cols - cleared_before).reshape(-1)
    num_allowed = board_rows * board_cols - (bottom - top + 1) * block_width

    k = state.mine_count
    _, most = cfg.mine_count_range
    place_key, next_key = jax.random.split(state.key)
    draws = jax.random.uniform(place_key, (most,))

    def floyd(i, chosen):
        j = num_allowed - k + i  # j runs over n-k .. n-1
        t = jnp.minimum((draws[i] * (j + 1)).astype(jnp.int32), j)
        pick = jnp.where(chosen[t], j, t)
        return jnp.where(i < k, chosen.at[pick].set(True), chosen)

    chosen = jax.lax.fori_loop(0, most, floyd, jnp.zeros(cfg.num_cells, bool))
    mine_mask = ~excluded & chosen[rank].reshape(cfg.H, cfg.W)
    if cfg.boards:
        mine_mask = mine_mask & playable(state, cfg)
    return state.replace(
        mine_mask=mine_mask,
        counts=neighbour_sum(mine_mask).astype(jnp.int8),
        first_click_done=jnp.bool_(True),
        key=next_key,
    )


def needs_mines(state: EnvState, action: jax.Array, cfg: EnvConfig) -> jax.Array:
    """bool[]: the action is the game's first reveal, so mines go down now."""
    _, is_flag = _decode(action, cfg)
    return ~state.done & ~state.first_click_done & ~is_flag & _names_open_cell(state, action, cfg)


def _place_if_needed(state: EnvState, action: jax.Array, cfg: EnvConfig) -> EnvState:
    cell, _ = _decode(action, cfg)
    placed = place_mines(state, cell, cfg)
    needs = needs_mines(state, action, cfg)
    return jax.tree.map(lambda new, old: jnp.where(needs, new, old), placed, state)


# ----------------------------------------------------------------------------- cascade


def needs_cascade(state: EnvState, action: jax.Array, cfg: EnvConfig) -> jax.Array:
    """bool[]: the action reveals a hidden zero (mines already placed)."""
    cell, is_flag = _decode(action, cfg)
    zero = (state.counts.reshape(-1)[cell] == 0) & ~state.mine_mask.reshape(-1)[cell]
    return ~state.done & ~is_flag & _names_open_cell(state, action, cfg) & zero


def packed_zeros(state: EnvState, cfg: EnvConfig | None = None) -> jax.Array:
    """uint32[H]: the safe (playable) cells with no mine around them, bit-packed."""
    zero = (state.counts == 0) & ~state.mine_mask
    if cfg is not None and cfg.boards:
        zero = zero & playable(state, cfg)
    return pack_rows(zero)


def packed_click(action: jax.Array, cfg: EnvConfig) -> jax.Array:
    """uint32[H]: the action's cell, bit-packed."""
    cell, _ = _decode(action, cfg)
    bit = jnp.left_shift(jnp.uint32(1), (cell % cfg.W).astype(jnp.uint32))
    return jnp.where(jnp.arange(cfg.H) == cell // cfg.W, bit, jnp.uint32(0))


def cascade(zero_rows: jax.Array, click_rows: jax.Array, cfg: EnvConfig) -> jax.Array:
    """uint32[H]: the cells a reveal of the (safe) clicked cell opens: itself and, if it
    is a zero, its connected zero region and that region's border.

    Args:
      zero_rows: uint32[H], the zeros that may spread the fill (``packed_zeros``).
      click_rows: uint32[H], the clicked cell (``packed_click``).
      cfg: the static config.
    """
    region = click_rows & zero_rows

    def grow(carry):
        _, current = carry
        return current, current | (dilate_rows(current, cfg) & zero_rows)

    def changed(carry):
        previous, current = carry
        return jnp.any(previous != current)

    _, region = jax.lax.while_loop(changed, grow, (jnp.zeros_like(region), region))
    return dilate_rows(region, cfg) | click_rows


# ----------------------------------------------------------------------------- step


def _step_reward(
    state: EnvState, cell: jax.Array, new_safe: jax.Array, toggle: jax.Array, invalid: jax.Array,
    won: jax.Array, lost: jax.Array, cfg: EnvConfig,
) -> jax.Array:
    """float32[]: the step's reward (the package docstring gives the rules)."""
    reward = cfg.progress_reward * new_safe - cfg.step_penalty
    if cfg.use_flag_shaping:
        on_mine = state.mine_mask.reshape(-1)[cell]
        shaping = jnp.where(on_mine, cfg.flag_correct_reward, cfg.flag_incorrect_reward)
        placing = ~state.flags.reshape(-1)[cell]
        shaping = jnp.where(placing, shaping, -shaping) * state.first_click_done
        reward = reward + jnp.where(toggle, shaping, 0.0)
    reward = jnp.where(invalid, -cfg.invalid_penalty, reward)
    reward = reward + jnp.where(won, cfg.win_reward, 0.0) + jnp.where(lost, cfg.loss_reward, 0.0)
    return jnp.where(state.done, 0.0, reward).astype(jnp.float32)


def apply_action(
    state: EnvState, action: jax.Array, opened_rows: jax.Array, cfg: EnvConfig
) -> tuple[EnvState, jax.Array, jax.Array, dict[str, jax.Array]]:
    """The step once mines are in place; ``opened_rows`` (uint32[H]) is what revealing the
    action's cell opens if it is safe (``cascade``). Returns as ``step``."""
    cell, is_flag = _decode(action, cfg)
    one_hot = (jnp.arange(cfg.num_cells) == cell).reshape(cfg.H, cfg.W)
    valid = ~state.done & _names_open_cell(state, action, cfg)
    reveal = valid & ~is_flag
    toggle = valid & is_flag

    hit_mine = reveal & state.mine_mask.reshape(-1)[cell]
    opened = jnp.where(reveal & ~hit_mine, unpack_rows(opened_rows, cfg.W), one_hot & reveal)
    revealed = state.revealed | opened
    new_safe = jnp.sum(opened & ~state.revealed & ~state.mine_mask, dtype=jnp.int32)
    flags = jnp.where(toggle, state.flags ^ one_hot, state.flags) & ~revealed

    safe_cells = num_board_cells(state, cfg) - state.mine_count
    won = ~hit_mine & (jnp.sum(revealed & ~state.mine_mask, dtype=jnp.int32) == safe_cells)
    won = won & state.first_click_done
    step_count = state.step_count + jnp.where(state.done, 0, 1)
    out_of_steps = (cfg.max_steps > 0) & (step_count >= cfg.max_steps) & ~state.done
    done = state.done | hit_mine | won | out_of_steps
    invalid = ~valid & ~state.done
    # Running out of steps loses like a mine does, so stalling never beats trying.
    lost = hit_mine | (out_of_steps & ~won)
    reward = _step_reward(state, cell, new_safe, toggle, invalid, won, lost, cfg)

    next_state = state.replace(
        revealed=revealed,
        flags=flags,
        step_count=step_count,
        done=done,
        won=state.won | won,
    )
    info = {
        "invalid": invalid,
        "new_revealed": new_safe,
        "won": next_state.won,
        "lost": done & ~next_state.won,
        "steps": step_count,
        "revealed_fraction": jnp.sum(revealed & ~state.mine_mask, dtype=jnp.int32) / safe_cells,
    }
    return next_state, reward, done, info


def step(
    state: EnvState, action: jax.Array, cfg: EnvConfig
) -> tuple[EnvState, jax.Array, jax.Array, dict[str, jax.Array]]:
    """Plays one action on one board.

    Args:
      state: the game before the action.
      action: int32[], in ``[0, 2*H*W)``; any other value is an invalid action.
      cfg: the static config.

    Returns:
      ``(state, reward: float32[], done: bool[], info)``; ``info`` holds ``invalid``,
      ``new_revealed`` (safe cells opened by this step), ``won``, ``lost``, ``steps`` and
      ``revealed_fraction`` (of the safe cells), all scalars.
    """
    state = _place_if_needed(state, action, cfg)
    opened_rows = cascade(packed_zeros(state, cfg), packed_click(action, cfg), cfg)
    if cfg.boards:
        opened_rows = opened_rows & playable_rows(state, cfg)
    return apply_action(state, action, opened_rows, cfg)

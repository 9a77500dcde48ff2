"""Array plumbing of the solver: the cell-major layout, shifts by neighbour offsets,
sums over a game's cells and picking one cell per game.

The core works on cell-major arrays ``[H, W, *batch]``: the board's rows and columns
first and any games after them, with per-game scalars shaped ``[*batch]``. One code
path then serves one game (``batch == ()``, the public per-game API, which
``jax.vmap`` batches) and a whole batch with the games on the minor axis (the
``batch_*`` functions), where every shift is a slice of whole contiguous rows and each
elementwise op runs over the games with full SIMD width: much faster on CPU than the
``[B, H, W]`` layout ``vmap`` produces.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from msjax.env import EnvState
from msjax.solver.types import View

NEIGHBOUR_OFFSETS = tuple((dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0))
BOX_OFFSETS = tuple((dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1))
PAIR_OFFSETS = tuple((dr, dc) for dr in range(-2, 3) for dc in range(-2, 3) if (dr, dc) != (0, 0))
MARGIN = 2  # padding wide enough for every offset above


def player_view(state: EnvState, batched: bool = False) -> View:
    """The player's view of one state, or of a batch (leading axis) moved to cell-major."""
    counts = jnp.where(state.revealed, state.counts.astype(jnp.int32), 0)
    revealed = state.revealed
    if batched:
        revealed, counts = jnp.moveaxis(revealed, 0, -1), jnp.moveaxis(counts, 0, -1)
    return View(revealed, counts, state.mine_count.astype(jnp.int32))


def in_chunks(need: jax.Array, chunk_size: int, fn, inputs, outputs, axis: int = -1):
    """Runs ``fn`` only on the games where ``need`` (bool[B]) holds, ``chunk_size`` at a
    time: the needing games are gathered (along ``axis`` of every leaf: -1, the trailing
    cell-major batch axis, or 0, a leading one) into fixed-size chunks, and ``fn``'s
    results are scattered into ``outputs`` (pytree, batch along the same axis)."""
    num_games = need.shape[0]
    size = min(chunk_size, num_games)
    num_chunks = -(-num_games // size)
    order = jnp.argsort(~need, stable=True).astype(jnp.int32)  # needing games first
    order = jnp.concatenate([order, order[: num_chunks * size - num_games]])
    num_need = jnp.sum(need, dtype=jnp.int32)
    take = lambda x, index: jnp.take(x, index, axis=axis)

    def put(out, new, index, valid):
        shape = [1] * out.ndim
        shape[axis] = valid.shape[0]
        kept = jnp.where(valid.reshape(shape), new, take(out, index))
        moved = jnp.moveaxis(out, axis, 0).at[index].set(jnp.moveaxis(kept, axis, 0))
        return jnp.moveaxis(moved, 0, axis)

    def one_chunk(carry):
        i, outputs = carry
        index = jax.lax.dynamic_slice(order, (i * size,), (size,))
        valid = i * size + jnp.arange(size) < num_need
        results = fn(jax.tree.map(lambda x: take(x, index), inputs))
        return i + 1, jax.tree.map(lambda out, new: put(out, new, index, valid), outputs, results)

    _, outputs = jax.lax.while_loop(
        lambda carry: carry[0] * size < num_need, one_chunk, (jnp.int32(0), outputs)
    )
    return outputs


def to_boards(cells: jax.Array) -> jax.Array:
    """[H, W, *b] -> [B, H, W]: board-major, the games' axes flattened into one."""
    return jnp.moveaxis(cells.reshape(cells.shape[:2] + (-1,)), -1, 0)


def on_cells(game_values: jax.Array) -> jax.Array:
    """[*b] -> [1, 1, *b]: a per-game value broadcast against cells."""
    return game_values[None, None]


def flat_cells(cells: jax.Array) -> jax.Array:
    """[H, W, *b] -> [H*W, *b] (row-major cells)."""
    return cells.reshape((cells.shape[0] * cells.shape[1],) + cells.shape[2:])


def materialize(tree):
    """``tree`` unchanged, but computed once into memory.

    XLA's CPU fusion copies cheap elementwise producers into every consumer; a value
    read at 8 shifts (a neighbour sum) is then computed 8 times, and chains of such reads
    multiply (layer 2 and belief propagation ran many times slower). Branches of a
    conditional are separate computations that fusion cannot enter, so passing the value
    through an identity ``lax.cond`` on a predicate XLA cannot fold forces it into a
    buffer. (``optimization_barrier`` does not stop this fusion on CPU.) Under ``vmap``
    the cond becomes a select of two equal values: the same result.
    """
    first = jax.tree.leaves(tree)[0]
    predicate = first.reshape(-1)[0].astype(jnp.float32) > 0.5
    return jax.lax.cond(predicate, lambda: tree, lambda: jax.tree.map(lambda x: x, tree))


def sum_over_cells(cells: jax.Array) -> jax.Array:
    """[H, W, *b] -> [*b]: the sum over each game's cells (int32 for bools and ints).

    A float32 dot with ones: on CPU it is several times faster than XLA's reduction over
    the leading axes, and XLA never fuses it into (and recomputes it inside) a consumer
    that broadcasts it back over the cells. Exact for integers below 2**24.
    """
    ones = jnp.ones(cells.shape[0] * cells.shape[1], jnp.float32)
    total = jnp.tensordot(ones, flat_cells(cells).astype(jnp.float32), axes=1)
    return total if jnp.issubdtype(cells.dtype, jnp.floating) else total.astype(jnp.int32)


def any_cell(cells: jax.Array) -> jax.Array:
    """bool[H, W, *b] -> bool[*b]: some cell of the board is set."""
    return sum_over_cells(cells) > 0


def pad(cells: jax.Array, fill) -> jax.Array:
    """[H, W, *b] -> [H + 2*MARGIN, W + 2*MARGIN, *b], ``fill`` around the board."""
    widths = [(MARGIN, MARGIN)] * 2 + [(0, 0)] * (cells.ndim - 2)
    return jnp.pad(cells, widths, constant_values=fill)


def take(padded: jax.Array, dr: int, dc: int) -> jax.Array:
    """From a ``pad``-ed array, ``y[r, c] = x[r + dr, c + dc]`` (the fill off the board)."""
    height, width = padded.shape[0] - 2 * MARGIN, padded.shape[1] - 2 * MARGIN
    return padded[MARGIN + dr : MARGIN + dr + height, MARGIN + dc : MARGIN + dc + width]


def neighbours(cells: jax.Array) -> jax.Array:
    """[H, W, *b] -> sum over each cell's 8 neighbours (int32 for bools)."""
    if cells.dtype == bool:
        cells = cells.astype(jnp.int32)
    padded = pad(cells, 0)
    return sum(take(padded, dr, dc) for dr, dc in NEIGHBOUR_OFFSETS)


def static_cells(values, ndim: int) -> jax.Array:
    """A static ``[H, W]`` array shaped to broadcast against ``ndim``-dim cell arrays."""
    return jnp.asarray(values).reshape(values.shape + (1,) * (ndim - 2))


def best_cell(mask: jax.Array, score: jax.Array) -> jax.Array:
    """int32[*b]: the flat (row-major) index of the highest ``score`` inside ``mask``,
    the first one on ties."""
    return jnp.argmax(flat_cells(jnp.where(mask, score, -jnp.inf)), axis=0).astype(jnp.int32)


def at_cell(cells: jax.Array, index: jax.Array) -> jax.Array:
    """int32[*b]: cells[H, W, *b] (small integers) at the flat index int32[*b] of each game."""
    height, width = cells.shape[:2]
    flat_index = static_cells(np.arange(height * width).reshape(height, width), cells.ndim)
    return sum_over_cells(jnp.where(flat_index == on_cells(index), cells, 0))

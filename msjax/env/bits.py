"""Boards as bit rows: one ``uint32`` per row, bit ``c`` of row ``r`` being cell ``(r, c)``.

The flood fill works on bit rows, where dilating a region by its 8 neighbours is a few
shifts and ORs; the cell-array helpers (``neighbour_sum``, ``dilate``) serve the rest.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from msjax.env.config import EnvConfig


def row_mask(cfg: EnvConfig) -> jax.Array:
    """uint32[]: the ``W`` low bits set, the cells of one row."""
    return jnp.uint32((1 << cfg.W) - 1 if cfg.W < 32 else 0xFFFFFFFF)


def pack_rows(cells: jax.Array) -> jax.Array:
    """bool[..., H, W] -> uint32[..., H], bit ``c`` of row ``r`` is cell ``(r, c)``."""
    width = cells.shape[-1]
    weights = jnp.left_shift(jnp.uint32(1), jnp.arange(width, dtype=jnp.uint32))
    return jnp.sum(jnp.where(cells, weights, jnp.uint32(0)), axis=-1, dtype=jnp.uint32)


def unpack_rows(rows: jax.Array, width: int) -> jax.Array:
    """uint32[..., H] -> bool[..., H, W], the inverse of ``pack_rows``."""
    shifts = jnp.arange(width, dtype=jnp.uint32)
    return (jnp.right_shift(rows[..., None], shifts) & jnp.uint32(1)).astype(bool)


def dilate_rows(rows: jax.Array, cfg: EnvConfig) -> jax.Array:
    """uint32[H] -> uint32[H]: each set cell and its 8 neighbours."""
    wide = (rows | (rows << 1) | (rows >> 1)) & row_mask(cfg)
    zero = jnp.zeros((1,), jnp.uint32)
    above = jnp.concatenate([wide[1:], zero])
    below = jnp.concatenate([zero, wide[:-1]])
    return wide | above | below


def neighbour_sum(cells: jax.Array) -> jax.Array:
    """bool|int[..., H, W] -> int32[..., H, W]: sum over each cell's 8 neighbours."""
    padded = jnp.pad(cells.astype(jnp.int32), [(0, 0)] * (cells.ndim - 2) + [(1, 1), (1, 1)])
    height, width = cells.shape[-2:]
    total = jnp.zeros(cells.shape, jnp.int32)
    for dr in (0, 1, 2):
        for dc in (0, 1, 2):
            if (dr, dc) != (1, 1):
                total = total + padded[..., dr : dr + height, dc : dc + width]
    return total


def dilate(cells: jax.Array) -> jax.Array:
    """bool[..., H, W] -> bool[..., H, W]: each set cell and its 8 neighbours."""
    return (neighbour_sum(cells) > 0) | cells

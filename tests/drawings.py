"""The one board-text format every test draws positions in, and its helpers
(``from drawings import position``; ``tests/`` is on the path, see pyproject.toml).

A drawing is one row per line, cells separated by spaces (indentation is ignored):

  hidden   ``#`` a safe cell, ``*`` a mine, ``f`` a flag on a safe cell, ``F`` a flag on a
           mine, ``s`` a safe cell and ``m`` a mine that a solver test expects proved
  revealed ``.`` a safe cell showing its true count, or a digit ``0``-``8``: a safe cell
           whose true count must be that digit (checked against the mines drawn)

``mine_layout`` reads only where the mines are; ``position`` builds the game; ``view``
reads a player's view alone (no mines known), as the NumPy reference (``msjax.reference.analyse``) takes it.
"""

from __future__ import annotations

import textwrap

import jax
import jax.numpy as jnp
import numpy as np

from msjax import env

HIDDEN_SAFE = ("#", "f", "s")
HIDDEN_MINE = ("*", "F", "m")
FLAGGED = ("f", "F")
REVEALED = (".",) + tuple("012345678")


def cells(text: str) -> np.ndarray:
    """str[H, W]: the cells of a drawing."""
    rows = [line.split() for line in textwrap.dedent(text).strip().splitlines()]
    grid = np.array(rows)
    unknown = set(grid.reshape(-1)) - set(HIDDEN_SAFE + HIDDEN_MINE + REVEALED)
    assert grid.ndim == 2 and not unknown, f"not a board drawing (symbols {sorted(unknown)}):\n{text}"
    return grid


def mine_layout(text: str) -> np.ndarray:
    """bool[H, W]: where the drawing's mines are."""
    return np.isin(cells(text), HIDDEN_MINE)


def config_for(text: str, **kwargs) -> env.EnvConfig:
    """An ``EnvConfig`` of the drawing's size and mine count (at least 1), no safe
    first-click neighbourhood (the layout is drawn, not drawn at random)."""
    mines = mine_layout(text)
    kwargs.setdefault("guarantee_safe_neighborhood", False)
    return env.EnvConfig(H=mines.shape[0], W=mines.shape[1], mine_count=max(int(mines.sum()), 1), **kwargs)


def position(text: str, cfg: env.EnvConfig | None = None) -> env.EnvState:
    """The game drawn: its mines, revealed cells and flags (``cfg`` defaults to
    ``config_for(text)``). Digits are checked against the true counts."""
    grid = cells(text)
    cfg = config_for(text) if cfg is None else cfg
    state = env.from_mines(jnp.asarray(np.isin(grid, HIDDEN_MINE)), cfg)
    revealed = np.isin(grid, REVEALED)
    counts = np.asarray(state.counts)
    for (r, c), symbol in np.ndenumerate(grid):
        if symbol.isdigit():
            assert counts[r, c] == int(symbol), f"cell ({r}, {c}) shows {symbol}, its count is {counts[r, c]}:\n{text}"
    return state.replace(revealed=jnp.asarray(revealed), flags=jnp.asarray(np.isin(grid, FLAGGED)))


def must_prove(text: str) -> tuple[np.ndarray, np.ndarray]:
    """``(safe, mines)``, bool[H, W] each: the cells drawn ``s`` and ``m``."""
    grid = cells(text)
    return grid == "s", grid == "m"


def view(text: str) -> tuple[np.ndarray, np.ndarray]:
    """``(revealed bool[H, W], counts int[H, W])`` of a view drawn with ``#`` for hidden
    cells and ``.`` or digits for revealed ones (``.`` reads as 0)."""
    grid = cells(text)
    revealed = np.isin(grid, REVEALED)
    counts = np.array([[int(s) if s.isdigit() else 0 for s in row] for row in grid])
    return revealed, counts


def stack(states):
    """A batch (leading axis) from a list of pytrees of equal structure."""
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)

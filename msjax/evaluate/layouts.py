"""Fixed mine layouts played by the JAX solver and by the reference player: the
boards of a paired comparison drawn once on the host, each player's outcome on each.

``draw_layouts`` draws opening-start layouts as ``msjax.reference.Board`` does (mines kept off
the reference player's first click and its neighbours); ``coupled_layouts`` draws them coupled
across first clicks (one game opened at different cells shares every mine away from both
cells' blocks), ``candidate_cells`` picks first clicks worth comparing. ``host_wins`` plays
them with
``msjax.reference.play_board`` (in worker processes if asked), ``device_wins`` with the JAX
solver (``SolverConfig(probabilities="exact", ...)`` and the host player's first click)
on ``msjax.env.from_mines`` games, a batch at a time on the device. The outcomes pair
with ``msjax.evaluate.paired``'s figures.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from msjax import env, reference, solver


def opening_click(height: int, width: int) -> tuple[int, int]:
    """``(row, col)``: the reference player's first click with an opening start, which the
    layouts of ``draw_layouts`` keep free of mines and the JAX solver here plays too."""
    return divmod(reference.first_click_cell(height, width, True), width)


def device_solver_config(height: int, width: int, solver_options: dict):
    """``(SolverConfig, guess)``: the JAX solver on exact probabilities with the host player's
    first click and ``solver_options`` (``SolverConfig`` and ``search.SearchConfig`` fields,
    ``search.solver_and_guess``), and its search guess; the configs' errors."""
    from msjax import search

    return search.solver_and_guess({"probabilities": "exact", "first_click": opening_click(height, width), **solver_options})


def draw_layouts(height: int, width: int, mines: int, games: int, seed: int) -> np.ndarray:
    """bool[N, H, W]: opening-start layouts (mines kept off the reference player's first click
    and its neighbours), drawn as ``msjax.reference.Board`` draws them."""
    rng = np.random.default_rng(seed)
    first = reference.first_click_cell(height, width, True)
    layouts = []
    for _ in range(games):
        board = reference.Board(height, width, mines, True, rng)
        board.reveal(first)
        layouts.append(board.mine_mask.copy())
    return np.stack(layouts)


def block_mask(height: int, width: int, cell: tuple[int, int]) -> np.ndarray:
    """bool[H, W]: ``cell`` and its neighbours (the block an opening start keeps mine-free)."""
    row, col = cell
    mask = np.zeros((height, width), bool)
    mask[max(row - 1, 0) : row + 2, max(col - 1, 0) : col + 2] = True
    return mask


def coupled_layouts(height: int, width: int, mines: int, games: int, seed: int,
                    cells: list[tuple[int, int]]) -> dict[tuple[int, int], np.ndarray]:
    """``{cell: bool[games, H, W]}``: for each game one random priority per board cell; opened
    at ``cell``, the mines are the ``mines`` cells of highest priority off ``cell``'s block.

    Each cell's layouts are uniform over the boards an opening start at that cell allows
    (a uniformly random order of the allowed cells, cut after ``mines``)."""
    priority = np.random.default_rng(seed).random((games, height * width))
    layouts = {}
    for cell in cells:
        allowed = ~block_mask(height, width, cell).reshape(-1)
        if allowed.sum() < mines:
            raise ValueError(f"cell {cell}: {allowed.sum()} cells off its block, fewer than {mines} mines")
        ranked = np.argsort(np.where(allowed, -priority, np.inf), axis=1)[:, :mines]
        mask = np.zeros((games, height * width), bool)
        np.put_along_axis(mask, ranked, True, axis=1)
        layouts[cell] = mask.reshape(games, height, width)
    return layouts


def candidate_cells(height: int, width: int, reach: int, first: tuple[int, int]) -> list[tuple[int, int]]:
    """``first``, then one cell of each symmetry class of the board within ``reach`` rows and
    columns of the corner (``row <= col`` on a square board), then the centre; no cell twice."""
    cells = [first] + [(r, c) for r in range(min(reach, height)) for c in range(min(reach, width))
                       if height != width or r <= c]
    cells.append(((height - 1) // 2, (width - 1) // 2))
    return list(dict.fromkeys(cells))


def _host_game(mine_mask: np.ndarray) -> bool:
    height, width = mine_mask.shape
    board = reference.Board(height, width, int(mine_mask.sum()), True, mine_mask=mine_mask)
    return reference.play_board(board, reference.first_click_cell(height, width, True)).won


def host_wins(layouts: np.ndarray, workers: int) -> np.ndarray:
    """bool[N]: the reference player's outcome on each layout."""
    if workers > 1:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            return np.asarray(pool.map(_host_game, list(layouts), chunksize=4))
    return np.asarray([_host_game(layout) for layout in layouts])


def solver_play_steps(carry, cfg, solver_cfg, guess, steps: int):
    """``steps`` moves of the JAX solver on every board of ``carry = (states, memory, key,
    won)`` (a finished board keeps its outcome in ``won``); jit it with ``cfg``, ``solver_cfg``
    and ``steps`` static (``compiled_play``)."""
    def one_step(carry, _):
        states, memory, key, won = carry
        key, move_key = jax.random.split(key)
        keys = jax.random.split(move_key, states.done.shape[0])
        actions, _, memory = solver.batch_solver_play(states, keys, memory, cfg, solver_cfg, guess=guess)
        was_done = states.done
        states, _, done, info = env.batch_step(states, actions, cfg, auto_reset=False)
        return (states, memory, key, jnp.where(done & ~was_done, info["won"], won)), None

    return jax.lax.scan(one_step, carry, None, length=steps)[0]


_COMPILED: dict = {}


def compiled_play(carry, cfg, solver_cfg, guess, steps: int) -> tuple[Callable, float]:
    """(``carry -> carry``, compile seconds): ``solver_play_steps`` compiled for this batch
    and these configs, once per process (0.0 seconds when it was already)."""
    key = (cfg, solver_cfg, guess, steps, carry[3].shape[0])
    if key in _COMPILED:
        return _COMPILED[key], 0.0
    began = time.perf_counter()
    play = jax.jit(solver_play_steps, static_argnums=(1, 2, 3, 4)).lower(carry, cfg, solver_cfg, guess, steps).compile()
    _COMPILED[key] = play
    return play, time.perf_counter() - began


def device_wins(layouts: np.ndarray, solver_options: dict, batch: int, chunk_steps: int = 32,
                on_batch=None, opening: tuple[int, int] | None = None) -> tuple[np.ndarray, float]:
    """(bool[N], compile seconds): the JAX solver's outcome on each layout, ``batch`` at a time.
    ``on_batch(bool[n])``, if given, receives the outcomes so far after each batch. With
    ``opening`` (a cell its layouts keep clear with its neighbours), each board is opened
    there before the solver moves, so its own first click is never played."""
    games, height, width = layouts.shape
    mines = int(layouts[0].sum())
    cfg = env.EnvConfig(H=height, W=width, mine_count=mines, guarantee_safe_neighborhood=True)
    solver_cfg, guess = device_solver_config(height, width, solver_options)
    batch = min(batch, games)

    wins, compile_s = [], 0.0
    for start in range(0, games, batch):
        part = layouts[start : start + batch]
        padded = np.concatenate([part, np.repeat(part[:1], batch - len(part), axis=0)])
        states = jax.vmap(lambda mask: env.from_mines(mask, cfg))(jnp.asarray(padded))
        won = jnp.zeros(batch, bool)
        if opening is not None:
            first = jnp.full(batch, opening[0] * width + opening[1], jnp.int32)
            states, _, done, info = env.batch_step(states, first, cfg, auto_reset=False)
            won = done & info["won"]
        carry = (states, solver.empty_memory(states), jax.random.key(start), won)
        if start == 0:
            compiled, compile_s = compiled_play(carry, cfg, solver_cfg, guess, chunk_steps)
        while not bool(jnp.all(carry[0].done)):
            carry = compiled(carry)
        wins.append(np.asarray(carry[3])[: len(part)])
        if on_batch is not None:
            on_batch(np.concatenate(wins))
    return np.concatenate(wins), compile_s

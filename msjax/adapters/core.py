"""What both adapters share, with no gymnax or Jumanji import: a one-board step that runs
as msjax's batch step under ``jax.vmap``, how an episode ended (terminated or truncated),
and the restart of ended games.

gymnax and Jumanji consumers write ``jax.vmap(env.step)``. Under ``vmap``, msjax's
one-board ``env.step`` places mines and runs the flood fill on every board at every step
(a ``lax.cond`` becomes a select, a ``while_loop`` runs until the slowest board is done);
``env.batch_step`` gates that rare work over the batch and is much faster on big batches
(docs/results/env-throughput.md). ``game_step(cfg)`` is ``env.step`` with a ``jax.custom_batching.custom_vmap``
rule that calls ``env.batch_step`` (without its auto-reset), so the adapters keep the
batch speed whoever vmaps them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from msjax import env
from msjax.env import EnvConfig, EnvState

StepResult = tuple[EnvState, jax.Array, jax.Array, dict[str, jax.Array]]


def check_bool(name: str, value: Any) -> None:
    """Raises a ``TypeError`` naming ``name`` unless ``value`` is True or False (a string such
    as ``'no'`` would otherwise read as True)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name}={value!r} must be a bool (True or False)")


def check_key(key: Any, name: str = "key") -> None:
    """Raises a ``TypeError`` naming ``name`` unless ``key`` is one PRNG key: a typed key
    (``jax.random.key(seed)``) or a legacy one (``jax.random.PRNGKey(seed)``, uint32[2]).

    Reads only the dtype and shape, so it works on traced keys (inside ``jit`` and, per
    board, under ``vmap``), and costs nothing in the compiled program. A game keeps its key
    and draws its mines from it at the first reveal, so a wrong key would fail there, far
    from its cause.
    """
    dtype, shape = getattr(key, "dtype", None), jnp.shape(key)
    typed = dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key) and shape == ()
    legacy = dtype == jnp.uint32 and shape == (2,)
    if not (typed or legacy):
        got = f"{dtype}{list(shape)}" if dtype is not None else repr(key)
        raise TypeError(
            f"{name}={got}: expected one PRNG key, jax.random.key(seed) or a legacy jax.random.PRNGKey(seed) "
            "(uint32[2])"
        )


def check_board_shape(game: EnvState, cfg: EnvConfig, cfg_name: str) -> None:
    """Raises a ``ValueError`` naming both shapes unless ``game`` (one board, or a batch)
    is a board of ``cfg``'s ``H x W``; ``cfg_name`` says where ``cfg`` came from
    (``"params.cfg"``). Shapes are static, so this runs in Python, at trace time."""
    rows, cols = game.revealed.shape[-2:]
    if (rows, cols) != (cfg.H, cfg.W):
        raise ValueError(
            f"state's board is {rows}x{cols} but {cfg_name} is {cfg.H}x{cfg.W}: "
            f"step a state with the {cfg_name.split('.')[0]} that reset it"
        )


def _broadcast(value: Any, batched: Any, axis_size: int) -> Any:
    """``value`` with every leaf that ``batched`` marks False given a leading axis."""
    return jax.tree.map(
        lambda leaf, is_batched: leaf if is_batched else jnp.broadcast_to(leaf, (axis_size,) + jnp.shape(leaf)),
        value,
        batched,
    )


@functools.lru_cache(maxsize=None)
def game_step(cfg: EnvConfig) -> Callable[[EnvState, jax.Array], StepResult]:
    """``env.step`` on one board for ``cfg``, which under ``jax.vmap`` runs as
    ``env.batch_step(..., auto_reset=False)`` (same results, the rare work gated over the
    batch). Finished games are returned as they ended.

    The returned function takes ``(state: EnvState, action: int32[])`` and returns
    ``(state, reward: float32[], done: bool[], info)`` as ``env.step``; vmapped, every
    output gains the batch axis ``[B]``. One function per config (cached), so jitted
    callers do not retrace.
    """

    @jax.custom_batching.custom_vmap
    def step_one(state: EnvState, action: jax.Array) -> StepResult:
        return env.step(state, action, cfg)

    @step_one.def_vmap
    def step_batch(axis_size, in_batched, state, action):
        state_batched, action_batched = in_batched
        states = _broadcast(state, state_batched, axis_size)
        actions = _broadcast(jnp.asarray(action, jnp.int32), action_batched, axis_size)
        out = env.batch_step(states, actions, cfg, auto_reset=False)
        return out, jax.tree.map(lambda _: True, out)

    return step_one


def episode_end(state: EnvState, cfg: EnvConfig) -> tuple[jax.Array, jax.Array]:
    """``(terminated: bool[], truncated: bool[])`` of a game after a step.

    Terminated: the game is won or a mine was revealed (a state the agent's choices led
    to). Truncated: neither, but the game has used its moves, ``env.move_limit(cfg)``
    (``max_steps`` when set, when msjax itself ends the game as a loss with
    ``loss_reward``; else ``MOVES_PER_CELL * H * W``, when only the adapter stops it, with
    no extra reward). Both False while the game goes on. Works on batched states too
    (every field ``[B, ...]``) when vmapped.
    """
    hit_mine = jnp.any(state.revealed & state.mine_mask)
    terminated = state.won | hit_mine
    truncated = ~terminated & (state.step_count >= env.move_limit(cfg))
    return terminated, truncated


def restart_ended(state: EnvState, ended: jax.Array, cfg: EnvConfig) -> EnvState:
    """``state`` where ``ended`` (bool[]) is False, else a new game from the game's own key.

    The new game is the one ``env.batch_step`` would start (``env.reset(state.key)``: mine
    placement already moved the key on, and a game that ended before its first reveal drew
    nothing from it), so an adapter's games are msjax's games on the same keys. Under
    ``jax.vmap`` the restart runs only when some game of the batch ended, as in
    ``env.batch_step``."""
    return _restarter(cfg)(state, ended)


def _restart_where(state: EnvState, ended: jax.Array, cfg: EnvConfig) -> EnvState:
    fresh = jax.vmap(env.reset, in_axes=(0, None))(state.key, cfg) if ended.ndim else env.reset(state.key, cfg)
    return env.select_games(ended, fresh, state)


@functools.lru_cache(maxsize=None)
def _restarter(cfg: EnvConfig) -> Callable[[EnvState, jax.Array], EnvState]:
    @jax.custom_batching.custom_vmap
    def restart_one(state: EnvState, ended: jax.Array) -> EnvState:
        return _restart_where(state, ended, cfg)

    @restart_one.def_vmap
    def restart_batch(axis_size, in_batched, state, ended):
        states = _broadcast(state, in_batched[0], axis_size)
        ended = _broadcast(ended, in_batched[1], axis_size)
        restarted = jax.lax.cond(jnp.any(ended), lambda s: _restart_where(s, ended, cfg), lambda s: s, states)
        return restarted, jax.tree.map(lambda _: True, restarted)

    return restart_one

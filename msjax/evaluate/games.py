"""Whole games on the device: one game per batch slot, in vmapped batches.

``play_batch`` plays one game on each of ``B`` fresh boards: a ``lax.while_loop`` steps
the batch until every game has finished (or hit the move cap, which counts as a loss),
and a game's figures are frozen at the step it ends. The batch is stepped with
``env.batch_step``, which starts a new game in a finished slot; those slots are fed a
flag toggle (which never places mines) and their new games are ignored, so finished
games cost almost nothing.

``play_in_batches`` runs such a batch function over jitted batches. A player
(``msjax.agent.Player``) whose leaves are all arrays (``msjax.agent.Agent``) is passed to
the compiled function as an argument, so new parameters of the same network do not
recompile; any other player is a static argument.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.random import threefry2x32_p

from msjax import agent as agent_lib
from msjax import env as ms_env
from msjax.agent import player_actions

# ``count_moves(states, actions, cfg) -> {name: int32[B]}``: per-move counters of a batch
CountMoves = Callable[[ms_env.EnvState, jax.Array, ms_env.EnvConfig], dict[str, jax.Array]]


def split_game_keys(keys: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(board keys, action keys) ``[B]``: a game's key gives its mines and the player's draws."""
    return jax.vmap(lambda k: tuple(jax.random.split(k)), out_axes=(0, 0))(keys)


MAX_GAMES = 2**32
"""Games a seed's keys reach: game ``i``'s key is split off counter ``i``, a 32-bit index."""


def game_keys(seed: int, num_games: int, first_game: int = 0) -> jax.Array:
    """PRNG keys ``[num_games]`` of games ``first_game .. first_game + num_games - 1``: game
    ``i``'s key is ``jax.random.split(jax.random.key(seed), n)[i]`` for any ``n > i``, derived
    alone, so that a batch's keys cost the batch's memory, not all the games'.

    Raises:
      ValueError: ``num_games < 1``, ``first_game < 0``, or games past ``MAX_GAMES``.
    """
    if num_games < 1 or first_game < 0 or first_game + num_games > MAX_GAMES:
        raise ValueError(
            f"games {first_game}..{first_game + num_games - 1}: must be a non-empty range within [0, {MAX_GAMES - 1}]"
        )
    root = jax.random.key(seed)
    if str(jax.random.key_impl(root)) != "threefry2x32" or not jax.config.jax_threefry_partitionable:
        # another generator: game i's key is only defined by splitting them all
        return jax.random.split(root, first_game + num_games)[first_game:]
    return _split_range(root, jnp.uint32(first_game), num_games)


@functools.partial(jax.jit, static_argnames=("num_games",))
def _split_range(root: jax.Array, first_game: jax.Array, num_games: int) -> jax.Array:
    # jax.random.split of the (partitionable, JAX's default) threefry generator: key i is
    # threefry2x32(root, (high, low) 32-bit halves of i); here i < 2**32, so high is 0.
    index = first_game + jnp.arange(num_games, dtype=jnp.uint32)
    root_bits = jax.random.key_data(root)
    bits = threefry2x32_p.bind(root_bits[0], root_bits[1], jnp.zeros_like(index), index)
    return jax.random.wrap_key_data(jnp.stack(bits, axis=-1), impl=jax.random.key_impl(root))


def _empty_results(num_games: int, counters: tuple[str, ...]) -> dict[str, jax.Array]:
    zeros = jnp.zeros(num_games, jnp.int32)
    return {
        "won": jnp.zeros(num_games, bool),
        "finished": jnp.zeros(num_games, bool),
        "steps": zeros,
        "revealed_fraction": jnp.zeros(num_games, jnp.float32),
        "invalid": zeros,
        "returns": jnp.zeros(num_games, jnp.float32),
        "revealed_cells": zeros,
        **{name: zeros for name in counters},
    }


def _record_move(games, playing, reward, done, info, counts) -> dict[str, jax.Array]:
    """``games`` after one move of each game still ``playing`` (the others stay frozen)."""
    new = {
        "won": jnp.where(playing & done, info["won"], games["won"]),
        "finished": games["finished"] | done,
        "steps": jnp.where(playing, info["steps"], games["steps"]),
        "revealed_fraction": jnp.where(
            playing, info["revealed_fraction"].astype(jnp.float32), games["revealed_fraction"]
        ),
        "invalid": games["invalid"] + (playing & info["invalid"]).astype(jnp.int32),
        "returns": games["returns"] + jnp.where(playing, reward, 0.0),
        "revealed_cells": games["revealed_cells"] + jnp.where(playing, info["new_revealed"], 0),
    }
    for name, count in counts.items():
        new[name] = games[name] + jnp.where(playing, count, 0)
    return new


def play_batch(
    player: Any,
    keys: jax.Array,
    cfg: ms_env.EnvConfig,
    max_steps: int,
    count_moves: CountMoves | None = None,
) -> dict[str, jax.Array]:
    """Plays one game in each of ``B`` batch slots.

    Args:
      player: a ``Player`` (a pytree argument or a static one).
      keys: PRNG keys ``[B]``, one per game (its mines and the player's draws).
      cfg: the game.
      max_steps: a game still running after this many steps counts as lost.
      count_moves: optional ``count_moves(states, actions, cfg) -> {name: int32[B]}``,
        judged before each move and summed over each game's moves (the diagnostics'
        avoidability counters).

    Returns:
      Per game ``won: bool[B]``, ``finished: bool[B]``, ``steps: int32[B]``,
      ``revealed_fraction: float32[B]``, ``invalid: int32[B]``, ``returns: float32[B]``,
      ``mine_count: int32[B]``, ``revealed_cells: int32[B]`` (safe cells the game opened),
      and ``count_moves``'s counters.
    """
    num_games = keys.shape[0]
    board_keys, act_keys = split_game_keys(keys)
    states = jax.vmap(ms_env.reset, in_axes=(0, None))(board_keys, cfg)
    harmless = jnp.int32(ms_env.encode_action(0, True, cfg))  # a flag toggle never places mines
    counters = ()
    if count_moves is not None:
        no_moves = jnp.full(num_games, harmless)
        counters = tuple(jax.eval_shape(lambda s, a: count_moves(s, a, cfg), states, no_moves))

    # A player that carries beliefs over moves (Agent.carries_beliefs) hands them on here.
    carries = bool(getattr(player, "carries_beliefs", False))
    beliefs = player.initial_beliefs(states) if carries else None

    def running(carry):
        t, _, _, games = carry
        return (t < max_steps) & ~jnp.all(games["finished"])

    def play_step(carry):
        t, states, beliefs, games = carry
        step_keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(act_keys, t)
        playing = ~games["finished"]
        if carries:
            moves, beliefs = player.act_carry(states, step_keys, beliefs)
        else:
            moves = player_actions(player, states, step_keys)
        actions = jnp.where(playing, moves, harmless)
        counts = {} if count_moves is None else count_moves(states, actions, cfg)
        states, reward, done, info = ms_env.batch_step(states, actions, cfg)
        return t + 1, states, beliefs, _record_move(games, playing, reward, done, info, counts)

    mine_count = states.mine_count  # each game's, fixed at reset
    start = (jnp.int32(0), states, beliefs, _empty_results(num_games, counters))
    _, _, _, games = jax.lax.while_loop(running, play_step, start)
    return {**games, "won": games["won"] & games["finished"], "mine_count": mine_count}


@functools.partial(jax.jit, static_argnames=("batch_fn", "cfg", "max_steps"))
def _run_traced(player, keys, *, batch_fn, cfg, max_steps):
    return batch_fn(player, keys, cfg, max_steps)


@functools.partial(jax.jit, static_argnames=("batch_fn", "player", "cfg", "max_steps"))
def _run_static(player, keys, *, batch_fn, cfg, max_steps):
    return batch_fn(player, keys, cfg, max_steps)


def play_in_batches(
    batch_fn: Callable,
    player: Any,
    env_cfg: ms_env.EnvConfig,
    episodes: int,
    seed: int = 0,
    batch_size: int = 1024,
    max_steps: int | None = None,
    on_batch: Callable[[int], None] | None = None,
    check_batch: Callable[[jax.stages.Lowered], None] | None = None,
) -> dict[str, np.ndarray]:
    """Per-game results (numpy ``[episodes]``) of ``batch_fn`` run over jitted batches.

    ``batch_fn(player, keys[B], cfg, max_steps) -> dict of [B] arrays`` plays one game
    per key (``play_batch``, or it with the diagnostics' counters). ``player`` is a
    ``Player`` or a plain ``act(state, key)`` function. Game ``i`` is the same board for
    every player and every ``batch_size`` (its key is the ``i``-th split of ``seed``), so
    players can be compared game by game. ``max_steps`` defaults to ``env.move_limit``.
    ``on_batch(games)``, when given, is called after each batch with the number of
    games it finished (progress for people). ``check_batch(lowered)``, when given, is
    handed the batches' program (``jax.jit(...).lower(...)``: its ``out_info``, and its
    ``compile().memory_analysis()``, a compile the batches then reuse) before the first
    batch runs, and may raise to stop there (a memory check). Each batch derives its own
    games' keys (``game_keys``), so memory does not grow with ``episodes`` beyond the
    results.

    Raises:
      ValueError: ``episodes``, ``batch_size`` or ``max_steps`` below 1, or games past
        ``MAX_GAMES``.
    """
    if episodes < 1:
        raise ValueError(f"episodes={episodes} must be >= 1")
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be >= 1")
    max_steps = ms_env.move_limit(env_cfg) if max_steps is None else max_steps
    if max_steps < 1:
        raise ValueError(f"max_steps={max_steps} must be >= 1")
    player = agent_lib.as_player(player)
    batch_size = min(batch_size, episodes)
    num_batches = -(-episodes // batch_size)
    if num_batches * batch_size > MAX_GAMES:
        raise ValueError(f"episodes={episodes} in batches of {batch_size} plays past game {MAX_GAMES - 1}")
    run = _run_traced if agent_lib.is_array_pytree(player) else _run_static
    options = dict(batch_fn=batch_fn, cfg=env_cfg, max_steps=max_steps)
    if check_batch is not None:
        check_batch(run.lower(player, game_keys(seed, batch_size), **options))
    batches = []
    for i in range(num_batches):
        keys = game_keys(seed, batch_size, first_game=i * batch_size)  # the last batch's tail: games past episodes
        batches.append(jax.device_get(run(player, keys, **options)))
        if on_batch is not None:
            on_batch(min(batch_size, episodes - i * batch_size))
    return {name: np.concatenate([b[name] for b in batches])[:episodes] for name in batches[0]}


def play_games(
    player: Any,
    env_cfg: ms_env.EnvConfig,
    episodes: int,
    seed: int = 0,
    batch_size: int = 1024,
    max_steps: int | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> dict[str, np.ndarray]:
    """Per-game results (numpy arrays ``[episodes]``, see ``play_batch``) of ``player`` on
    fresh boards.

    Game ``i`` is the same board for every player and every ``batch_size`` (its key is the
    ``i``-th split of ``seed``), so players can be compared game by game. ``on_batch``:
    see ``play_in_batches``.
    """
    return play_in_batches(play_batch, player, env_cfg, episodes, seed, batch_size, max_steps, on_batch)

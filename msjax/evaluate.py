"""Plays whole games with an agent on fresh boards and summarises how it did.

``evaluate`` runs ``episodes`` games in vmapped batches on the device. Every board plays
exactly one game: a ``lax.while_loop`` steps the batch until each board has finished its
game (or hit the step cap, which counts as a loss), and a board's figures are frozen at
the step its game ends. The batch is stepped with ``env.batch_step``, which starts a
new game on a finished board; those boards are fed a flag toggle (which never places
mines) and their new games are ignored, so finished boards cost almost nothing.

An agent is any ``act(state, key) -> int32 action`` on a single ``EnvState`` (it is
vmapped here), or an object with such an ``act`` method. When the agent is a pytree of
arrays (``msjax.agent.Agent``), it is passed to the compiled function as an argument,
so evaluating new parameters of the same network does not recompile.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from msjax import env as ms_env

Act = Callable[[ms_env.EnvState, jax.Array], jax.Array]


def wilson_interval(successes: int, trials: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval (95% for the default ``z``) of a binomial rate."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denom = 1.0 + z * z / trials
    center = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1.0 - p) / trials + z * z / (4 * trials * trials)) / denom
    return max(0.0, center - half), min(1.0, center + half)


@functools.lru_cache(maxsize=None)
def random_agent(cfg: ms_env.EnvConfig) -> Act:
    """A baseline that reveals a hidden (playable) cell uniformly at random (never flags).

    The same function object is returned for equal configs, so evaluations reuse its
    compiled game loop.
    """

    def act(state: ms_env.EnvState, key: jax.Array) -> jax.Array:
        hidden = ~state.revealed
        if cfg.boards:
            hidden = hidden & ms_env.playable(state, cfg)
        hidden = hidden.reshape(-1)
        logits = jnp.where(hidden, 0.0, -jnp.inf)
        return jax.random.categorical(key, logits).astype(jnp.int32)

    return act


def _call_act(agent: Any, state: ms_env.EnvState, key: jax.Array) -> jax.Array:
    return agent.act(state, key)


def _call_agent(agent: Any, state: ms_env.EnvState, key: jax.Array) -> jax.Array:
    return agent(state, key)


def _is_array_pytree(agent: Any) -> bool:
    leaves = jax.tree.leaves(agent)
    return bool(leaves) and all(isinstance(x, (jax.Array, np.ndarray)) for x in leaves)


def split_game_keys(keys: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(board keys, action keys) ``[B]``: a game's key gives its mines and the agent's draws."""
    return jax.vmap(lambda k: tuple(jax.random.split(k)), out_axes=(0, 0))(keys)


def play_batch(
    agent: Any,
    keys: jax.Array,
    cfg: ms_env.EnvConfig,
    max_steps: int,
    policy: Callable,
    count_moves: Callable | None = None,
) -> dict[str, jax.Array]:
    """Plays one game on each of ``B`` boards.

    Args:
      agent: passed to ``policy`` (a pytree argument or a static callable).
      keys: PRNG keys ``[B]``, one per game (its mines and the agent's draws).
      cfg: the game.
      max_steps: a game still running after this many steps counts as lost.
      policy: ``policy(agent, state, key) -> int32 action``.
      count_moves: optional ``count_moves(states, actions, cfg) -> {name: int32[B]}``,
        judged before each move and summed over each game's moves (the diagnostics'
        avoidability counters).

    Returns:
      Per-board ``won: bool[B]``, ``finished: bool[B]``, ``steps: int32[B]``,
      ``revealed_fraction: float32[B]``, ``invalid: int32[B]``, ``returns: float32[B]``,
      ``mine_count: int32[B]``, ``revealed_cells: int32[B]`` (safe cells the game opened),
      and ``count_moves``'s counters.
    """
    num_boards = keys.shape[0]
    board_keys, act_keys = split_game_keys(keys)
    states = jax.vmap(ms_env.reset, in_axes=(0, None))(board_keys, cfg)
    zeros_i = jnp.zeros(num_boards, jnp.int32)
    harmless = jnp.int32(cfg.num_cells)  # flag toggle on cell 0: never places mines
    no_moves = jnp.full(num_boards, harmless)
    counters = ()
    if count_moves is not None:
        counters = tuple(jax.eval_shape(lambda s, a: count_moves(s, a, cfg), states, no_moves))
    games = {
        "won": jnp.zeros(num_boards, bool),
        "finished": jnp.zeros(num_boards, bool),
        "steps": zeros_i,
        "revealed_fraction": jnp.zeros(num_boards, jnp.float32),
        "invalid": zeros_i,
        "returns": jnp.zeros(num_boards, jnp.float32),
        "revealed_cells": zeros_i,
        **{name: zeros_i for name in counters},
    }

    def running(carry):
        t, _, games = carry
        return (t < max_steps) & ~jnp.all(games["finished"])

    def play_step(carry):
        t, states, games = carry
        step_keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(act_keys, t)
        actions = jax.vmap(policy, in_axes=(None, 0, 0))(agent, states, step_keys)
        playing = ~games["finished"]
        actions = jnp.where(playing, jnp.asarray(actions, jnp.int32), harmless)
        counts = {} if count_moves is None else count_moves(states, actions, cfg)
        states, reward, done, info = ms_env.batch_step(states, actions, cfg)
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
        for name in counters:
            new[name] = games[name] + jnp.where(playing, counts[name], 0)
        return t + 1, states, new

    mine_count = states.mine_count  # each game's, fixed at reset
    _, _, games = jax.lax.while_loop(running, play_step, (jnp.int32(0), states, games))
    return {**games, "won": games["won"] & games["finished"], "mine_count": mine_count}


@functools.partial(jax.jit, static_argnames=("batch_fn", "cfg", "max_steps", "policy"))
def _run_dynamic(agent, keys, *, batch_fn, cfg, max_steps, policy):
    return batch_fn(agent, keys, cfg, max_steps, policy)


@functools.partial(jax.jit, static_argnames=("batch_fn", "agent", "cfg", "max_steps", "policy"))
def _run_static(agent, keys, *, batch_fn, cfg, max_steps, policy):
    return batch_fn(agent, keys, cfg, max_steps, policy)


def policy_of(agent: Any) -> Callable:
    """``policy(agent, state, key) -> action`` for an agent with ``.act`` or a plain callable."""
    return _call_act if hasattr(agent, "act") else _call_agent


def play_in_batches(
    batch_fn: Callable,
    agent: Any,
    env_cfg: ms_env.EnvConfig,
    episodes: int,
    seed: int = 0,
    batch_size: int = 1024,
    max_steps: int | None = None,
) -> dict[str, np.ndarray]:
    """Per-game results (numpy ``[episodes]``) of ``batch_fn`` run over jitted batches.

    ``batch_fn(agent, keys[B], cfg, max_steps, policy) -> dict of [B] arrays`` plays one
    game per key (``play_batch``, or it with the diagnostics' counters). Game ``i`` is the same
    board for every agent and every ``batch_size`` (its key is the ``i``-th split of
    ``seed``), so agents can be compared game by game. An agent whose leaves are all arrays
    is a traced argument (new weights, no recompile); any other is static.
    """
    if episodes < 1:
        raise ValueError(f"episodes={episodes} must be >= 1")
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be >= 1")
    max_steps = 4 * env_cfg.num_cells if max_steps is None else max_steps
    if max_steps < 1:
        raise ValueError(f"max_steps={max_steps} must be >= 1")
    batch_size = min(batch_size, episodes)
    num_batches = -(-episodes // batch_size)
    keys = jax.random.split(jax.random.key(seed), num_batches * batch_size)
    run = _run_dynamic if _is_array_pytree(agent) else _run_static
    options = dict(batch_fn=batch_fn, cfg=env_cfg, max_steps=max_steps, policy=policy_of(agent))
    batches = [
        jax.device_get(run(agent, keys[i * batch_size : (i + 1) * batch_size], **options))
        for i in range(num_batches)
    ]
    return {name: np.concatenate([b[name] for b in batches])[:episodes] for name in batches[0]}


def play_games(
    agent: Any,
    env_cfg: ms_env.EnvConfig,
    episodes: int,
    seed: int = 0,
    batch_size: int = 1024,
    max_steps: int | None = None,
) -> dict[str, np.ndarray]:
    """Per-game results (numpy arrays ``[episodes]``) of ``agent`` on fresh boards.

    Game ``i`` is the same board for every agent and every ``batch_size`` (its key is the
    ``i``-th split of ``seed``), so agents can be compared game by game.
    """
    return play_in_batches(play_batch, agent, env_cfg, episodes, seed, batch_size, max_steps)


def summarize(games: dict[str, np.ndarray]) -> dict[str, Any]:
    """The evaluation figures of per-game results from ``play_games``."""
    won = games["won"]
    episodes = int(won.size)
    wins = int(won.sum())
    lost = ~won
    steps = games["steps"]
    return {
        "episodes": episodes,
        "win_rate": wins / episodes,
        "win_rate_ci95": wilson_interval(wins, episodes),
        "revealed_fraction": float(games["revealed_fraction"].mean()),
        "steps_to_win": float(steps[won].mean()) if wins else float("nan"),
        "steps_to_loss": float(steps[lost].mean()) if wins < episodes else float("nan"),
        "invalid_action_rate": float(games["invalid"].sum() / max(1, steps.sum())),
        "mean_return": float(games["returns"].mean()),
        "unfinished": int((~games["finished"]).sum()),
    }


def reward_components(games: dict[str, np.ndarray], cfg: ms_env.EnvConfig) -> dict[str, float]:
    """The mean return per game split by where it came from (the env's reward rules).

    ``progress`` (``progress_reward`` per safe cell opened), ``win`` and ``loss`` (the
    terminal rewards), ``step_penalty`` (every valid move), ``invalid`` (invalid moves), and
    ``flag_shaping``: the rest of the return, which only flag shaping earns (0 without
    ``use_flag_shaping``, up to float rounding). Needs ``play_games``'s ``revealed_cells``.
    """
    won = games["won"]
    lost = games["finished"] & ~won
    valid_moves = games["steps"] - games["invalid"]
    parts = {
        "progress": cfg.progress_reward * games["revealed_cells"],
        "win": cfg.win_reward * won,
        "loss": cfg.loss_reward * lost,
        "step_penalty": -cfg.step_penalty * valid_moves,
        "invalid": -cfg.invalid_penalty * games["invalid"],
    }
    means = {name: float(np.mean(value)) for name, value in parts.items()}
    means["flag_shaping"] = float(games["returns"].mean()) - sum(means.values())
    return means


def evaluate(
    agent: Any,
    env_cfg: ms_env.EnvConfig,
    episodes: int = 1000,
    seed: int = 0,
    batch_size: int = 1024,
    max_steps: int | None = None,
) -> dict[str, Any]:
    """Plays ``episodes`` games of ``env_cfg`` with ``agent`` and returns its figures.

    Args:
      agent: ``act(state, key) -> int32[]`` on one ``EnvState``, or an object with such an
        ``act`` method (e.g. ``msjax.load_agent(...)``).
      env_cfg: the game to play.
      episodes: games to play, each on a fresh board.
      seed: picks the boards and the agent's keys.
      batch_size: boards stepped together on the device.
      max_steps: a game still running after this many steps is a loss (default 4*H*W).

    Returns:
      ``win_rate``, ``win_rate_ci95`` (Wilson ``(low, high)``), ``revealed_fraction`` (mean
      fraction of safe cells revealed), ``steps_to_win`` and ``steps_to_loss`` (means, nan
      when there are none), ``invalid_action_rate`` (invalid actions per action taken),
      ``mean_return`` and its ``reward_components`` (``reward_components``), ``episodes``
      and ``unfinished`` (games stopped by the step cap). Guesses per game, avoidable
      guesses and calibration come from ``msjax.diagnostics.diagnose``, which runs the
      solver on every position.
    """
    games = play_games(agent, env_cfg, episodes, seed, batch_size, max_steps)
    return {**summarize(games), "reward_components": reward_components(games, env_cfg)}


if __name__ == "__main__":  # python -m msjax.evaluate: the command line lives with the diagnostics
    import sys

    from msjax.diagnostics import main

    sys.exit(main())

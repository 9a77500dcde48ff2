"""Calibration of mine beliefs: how well a player's mine probabilities match the mines.

``collect_positions`` plays games like ``msjax.evaluate.evaluate`` (the same boards for the
same seed) and keeps every position after the opening click with the player's beliefs in
it; ``positions_calibration`` scores them with ``msjax.stats.calibration_metrics`` (AUROC by
ranks, expected calibration error, Brier score) over the hidden cells, and on boards small
enough ``exact_gap`` is the mean absolute difference between the player's probabilities and
the exact ones of the NumPy reference (``msjax.reference.analyse``). ``calibration_data`` does the same for a turn-by-turn
player (the host solvers, the viz's reliability diagram). ``value_calibration`` scores a value
head the same way: its estimate in every position against whether that game was won.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from msjax import agent as agent_lib
from msjax import env as ms_env
from msjax import evaluate as evaluate_lib
from msjax import reference
from msjax.stats import calibration_bins, calibration_metrics

class NoPositions(ValueError):
    """Every game ended at its first move, so there is no position to score."""


class Positions(NamedTuple):
    """Positions met in games, after the opening click and before the game ended.

    states: ``EnvState`` with a batch axis ``[N]``.
    mine_probabilities: f32[N, H, W], the player's beliefs in each position.
    """

    states: ms_env.EnvState
    mine_probabilities: jax.Array


def _position_step(player, reader, states, keys, cfg, read):
    """``reader``'s ``read`` (a method of one state) in each position, then one step of
    every game by ``player``: the readings, the next states, done and won (of this step)."""
    readings = jax.vmap(getattr(reader, read))(states)
    actions = evaluate_lib.player_actions(player, states, keys)
    states, _, done, info = ms_env.batch_step(states, actions, cfg)
    return readings, states, done, info["won"]


_POSITION_STEPS = {
    True: jax.jit(_position_step, static_argnames=("cfg", "read")),  # both array pytrees: traced
    False: jax.jit(_position_step, static_argnames=("player", "reader", "cfg", "read")),
}


class _Played(NamedTuple):
    states: ms_env.EnvState  # [N], every position after the opening click
    readings: jax.Array  # [N, ...], the reader's reading of each
    game: np.ndarray  # int[N], the game of each position
    won: np.ndarray  # bool[games], each game's outcome


def _play_positions(player, reader, read: str, env_cfg, games: int, seed: int, max_steps: int | None,
                    on_games_done: Callable[[int], None] | None) -> _Played:
    """Plays ``games`` games of ``player`` (stepped together) and keeps every position after
    the opening click with ``reader.read(state)`` in it, the game it belongs to and each
    game's outcome (``collect_positions``' rules)."""
    if games < 1:
        raise ValueError(f"games={games} must be >= 1")
    max_steps = ms_env.move_limit(env_cfg) if max_steps is None else max_steps
    board_keys, act_keys = evaluate_lib.split_game_keys(evaluate_lib.game_keys(seed, games))
    states = jax.vmap(ms_env.reset, in_axes=(0, None))(board_keys, env_cfg)
    position_step = _POSITION_STEPS[agent_lib.is_array_pytree(player) and agent_lib.is_array_pytree(reader)]
    won = np.zeros(games, bool)

    def choose(position, t):
        step_keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(act_keys, t)
        return position_step(player, reader, position[0], step_keys, env_cfg, read)

    def advance(position, choice):
        _, next_states, done, won_now = choice
        ended = np.asarray(done) & ~position[1]
        won[ended] = np.asarray(won_now)[ended]
        if on_games_done is not None:
            on_games_done(int(ended.sum()))
        return next_states, position[1] | ended

    start = (states, np.zeros(games, bool))  # the batch and which games have finished
    kept_states, kept_readings, kept_games = [], [], []
    for (before, finished), choice in evaluate_lib.play_out(start, choose, advance, lambda p: p[1].all(), max_steps):
        if choice is None:
            break
        keep = ~finished & np.asarray(before.first_click_done) & ~np.asarray(before.done)
        if keep.any():
            index = np.flatnonzero(keep)
            kept_states.append(jax.tree.map(lambda x: x[index], before))
            kept_readings.append(choice[0][index])
            kept_games.append(index)
    if not kept_states:
        raise NoPositions("no position after the opening click: every game ended at its first move")
    states = jax.tree.map(lambda *xs: jnp.concatenate(xs), *kept_states)
    return _Played(states, jnp.concatenate(kept_readings), np.concatenate(kept_games), won)


def collect_positions(
    agent: Any,
    env_cfg: ms_env.EnvConfig,
    games: int = 64,
    seed: int = 0,
    max_steps: int | None = None,
    on_games_done: Callable[[int], None] | None = None,
) -> Positions:
    """Every position of ``games`` games (stepped together on the device), with the
    player's mine probabilities in each; ``evaluate.play_out`` steps the batch until every
    game has ended (at most ``max_steps`` moves, default ``env.move_limit``). ``agent``
    needs ``act`` and ``mine_probabilities``. ``on_games_done(count)``, when given, hears
    how many games ended at each move (progress for people).

    Raises:
      ValueError: ``games < 1``; ``NoPositions`` (a ``ValueError``) when every game ended
        at its first move (a board whose first click clears it).
    """
    played = _play_positions(agent, agent, "mine_probabilities", env_cfg, games, seed, max_steps, on_games_done)
    return Positions(played.states, played.readings)


def value_positions(
    agent: Any,
    env_cfg: ms_env.EnvConfig,
    games: int = 64,
    seed: int = 0,
    player: Any = None,
    on_games_done: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(value f32[N], won bool[N], game int[N])``: ``agent``'s value head (``Agent.value``)
    in every position after the opening click of ``games`` games played by ``player``
    (default: the agent itself; e.g. the agent with its guesses searched), whether the game
    of each position was won, and which game it was (the boards of ``evaluate.play_games``
    and ``collect_positions`` for the same seed).

    Raises:
      ValueError: ``games < 1``; ``NoPositions`` when every game ended at its first move.
    """
    played = _play_positions(agent if player is None else player, agent, "value", env_cfg, games, seed, None,
                             on_games_done)
    return np.asarray(played.readings, np.float32), played.won[played.game], played.game


def value_calibration(
    agent: Any,
    env_cfg: ms_env.EnvConfig,
    games: int = 64,
    seed: int = 0,
    player: Any = None,
    num_bins: int = 10,
    on_games_done: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """How well the value head predicts the outcome (``value_positions``): ``stats.
    calibration_metrics`` of the values, clipped to [0, 1], against won (``value_auroc``,
    ``value_ece``, ``value_brier``, ``value_positions``), the mean value and the fraction won
    over the positions, the fraction of values outside [0, 1] and the bins (``value_bins``:
    each bin's positions, mean value and fraction won)."""
    values, won, _ = value_positions(agent, env_cfg, games, seed, player, on_games_done)
    clipped = np.clip(values, 0.0, 1.0)
    metrics = calibration_metrics(clipped, won, num_bins=num_bins)
    bins = calibration_bins(clipped, won, num_bins)
    return {
        "value_auroc": metrics["auroc"],
        "value_ece": metrics["ece"],
        "value_brier": metrics["brier"],
        "value_positions": metrics["cells"],
        "value_mean": float(values.mean()),
        "won_mean": float(won.mean()),
        "value_outside": float(np.mean((values < 0.0) | (values > 1.0))),
        "value_bins": [
            {"low": float(bins.edges[i]), "high": float(bins.edges[i + 1]), "positions": int(bins.counts[i]),
             "mean_value": float(bins.mean_predicted[i]), "won": float(bins.observed[i])}
            for i in range(num_bins) if bins.counts[i]
        ],
    }


def positions_calibration(positions: Positions, num_bins: int = 10) -> dict[str, float]:
    """``stats.calibration_metrics`` of the beliefs over the hidden cells of ``positions``."""
    hidden = ~np.asarray(positions.states.revealed)
    mines = np.asarray(positions.states.mine_mask)
    probs = np.clip(np.asarray(positions.mine_probabilities), 0.0, 1.0)
    return calibration_metrics(probs, mines, hidden, num_bins)


def exact_gap(
    agent: Any,
    env_cfg: ms_env.EnvConfig,
    positions: ms_env.EnvState | Positions,
    max_positions: int = 200,
    max_nodes: int = 200_000,
) -> dict[str, float]:
    """Mean absolute gap between the player's and the exact mine probabilities.

    Args:
      agent: has ``mine_probabilities(state) -> f32[H, W]``.
      env_cfg: the game (its board size).
      positions: ``EnvState`` ``[N]`` (or ``Positions``, whose beliefs are reused).
      max_positions: at most this many positions, evenly spaced over ``N``, are analysed.
      max_nodes: the exact enumeration's budget; positions where it falls back to an
        estimate are skipped.

    Returns:
      ``exact_gap`` (mean over the hidden cells of the analysed positions, nan without
      any), ``exact_max_gap``, ``exact_positions`` and ``exact_cells``.
    """
    del env_cfg  # the board size comes with the positions
    if isinstance(positions, Positions):
        states, probs = positions.states, positions.mine_probabilities
    else:
        states = positions
        probs = jax.jit(jax.vmap(agent.mine_probabilities))(states)
    num = int(states.revealed.shape[0])
    index = np.unique(np.linspace(0, num - 1, min(num, max_positions)).round().astype(int))
    revealed = np.asarray(states.revealed)[index]
    counts = np.asarray(states.counts)[index]
    mine_count = np.asarray(states.mine_count)[index]
    probs = np.asarray(probs)[index]
    gaps = []
    for i in range(index.size):
        view_counts = np.where(revealed[i], counts[i], 0)
        analysis = reference.analyse(revealed[i], view_counts, int(mine_count[i]), max_nodes)
        if analysis.total == 0 or analysis.approximate:
            continue
        hidden = ~revealed[i]
        gaps.append(np.abs(probs[i][hidden] - analysis.mine_prob[hidden]))
    if not gaps:
        return {"exact_gap": float("nan"), "exact_max_gap": float("nan"), "exact_positions": 0, "exact_cells": 0}
    cells = np.concatenate(gaps)
    return {
        "exact_gap": float(cells.mean()),
        "exact_max_gap": float(cells.max()),
        "exact_positions": len(gaps),
        "exact_cells": int(cells.size),
    }


def mine_head_calibration(
    agent: Any,
    env_cfg: ms_env.EnvConfig,
    games: int = 64,
    seed: int = 0,
    exact_max_cells: int = 256,
    on_games_done: Callable[[int], None] | None = None,
) -> dict[str, float]:
    """``positions_calibration`` of ``games`` games and, on boards of at most
    ``exact_max_cells`` cells, ``exact_gap`` on their positions (``on_games_done``: see
    ``collect_positions``)."""
    positions = collect_positions(agent, env_cfg, games, seed, on_games_done=on_games_done)
    figures = positions_calibration(positions)
    if env_cfg.num_cells <= exact_max_cells:
        figures.update(exact_gap(agent, env_cfg, positions))
    return figures


def calibration_data(
    take_turn: evaluate_lib.TakeTurn,
    cfg: ms_env.EnvConfig,
    games: int,
    seed: int,
    on_games_done: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(predicted f32[N], is_mine bool[N])`` over the hidden cells of every position a
    turn-by-turn player met in ``games`` games (seeds ``seed, seed+1, ...``) once mines
    were placed.

    ``take_turn`` is ``(state, move) -> Turn`` (``evaluate.solver_turns``,
    ``evaluate.agent_turns``); its own key is fixed, so different games come from
    different board seeds. ``on_games_done(1)``, when given, is called after each game.
    """
    predicted, labels = [], []
    for game in range(games):
        turns, _ = evaluate_lib.record_turns(take_turn, cfg, seed + game)
        for state, turn in turns:
            mine_mask = np.asarray(state.mine_mask, bool)
            if not mine_mask.any():  # before the first reveal nothing is placed
                continue
            hidden = ~np.asarray(state.revealed, bool)
            predicted.append(np.clip(turn.mine_probabilities[hidden], 0.0, 1.0))
            labels.append(mine_mask[hidden])
        if on_games_done is not None:
            on_games_done(1)
    if not predicted:
        return np.zeros(0, np.float32), np.zeros(0, bool)
    return np.concatenate(predicted), np.concatenate(labels)

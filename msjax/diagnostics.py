"""Why games are lost: avoidability of guesses, calibration of mine beliefs, and the CLI.

``diagnose`` plays games like ``msjax.evaluate.evaluate`` (vmapped batches, one game per
board, the same boards for the same seed) and, before every reveal the agent makes,
runs the solver's deduction (``solver.forced_moves``, layers 1-3) on the position:

- a reveal of a cell the deduction proved safe is not a guess;
- a reveal of any other hidden cell is a *guess*: a *forced* guess when no hidden cell
  was proved safe, an *avoidable* guess when one was (revealing a proved mine counts as
  an avoidable guess too). An avoidable guess that hits a mine is an *avoidable mistake*.

The opening click is never a guess (the rules make it safe); flags and invalid actions
are not reveals. Deduction reads only the player's view; whether a revealed cell held a
mine is read from ``mine_mask``, as any metric may.

Calibration of a mine head: ``calibration_metrics`` (AUROC by ranks, expected calibration
error, Brier score) on predictions over the hidden cells of positions met in games
(``collect_positions``), and on boards small enough ``exact_gap``: the mean absolute
difference between the agent's probabilities and the exact ones of ``msjax.exact``.

``main`` is the command line ``python -m msjax.evaluate --agent runs/NAME ...``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import sys
from typing import Any, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from msjax import env as ms_env
from msjax import evaluate as evaluate_lib
from msjax import solver as solver_lib

DEDUCTION = solver_lib.SolverConfig()  # layers 1-3 prove cells, whatever guesses follow


# ----------------------------------------------------------------------------- agents


@dataclasses.dataclass(frozen=True)
class SolverAgent:
    """The JAX rule solver as an agent (hashable: ``evaluate`` compiles it as a static).

    Attributes:
      env_cfg: the game it plays.
      solver_cfg: the solver's layers and guess options.
    """

    env_cfg: ms_env.EnvConfig
    solver_cfg: solver_lib.SolverConfig = solver_lib.SolverConfig()

    def act(self, state: ms_env.EnvState, key: jax.Array) -> jax.Array:
        """int32[]: the solver's move on one board."""
        return solver_lib.solver_action(state, key, self.env_cfg, self.solver_cfg)[0]

    def mine_probabilities(self, state: ms_env.EnvState) -> jax.Array:
        """f32[H, W]: the solver's mine estimates (proved cells 0/1, layer-4 elsewhere)."""
        return solver_lib.mine_probabilities(state, self.env_cfg, self.solver_cfg)


_call_act = evaluate_lib._call_act
_is_array_pytree = evaluate_lib._is_array_pytree


def _game_keys(seed: int, num_batches: int, batch_size: int) -> jax.Array:
    """Game ``i``'s key is the ``i``-th split of ``seed``, as in ``evaluate.play_games``."""
    return jax.random.split(jax.random.key(seed), num_batches * batch_size)


# ----------------------------------------------------------------------------- avoidability


class MoveKinds(NamedTuple):
    """What each board's action was, judged on the position before it (all bool[B]).

    reveal: a valid reveal after the opening click.
    guess: a reveal of a cell not proved safe.
    forced: a guess with no proved-safe cell on the board.
    avoidable: a guess while some hidden cell was proved safe.
    safe_available: a reveal made while some hidden cell was proved safe.
    hit: a reveal of a mine.
    """

    reveal: jax.Array
    guess: jax.Array
    forced: jax.Array
    avoidable: jax.Array
    safe_available: jax.Array
    hit: jax.Array


def classify_moves(
    states: ms_env.EnvState, actions: jax.Array, cfg: ms_env.EnvConfig, deduction=DEDUCTION
) -> MoveKinds:
    """Judges a batch of actions against the solver's deduction on the positions before them.

    Args:
      states: ``EnvState`` with a batch axis ``[B]`` (the positions the actions are taken in).
      actions: int32[B].
      cfg: the static game config.
      deduction: the ``SolverConfig`` whose layers (up to 3) prove cells.

    Returns:
      ``MoveKinds`` of bool[B].
    """
    num_boards = actions.shape[0]
    flat = lambda cells: cells.reshape(num_boards, -1)  # noqa: E731
    board = jnp.arange(num_boards)
    cell = actions % cfg.num_cells
    forced = solver_lib.batch_forced_moves(states, cfg, deduction)
    target_hidden = ~flat(states.revealed)[board, cell]
    reveal = (actions < cfg.num_cells) & target_hidden & states.first_click_done & ~states.done
    proved_safe = flat(forced.safe)[board, cell]
    safe_exists = jnp.any(flat(forced.safe & ~states.revealed), axis=1)
    guess = reveal & ~proved_safe
    return MoveKinds(
        reveal=reveal,
        guess=guess,
        forced=guess & ~safe_exists,
        avoidable=guess & safe_exists,
        safe_available=reveal & safe_exists,
        hit=reveal & flat(states.mine_mask)[board, cell],
    )


def _count_moves(kinds: MoveKinds) -> dict[str, jax.Array]:
    """This step's contribution (int32[B]) to each per-game counter."""
    as_int = lambda x: x.astype(jnp.int32)  # noqa: E731
    return {
        "guesses": as_int(kinds.guess),
        "forced_guesses": as_int(kinds.forced),
        "forced_guesses_survived": as_int(kinds.forced & ~kinds.hit),
        "avoidable_guesses": as_int(kinds.avoidable),
        "avoidable_mistakes": as_int(kinds.avoidable & kinds.hit),
        "reveals_with_safe_available": as_int(kinds.safe_available),
    }


def _count_step(states: ms_env.EnvState, actions: jax.Array, cfg: ms_env.EnvConfig) -> dict[str, jax.Array]:
    """The avoidability counters' increments (int32[B]) for one move of each board."""
    return _count_moves(classify_moves(states, actions, cfg))


# evaluate's game loop with the avoidability counters: one object, so its compile is reused
_diagnose_batch = functools.partial(evaluate_lib.play_batch, count_moves=_count_step)


def play_and_diagnose(
    agent: Any,
    env_cfg: ms_env.EnvConfig,
    episodes: int,
    seed: int = 0,
    batch_size: int = 1024,
    max_steps: int | None = None,
) -> dict[str, np.ndarray]:
    """Per-game results (numpy ``[episodes]``): ``evaluate.play_games``'s fields on the same
    boards, plus the avoidability counters ``guesses``, ``forced_guesses``,
    ``forced_guesses_survived``, ``avoidable_guesses``, ``avoidable_mistakes`` and
    ``reveals_with_safe_available``."""
    return evaluate_lib.play_in_batches(_diagnose_batch, agent, env_cfg, episodes, seed, batch_size, max_steps)


def _ratio(numerator: float, denominator: float) -> float:
    return float(numerator / denominator) if denominator else float("nan")


def avoidability(games: dict[str, np.ndarray]) -> dict[str, float]:
    """The avoidability figures of per-game counters from ``play_and_diagnose``.

    Returns:
      ``guesses_per_game``; ``forced_guesses_per_game``; ``forced_guess_success_rate``
      (forced guesses that revealed a safe cell, nan without any);
      ``avoidable_guesses_per_game``; ``avoidable_mistakes`` (avoidable guesses that hit a
      mine, per game); ``avoidable_guess_rate`` (of the reveals made while a proved-safe
      cell existed, the fraction that were guesses; nan when there were none).
    """
    total = lambda name: float(np.sum(games[name]))  # noqa: E731
    episodes = int(games["guesses"].size)
    return {
        "guesses_per_game": total("guesses") / episodes,
        "forced_guesses_per_game": total("forced_guesses") / episodes,
        "forced_guess_success_rate": _ratio(total("forced_guesses_survived"), total("forced_guesses")),
        "avoidable_guesses_per_game": total("avoidable_guesses") / episodes,
        "avoidable_mistakes": total("avoidable_mistakes") / episodes,
        "avoidable_guess_rate": _ratio(total("avoidable_guesses"), total("reveals_with_safe_available")),
    }


def diagnose(
    agent: Any,
    env_cfg: ms_env.EnvConfig,
    episodes: int = 1000,
    seed: int = 0,
    batch_size: int = 1024,
    max_steps: int | None = None,
) -> dict[str, Any]:
    """``evaluate``'s figures and the avoidability figures of ``episodes`` games.

    The games are ``evaluate(agent, env_cfg, episodes, seed)``'s games (same boards, same
    agent keys), played once with the deduction run before every move.

    Returns:
      ``evaluate.evaluate``'s dict updated with ``avoidability``'s.
    """
    games = play_and_diagnose(agent, env_cfg, episodes, seed, batch_size, max_steps)
    figures = evaluate_lib.summarize(games)
    figures["reward_components"] = evaluate_lib.reward_components(games, env_cfg)
    figures.update(avoidability(games))
    return figures


# ----------------------------------------------------------------------------- calibration


def auroc(scores: Any, labels: Any) -> float:
    """Area under the ROC curve by ranks (Mann-Whitney U); tied scores share their mean rank.

    Args:
      scores: f[N], higher means more likely positive.
      labels: bool[N].

    Returns:
      The probability that a random positive outscores a random negative (ties count
      half); nan when either class is empty.
    """
    scores = np.asarray(scores, np.float64).reshape(-1)
    labels = np.asarray(labels, bool).reshape(-1)
    positives = int(labels.sum())
    negatives = labels.size - positives
    if positives == 0 or negatives == 0:
        return float("nan")
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    mean_rank = np.cumsum(counts) - (counts - 1) / 2.0  # 1-based ranks, ties averaged
    rank_sum = float(mean_rank[inverse][labels].sum())
    return (rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives)


def calibration_metrics(probs: Any, labels: Any, mask: Any = None, num_bins: int = 10) -> dict[str, float]:
    """AUROC, expected calibration error and Brier score of mine predictions.

    Args:
      probs: f[...], predicted P(mine), in [0, 1].
      labels: bool[...], whether each cell holds a mine (same shape).
      mask: bool[...], the cells to score (e.g. the hidden ones); None scores all.
      num_bins: equal-width bins of the ECE.

    Returns:
      ``auroc`` (nan with one class only), ``ece``, ``brier`` and ``cells`` (scored).
    """
    from msjax.viz import calibration_bins

    probs = np.asarray(probs, np.float64)
    labels = np.asarray(labels, bool)
    if probs.shape != labels.shape:
        raise ValueError(f"probs shape {probs.shape} differs from labels shape {labels.shape}")
    mask = np.ones(probs.shape, bool) if mask is None else np.asarray(mask, bool)
    if mask.shape != probs.shape:
        raise ValueError(f"mask shape {mask.shape} differs from probs shape {probs.shape}")
    chosen, truth = probs[mask], labels[mask]
    if chosen.size == 0:
        return {"auroc": float("nan"), "ece": float("nan"), "brier": float("nan"), "cells": 0}
    return {
        "auroc": auroc(chosen, truth),
        "ece": calibration_bins(chosen, truth, num_bins).ece,
        "brier": float(np.mean((chosen - truth) ** 2)),
        "cells": int(chosen.size),
    }


class Positions(NamedTuple):
    """Positions met in games, after the opening click and before the game ended.

    states: ``EnvState`` with a batch axis ``[N]``.
    mine_probabilities: f32[N, H, W], the agent's beliefs in each position.
    """

    states: ms_env.EnvState
    mine_probabilities: jax.Array


def _position_step(agent, states, keys, cfg):
    """The agent's beliefs in each position, then one step of every board."""
    probs = jax.vmap(agent.mine_probabilities)(states)
    actions = jax.vmap(_call_act, in_axes=(None, 0, 0))(agent, states, keys)
    states, _, done, _ = ms_env.batch_step(states, jnp.asarray(actions, jnp.int32), cfg)
    return probs, states, done


_position_step_dynamic = jax.jit(_position_step, static_argnames=("cfg",))
_position_step_static = jax.jit(_position_step, static_argnames=("agent", "cfg"))


def collect_positions(
    agent: Any, env_cfg: ms_env.EnvConfig, games: int = 64, seed: int = 0, max_steps: int | None = None
) -> Positions:
    """Every position of ``games`` games (one per board, stepped together on the device),
    with the agent's mine probabilities in each; a host loop over steps ends when all games
    have. ``agent`` needs ``act`` and ``mine_probabilities``."""
    if games < 1:
        raise ValueError(f"games={games} must be >= 1")
    max_steps = 4 * env_cfg.num_cells if max_steps is None else max_steps
    board_keys, act_keys = evaluate_lib.split_game_keys(_game_keys(seed, 1, games))
    states = jax.vmap(ms_env.reset, in_axes=(0, None))(board_keys, env_cfg)
    finished = np.zeros(games, bool)
    kept_states, kept_probs = [], []
    position_step = _position_step_dynamic if _is_array_pytree(agent) else _position_step_static
    for t in range(max_steps):
        step_keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(act_keys, t)
        before = states
        probs, states, done = position_step(agent, states, step_keys, env_cfg)
        keep = ~finished & np.asarray(before.first_click_done) & ~np.asarray(before.done)
        if keep.any():
            index = np.flatnonzero(keep)
            kept_states.append(jax.tree.map(lambda x: x[index], before))
            kept_probs.append(probs[index])
        finished |= np.asarray(done)
        if finished.all():
            break
    if not kept_states:
        raise ValueError("no position after the opening click: every game ended at its first move")
    states = jax.tree.map(lambda *xs: jnp.concatenate(xs), *kept_states)
    return Positions(states, jnp.concatenate(kept_probs))


def positions_calibration(positions: Positions, num_bins: int = 10) -> dict[str, float]:
    """``calibration_metrics`` of the beliefs over the hidden cells of ``positions``."""
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
    """Mean absolute gap between the agent's and the exact mine probabilities.

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
    from msjax import exact

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
        analysis = exact.analyse(revealed[i], view_counts, int(mine_count[i]), max_nodes)
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
    agent: Any, env_cfg: ms_env.EnvConfig, games: int = 64, seed: int = 0, exact_max_cells: int = 256
) -> dict[str, float]:
    """``positions_calibration`` of ``games`` games and, on boards of at most
    ``exact_max_cells`` cells, ``exact_gap`` on their positions."""
    positions = collect_positions(agent, env_cfg, games, seed)
    figures = positions_calibration(positions)
    if env_cfg.num_cells <= exact_max_cells:
        figures.update(exact_gap(agent, env_cfg, positions))
    return figures


# ----------------------------------------------------------------------------- command line

USAGE = (
    "python -m msjax.evaluate (--agent runs/NAME | --solver) [--board beginner|intermediate|expert|HxWxM] "
    "[--episodes N] [--seed S] [--safe-first-click]"
)


class UsageError(Exception):
    """A bad command line, reported in one line with exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print the usage and exit by itself
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m msjax.evaluate", usage=USAGE, description=__doc__.split("\n")[0])
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument("--agent", metavar="RUN", help="the agent saved in runs/NAME (its latest checkpoint)")
    who.add_argument("--solver", action="store_true", help="the JAX rule solver instead of an agent")
    parser.add_argument("--board", help="beginner, intermediate, expert or HxWxM (default: the agent's own)")
    parser.add_argument("--episodes", type=int, default=1000, help="games, one per board (default 1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--safe-first-click", action="store_true", help="only the first clicked cell is safe")
    parser.add_argument("--batch-size", type=int, default=1024, help="boards stepped together")
    parser.add_argument("--calibration-games", type=int, default=64, help="games whose positions score the mine head")
    return parser


def _mine_head_trained(agent: Any) -> bool:
    """False for a loaded agent whose run gave its mine head no loss weight."""
    config = getattr(agent, "config", None)
    if config is None:
        return True
    weights = [config.ppo.aux_mine_weight]
    if config.imitation.enabled:
        weights.append(config.imitation.aux_mine_weight)
    return any(w > 0 for w in weights)


def _load(args: argparse.Namespace):
    """``(agent, env_cfg, name)`` for the parsed command line."""
    from msjax import play

    if args.episodes < 1:
        raise UsageError(f"--episodes {args.episodes}: must be >= 1")
    if args.batch_size < 1:
        raise UsageError(f"--batch-size {args.batch_size}: must be >= 1")
    if args.calibration_games < 0:
        raise UsageError(f"--calibration-games {args.calibration_games}: must be >= 0")
    from msjax.checkpoint import CheckpointError

    try:
        if args.solver:
            cfg = play.board_config(args.board, args.safe_first_click)
            return SolverAgent(cfg), cfg, "solver"
        from msjax.agent import load_agent

        agent = load_agent(args.agent)
        cfg = play.board_config(args.board, args.safe_first_click, base=agent.env_cfg)
        return agent.for_board(cfg), cfg, f"agent {args.agent}"
    except (ValueError, OSError, CheckpointError) as error:  # bad board, missing run
        raise UsageError(str(error).splitlines()[0]) from error


def _fmt(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{key} {_fmt(part)}" for key, part in value.items())
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4f}"
    return str(value)


def format_table(name: str, cfg: ms_env.EnvConfig, figures: dict[str, Any]) -> str:
    """The figures as an aligned two-column table under a title line."""
    rule = "safe first click" if not cfg.guarantee_safe_neighborhood else "opening start"
    low, high = figures["win_rate_ci95"]
    lines = [f"{name} on {cfg.H}x{cfg.W}x{cfg.mine_count} ({rule}), {figures['episodes']} games"]
    rows = [("win rate", f"{100 * figures['win_rate']:.2f}%  [95% CI {100 * low:.2f}, {100 * high:.2f}]")]
    shown_above = ("win_rate", "win_rate_ci95", "episodes")
    rows += [(key.replace("_", " "), _fmt(value)) for key, value in figures.items() if key not in shown_above]
    width = max(len(label) for label, _ in rows)
    lines += [f"  {label:<{width}}  {value}" for label, value in rows]
    return "\n".join(lines)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, dict):
        return {key: _json_safe(v) for key, v in value.items()}
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m msjax.evaluate``: prints the figures as a table, then one JSON line.

    Returns the exit status: 0, or 2 after a one-line error on a bad command line.
    """
    try:
        args = _parser().parse_args(argv)
        agent, cfg, name = _load(args)
    except UsageError as error:
        print(f"python -m msjax.evaluate: error: {error}", file=sys.stderr)
        return 2
    figures = diagnose(agent, cfg, args.episodes, args.seed, args.batch_size)
    note = None
    if args.calibration_games and hasattr(agent, "mine_probabilities"):
        if _mine_head_trained(agent):
            figures.update(mine_head_calibration(agent, cfg, args.calibration_games, args.seed))
        else:
            note = "mine head not trained (aux_mine_weight 0): no calibration"
    print(format_table(name, cfg, figures))
    if note:
        print(f"  ({note})")
    record = {"player": name, "board": f"{cfg.H}x{cfg.W}x{cfg.mine_count}"}
    record["rule"] = "opening" if cfg.guarantee_safe_neighborhood else "safe"
    record.update({key: _json_safe(value) for key, value in figures.items()})
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())

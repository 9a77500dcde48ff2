"""Why games are lost: avoidability of guesses, exact judgement of every reveal.

``diagnose`` plays games like ``msjax.evaluate.evaluate`` (vmapped batches, one game per
batch slot, the same boards for the same seed) and, before every reveal the player
makes, runs the solver's deduction (``solver.forced_moves``, layers 1-3) on the position:

- a reveal of a cell the deduction proved safe is not a guess;
- a reveal of any other hidden cell is a *guess*: a *forced* guess when no hidden cell
  was proved safe, an *avoidable* guess when one was (revealing a proved mine counts as
  an avoidable guess too). An avoidable guess that hits a mine is an *avoidable mistake*.

The opening click is never a guess (the rules make it safe); flags and invalid actions
are not reveals. Deduction reads only the player's view; whether a revealed cell held a
mine is read from ``mine_mask``, as any metric may.

With ``exact=True`` every reveal is also judged by the exact probabilities of the position
(``judge_exactly``): a *missed proof* (a cell was certainly safe, exact proofs included), a
*proven mine* revealed, a guess *worse* than the exact minimum (by more than ``WORSE_BY``),
or one of the *best* guesses; and each lost game is put down to the kind of its last move
(``loss_causes``).

Calibration of a mine head (how well its beliefs match the mines): ``msjax.evaluate.calibration``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from msjax import env as ms_env
from msjax import evaluate as evaluate_lib
from msjax import solver as solver_lib
from msjax.models import masked_logits

DEDUCTION = solver_lib.SolverConfig()  # layers 1-3 prove cells, whatever guesses follow


# ----------------------------------------------------------------------------- avoidability


class MoveKinds(NamedTuple):
    """What each game's action was, judged on the position before it (all bool[B]).

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
    return judge_moves(states, actions, cfg, solver_lib.batch_forced_moves(states, cfg, deduction))


def judge_moves(
    states: ms_env.EnvState, actions: jax.Array, cfg: ms_env.EnvConfig, forced: solver_lib.Forced
) -> MoveKinds:
    """``classify_moves`` against a deduction already made: ``forced``, ``Forced`` of
    ``[B, H, W]`` fields (``solver.batch_forced_moves`` of ``states``)."""
    num_games = actions.shape[0]
    flat = lambda cells: cells.reshape(num_games, -1)  # noqa: E731
    game = jnp.arange(num_games)
    cell, reveal = _reveals(states, actions, cfg)
    proved_safe = flat(forced.safe)[game, cell]
    safe_exists = jnp.any(flat(forced.safe & ~states.revealed), axis=1)
    guess = reveal & ~proved_safe
    return MoveKinds(
        reveal=reveal,
        guess=guess,
        forced=guess & ~safe_exists,
        avoidable=guess & safe_exists,
        safe_available=reveal & safe_exists,
        hit=reveal & flat(states.mine_mask)[game, cell],
    )


def _reveals(states: ms_env.EnvState, actions: jax.Array, cfg: ms_env.EnvConfig) -> tuple[jax.Array, jax.Array]:
    """(cell int32[B], reveal bool[B]): each action's cell, and whether it is a valid reveal
    after the opening click (a hidden cell, the game not over, not a flag)."""
    cell, is_flag = ms_env.decode_action(actions, cfg)
    hidden = ~states.revealed.reshape(actions.shape[0], -1)[jnp.arange(actions.shape[0]), cell]
    return cell, ~is_flag & hidden & states.first_click_done & ~states.done


def count_moves(states: ms_env.EnvState, actions: jax.Array, cfg: ms_env.EnvConfig) -> dict[str, jax.Array]:
    """The avoidability counters' increments (int32[B]) for one move of each game:
    ``guesses``, ``forced_guesses``, ``forced_guesses_survived``, ``avoidable_guesses``,
    ``avoidable_mistakes`` and ``reveals_with_safe_available``."""
    return _move_counts(classify_moves(states, actions, cfg))


def _move_counts(kinds: MoveKinds) -> dict[str, jax.Array]:
    """``count_moves``' counters of the classified moves."""
    as_int = lambda x: x.astype(jnp.int32)  # noqa: E731
    return {
        "guesses": as_int(kinds.guess),
        "forced_guesses": as_int(kinds.forced),
        "forced_guesses_survived": as_int(kinds.forced & ~kinds.hit),
        "avoidable_guesses": as_int(kinds.avoidable),
        "avoidable_mistakes": as_int(kinds.avoidable & kinds.hit),
        "reveals_with_safe_available": as_int(kinds.safe_available),
    }


# evaluate's game loop with the avoidability counters: one object, so its compile is reused
_diagnose_batch = functools.partial(evaluate_lib.play_batch, count_moves=count_moves)


# ----------------------------------------------------------------------------- exact judgement

WORSE_BY = 1e-4
"""A guess counts as worse than the exact minimum when its mine probability is more than
this above the lowest one (float32 rounding of equal probabilities is ~1e-6)."""

LOSS_CAUSES = ("missed_proof", "proven_mine", "worse_guess", "best_guess", "unjudged")


class ExactMoveKinds(NamedTuple):
    """Each game's reveal judged by the exact analysis of the position before it (bool[B]).

    judged: a reveal in a view the exact analysis covers (not flagged).
    missed_proof: a reveal of a cell not proved safe while some cell was (exact proofs:
      chains and mine-count endgames the layers miss included), not of a proved mine.
    proven_mine: a reveal of a cell that is a mine in every consistent layout.
    worse_guess: with no cell proved safe, a cell more than ``WORSE_BY`` riskier than the
      safest one. excess_risk: float32[B], its mine probability minus the lowest.
    best_guess: with no cell proved safe, one of the safest cells.
    """

    judged: jax.Array
    missed_proof: jax.Array
    proven_mine: jax.Array
    worse_guess: jax.Array
    best_guess: jax.Array
    excess_risk: jax.Array


def judge_exactly(
    states: ms_env.EnvState, actions: jax.Array, cfg: ms_env.EnvConfig,
    limits: solver_lib.ExactLimits = solver_lib.ExactLimits(),
) -> ExactMoveKinds:
    """Judges a batch of actions by the exact probabilities of the positions before them
    (``solver.exact_analysis``; flagged views are not judged)."""
    num_games = actions.shape[0]
    flat = lambda cells: cells.reshape(num_games, -1)  # noqa: E731
    game = jnp.arange(num_games)
    cell, reveal = _reveals(states, actions, cfg)
    seen = jnp.where(states.revealed, states.counts, 0).astype(jnp.int32)
    analysis = solver_lib.exact_analysis(states.revealed, seen, states.mine_count, limits)
    judged = reveal & analysis.exact
    probability = flat(analysis.mine_prob)[game, cell]
    lowest = jnp.min(jnp.where(flat(states.revealed), jnp.inf, flat(analysis.mine_prob)), axis=1)
    safe_exists = jnp.any(flat(analysis.safe), axis=1)
    proven_mine = judged & flat(analysis.mines)[game, cell]
    guessing = judged & ~safe_exists & ~proven_mine
    worse = guessing & (probability > lowest + WORSE_BY)
    return ExactMoveKinds(
        judged=judged,
        missed_proof=judged & safe_exists & ~flat(analysis.safe)[game, cell] & ~proven_mine,
        proven_mine=proven_mine,
        worse_guess=worse,
        best_guess=guessing & ~worse,
        excess_risk=jnp.where(worse, probability - lowest, 0.0),
    )


def count_moves_exactly(states: ms_env.EnvState, actions: jax.Array, cfg: ms_env.EnvConfig) -> dict[str, jax.Array]:
    """``count_moves``'s counters and the exact judgement's (int32[B] increments): moves of
    each ``ExactMoveKinds`` kind, ``excess_risk_ppm`` (excess risk of worse guesses, in
    millionths), and ``lost_on_<cause>`` for the move that hit a mine, by its kind
    (``LOSS_CAUSES``; ``unjudged``: a flagged view)."""
    kinds = judge_exactly(states, actions, cfg)
    moves = classify_moves(states, actions, cfg)
    counters, lost = _move_counts(moves), moves.hit
    as_int = lambda x: x.astype(jnp.int32)  # noqa: E731
    counters["exact_judged"] = as_int(kinds.judged)
    for cause in LOSS_CAUSES[:-1]:
        counters[f"exact_{cause}"] = as_int(getattr(kinds, cause))
        counters[f"lost_on_{cause}"] = as_int(lost & getattr(kinds, cause))
    counters["lost_on_unjudged"] = as_int(lost & ~kinds.judged)
    counters["excess_risk_ppm"] = jnp.round(kinds.excess_risk * 1e6).astype(jnp.int32)
    return counters


_diagnose_exact_batch = functools.partial(evaluate_lib.play_batch, count_moves=count_moves_exactly)


def loss_causes(games: dict[str, np.ndarray]) -> dict[str, float]:
    """The exact judgement's figures from ``play_and_diagnose(..., exact=True)``'s games.

    Returns:
      ``exact_<kind>_per_game`` for ``missed_proof``, ``proven_mine``, ``worse_guess`` and
      ``best_guess``; ``mean_excess_risk`` of a worse guess (nan without any); and
      ``lost_on_<cause>`` for each of ``LOSS_CAUSES``: the share of all games lost on a
      move of that kind (they add up to the loss rate, minus games cut off unfinished).
    """
    episodes = int(games["exact_judged"].size)
    total = lambda name: float(np.sum(games[name]))  # noqa: E731
    figures = {f"exact_{cause}_per_game": total(f"exact_{cause}") / episodes for cause in LOSS_CAUSES[:-1]}
    figures["mean_excess_risk"] = _ratio(total("excess_risk_ppm") / 1e6, total("exact_worse_guess"))
    figures.update({f"lost_on_{cause}": total(f"lost_on_{cause}") / episodes for cause in LOSS_CAUSES})
    return figures


def play_and_diagnose(
    agent: Any,
    env_cfg: ms_env.EnvConfig,
    episodes: int,
    seed: int = 0,
    batch_size: int = 1024,
    max_steps: int | None = None,
    on_batch: Callable[[int], None] | None = None,
    exact: bool = False,
    check_batch: Callable[[Any], None] | None = None,
) -> dict[str, np.ndarray]:
    """Per-game results (numpy ``[episodes]``): ``evaluate.play_games``'s fields on the same
    boards, plus the avoidability counters of ``count_moves`` (with ``exact``, also those
    of ``count_moves_exactly``: an exact analysis before every move); ``on_batch(games)``
    after each batch, ``check_batch(lowered)`` before the first (``evaluate.play_in_batches``)."""
    return evaluate_lib.play_in_batches(
        _diagnose_exact_batch if exact else _diagnose_batch, agent, env_cfg, episodes, seed, batch_size,
        max_steps, on_batch, check_batch,
    )


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
    on_batch: Callable[[int], None] | None = None,
    exact: bool = False,
    check_batch: Callable[[Any], None] | None = None,
) -> dict[str, Any]:
    """``evaluate``'s figures and the avoidability figures of ``episodes`` games.

    The games are ``evaluate(agent, env_cfg, episodes, seed)``'s games (same boards, same
    agent keys), played once with the deduction run before every move; ``on_batch(games)``
    is called after each batch, ``check_batch(lowered)`` with the batches' program before
    the first (``evaluate.play_in_batches``). With ``exact``, every move is also judged by
    the exact probabilities (``judge_exactly``; an exact analysis of every position,
    several times the cost) and the figures say where the games were lost (``loss_causes``).

    Returns:
      ``evaluate.evaluate``'s dict updated with ``avoidability``'s (and ``loss_causes``').
    """
    games = play_and_diagnose(agent, env_cfg, episodes, seed, batch_size, max_steps, on_batch, exact, check_batch)
    figures = evaluate_lib.summarize_games(games)
    figures["reward_components"] = evaluate_lib.reward_components(games, env_cfg)
    figures.update(avoidability(games))
    if exact:
        figures.update(loss_causes(games))
    return figures


# ----------------------------------------------------------------------------- an agent's beliefs where cells were proved

PROOF_BELIEFS = {
    "policy_below_10pct": "its policy gave the proved cells < 10% of its mass",
    "policy_majority": "its policy gave the proved cells >= 50% (its top cell was elsewhere)",
    "head_agreed": "its mine head believed the chosen cell at least as safe as every proved one",
    "head_sure": "its mine head believed some proved cell safe beyond doubt (p(mine) <= 0.01)",
}
"""What ``proof_beliefs`` asks an agent about a position with proved-safe cells."""


def proof_beliefs(
    agent: Any, states: ms_env.EnvState, actions: jax.Array, cfg: ms_env.EnvConfig, safe: jax.Array
) -> dict[str, jax.Array]:
    """bool[B] per entry of ``PROOF_BELIEFS``: what the agent's policy and mine head said about
    the proved-safe cells ``safe`` (bool[B, H, W]) and its reveal ``actions`` (int32[B]); ``agent``: an
    ``msjax.agent.Agent`` (its ``outputs``: policy logits, value, mine logits)."""
    batch = actions.shape[0]
    safe = safe.reshape(batch, -1)
    logits, _, mine_logits = jax.vmap(agent.outputs)(states)
    legal = jax.vmap(ms_env.action_mask, in_axes=(0, None))(states, cfg)
    policy = jax.nn.softmax(masked_logits(logits, legal), axis=-1)[:, : cfg.num_cells]
    proofs_mass = jnp.sum(jnp.where(safe, policy, 0.0), axis=-1)
    belief = jax.nn.sigmoid(mine_logits.reshape(batch, -1))
    safest_proved = jnp.min(jnp.where(safe, belief, 1.0), axis=-1)
    chosen = jnp.take_along_axis(belief, jnp.clip(actions, 0, cfg.num_cells - 1)[:, None], axis=-1)[:, 0]
    return {
        "policy_below_10pct": proofs_mass < 0.1,
        "policy_majority": proofs_mass >= 0.5,
        "head_agreed": chosen <= safest_proved,
        "head_sure": safest_proved <= 0.01,
    }

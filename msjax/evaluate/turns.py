"""Games played turn by turn on the host, for people to watch and for figures.

``play_out`` is the one host-side game loop: it asks for a move, hands the position and
the move to its caller, then applies the move, until the game is over or the move cap
is reached. ``game_turns`` runs it on one board with a turn function such as
``solver_turns`` or ``agent_turns`` (``(state, move number) -> Turn``: the move a player
is about to play with what it believed); ``msjax.evaluate.calibration.collect_positions`` runs it
on a batch of games. Each step is a jitted function of a static config, so it compiles
once per board (and per solver config).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterator, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from msjax import env as ms_env
from msjax import solver as solver_lib
from msjax.agent import SolverAgent
from msjax.env import EnvConfig, EnvState


class Turn(NamedTuple):
    """One move a player is about to play, with what it believed.

    Attributes:
      action: the env action.
      mine_probabilities: f32[H, W].
      action_probabilities: f32[2HW] (an agent's policy) or None.
      layer: the solver layer that chose the move, or None for an agent.
    """

    action: int
    mine_probabilities: np.ndarray
    action_probabilities: np.ndarray | None
    layer: int | None


TakeTurn = Callable[[EnvState, int], Turn]


@functools.partial(jax.jit, static_argnums=(2,))
def _step(state: EnvState, action: jax.Array, cfg: EnvConfig):
    return ms_env.step(state, action, cfg)


@functools.partial(jax.jit, static_argnums=(2, 3))
def _solver_turn(state: EnvState, key: jax.Array, cfg: EnvConfig, solver_cfg: solver_lib.SolverConfig):
    """``(action, layer, mine probabilities f32[H, W])`` of the solver on one board (what
    the rules make certain at 0: ``env.with_rule_certainties``)."""
    action, layer = solver_lib.solver_action(state, key, cfg, solver_cfg)
    return action, layer, _solver_probabilities(state, cfg, solver_cfg)


@functools.partial(jax.jit, static_argnums=(1, 2))
def _solver_probabilities(state: EnvState, cfg: EnvConfig, solver_cfg: solver_lib.SolverConfig):
    return SolverAgent(cfg, solver_cfg).mine_probabilities(state)


def agent_beliefs(agent: Any, state: EnvState) -> tuple[jax.Array, jax.Array]:
    """``(mine probabilities f32[H, W], action probabilities f32[2HW])`` of an ``Agent`` on
    one board: its mine head with what the rules make certain at 0
    (``env.with_rule_certainties``), and its policy. Not jitted: the callers jit it."""
    return ms_env.with_rule_certainties(agent.mine_probabilities(state), state), agent.action_probabilities(state)


@jax.jit
def _agent_turn(agent: Any, state: EnvState, key: jax.Array):
    """``(action, action probabilities f32[2HW], mine probabilities f32[H, W])`` of an agent
    (``agent_beliefs``)."""
    mine, actions = agent_beliefs(agent, state)
    return agent.act(state, key), actions, mine


def new_game(seed: int, cfg: EnvConfig) -> EnvState:
    """The game of ``seed``: ``env.reset(jax.random.key(seed), cfg)``. Mines are placed at
    the first reveal, so the layout depends on the seed and the first click."""
    return ms_env.reset(jax.random.key(seed), cfg)


def apply_move(state: EnvState, action: int, cfg: EnvConfig) -> EnvState:
    """``state`` after ``action`` (host int), through the jitted ``env.step``."""
    next_state, _, _, _ = _step(state, jnp.int32(action), cfg)
    return next_state


def solver_hint(state: EnvState, cfg: EnvConfig, solver_cfg: solver_lib.SolverConfig = solver_lib.SolverConfig()):
    """f32[H, W]: the solver's mine probabilities on one board (jitted)."""
    return _solver_probabilities(state, cfg, solver_cfg)


def solver_turns(cfg: EnvConfig, seed: int, solver_cfg: solver_lib.SolverConfig = solver_lib.SolverConfig()) -> TakeTurn:
    """``(state, move number) -> Turn`` for the rule solver (its key: ``seed`` folded with 1)."""
    solver_key = jax.random.fold_in(jax.random.key(seed), 1)

    def turn(state: EnvState, move: int) -> Turn:
        action, layer, probs = _solver_turn(state, jax.random.fold_in(solver_key, move), cfg, solver_cfg)
        return Turn(int(action), np.asarray(probs), None, int(layer))

    return turn


def agent_turns(agent: Any, seed: int) -> TakeTurn:
    """``(state, move number) -> Turn`` for an ``Agent`` (its key: ``seed`` folded with 2)."""
    agent_key = jax.random.fold_in(jax.random.key(seed), 2)

    def turn(state: EnvState, move: int) -> Turn:
        action, action_probs, mine_probs = _agent_turn(agent, state, jax.random.fold_in(agent_key, move))
        return Turn(int(action), np.asarray(mine_probs), np.asarray(action_probs), None)

    return turn


def play_out(
    position: Any,
    choose: Callable[[Any, int], Any],
    advance: Callable[[Any, Any], Any],
    over: Callable[[Any], bool],
    limit: int,
) -> Iterator[tuple[Any, Any]]:
    """The host-side game loop: yields ``(position, choice)`` before each move, then
    ``(last position, None)``.

    Args:
      position: where the game starts (one board, or a batch with its own bookkeeping).
      choose: ``choose(position, move number) -> choice``, the move about to be played.
      advance: ``advance(position, choice) -> position`` after the move.
      over: whether the game is over at ``position``.
      limit: moves after which the loop stops (``env.move_limit`` for one board).

    A caller that stops iterating early plays no further move.
    """
    for move in range(limit):
        if over(position):
            break
        choice = choose(position, move)
        yield position, choice
        position = advance(position, choice)
    yield position, None


def game_turns(take_turn: TakeTurn, cfg: EnvConfig, seed: int) -> Iterator[tuple[EnvState, Turn | None]]:
    """Game ``seed`` on one board: ``(state, turn)`` before each move, then ``(final state,
    None)``; at most ``env.move_limit(cfg)`` moves (a policy may toggle flags forever)."""
    return play_out(
        new_game(seed, cfg),
        take_turn,
        lambda state, turn: apply_move(state, turn.action, cfg),
        lambda state: bool(state.done),
        ms_env.move_limit(cfg),
    )


def record_turns(take_turn: TakeTurn, cfg: EnvConfig, seed: int) -> tuple[list[tuple[EnvState, Turn]], EnvState]:
    """Plays game ``seed`` to its end without pausing: every state with the turn taken in
    it, and the final state."""
    *turns, (final, _) = game_turns(take_turn, cfg, seed)
    return turns, final

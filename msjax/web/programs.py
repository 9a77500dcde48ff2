"""The inspector's compiled programs: what each board needs, kept for a bounded number
of boards.

``board_programs`` makes the jitted functions of one game config (a move, the solver's
and the agent's moves, and each overlay's beliefs). Every distinct board (``HxWxM`` and
first-click rule) needs its own compiled programs: a few hundred megabytes of XLA
executables for a large one. Compiled once per board and
kept forever (as jit's own cache keeps them), a client that asks for one new board after
another exhausts the server's memory. ``CompiledBoards`` keeps the programs of the
standard boards (pinned: a stream of custom boards cannot push them out, so their games
never wait for a compile again) and of the ``MAX_BOARDS`` other boards used most
recently; the programs of the one used longest ago are dropped (their executables freed
with them) when another needs room, and compiled again if that board comes back.

The programs are built without compiling (``jax.jit`` compiles on first call), so
the cache's lock is held only for the bookkeeping; the compile itself runs under the
lock of the one game that needs it (``msjax.web.games``), never under one that other
games wait on.
"""

from __future__ import annotations

import collections
import threading
from typing import Any, Callable, Generic, Hashable, Iterable, NamedTuple, TypeVar

import jax

from msjax import env as ms_env
from msjax import solver as solver_lib
from msjax.env import EnvConfig, EnvState
from msjax.solver.grid import player_view

__all__ = ["MAX_BOARDS", "SEARCH_CANDIDATES", "SEARCH_ENDGAME_LAYOUTS", "SEARCH_TOLERANCE", "BoardPrograms",
           "CompiledBoards", "board_programs"]

MAX_BOARDS = 8
"""Custom boards (not pinned) whose compiled programs the inspector keeps, besides the
standard boards'."""


# ----------------------------------------------------------------------------- one board's programs


def _apply(state: EnvState, action: jax.Array, cfg: EnvConfig) -> EnvState:
    return ms_env.step(state, action, cfg)[0]


def _solver_step(state: EnvState, key: jax.Array, cfg: EnvConfig, solver_cfg: solver_lib.SolverConfig):
    """``(next state, action int32[], layer int32[])``: the solver's move, played."""
    action, layer = solver_lib.solver_action(state, key, cfg, solver_cfg)
    return ms_env.step(state, action, cfg)[0], action, layer


def _agent_step(agent: Any, state: EnvState, key: jax.Array):
    """``(next state, action int32[])``: the agent's move, played."""
    action = agent.act(state, key)
    return ms_env.step(state, action, agent.env_cfg)[0], action


def _solver_beliefs(state: EnvState, cfg: EnvConfig, solver_cfg: solver_lib.SolverConfig):
    """``(mine probabilities f32[H, W], Forced)`` of the solver; what the rules make
    certain reads 0 (``env.with_rule_certainties``: before the first click, every cell)."""
    probabilities = ms_env.with_rule_certainties(solver_lib.mine_probabilities(state, cfg, solver_cfg), state)
    return probabilities, solver_lib.forced_moves(state, cfg, solver_cfg)


SEARCH_CANDIDATES = 6
SEARCH_TOLERANCE = 0.1
SEARCH_ENDGAME_LAYOUTS = 8
"""The search overlay's player: the survival lookahead over the ``SEARCH_CANDIDATES`` cells
at least ``1 - SEARCH_TOLERANCE`` as safe as the safest, and the exhaustive endgame where
at most ``SEARCH_ENDGAME_LAYOUTS`` layouts fit (``SolverConfig(exact_lookahead=6,
lookahead_score="survival", lookahead_tolerance=0.1, endgame_layouts=8)``)."""


def _search_view(state: EnvState):
    """The player's view as a batch of one: ``(revealed bool[1, H, W], counts int32[1, H, W],
    mines int32[1])``."""
    return tuple(x[None] for x in player_view(state))


def _search_beliefs(state: EnvState, limits: solver_lib.ExactLimits):
    """``(ExactAnalysis, LookaheadScores)`` of the view (batch axis of one): the exact
    probabilities, and the survival lookahead's candidates and their scores."""
    revealed, counts, mines = _search_view(state)
    analysis = solver_lib.exact_analysis(revealed, counts, mines, limits)
    good = solver_lib.nearly_safest(revealed, analysis.mine_prob, SEARCH_TOLERANCE)
    scores = solver_lib.lookahead_scores(revealed, counts, mines, analysis.log_layouts, good, SEARCH_CANDIDATES,
                                         limits, analysis.mine_prob)
    return analysis, scores


def _search_endgame(state: EnvState, limits: solver_lib.ExactLimits):
    """``Endgame`` of the view (batch axis of one): each click's win chance."""
    return solver_lib.solve_endgame(jax.random.key(0), *_search_view(state), SEARCH_ENDGAME_LAYOUTS, limits=limits)


def _agent_beliefs(agent: Any, state: EnvState):
    """``(mine probabilities f32[H, W], action probabilities f32[2HW])`` of the agent; its
    mine head reads 0 where the rules make a cell certain (``env.with_rule_certainties``)."""
    return ms_env.with_rule_certainties(agent.mine_probabilities(state), state), agent.action_probabilities(state)


class BoardPrograms(NamedTuple):
    """The jitted functions of one game config (each compiles on its first call).

    Attributes:
      reset: ``key -> EnvState``; apply: ``(state, action int32[]) -> state``;
      solver_step: ``(state, key) -> (state, action, layer)``;
      solver_beliefs: ``state -> (mine probabilities, Forced)``;
      search_beliefs: ``state -> (ExactAnalysis, LookaheadScores)`` and search_endgame:
      ``state -> Endgame`` (the search overlay; the endgame compiles when first needed);
      agent: the agent for this board (None without one); agent_step:
      ``(agent, state, key) -> (state, action)``; agent_beliefs: ``(agent, state) ->
      (mine probabilities, action probabilities)``.
    """

    reset: Callable
    apply: Callable
    solver_step: Callable
    solver_beliefs: Callable
    search_beliefs: Callable
    search_endgame: Callable
    agent: Any
    agent_step: Callable
    agent_beliefs: Callable


def board_programs(
    cfg: EnvConfig, solver_cfg: solver_lib.SolverConfig, agent: Any,
    search_limits: solver_lib.ExactLimits = solver_lib.ExactLimits(),
) -> BoardPrograms:
    """``cfg``'s programs: new function objects, so that dropping them (``CompiledBoards``)
    frees their executables with them. ``search_limits``: the search overlay's analysis sizes."""
    return BoardPrograms(
        reset=jax.jit(lambda key: ms_env.reset(key, cfg)),
        apply=jax.jit(lambda state, action: _apply(state, action, cfg)),
        solver_step=jax.jit(lambda state, key: _solver_step(state, key, cfg, solver_cfg)),
        solver_beliefs=jax.jit(lambda state: _solver_beliefs(state, cfg, solver_cfg)),
        search_beliefs=jax.jit(lambda state: _search_beliefs(state, search_limits)),
        search_endgame=jax.jit(lambda state: _search_endgame(state, search_limits)),
        agent=agent.for_board(cfg) if agent is not None else None,
        agent_step=jax.jit(lambda board_agent, state, key: _agent_step(board_agent, state, key)),
        agent_beliefs=jax.jit(lambda board_agent, state: _agent_beliefs(board_agent, state)),
    )


# ----------------------------------------------------------------------------- the boards kept


Programs = TypeVar("Programs")


class CompiledBoards(Generic[Programs]):
    """An LRU of ``build(board) -> programs`` over at most ``max_boards`` boards, besides
    the pinned ones, which are kept for good.

    Args:
      build: makes a board's programs (jitted functions; cheap: nothing compiles yet).
      max_boards: boards kept that are not pinned; the one used longest ago is dropped first.
      pinned: the boards that are never dropped (and do not count in ``max_boards``).

    Safe to call from several threads.
    """

    def __init__(
        self, build: Callable[[Hashable], Programs], max_boards: int = MAX_BOARDS, pinned: Iterable[Hashable] = ()
    ):
        if max_boards < 1:
            raise ValueError(f"max_boards={max_boards} must be >= 1")
        self.build, self.max_boards, self.pinned = build, max_boards, frozenset(pinned)
        self._entries: collections.OrderedDict[Hashable, Programs] = collections.OrderedDict()
        self._kept: dict[Hashable, Programs] = {}
        self._lock = threading.Lock()

    def get(self, board: Hashable) -> Programs:
        """``board``'s programs, built if they are not kept; marks them used."""
        with self._lock:
            if board in self.pinned:
                if board not in self._kept:
                    self._kept[board] = self.build(board)
                return self._kept[board]
            if board in self._entries:
                self._entries.move_to_end(board)
                return self._entries[board]
            programs = self._entries[board] = self.build(board)
            while len(self._entries) > self.max_boards:
                self._entries.popitem(last=False)
            return programs

    def boards(self) -> list[Hashable]:
        """The boards kept that are not pinned, the one used longest ago first."""
        with self._lock:
            return list(self._entries)

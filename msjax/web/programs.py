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

The programs are built without compiling (each compiles on its first call, or ahead of
it: ``Program.compile``), so the cache's lock is held only for the bookkeeping; the
compile itself runs under the lock of the one game that needs it (``msjax.web.games``),
never under one that other games wait on. Compiles take the server's cores, and several
at once slow every other request: each takes the inspector's ``CompileSlot``, which lets
one run at a time and refuses another at once (``CompileBusy``: the API's 503 with
``Retry-After``) rather than queue it, so the games on boards already compiled keep their
answer time.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from typing import Any, Callable, Generic, Hashable, Iterable, Iterator, NamedTuple, TypeVar

import jax

from msjax import env as ms_env
from msjax import search
from msjax import solver as solver_lib
from msjax.agent import SolverAgent
from msjax.env import EnvConfig, EnvState
from msjax.evaluate import agent_beliefs
from msjax.solver.grid import player_view

__all__ = ["MAX_BOARDS", "RETRY_AFTER_S", "SEARCH", "BoardPrograms", "CompileBusy", "CompileSlot", "CompiledBoards", "Program", "board_programs"]

MAX_BOARDS = 8
"""Custom boards (not pinned) whose compiled programs the inspector keeps, besides the
standard boards'."""
RETRY_AFTER_S = 5
"""Seconds a request refused for a busy compile slot is told to wait before it asks again."""


# ----------------------------------------------------------------------------- the compile slot


class CompileBusy(Exception):
    """A compile refused because the ``CompileSlot`` is taken: the message is one line
    naming the board compiling; ``retry_after_s`` says when to ask again."""

    def __init__(self, message: str, retry_after_s: int):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class CompileSlot:
    """Lets at most ``size`` compiles run at once, across every board.

    A compile that finds every place taken is refused at once (``CompileBusy``), never
    queued: a queued request would hold its client, and its game, for the whole compile
    in front of it. Safe to use from several threads.
    """

    def __init__(self, size: int = 1, retry_after_s: int = RETRY_AFTER_S):
        if size < 1:
            raise ValueError(f"size={size} must be >= 1")
        self.size, self.retry_after_s = size, retry_after_s
        self._places = threading.BoundedSemaphore(size)
        self._compiling: list[str] = []
        self._lock = threading.Lock()

    @property
    def busy(self) -> bool:
        """Whether every place is taken."""
        with self._lock:
            return len(self._compiling) >= self.size

    @contextlib.contextmanager
    def hold(self, board: str) -> Iterator[None]:
        """Holds a place while ``board``'s program compiles.

        Raises:
          CompileBusy: every place is taken.
        """
        if not self._places.acquire(blocking=False):
            with self._lock:
                compiling = ", ".join(self._compiling)
            raise CompileBusy(
                f"a new board ({compiling}) is compiling and this request needs a compile for {board} too: "
                f"try again in {self.retry_after_s} s (one compile at a time keeps the other games quick)",
                self.retry_after_s,
            )
        with self._lock:
            self._compiling.append(board)
        try:
            yield
        finally:
            with self._lock:
                self._compiling.remove(board)
            self._places.release()


class Program:
    """A jitted function of one board that compiles in a ``CompileSlot``: on its first
    call, or ahead of it (``compile``, so that a request can compile all it needs before
    it changes a game). Called like the function.

    Args:
      name: what compile logs and ``jax.monitoring``'s events call it (``jit(NAME)``).
      function: the function to jit (its ``__name__`` becomes ``name``).
      slot: the slot its compile takes.
      board: the board it plays, as a refusal names it (``"8x8x10"``).
    """

    def __init__(self, name: str, function: Callable, slot: CompileSlot, board: str):
        function.__name__ = function.__qualname__ = name
        self.name, self.function, self.slot, self.board = name, jax.jit(function), slot, board
        self.compiled = False

    def compile(self, *args: Any) -> None:
        """Compiles the program for ``args``' shapes unless it is compiled (jit keeps the
        executable for the calls that follow). Raises: CompileBusy."""
        if self.compiled:
            return
        with self.slot.hold(self.board):
            self.function.lower(*args).compile()
            self.compiled = True

    def __call__(self, *args: Any) -> Any:
        self.compile(*args)
        return self.function(*args)


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
    return SolverAgent(cfg, solver_cfg).mine_probabilities(state), solver_lib.forced_moves(state, cfg, solver_cfg)


SEARCH = search.SearchConfig(lookahead_candidates=6, lookahead_score="survival", lookahead_tolerance=0.1,
                             endgame_layouts=8)
"""The search overlay's player: the survival lookahead over the cells at least 90% as safe as
the safest, 6 of them, and the exhaustive endgame where at most 8 layouts fit."""


def _search_view(state: EnvState):
    """The player's view as a batch of one: ``(revealed bool[1, H, W], counts int32[1, H, W],
    mines int32[1])``."""
    return tuple(x[None] for x in player_view(state))


def _search_beliefs(state: EnvState, limits: solver_lib.ExactLimits):
    """``(ExactAnalysis, LookaheadScores)`` of the view (batch axis of one): the exact
    probabilities, and the survival lookahead's candidates and their scores."""
    return search.candidate_scores(*_search_view(state), SEARCH, limits)


def _search_endgame(state: EnvState, limits: solver_lib.ExactLimits):
    """``Endgame`` of the view (batch axis of one): each click's win chance."""
    return search.solve_endgame(jax.random.key(0), *_search_view(state), SEARCH.endgame_layouts, limits=limits)


class BoardPrograms(NamedTuple):
    """The programs of one game config (each a ``Program``: it compiles in the inspector's
    compile slot, on its first call or ahead of it).

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

    reset: Program
    apply: Program
    solver_step: Program
    solver_beliefs: Program
    search_beliefs: Program
    search_endgame: Program
    agent: Any
    agent_step: Program
    agent_beliefs: Program


def board_programs(
    cfg: EnvConfig, solver_cfg: solver_lib.SolverConfig, agent: Any,
    search_limits: solver_lib.ExactLimits = solver_lib.ExactLimits(), slot: CompileSlot | None = None,
) -> BoardPrograms:
    """``cfg``'s programs: new function objects, so that dropping them (``CompiledBoards``)
    frees their executables with them. ``search_limits``: the search overlay's analysis
    sizes; ``slot``: where they compile (a slot of their own by default)."""
    slot = CompileSlot() if slot is None else slot
    board = ms_env.board_name((cfg.H, cfg.W, cfg.mine_count, cfg.mine_count))
    functions = {
        "reset": lambda key: ms_env.reset(key, cfg),
        "apply": lambda state, action: _apply(state, action, cfg),
        "solver_step": lambda state, key: _solver_step(state, key, cfg, solver_cfg),
        "solver_beliefs": lambda state: _solver_beliefs(state, cfg, solver_cfg),
        "search_beliefs": lambda state: _search_beliefs(state, search_limits),
        "search_endgame": lambda state: _search_endgame(state, search_limits),
        "agent_step": lambda board_agent, state, key: _agent_step(board_agent, state, key),
        "agent_beliefs": lambda board_agent, state: agent_beliefs(board_agent, state),
    }
    return BoardPrograms(agent=agent.for_board(cfg) if agent is not None else None,
                         **{name: Program(name, function, slot, board) for name, function in functions.items()})


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

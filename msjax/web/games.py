"""The web inspector's games: state kept on the server per game id, moves by a person, the
agent or the solver, and the beliefs the page draws.

Game state lives here, in memory, keyed by a random game id (the newest ``max_games``
games are kept; older ids answer "unknown game"). A request names its game id and the
overlays it wants; the answer is the whole position as JSON-ready data. Every JAX function
is jitted for one game config (``web.programs.board_programs``), so it compiles once per
board and first-click rule; the programs of the ``web.programs.MAX_BOARDS`` boards used
last are kept. A game's moves and answers hold that game's lock (a compile included), so
one client's new board never stalls the other games on that lock; and one compile runs at
a time across boards (the inspector's ``compile_slot``). A move compiles its own program
and those of the overlays its answer shows before it changes the game, so a request that
needs a compile while another runs is refused (``web.programs.CompileBusy``) with nothing
changed. Nothing here touches the filesystem: the agent is given when the inspector is
built.

Keys follow ``msjax.evaluate``'s turns: the game's key is ``jax.random.key(seed)``, the
solver's key at move ``n`` that key folded with 1, then ``n``; the agent's folded with 2.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import os
import secrets
import threading
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from msjax import env as ms_env
from msjax import reference, search
from msjax import solver as solver_lib
from msjax import viz
from msjax.env import EnvConfig, EnvState
from msjax.web.programs import (
    MAX_BOARDS, SEARCH, BoardPrograms, CompileBusy, CompiledBoards, CompileSlot, board_programs,
)

MAX_ROWS = 32
"""Largest board height the inspector accepts (the env's width limit is ``env.MAX_WIDTH``)."""
OVERLAYS = ("agent", "solver", "exact", "search")
PLAYERS = ("agent", "solver")
TOP_MOVES = 5
# beside every overlay until the first click (env.known_safe)
FIRST_CLICK_NOTE = "any first click is safe: the first reveal never hits a mine (with the opening rule, nor do its neighbours)"
# beside every overlay of a won or lost game, whose board shows every mine
GAME_OVER_NOTE = "the game is over ({status}): the board shows where the mines are; start a new game"


class GameError(Exception):
    """A request the inspector refuses: ``status`` is the HTTP status (4xx), the message
    one line saying what to do instead."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclasses.dataclass
class Game:
    """One game on the server.

    Attributes:
      game_id: the id the page sends back.
      cfg: the game's config (static for every jitted function).
      seed: the game's seed.
      state: the position.
      moves: moves played so far.
      players: who has moved: "you", "agent", "solver".
      last_move: the last move as JSON-ready data (kind, row, col, player, layer), or None.
      counted: whether the game's result is in the tally.
      exact_cache: ``reference.analyse``'s component cache for this board.
      lock: held while the game is read or changed.
    """

    game_id: str
    cfg: EnvConfig
    seed: int
    state: EnvState
    moves: int = 0
    players: set = dataclasses.field(default_factory=set)
    last_move: dict | None = None
    counted: bool = False
    exact_cache: dict = dataclasses.field(default_factory=dict, repr=False)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False, compare=False)


def _grid(values: Any) -> list[list[float | None]]:
    """A float grid as rows of numbers rounded to 3 places (None for NaN)."""
    rounded = np.round(np.asarray(values, np.float64), 3)
    return [[None if np.isnan(v) else float(v) for v in row] for row in rounded]


# ----------------------------------------------------------------------------- the inspector


class Inspector:
    """The games of one server, with the player that may play them.

    Args:
      agent: an ``msjax.agent.Agent`` (its ``env_cfg`` is the base of every game's
        config, so observations match its training), or None: the page then offers the
        solver alone.
      agent_name: how the page names the agent (e.g. its run directory).
      default_board: the board the page starts with.
      solver_cfg: the rule solver's options.
      exact_max_nodes: search budget of the exact overlay per component
        (``reference.analyse``'s ``max_nodes``); past it the overlay says "approximate".
      max_games: games kept in memory; the oldest is dropped first.
      max_boards: custom boards whose compiled programs are kept, besides the standard
        boards' (``web.programs.CompiledBoards``).
      search_limits: the exact analysis' sizes in the search overlay (``solver.ExactLimits``;
        smaller ones compile faster and flag more views).
      max_compiles: compiles that may run at once (``compile_slot``, a
        ``web.programs.CompileSlot``); a request that needs one more is refused with
        ``web.programs.CompileBusy`` (new_game, move and step before they change anything).

    Every public method is safe to call from several threads: ``lock`` guards the games
    table and the tally, each game's own lock its position (and any compile it needs).
    """

    def __init__(
        self,
        agent: Any = None,
        agent_name: str | None = None,
        *,
        default_board: str = "beginner",
        solver_cfg: solver_lib.SolverConfig = solver_lib.SolverConfig(),
        exact_max_nodes: int = 20_000,
        max_games: int = 256,
        max_boards: int = MAX_BOARDS,
        search_limits: solver_lib.ExactLimits = solver_lib.ExactLimits(),
        max_compiles: int = 1,
    ):
        self.agent, self.agent_name = agent, agent_name
        self.default_board = default_board
        self.solver_cfg, self.exact_max_nodes, self.max_games = solver_cfg, exact_max_nodes, max_games
        self.games: collections.OrderedDict[str, Game] = collections.OrderedDict()
        self.results: dict[str, dict[str, int]] = {}
        self.lock = threading.Lock()
        self.compile_slot = CompileSlot(max_compiles)
        build = functools.partial(board_programs, solver_cfg=solver_cfg, agent=agent, search_limits=search_limits,
                                  slot=self.compile_slot)
        self.programs = CompiledBoards(build, max_boards, pinned=self._standard_configs())

    def _standard_configs(self) -> list[EnvConfig]:
        """The configs of the standard boards under both first-click rules."""
        base = self.agent.env_cfg if self.agent is not None else None
        return [ms_env.board_config(name, rule, base) for name in ms_env.STANDARD_BOARDS for rule in (False, True)]

    # ------------------------------------------------------------------ requests

    def info(self) -> dict:
        """What the page needs to draw its controls."""
        return {
            "boards": {name: list(shape) for name, shape in ms_env.STANDARD_BOARDS.items()},
            "default_board": self.default_board,
            "agent": self.agent_name if self.agent is not None else None,
            "max_rows": MAX_ROWS,
            "max_cols": ms_env.MAX_WIDTH,
            "overlays": list(OVERLAYS),
        }

    def new_game(self, board: str, seed: int | None, safe_first_click: bool, overlays: tuple[str, ...] = ()) -> Game:
        """A new game of ``board`` (a standard name or ``HxWxM``); ``seed`` None draws one;
        ``overlays``: those the answer will show (their programs compile first).

        Raises:
          GameError(400): an unknown board, one too large, or mines that do not fit it.
          CompileBusy: the game needs a compile while another runs (no game is made).
        """
        cfg = self.game_config(board, safe_first_click)
        seed = int.from_bytes(os.urandom(3), "little") if seed is None else seed
        programs = self.programs.get(cfg)
        game = Game(secrets.token_hex(6), cfg, seed, programs.reset(jax.random.key(seed)))
        self._compile_overlays(programs, game.state, overlays)
        with self.lock:
            self.games[game.game_id] = game
            while len(self.games) > self.max_games:
                self.games.popitem(last=False)
        return game

    def game_config(self, board: str, safe_first_click: bool) -> EnvConfig:
        """The config of a game on ``board``. Raises: GameError(400) as ``new_game``."""
        try:
            height, _, _ = ms_env.parse_board(board)
            if height > MAX_ROWS:
                raise ValueError(f"board {board!r} has {height} rows: the inspector draws at most {MAX_ROWS}")
            base = self.agent.env_cfg if self.agent is not None else None
            return ms_env.board_config(board, safe_first_click, base)
        except ValueError as err:
            raise GameError(400, str(err)) from None

    def game(self, game_id: str) -> Game:
        """The game ``game_id``. Raises: GameError(404) for an id the server does not hold."""
        with self.lock:
            game = self.games.get(game_id)
        if game is None:
            raise GameError(404, f"unknown game {game_id!r}: start a new game (the server keeps the newest {self.max_games})")
        return game

    def move(self, game_id: str, kind: str, row: int, col: int, overlays: tuple[str, ...] = ()) -> Game:
        """A person's ``kind`` ("reveal" or "flag": flag toggles) on ``(row, col)``;
        ``overlays``: those the answer will show (their programs compile first).

        Raises:
          GameError: 404 unknown game, 409 a finished game, 400 a cell off the board,
            already revealed, or a reveal on a flag.
          CompileBusy: the move needs a compile while another runs (the game is unchanged).
        """
        game = self.game(game_id)
        with game.lock:
            self._check_playing(game)
            height, width = game.cfg.H, game.cfg.W
            for name, value, size in (("row", row, height), ("col", col, width)):
                if not 0 <= value < size:
                    raise GameError(400, f"{name} {value} is off the board: {name}s run from 0 to {size - 1}")
            if bool(game.state.revealed[row, col]):
                raise GameError(400, f"({row}, {col}) is already revealed")
            if kind == "reveal" and bool(game.state.flags[row, col]):
                raise GameError(400, f"({row}, {col}) is flagged: unflag it first")
            action = ms_env.encode_action(row * width + col, kind == "flag", game.cfg)
            programs = self.programs.get(game.cfg)
            self._compile_overlays(programs, game.state, overlays)
            game.state = programs.apply(game.state, jnp.int32(action))
            self._record(game, "you", kind, row, col, None)
        return game

    def step(self, game_id: str, player: str, overlays: tuple[str, ...] = ()) -> Game:
        """One move of ``player`` ("agent" or "solver"); ``overlays``: those the answer will
        show (their programs compile first).

        Raises:
          GameError: 404 unknown game, 409 a finished game, 400 the agent when none is loaded.
          CompileBusy: the move needs a compile while another runs (the game is unchanged).
        """
        game = self.game(game_id)
        if player == "agent" and self.agent is None:
            raise GameError(400, "no agent loaded: start the server with --agent RUN")
        with game.lock:
            self._check_playing(game)
            programs = self.programs.get(game.cfg)
            self._compile_overlays(programs, game.state, overlays)
            key = jax.random.fold_in(jax.random.key(game.seed), 1 if player == "solver" else 2)
            key = jax.random.fold_in(key, game.moves)
            layer = None
            if player == "solver":
                game.state, action, layer_code = programs.solver_step(game.state, key)
                layer = int(layer_code)
            else:
                game.state, action = programs.agent_step(programs.agent, game.state, key)
            kind, row, col = viz.describe_action(int(action), game.cfg)
            self._record(game, player, kind, row, col, layer)
        return game

    def tally(self) -> dict:
        """The session's finished games: ``{"played", "won", "by": {players: {"won", "lost"}}}``."""
        with self.lock:
            by = {who: dict(result) for who, result in self.results.items()}
        played = sum(r["won"] + r["lost"] for r in by.values())
        return {"played": played, "won": sum(r["won"] for r in by.values()), "by": by}

    def _compile_overlays(self, programs: BoardPrograms, state: EnvState, overlays: tuple[str, ...]) -> None:
        """Compiles the programs that ``overlays`` call, for ``state``'s board, before a
        request changes a game: a busy compile slot then refuses the request with the game
        as it was. (The search overlay's endgame compiles when a view first needs it.)
        Raises: CompileBusy."""
        for name in overlays:
            if name == "agent" and self.agent is not None:
                programs.agent_beliefs.compile(programs.agent, state)
            elif name == "solver":
                programs.solver_beliefs.compile(state)
            elif name == "search":
                programs.search_beliefs.compile(state)

    # ------------------------------------------------------------------ answers

    def describe(self, game: Game, overlays: tuple[str, ...] = ()) -> dict:
        """The game as JSON-ready data, with the beliefs named in ``overlays`` (of ``OVERLAYS``).

        ``board`` is one string per row of ``viz.cell_symbols``: ``#`` hidden, ``F`` flag,
        ``.`` or a digit revealed, and once the game is over ``X`` the mine hit, ``*``
        the other mines, ``x`` a wrong flag. A name repeated in ``overlays`` is computed once.
        Once the game is won or lost, every overlay has a note saying so, and the exact and
        search overlays' ``mine`` is the layout (nothing is left to infer).
        """
        overlays = tuple(dict.fromkeys(overlays))
        with game.lock:
            view = viz.board_view(game.state)
            status = self._status(game, view)
            answer = {
                "id": game.game_id,
                "rows": game.cfg.H,
                "cols": game.cfg.W,
                "mines": game.cfg.mine_count,
                "seed": game.seed,
                "safe_first_click": not game.cfg.guarantee_safe_neighborhood,
                "moves": game.moves,
                "move_limit": ms_env.move_limit(game.cfg),
                "status": status,
                "flags": int(view.flags.sum()),
                "board": ["".join(row) for row in viz.cell_symbols(view)],
                "last_move": game.last_move,
                "beliefs": {name: self._beliefs(name, game, status) for name in overlays},
            }
        answer["tally"] = self.tally()
        return answer

    def _beliefs(self, name: str, game: Game, status: str) -> dict:
        started = time.perf_counter()
        over = status in ("won", "lost")
        if name == "agent":
            if self.agent is None:
                return {"unavailable": "no agent loaded (start the server with --agent RUN)"}
            programs = self.programs.get(game.cfg)
            mine, actions = programs.agent_beliefs(programs.agent, game.state)
            top = viz.top_actions(np.asarray(actions), (game.cfg.H, game.cfg.W), TOP_MOVES)
            result = {"mine": _grid(mine), "top": [{"kind": a.kind, "row": a.row, "col": a.col, "p": round(a.probability, 3)} for a in top]}
        elif name == "solver":
            mine, forced = self.programs.get(game.cfg).solver_beliefs(game.state)
            layers = np.asarray(forced.layer)
            proven = [
                {"row": int(r), "col": int(c), "kind": "mine" if bool(forced.mines[r, c]) else "safe", "layer": int(layers[r, c])}
                for r, c in zip(*np.nonzero(np.asarray(forced.safe) | np.asarray(forced.mines)))
            ]
            result = {"mine": _grid(mine), "proven": proven}
        elif over:  # exact and search: the board shows the layout
            result = {"mine": _grid(game.state.mine_mask)}
            if name == "search":
                result.update(candidates=[], endgame=None)
        elif name == "search":
            result = self._search(game)
        else:
            result = self._exact(game)
        if "mine" in result and not bool(game.state.first_click_done):
            result["note"] = FIRST_CLICK_NOTE
        if "mine" in result and over:
            result["note"] = GAME_OVER_NOTE.format(status=status)
        result["ms"] = round(1000 * (time.perf_counter() - started), 1)
        return result

    def _exact(self, game: Game) -> dict:
        revealed = np.asarray(game.state.revealed)
        if not revealed.any():  # no layout yet, but the rules make any first click safe
            return {"mine": _grid(np.zeros(revealed.shape))}
        if len(game.exact_cache) > 50_000:
            game.exact_cache.clear()
        analysis = reference.analyse(revealed, np.asarray(game.state.counts), game.cfg.mine_count, self.exact_max_nodes, game.exact_cache)
        mine = np.where(revealed, 0.0, analysis.mine_prob)
        return {"mine": _grid(mine), "approximate": bool(analysis.approximate), "fallbacks": int(analysis.fallbacks)}

    def _search(self, game: Game) -> dict:
        """The search overlay: exact mine probabilities; where the view needs a guess, the
        survival lookahead's candidates (``safe``: P(safe), ``survive``: P(safe now and at
        the best next guess), ``progress``, ``zero``), best first; where few layouts fit,
        the endgame's win chance of the best clicks (``SEARCH``)."""
        revealed = np.asarray(game.state.revealed)
        if not revealed.any():
            return {"mine": _grid(np.zeros(revealed.shape)), "candidates": [], "endgame": None}
        programs = self.programs.get(game.cfg)
        analysis, scores = jax.tree.map(lambda x: np.asarray(x)[0], programs.search_beliefs(game.state))
        mine = np.where(revealed, 0.0, analysis.mine_prob)
        result = {"mine": _grid(mine), "exact": bool(analysis.exact), "candidates": [], "endgame": None}
        if not analysis.exact:
            result["note"] = "past the exact analysis' limits: no search"
            return result
        if analysis.safe.any():
            result["note"] = "a cell is proved safe: no guess to search"
            return result
        width = game.cfg.W
        for cell, valid, survive, progress, zero in zip(scores.cells, scores.valid, scores.survival, scores.progress,
                                                        scores.zero):
            if valid:
                row, col = divmod(int(cell), width)
                result["candidates"].append({
                    "row": row, "col": col, "safe": round(1.0 - float(mine[row, col]), 4),
                    "survive": round(float(survive), 4), "progress": round(float(progress), 4), "zero": round(float(zero), 4),
                })
        result["candidates"].sort(key=lambda c: (-c["survive"], -c["safe"]))
        if not search.within_bound(analysis.log_layouts, SEARCH.endgame_layouts):
            return result
        try:
            endgame = jax.tree.map(lambda x: np.asarray(x)[0], programs.search_endgame(game.state))
        except CompileBusy as busy:  # the move is made: answer it, without the endgame
            result["note"] = f"the endgame is not searched yet: {busy}"
            return result
        if endgame.solved:
            cells = sorted(((float(w), *divmod(i, width)) for i, w in enumerate(endgame.cell_win.reshape(-1)) if w >= 0),
                           reverse=True)[:TOP_MOVES]
            result["endgame"] = {"layouts": int(endgame.num_layouts), "win": round(float(endgame.win), 4),
                                 "cells": [{"row": r, "col": c, "win": round(w, 4)} for w, r, c in cells]}
        return result

    # ------------------------------------------------------------------ bookkeeping

    def _check_playing(self, game: Game) -> None:
        status = self._status(game, viz.board_view(game.state))
        if status not in ("new", "playing"):
            raise GameError(409, f"game {game.game_id} is over ({status}): start a new game")

    @staticmethod
    def _status(game: Game, view: viz.BoardView) -> str:
        if view.won:
            return "won"
        if view.done:
            return "lost"
        if game.moves >= ms_env.move_limit(game.cfg):
            return "out of moves"
        return "playing" if view.revealed.any() else "new"

    def _record(self, game: Game, player: str, kind: str, row: int, col: int, layer: int | None) -> None:
        game.moves += 1
        game.players.add(player)
        game.last_move = {"player": player, "kind": kind, "row": row, "col": col, "layer": layer}
        if layer is not None:
            game.last_move["layer_name"] = viz.LAYER_NAMES.get(layer, "?")
        status = self._status(game, viz.board_view(game.state))
        if status not in ("new", "playing") and not game.counted:
            game.counted = True
            with self.lock:
                result = self.results.setdefault(" + ".join(sorted(game.players)), {"won": 0, "lost": 0})
                result["won" if status == "won" else "lost"] += 1

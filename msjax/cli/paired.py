"""``python -m msjax paired``: players on the same boards, each one's win rate and its paired
difference to the first (``msjax.evaluate.paired``).

Every agent (a run directory, its latest checkpoint, one checkpoint folder, or the name of
an agent shipped with msjax: beginner, intermediate, expert) plays the
same ``--games`` boards greedily with its own first click (``msjax.evaluate.play_games``:
game ``i`` is the same board for every player), on the first agent's board unless
``--board`` (or ``--against``, below) names another. The paired difference is the mean
per-board difference in wins with its 95% interval, which separates agents whose own
intervals overlap (two agents that win and lose mostly the same boards).

    python -m msjax paired runs/small runs/small_ppo --games 10000 --seed 7

``--lookahead K,N,LEAF`` (repeatable) adds, after each agent, the agent with that
look-ahead on top (``search.policy_lookahead``: ``K`` candidates, ``N`` drawn layouts, leaves
valued by ``value`` or ``safe``):

    python -m msjax paired runs/small --lookahead 4,16,safe --lookahead 4,16,value

``--search SIMS,N,LEAF[,L[,T]]`` (repeatable) adds, after each agent, the agent searching its
guesses (``search.network_search``: Gumbel AlphaZero's root with ``SIMS`` simulations, 1 to
32, each click worth its exact chance to be safe times the mean leaf value, ``value`` or
``safe``, of the views it leads to on ``N`` drawn layouts, or with ``survival`` its exact
chance to survive the next guess too; ``L``: the exhaustive endgame where at most ``L``
layouts fit; ``T``: only the cells at least ``1 - T`` times as safe as the safest searched):

    python -m msjax paired beginner --search 4,16,safe --search 4,16,survival,32,0.1 --games 1000 --seed 7

``--symmetric`` adds, after each agent, the agent with its outputs averaged over the board's
symmetries (``Agent.symmetrised``: 8 on a square board, 4 on a rectangle).

``--solver rules`` adds, after the agents, the JAX rule solver (``agent.SolverAgent``: the
imitation stage's teacher) on the same boards, ``--solver exact`` the JAX exact player (its
guesses by exact probabilities, ``SolverConfig(probabilities="exact")``), ``--solver search``
the search player as its published figures played it (``search.published_search``: the
survival look-ahead and the exhaustive endgame on the exact probabilities); any may be given,
and with ``--against`` (below) no agent need be played again:

    python -m msjax paired runs/small --solver rules --solver exact --games 5000 --seed 7
    python -m msjax paired --against runs/pair_s7.npz:runs/small --solver rules --games 5000 --seed 7

Each player's games show their progress on stderr (a bar on a terminal, a line every ten
seconds elsewhere). Output: a table, then one JSON line per agent; ``--save FILE.npz`` also keeps every row's
per-board outcomes (``wins`` bool[rows, games], ``rows`` their names, and the ``board``,
``seed`` and first-click ``rule``, opening or safe, that picked the boards), so that any two
rows can be paired later. ``--against FILE.npz:ROW`` makes such a saved row (its name, or
its index) the baseline instead of the first agent, without playing it again (the file's
board, seed and rule must be this run's, and one it does not record, in a file written
before they were saved, is taken to be this run's with a warning; its first ``--games``
boards are used; without ``--board`` the run plays the first ``--against`` file's board, and
a file that records none needs ``--board``). ``--against`` is repeatable: the rows of the
later ones, checked the same way, follow the baseline, so that rows of several saved files
are paired without playing anything:

    python -m msjax paired runs/new --games 1000 --seed 7 --against runs/pair_s7.npz:runs/old
    python -m msjax paired --against runs/pair_s7.npz:runs/old --against runs/search_s7.npz:1 --games 1000 --seed 7
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Sequence

import numpy as np

from msjax import env as ms_env
from msjax.agent import SolverAgent
from msjax.cli import args as cli_args
from msjax.distributed import device_name
from msjax.env import board_config
from msjax.evaluate import play_games
from msjax.evaluate.paired import (
    agent_wins, boards_played, percent_cells, save_rows, saved_board, saved_outcomes, unrecorded_warning, vs_first,
)
from msjax.run import checkpoint
from msjax.run import agents as agents_lib
from msjax.run import log as runlog
from msjax import search
from msjax.solver import SolverConfig

DESCRIPTION = (
    "Players on the same boards: each one's win rate with its 95% interval and its paired difference "
    "to the first (or to a saved row), then one JSON line per player."
)


SOLVERS = {"rules": "bp", "exact": "exact", "search": "exact"}
"""``--solver``'s players: the probabilities each guesses on (``SolverConfig.probabilities``)."""


def solver_player(name: str, env_cfg) -> SolverAgent:
    """``--solver NAME``'s player on ``env_cfg``'s board: the rule solver (``rules``), the exact
    player (``exact``) or the search player at its published settings (``search``:
    ``search.published_search``)."""
    solver_cfg = SolverConfig(probabilities=SOLVERS[name])
    guess = search.search_guess(search.published_search(env_cfg.H, env_cfg.W), solver_cfg) if name == "search" else None
    return SolverAgent(env_cfg, solver_cfg, guess)


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser."""
    parser = argparse.ArgumentParser(prog="python -m msjax paired", description=DESCRIPTION)
    parser.add_argument("agents", nargs="*",
                        help="runs, checkpoints or shipped agents' names; the first is the baseline unless --against")
    parser.add_argument("--games", type=cli_args.at_least_two, default=10_000, help="boards, each played by every agent (>= 2)")
    parser.add_argument("--seed", type=cli_args.seed, default=0, help=f"picks the boards, 0..{cli_args.MAX_SEED}")
    parser.add_argument("--board",
                        help="beginner, intermediate, expert or HxWxM (default: the first --against's, else the first agent's)")
    parser.add_argument("--batch", type=cli_args.positive_int, default=1000, help="games stepped together")
    parser.add_argument("--lookahead", action="append", default=[], metavar="K,N,LEAF", type=cli_args.lookahead,
                        help="also each agent with this look-ahead on top (repeatable)")
    parser.add_argument("--search", action="append", default=[], metavar="SIMS,N,LEAF[,L[,T]]", type=cli_args.search_spec,
                        help="also each agent searching its guesses (Gumbel root, SIMS simulations; repeatable)")
    parser.add_argument("--symmetric", action="store_true",
                        help="also each agent averaged over the board's symmetries")
    parser.add_argument("--solver", action="append", default=[], choices=tuple(SOLVERS),
                        help="also the JAX rule solver (the agents' teacher), the JAX exact player or the search "
                             "player at its published settings (repeatable)")
    parser.add_argument("--save", metavar="FILE.npz", help="every row's per-board outcomes")
    parser.add_argument("--against", action="append", default=[], metavar="FILE.npz:ROW",
                        help="a row saved by --save (name or index): the first is the baseline, the rest follow it "
                             "(repeatable)")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Plays every player on the same boards and prints the table and the JSON lines."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.agents and not args.against:
        parser.error("name an agent (a run or checkpoint), or a saved row with --against, as the baseline")

    try:
        agents = [agents_lib.load_agent(path) for path in args.agents]
    except checkpoint.CheckpointError as error:
        parser.error(str(error))
    board_arg = args.board
    if args.against and board_arg is None:
        try:
            board_arg = saved_board(args.against[0])
        except ValueError as error:
            parser.error(f"--against {args.against[0]}: {error}")
    try:
        env_cfg = board_config(board_arg, False, agents[0].env_cfg if agents else None)
    except ValueError as error:
        parser.error(f"--board {board_arg}: {error}")
    boards = boards_played(env_cfg, args.seed)
    board = boards["board"]
    saved = []
    for spec in args.against:
        try:
            name, wins, unrecorded = saved_outcomes(spec, args.games, boards)
        except ValueError as error:
            parser.error(f"--against {spec}: {error}")
        if unrecorded:
            print(unrecorded_warning(f"--against {spec}", unrecorded, boards), file=sys.stderr)
        saved.append((name, wins))
    players = []
    for path, agent in zip(args.agents, agents):
        players.append((path, agent))
        if args.symmetric:
            players.append((f"{path} +symmetric", agent.symmetrised()))
        on_board = agent.for_board(ms_env.with_observation_of(env_cfg, agent.env_cfg))
        for flag, specs, make in (("lookahead", args.lookahead, search.policy_lookahead),
                                  ("search", args.search, search.network_search)):
            for spec in specs:
                try:
                    players.append((f"{path} +{flag} {','.join(map(str, spec))}", make(on_board, *spec)))
                except ValueError as error:  # more candidates than cells, an agent with proofs or a board mix
                    parser.error(f"--{flag}: {error}")
    for name in args.solver:
        players.append((f"solver {name}", solver_player(name, env_cfg)))
    device = device_name()
    rows, names, outcomes = [], [], []
    for path, agent in saved + players:
        began = time.perf_counter()
        if isinstance(agent, np.ndarray):  # a saved row
            won = agent
        else:
            with runlog.CountProgress(args.games, "games", f"{path} on {board}") as progress:
                if isinstance(agent, SolverAgent):
                    won = np.asarray(
                        play_games(agent, env_cfg, args.games, args.seed, args.batch, on_batch=progress.advance)["won"]
                    )
                else:
                    won = agent_wins(agent, env_cfg, args.games, args.seed, args.batch, on_batch=progress.advance)
        seconds = time.perf_counter() - began
        names.append(path)
        outcomes.append(won)
        if args.save:
            save_rows(args.save, names, outcomes, boards)
        rows.append({"agent": path, "board": board, "seed": args.seed, "games": args.games,
                     **vs_first(outcomes[0], won), "seconds": seconds, "device": device})
        print(json.dumps(rows[-1]), flush=True)
    print(f"{'agent':40} {'games':>7} {'win %':>7} {'95% CI':>16} {'vs first (paired)':>22} {'s':>6}")
    for row in rows:
        win, ci, paired = percent_cells(row)
        print(f"{row['agent'][-40:]:40} {row['games']:>7} {win:>7} {ci:>16} {paired:>22} {row['seconds']:>6.0f}")



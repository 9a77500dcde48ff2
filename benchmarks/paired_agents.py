"""Agents on the same boards: each one's win rate and its paired difference to the first.

Every agent (a run directory, its latest checkpoint, or one checkpoint folder) plays the
same ``--games`` boards greedily with its own first click (``msjax.evaluate.play_games``:
game ``i`` is the same board for every player), on the first agent's board unless
``--board`` (or ``--against``, below) names another. The paired difference is the mean
per-board difference in wins with its 95% interval, which separates agents whose own
intervals overlap (two agents that win and lose mostly the same boards).

    python benchmarks/paired_agents.py runs/small runs/small_ppo --games 10000 --seed 7

``--lookahead K,N,LEAF`` (repeatable) adds, after each agent, the agent with that
look-ahead on top (``search.policy_lookahead``: ``K`` candidates, ``N`` drawn layouts, leaves
valued by ``value`` or ``safe``):

    python benchmarks/paired_agents.py runs/small --lookahead 4,16,safe --lookahead 4,16,value

``--symmetric`` adds, after each agent, the agent with its outputs averaged over the board's
symmetries (``Agent.symmetrised``: 8 on a square board, 4 on a rectangle).

``--solver rules`` adds, after the agents, the JAX rule solver (``agent.SolverAgent``: the
imitation stage's teacher) on the same boards, ``--solver exact`` the JAX exact player (its
guesses by exact probabilities, ``SolverConfig(probabilities="exact")``); both may be given,
and with ``--against`` (below) no agent need be played again:

    python benchmarks/paired_agents.py runs/small --solver rules --solver exact --games 5000 --seed 7
    python benchmarks/paired_agents.py --against runs/pair_s7.npz:runs/small --solver rules --games 5000 --seed 7

Output: a table, then one JSON line per agent; ``--save FILE.npz`` also keeps every row's
per-board outcomes (``wins`` bool[rows, games], ``rows`` their names, and the ``board``,
``seed`` and first-click ``rule``, opening or safe, that picked the boards), so that any two
rows can be paired later. ``--against FILE.npz:ROW`` makes such a saved row (its name, or
its index) the baseline instead of the first agent, without playing it again (the file's
board, seed and rule must be this run's, and one it does not record, in a file written
before they were saved, is taken to be this run's with a warning; its first ``--games``
boards are used; without ``--board`` the run plays the file's board, and a file that
records none needs ``--board``):

    python benchmarks/paired_agents.py runs/new --games 1000 --seed 7 --against runs/pair_s7.npz:runs/old
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.exact_analysis import device_name  # noqa: E402
from msjax.cli import args as cli_args  # noqa: E402
from benchmarks.paired_exact import (  # noqa: E402
    at_least_two, check_same_boards, load_saved, percent_cells, unrecorded_warning, vs_first,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=Path(__file__).name, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("agents", nargs="*", help="runs or checkpoints; the first is the baseline unless --against")
    parser.add_argument("--games", type=at_least_two, default=10_000, help="boards, each played by every agent (>= 2)")
    parser.add_argument("--seed", type=cli_args.seed, default=0, help=f"picks the boards, 0..{cli_args.MAX_SEED}")
    parser.add_argument("--board", help="beginner, intermediate, expert or HxWxM (default: --against's, else the first agent's)")
    parser.add_argument("--batch", type=cli_args.positive_int, default=1000, help="games stepped together")
    parser.add_argument("--lookahead", action="append", default=[], metavar="K,N,LEAF", type=cli_args.lookahead,
                        help="also each agent with this look-ahead on top (repeatable)")
    parser.add_argument("--symmetric", action="store_true",
                        help="also each agent averaged over the board's symmetries")
    parser.add_argument("--solver", action="append", default=[], choices=("rules", "exact"),
                        help="also the JAX rule solver (the agents' teacher) or exact player (repeatable)")
    parser.add_argument("--save", metavar="FILE.npz", help="every row's per-board outcomes")
    parser.add_argument("--against", metavar="FILE.npz:ROW", help="a row saved by --save as the baseline (name or index)")
    args = parser.parse_args(argv)
    if not args.agents and not args.against:
        parser.error("name an agent (a run or checkpoint), or a saved row with --against, as the baseline")

    from msjax import checkpoint
    from msjax import env as ms_env
    from msjax.cli.boards import board_config
    from msjax.agent import SolverAgent
    from msjax import search
    from msjax.solver import SolverConfig
    from msjax.evaluate import play_games

    try:
        agents = [checkpoint.load_agent(path) for path in args.agents]
    except checkpoint.CheckpointError as error:
        parser.error(str(error))
    board_arg = args.board
    if args.against and board_arg is None:
        try:
            board_arg = saved_board(args.against)
        except ValueError as error:
            parser.error(f"--against {args.against}: {error}")
    try:
        env_cfg = board_config(board_arg, False, agents[0].env_cfg if agents else None)
    except ValueError as error:
        parser.error(f"--board {board_arg}: {error}")
    boards = boards_played(env_cfg, args.seed)
    board = boards["board"]
    saved = []
    if args.against:
        try:
            name, wins, unrecorded = saved_outcomes(args.against, args.games, boards)
        except ValueError as error:
            parser.error(f"--against {args.against}: {error}")
        if unrecorded:
            print(unrecorded_warning(f"--against {args.against}", unrecorded, boards), file=sys.stderr)
        saved = [(name, wins)]
    players = []
    for path, agent in zip(args.agents, agents):
        players.append((path, agent))
        if args.symmetric:
            players.append((f"{path} +symmetric", agent.symmetrised()))
        for spec in args.lookahead:
            try:
                players.append((f"{path} +lookahead {','.join(map(str, spec))}", search.policy_lookahead(agent.for_board(ms_env.with_observation_of(env_cfg, agent.env_cfg)), *spec)))
            except ValueError as error:  # more candidates than cells
                parser.error(f"--lookahead: {error}")
    for probabilities in args.solver:
        players.append((f"solver {probabilities}",
                        SolverAgent(env_cfg, SolverConfig(probabilities="bp" if probabilities == "rules" else "exact"))))
    device = device_name()
    rows, names, outcomes = [], [], []
    for path, agent in saved + players:
        began = time.perf_counter()
        if isinstance(agent, np.ndarray):  # a saved row
            won = agent
        elif isinstance(agent, SolverAgent):
            won = np.asarray(play_games(agent, env_cfg, args.games, args.seed, args.batch)["won"])
        else:
            won = agent_wins(agent, env_cfg, args.games, args.seed, args.batch)
        seconds = time.perf_counter() - began
        names.append(path)
        outcomes.append(won)
        if args.save:
            save_rows(args.save, names, outcomes, boards)
        rows.append({"bench": "paired_agents", "agent": path, "board": board, "seed": args.seed, "games": args.games,
                     **vs_first(outcomes[0], won), "seconds": seconds, "device": device})
        print(json.dumps(rows[-1]), flush=True)
    print(f"{'agent':40} {'games':>7} {'win %':>7} {'95% CI':>16} {'vs first (paired)':>22} {'s':>6}")
    for row in rows:
        win, ci, paired = percent_cells(row)
        print(f"{row['agent'][-40:]:40} {row['games']:>7} {win:>7} {ci:>16} {paired:>22} {row['seconds']:>6.0f}")


def agent_wins(agent, env_cfg, games: int, seed: int, batch: int) -> np.ndarray:
    """bool[games]: the boards of ``seed`` (``env_cfg``'s board and first-click rule) that
    ``agent`` wins, playing greedily with its own observation channels
    (``env.with_observation_of``), ``batch`` games at a time."""
    from msjax import env as ms_env
    from msjax.evaluate import play_games

    own_cfg = ms_env.with_observation_of(env_cfg, agent.env_cfg)  # its channels, the same games
    return np.asarray(play_games(agent.for_board(own_cfg), own_cfg, games, seed, batch)["won"])


def boards_played(env_cfg, seed: int) -> dict:
    """What picks the boards that game ``i`` is played on, kept with saved rows: the
    ``board`` ("HxWxM"), the ``seed`` and the first-click ``rule`` (``"opening"``: the first
    click opens a region, ``"safe"``: only the clicked cell is safe)."""
    from msjax import env as ms_env

    board = ms_env.board_name(ms_env.board_spec(env_cfg.H, env_cfg.W, env_cfg.mine_count))
    return {"board": board, "seed": seed, "rule": "opening" if env_cfg.guarantee_safe_neighborhood else "safe"}


def save_rows(path: str, names: list[str], outcomes: list[np.ndarray], boards: dict) -> None:
    """Writes rows of per-board outcomes as ``--save`` keeps them (``wins`` bool[rows,
    games], ``rows`` their names, and ``boards``: ``boards_played``'s board, seed and
    rule), for ``saved_outcomes`` to read."""
    np.savez(path, wins=np.stack(outcomes), rows=np.array(names), **boards)


def _split_spec(spec: str) -> tuple[str, str]:
    """``(FILE.npz, ROW)`` of ``spec = "FILE.npz:ROW"``; ValueError without both."""
    path, sep, row = spec.rpartition(":")
    if not sep or not path or not row:
        raise ValueError("must be FILE.npz:ROW (a row's name or index)")
    return path, row


def saved_board(spec: str) -> str:
    """The board (``"HxWxM"``) of the file in ``spec = "FILE.npz:ROW"``, as ``--save`` recorded it.

    Raises:
      ValueError: one line: no ``:ROW``, a file that ``--save`` did not write
        (``paired_exact.load_saved``), or one that records no board (written before
        boards were saved).
    """
    saved = load_saved(_split_spec(spec)[0], ("wins", "rows", "seed"))
    if "board" not in saved:
        raise ValueError("the file records no board (an older file): name it with --board")
    return str(saved["board"])


def saved_outcomes(spec: str, games: int, this_run: dict) -> tuple[str, np.ndarray, list[str]]:
    """``(name, wins bool[games], unrecorded)``: the row ``ROW`` (its name, or its index)
    of the file ``FILE.npz`` in ``spec = "FILE.npz:ROW"``, as ``--save`` wrote it, cut to
    its first ``games`` boards (game ``i`` is the same board for any count of games); the
    file must have been played on ``this_run``'s boards (``boards_played``), and
    ``unrecorded`` are the keys of ``this_run`` it does not record (an older file), for a
    warning (``paired_exact.check_same_boards``).

    Raises:
      ValueError: one line: no ``:ROW``, a file that ``--save`` did not write, an unknown
        row, other boards than ``this_run``'s, or fewer than ``games`` boards in the file.
    """
    path, row = _split_spec(spec)
    saved = load_saved(path, ("wins", "rows", "seed"))
    names, wins = [str(name) for name in saved["rows"]], saved["wins"]
    if row in names:
        index = names.index(row)
    elif row.isdigit() and int(row) < len(names):
        index = int(row)
    else:
        raise ValueError(f"no row {row!r}; the file holds {names}")
    unrecorded = check_same_boards(saved, this_run)
    if wins.shape[1] < games:
        raise ValueError(f"the file holds {wins.shape[1]} games per row, fewer than --games {games}")
    return f"{names[index]} (saved)", wins[index, :games].astype(bool), unrecorded


if __name__ == "__main__":
    main()

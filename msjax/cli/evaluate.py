"""``python -m msjax evaluate``: a player's win rate, avoidability and calibration figures,
printed as a table and then as one JSON line.

Usage::

    python -m msjax evaluate (--agent runs/NAME|NAME | --solver) [--board beginner|intermediate|expert|HxWxM]
                             [--episodes N] [--seed S] [--safe-first-click] [--first-click ROW,COL]
                             [--lookahead K,N,LEAF | --search SIMS,N,LEAF[,L[,T]]]

Progress (games done, rate, time left) goes to stderr: a bar on a terminal, elsewhere a
plain line as each batch ends (at most one every ten seconds); the figures go to stdout.
``--agent`` takes a run directory or the name of an agent shipped with msjax (beginner,
intermediate, expert: ``msjax.shipped``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Sequence

import jax

from msjax import agent as agent_lib
from msjax.run import agents as agents_lib
from msjax.evaluate import calibration
from msjax.evaluate import diagnostics
from msjax import env as ms_env
from msjax.run import memory as memory_lib
from msjax.run import log as runlog
from msjax import search
from msjax.cli.args import int_in, lookahead, positive_int, search_spec
from msjax.cli.args import seed as seed_type
from msjax.env import board_config
from msjax.evaluate import MAX_GAMES

MAX_EPISODES = MAX_GAMES // 2
"""The largest ``--episodes``: with the last batch's spare games (fewer than the games),
every game's key stays within the seed's ``MAX_GAMES``."""
MAX_CALIBRATION_GAMES = 4096
"""The largest ``--calibration-games``: those games are stepped as one batch, every
position kept."""

DESCRIPTION = (
    "A player's win rate with its 95% interval, why its games are lost (avoidable and forced "
    "guesses) and the calibration of its mine beliefs: a table, then one JSON line. Progress "
    "(games done, rate, time left) goes to stderr."
)


class UsageError(Exception):
    """A bad command line, reported in one line with exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print the usage and exit by itself
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser (the README's commands are checked against it)."""
    parser = _Parser(prog="python -m msjax evaluate", description=DESCRIPTION)
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument(
        "--agent", metavar="RUN|NAME",
        help="the agent saved in runs/NAME (its latest checkpoint), or a shipped one: beginner, intermediate, expert",
    )
    who.add_argument("--solver", action="store_true", help="the JAX rule solver instead of an agent")
    parser.add_argument("--board", metavar="BOARD", help="beginner, intermediate, expert or HxWxM (default: the agent's own)")
    parser.add_argument(
        "--episodes", type=int_in(1, MAX_EPISODES), default=1000, metavar="N", help="games, one per board (default 1000)"
    )
    parser.add_argument("--seed", type=seed_type, default=0, metavar="S", help="picks the boards (default 0)")
    parser.add_argument("--safe-first-click", action="store_true", help="only the first clicked cell is safe")
    parser.add_argument(
        "--first-click", metavar="ROW,COL", help="open every game at this cell instead of the player's own choice"
    )
    parser.add_argument(
        "--symmetric", action="store_true",
        help="the agent averages its network over the board's 8 (square) or 4 symmetries",
    )
    parser.add_argument(
        "--proofs", choices=("layers", "exact"),
        help="the agent plays proved-safe cells first and never reveals a proved mine (a hybrid): proofs of the "
        "rule layers, or of the exact analysis",
    )
    parser.add_argument(
        "--lookahead", type=lookahead, metavar="K,N,LEAF",
        help="the agent looks past its move: of its K likeliest reveals a proved-safe one, else the best exact "
        "chance to be safe times the mean value (LEAF: value, the value head; safe, 1) of the views it leads to "
        "on N drawn layouts (search.policy_lookahead), e.g. 4,16,value",
    )
    parser.add_argument(
        "--search", type=search_spec, metavar="SIMS,N,LEAF[,L[,T]]",
        help="the agent searches its guesses: a proved-safe reveal without search, else Gumbel AlphaZero's root over "
        "its reveals with SIMS simulations (1 to 32), each click worth its exact chance to be safe times the mean "
        "value (LEAF: value, the value head; safe, 1) of the views it leads to on N drawn layouts, or (survival) "
        "its exact chance to survive the next guess too; L: the exhaustive endgame's click where at most L layouts "
        "fit; T: only the cells at least 1-T times as safe as the safest are searched (search.network_search), "
        "e.g. 8,16,value or 4,16,survival,32,0.1",
    )
    parser.add_argument(
        "--loss-causes", action="store_true",
        help="judge every move by the exact probabilities: where the games were lost (a missed proof, a proven "
        "mine, a guess worse than the exact minimum, a best guess); an exact analysis per move",
    )
    parser.add_argument(
        "--batch-size", type=positive_int, metavar="N",
        help="boards stepped together (default: a tenth of the games, 16 to 1024)",
    )
    parser.add_argument(
        "--calibration-games", type=int_in(0, MAX_CALIBRATION_GAMES), default=64, metavar="N",
        help=f"games whose positions score the mine head (default 64, at most {MAX_CALIBRATION_GAMES})",
    )
    parser.add_argument(
        "--value-games", type=int_in(0, MAX_CALIBRATION_GAMES), default=0, metavar="N",
        help="games (played by the player, with its search if any) whose every position scores the agent's value "
        f"head against whether that game was won (default 0: none; at most {MAX_CALIBRATION_GAMES})",
    )
    return parser


def mine_head_trained(agent: Any) -> bool:
    """False for a loaded agent whose run gave its mine head no loss weight."""
    config = getattr(agent, "config", None)
    if config is None:
        return True
    weights = [config.ppo.aux_mine_weight]
    for section in (config.imitation, config.selfplay):
        if section.enabled:
            weights.append(section.aux_mine_weight)
    return any(w > 0 for w in weights)


def first_click_cell(text: str, cfg: ms_env.EnvConfig) -> tuple[int, int]:
    """``"ROW,COL"`` -> ``(row, col)``, a cell of ``cfg``'s board; ``UsageError`` otherwise."""
    try:
        row, col = (int(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"--first-click {text}: must be ROW,COL (two integers)") from None
    if not (0 <= row < cfg.H and 0 <= col < cfg.W):
        raise UsageError(f"--first-click {text}: off the {cfg.H}x{cfg.W} board (rows 0..{cfg.H - 1}, cols 0..{cfg.W - 1})")
    return row, col


def _load(args: argparse.Namespace):
    """``(player, env_cfg, name)`` for the parsed command line."""
    player, cfg, name = _load_player(args)
    if args.first_click is not None:
        cell = first_click_cell(args.first_click, cfg)
        player, name = agent_lib.FirstClickAt(player, cell, cfg), f"{name} opening at {cell}"
    return player, cfg, name


def _load_player(args: argparse.Namespace):
    from msjax.run.checkpoint import CheckpointError

    try:
        if args.solver and (args.symmetric or args.proofs or args.lookahead or args.search or args.value_games):
            flag = ("--symmetric averages" if args.symmetric else "--proofs guides" if args.proofs
                    else "--lookahead guides" if args.lookahead else "--search asks" if args.search
                    else "--value-games scores")
            raise UsageError(f"{flag} an agent's network: the solver has none (use --agent RUN)")
        if args.lookahead and args.search:
            raise UsageError("--lookahead and --search each put a search on the agent: give one of them")
        if args.solver:
            cfg = board_config(args.board, args.safe_first_click)
            return agent_lib.SolverAgent(cfg), cfg, "solver"
        agent = agents_lib.load_agent(args.agent)
        cfg = board_config(args.board, args.safe_first_click, base=agent.env_cfg)
        agent, name = agent.for_board(cfg), f"agent {args.agent}"
        if args.symmetric:
            agent, name = agent.symmetrised(), f"{name} (symmetrised)"
        if args.proofs:
            agent, name = agent.with_proofs(args.proofs), f"{name} (with the {args.proofs} proofs)"
        if args.lookahead:
            agent, name = search.policy_lookahead(agent, *args.lookahead), f"{name} (looking ahead: {args.lookahead})"
        if args.search:
            agent, name = search.network_search(agent, *args.search), f"{name} (searching: {args.search})"
        return agent, cfg, name
    except (ValueError, OSError, CheckpointError) as error:  # bad board, missing run
        raise UsageError(str(error).splitlines()[0]) from error


def _fmt(value: Any) -> str:
    if isinstance(value, list):
        return "; ".join(_fmt(part) for part in value)
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
    if isinstance(value, (tuple, list)):
        return [_json_safe(v) for v in value]
    if isinstance(value, dict):
        return {key: _json_safe(v) for key, v in value.items()}
    return value


def json_record(name: str, cfg: ms_env.EnvConfig, figures: dict[str, Any]) -> dict[str, Any]:
    """The figures as one JSON-ready row (nan as null) naming the player, board and rule."""
    record = {"player": name, "board": f"{cfg.H}x{cfg.W}x{cfg.mine_count}"}
    record["rule"] = "opening" if cfg.guarantee_safe_neighborhood else "safe"
    record.update({key: _json_safe(value) for key, value in figures.items()})
    return record


def default_batch_size(episodes: int) -> int:
    """Boards stepped together when ``--batch-size`` is not given: about a tenth of the
    games (16 to 1024), so that progress moves in about ten steps. Game ``i`` is the same
    board whatever the batch size, so the figures do not change with it."""
    return min(1024, max(16, -(-episodes // 10)))


def host_memory_bytes() -> int:
    """The machine's physical memory in bytes: where the games' results are kept, and the
    CPU backend's device memory."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _size(num_bytes: float) -> str:
    return f"{num_bytes / memory_lib.GIB:.2f} GiB" if num_bytes >= memory_lib.GIB else f"{num_bytes / 2**20:.2f} MiB"


def check_batch_memory(lowered: Any, args: argparse.Namespace, batch_size: int) -> None:
    """Before the first batch (``lowered``: the batches' program, ``batch_size`` games):
    raises ``UsageError`` naming the flag to change when every game's results would not
    fit the host's memory (``--episodes``), or when XLA's estimate of the program's memory
    (``memory.compiled_memory``; the compile is the one the batches then run) exceeds what
    the device has (``memory.device_limit``; the host's memory on the CPU backend)."""
    host = host_memory_bytes()
    outputs = jax.tree.leaves(lowered.out_info)  # the batch's per-game results
    per_game = sum(math.prod(leaf.shape) * leaf.dtype.itemsize for leaf in outputs) / batch_size
    results = 2 * per_game * args.episodes  # each batch's results, then all of them joined
    if results > host:
        raise UsageError(
            f"--episodes {args.episodes}: every game's results need {_size(results)} of host memory and the host "
            f"has {_size(host)}: at most {int(host // (2 * per_game))} games"
        )
    need = memory_lib.compiled_memory("evaluation", lowered).total_bytes
    limit = memory_lib.device_limit()
    where, limit = ("device", limit) if limit is not None else ("host", host)
    if need <= limit:
        return
    fit = int(limit // (need / batch_size))
    if fit >= 1:
        advice = f"about {fit} games fit: use --batch-size {fit} or fewer"
    else:
        advice = "not even one game fits" + (": lower --lookahead's N (layouts per candidate)" if args.lookahead
                                          else ": lower --search's N (layouts per view)" if args.search else "")
    raise UsageError(
        f"--batch-size {batch_size}: a batch of {batch_size} games needs {_size(need)} of {where} memory (XLA's "
        f"estimate) and the {where} has {_size(limit)}: {advice}"
    )


def play_with_progress(player: Any, cfg: ms_env.EnvConfig, name: str, args: argparse.Namespace) -> dict[str, Any]:
    """``diagnostics.diagnose`` of the command line's games, then the mine head's
    calibration when the player has one, each with a progress bar (plain lines off a
    terminal); returns the figures, with a ``note`` when calibration was skipped.
    ``UsageError`` before the first game when the games do not fit in memory
    (``check_batch_memory``)."""
    batch_size = min(args.batch_size or default_batch_size(args.episodes), args.episodes)
    board = f"{cfg.H}x{cfg.W}x{cfg.mine_count}"
    print(
        f"{name} on {board}: {args.episodes} games in batches of {batch_size} "
        "(the first batch also compiles the game loop)",
        file=sys.stderr,
        flush=True,
    )
    with runlog.CountProgress(args.episodes, "games", f"{name} on {board}") as progress:
        figures = diagnostics.diagnose(
            player, cfg, args.episodes, args.seed, batch_size, on_batch=progress.advance, exact=args.loss_causes,
            check_batch=lambda lowered: check_batch_memory(lowered, args, batch_size),
        )
    if args.value_games:
        figures.update(value_head_figures(player, cfg, args))
    if not (args.calibration_games and agent_lib.has_mine_beliefs(player)):
        return figures
    if not mine_head_trained(player):
        return {**figures, "note": "mine head not trained (aux_mine_weight 0): no calibration"}
    with runlog.CountProgress(args.calibration_games, "games", "calibration of the mine beliefs") as progress:
        games, seed = args.calibration_games, args.seed
        try:
            figures.update(calibration.mine_head_calibration(player, cfg, games, seed, on_games_done=progress.advance))
        except calibration.NoPositions:
            return {**figures, "note": f"no calibration: every game on {board} ended at its first click"}
    return figures


def value_head_figures(player: Any, cfg: ms_env.EnvConfig, args: argparse.Namespace) -> dict[str, Any]:
    """``calibration.value_calibration`` of ``--value-games`` games played by ``player``, read
    from its agent's value head (the searched agent's, under ``--search`` or ``--lookahead``),
    with a progress bar."""
    agent = getattr(player, "player", player)  # under --first-click
    agent = getattr(agent, "agent", agent)  # under --search or --lookahead
    with runlog.CountProgress(args.value_games, "games", "calibration of the value head") as progress:
        try:
            return calibration.value_calibration(agent, cfg, args.value_games, args.seed, player=player,
                                                 on_games_done=progress.advance)
        except calibration.NoPositions:
            return {"value_note": "no value calibration: every game ended at its first click"}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m msjax evaluate``: prints the figures as a table, then one JSON line.

    Returns the exit status: 0, or 2 after a one-line error on a bad command line.
    """
    try:
        args = build_parser().parse_args(argv)
        player, cfg, name = _load(args)
        figures = play_with_progress(player, cfg, name, args)
    except UsageError as error:
        print(f"python -m msjax evaluate: error: {error}", file=sys.stderr)
        return 2
    note = figures.pop("note", None)
    print(format_table(name, cfg, figures))
    if note:
        print(f"  ({note})")
    print(json.dumps(json_record(name, cfg, figures)))
    return 0

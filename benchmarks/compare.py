"""One table of players against the baselines, per board and first-click rule.

Rows per board (8x8x10, 16x16x40, 16x30x99) and rule (``safe``: only the first click is
safe; ``opening``: the first click opens a region):

  random   -- uniformly random reveals of hidden cells (JAX, batched).
  layer1   -- single-cell rules, uniform random guesses (``SolverConfig(max_layer=1)``).
  jax      -- the JAX rule solver, all layers.
  exact    -- the reference player, ``msjax.reference.play_board`` (CPU, NumPy: fewer games).
  agent:N  -- each ``--agent runs/NAME`` (its weights on every board: the network is fully
              convolutional), through ``msjax.evaluate.evaluate``.
  PSEQ     -- the published figures of Tu et al. (2017), for reference (no games here).

The baseline rows come from ``benchmarks/solver_winrate.py`` (same players, first clicks
and seeds); its docstring says how their games are run. Agents play greedily, one game per
board, with their own first click. games/s of the JAX baselines excludes compilation, of
the agents includes it (one ``evaluate`` call).

Output: a markdown table (also written to ``--markdown PATH``), then one JSON line per row.

    python -m benchmarks.compare --quick
    python -m benchmarks.compare --games 5000 --exact-games 1000 --agent runs/beginner --markdown runs/compare.md
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from benchmarks import solver_winrate
from msjax.env import STANDARD_BOARDS

RULES = solver_winrate.RULES
PSEQ = solver_winrate.PSEQ  # percent: (safe first click, opening start)
BASELINES = ("random", "layer1", "jax", "exact")
QUICK = {"games": 256, "exact_games": 40}


def baseline_row(player: str, board: str, rule: str, games: int, args: argparse.Namespace) -> dict:
    """A random/layer1/jax/exact row, played by ``solver_winrate``'s functions."""
    if player == "exact":
        return solver_winrate.run_exact(board, rule, games, args.workers, args.seed)
    return solver_winrate.run_jax(player, board, rule, games, args.batch, args.seed, args.chunk_steps)


def agent_row(agent, board: str, rule: str, games: int, args: argparse.Namespace) -> dict:
    """An agent's row: ``evaluate`` on ``games`` boards of ``board`` under ``rule``."""
    import dataclasses

    from msjax.evaluate import evaluate

    height, width, mines = STANDARD_BOARDS[board]
    cfg = dataclasses.replace(
        agent.env_cfg, H=height, W=width, mine_count=mines, density_band=None,
        guarantee_safe_neighborhood=RULES[rule],
    )
    start = time.perf_counter()
    batch = min(args.batch, games)
    result = evaluate(agent.for_board(cfg), cfg, episodes=games, seed=args.seed, batch_size=batch)
    elapsed = time.perf_counter() - start
    return {
        "games": result["episodes"],
        "wins": round(result["win_rate"] * result["episodes"]),
        "games_per_s": result["episodes"] / elapsed,
        "includes_compile": True,
        "revealed_fraction": result["revealed_fraction"],
        "invalid_action_rate": result["invalid_action_rate"],
    }


def pseq_row(board: str, rule: str) -> dict:
    height, width, mines = STANDARD_BOARDS[board]
    rate = PSEQ[board][RULES[rule]] / 100
    return {"player": "PSEQ (published)", "board": f"{height}x{width}x{mines}", "rule": rule, "win_rate": rate}


def markdown(rows: list[dict]) -> str:
    """The rows as one markdown table (blank cells where a row has no such figure)."""
    lines = [
        "| board | first click | player | games | win % | 95% CI | games/s |",
        "|---|---|---|---:|---:|---|---:|",
    ]
    for row in rows:
        interval = f"[{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}]" if "ci_low" in row else ""
        games = str(row.get("games", ""))
        speed = f"{row['games_per_s']:.1f}" if "games_per_s" in row else ""
        rule = "opening start" if row["rule"] == "opening" else "safe first click"
        lines.append(
            f"| {row['board']} | {rule} | {row['player']} | {games} "
            f"| {100 * row['win_rate']:.1f} | {interval} | {speed} |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--boards", default=",".join(STANDARD_BOARDS), help=f"comma list of {tuple(STANDARD_BOARDS)}")
    parser.add_argument("--rules", default="safe,opening", help="comma list of safe, opening")
    parser.add_argument("--players", default=",".join(BASELINES), help=f"comma list of baselines {BASELINES}")
    parser.add_argument("--agent", action="append", default=[], metavar="RUN", help="an agent run (repeatable)")
    parser.add_argument("--games", type=int, default=5000, help="games per row of the JAX players and agents")
    parser.add_argument("--exact-games", type=int, default=None, help="games per exact row (default games/10)")
    parser.add_argument("--agent-games", type=int, default=None, help="games per agent row (default --games)")
    parser.add_argument(
        "--quick", action="store_true", help=f"a smoke test: {QUICK['games']} games, {QUICK['exact_games']} exact"
    )
    parser.add_argument("--workers", type=int, default=1, help="processes for the reference player")
    parser.add_argument("--batch", type=int, default=1024, help="boards per batch on the device")
    parser.add_argument("--chunk-steps", type=int, default=64, help="env steps per jitted chunk (baselines)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args(argv)
    args.boards = [b for b in args.boards.split(",") if b]
    args.rules = [r for r in args.rules.split(",") if r]
    args.players = [p for p in args.players.split(",") if p]
    choices = (("boards", args.boards, STANDARD_BOARDS), ("rules", args.rules, RULES), ("players", args.players, BASELINES))
    for name, chosen, allowed in choices:
        bad = [x for x in chosen if x not in allowed]
        if bad:
            parser.error(f"--{name}: unknown {bad}; allowed {tuple(allowed)}")
    if args.quick:
        args.games, args.exact_games = QUICK["games"], QUICK["exact_games"]
    if args.games < 1:
        parser.error(f"--games {args.games}: must be >= 1")
    args.exact_games = args.exact_games or max(1, args.games // 10)
    args.agent_games = args.agent_games or args.games
    return args


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    agents = []
    if args.agent:
        from msjax.run.agents import load_agent

        agents = [(f"agent:{Path(path).name}", load_agent(path)) for path in args.agent]
    rows = []
    for board in args.boards:
        for rule in args.rules:
            for player in args.players:
                games = args.exact_games if player == "exact" else args.games
                rows.append(solver_winrate.make_row(player, board, rule, baseline_row(player, board, rule, games, args)))
                print(f"# {player} {board} {rule}: {100 * rows[-1]['win_rate']:.1f}%", file=sys.stderr, flush=True)
            for name, agent in agents:
                row = agent_row(agent, board, rule, args.agent_games, args)
                rows.append(solver_winrate.make_row(name, board, rule, row))
                print(f"# {name} {board} {rule}: {100 * rows[-1]['win_rate']:.1f}%", file=sys.stderr, flush=True)
            rows.append(pseq_row(board, rule))
    table = markdown(rows)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")
    print()
    for row in rows:
        print(json.dumps(row))
    return rows


if __name__ == "__main__":
    main()

"""Win rates (95% Wilson intervals) and games/s of the rule-based players.

Players:
  random  -- uniformly random reveals of hidden cells (JAX, batched).
  layer1  -- the JAX solver with single-cell rules only and uniform random guesses
             (``SolverConfig(max_layer=1)``).
  jax     -- the JAX solver, all layers (``SolverConfig()``).
  exact   -- the reference player, ``msjax.reference.play_board`` (CPU, NumPy, one process per
             ``--workers``).
  jax-exact -- the JAX solver on exact probabilities (``SolverConfig(probabilities="exact")``,
             batched on the device like ``jax``), with the reference player's first click.

Boards: beginner 8x8x10, intermediate 16x16x40, expert 16x30x99; rules: ``opening``
(``guarantee_safe_neighborhood=True``: the first click opens a region) and ``safe`` (only
the first click is safe). First clicks are each player's own: the JAX solver uses
``solver.first_click`` (``SolverConfig.first_click``), the reference player
``reference.first_click_cell`` (corner with a safe first click; cell (2, 2) with an opening
start), the random player clicks at random.

JAX players run ``--batch`` boards at once: the batched policy (the solver remembering its proofs between moves,
``solver.batch_solver_play``) and
``msjax.env.batch_step`` (which auto-resets finished boards) inside a jitted ``lax.scan``.
Each board slot scores only its first ``games / batch`` games, so long games are not
under-counted at the cut-off; games/s counts every game finished in the timed run (slots
play on while the slowest one finishes its quota) and excludes the compile (timed
separately).

Output: a table beside the published PSEQ figures (Tu et al. 2017), then one JSON line per
row. Example:

    python -m benchmarks.solver_winrate --players exact --boards beginner --games 20000 --workers 2
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from typing import Callable

import numpy as np

from msjax import distributed
from msjax.cli import args as cli_args
from msjax.env import STANDARD_BOARDS

RULES = {"opening": True, "safe": False}
PLAYERS = ("random", "layer1", "jax", "jax-exact", "exact")
# Published PSEQ win rates, percent: (safe first click, opening start).
PSEQ = {"beginner": (81.6, 90.1), "intermediate": (78.1, 88.9), "expert": (39.6, 52.8)}
DEFAULT_GAMES = {"beginner": 20_000, "intermediate": 5_000, "expert": 5_000}
QUICK_GAMES = {"exact": 200, "jax": 1_024, "jax-exact": 512, "layer1": 1_024, "random": 1_024}


def comma_list(allowed) -> Callable[[str], list[str]]:
    """argparse type: a comma list of names from ``allowed``."""

    def names(text: str) -> list[str]:
        chosen = [name for name in text.split(",") if name]
        bad = [name for name in chosen if name not in allowed]
        if bad or not chosen:
            raise argparse.ArgumentTypeError(f"{'unknown ' + str(bad) if bad else 'empty'}; allowed {tuple(allowed)}")
        return chosen

    return names


def cell(text: str) -> tuple[int, int]:
    """argparse type: ``R,C``, a cell given by two integers >= 0."""
    parts = text.split(",")
    if len(parts) != 2 or not all(part.strip().isdigit() for part in parts):
        raise argparse.ArgumentTypeError(f"{text!r} must be R,C: two integers >= 0")
    return int(parts[0]), int(parts[1])


def make_row(player: str, board: str, rule: str, result: dict) -> dict:
    """One table row (a JSON line) from a player's result: win rate with its 95% interval."""
    from msjax.stats import wilson_interval

    height, width, mines = STANDARD_BOARDS[board]
    low, high = wilson_interval(result["wins"], result["games"])
    row = {
        "player": player,
        "board": f"{height}x{width}x{mines}",
        "rule": rule,
        "games": result["games"],
        "wins": result["wins"],
        "win_rate": result["wins"] / result["games"],
        "ci_low": low,
        "ci_high": high,
        "games_per_s": round(result["games_per_s"], 2),
    }
    row.update({k: v for k, v in result.items() if k not in row})
    return row


# ----------------------------------------------------------------------------- exact player


def _exact_chunk(args) -> tuple[int, int, int, int, int]:
    """Plays ``games`` games with seed ``seed``: (games, wins, guesses, fallbacks, moves)."""
    height, width, mines, opening, games, seed, first_click = args
    from msjax import reference

    rng = np.random.default_rng(seed)
    if first_click is None:
        first = reference.first_click_cell(height, width, opening)
    else:
        row, col = min(first_click[0], height - 1), min(first_click[1], width - 1)
        first = int(np.ravel_multi_index((row, col), (height, width)))
    wins = guesses = fallbacks = moves = 0
    for _ in range(games):
        board = reference.Board(height, width, mines, opening, rng)
        stats = reference.play_board(board, first)
        wins += stats.won
        guesses += stats.guesses
        fallbacks += stats.fallbacks
        moves += stats.moves
    return games, wins, guesses, fallbacks, moves


def run_exact(board: str, rule: str, games: int, workers: int, seed: int, first_click=None) -> dict:
    height, width, mines = STANDARD_BOARDS[board]
    chunk = 100
    jobs = []
    for index, start in enumerate(range(0, games, chunk)):
        jobs.append((height, width, mines, RULES[rule], min(chunk, games - start), seed * 1_000_003 + index, first_click))
    start_time = time.perf_counter()
    if workers > 1:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            parts = pool.map(_exact_chunk, jobs, chunksize=1)
    else:
        parts = [_exact_chunk(job) for job in jobs]
    elapsed = time.perf_counter() - start_time
    totals = np.sum(np.array(parts, dtype=np.int64), axis=0)
    return {
        "games": int(totals[0]),
        "wins": int(totals[1]),
        "games_per_s": totals[0] / elapsed,
        "device": f"cpu ({workers} process{'es' if workers > 1 else ''})",
        "guesses_per_game": totals[2] / totals[0],
        "fallbacks": int(totals[3]),
    }


# ----------------------------------------------------------------------------- JAX players


def _jax_policy(player: str, env_cfg, solver_options: dict | None = None):
    """``(policy, memory_of)``: ``policy(states, keys, memory) -> (actions int32[B], memory)``
    for a batch of boards, and ``memory_of(states)``, the policy's starting memory."""
    import jax
    import jax.numpy as jnp

    if player == "random":

        def one_board(state, key):
            hidden = ~state.revealed.reshape(-1)
            return jax.random.categorical(key, jnp.where(hidden, 0.0, -jnp.inf)).astype(jnp.int32)

        return (lambda states, keys, memory: (jax.vmap(one_board)(states, keys), memory)), lambda states: ()
    from msjax import solver

    solver_cfg, guess = solver_config(player, env_cfg, solver_options)

    def policy(states, keys, memory):  # the batched path, remembering its proofs
        actions, _, memory = solver.batch_solver_play(states, keys, memory, env_cfg, solver_cfg, guess=guess)
        return actions, memory

    return policy, solver.empty_memory


def solver_config(player: str, env_cfg, solver_options: dict | None = None):
    """``(SolverConfig, guess)`` of a JAX solver player (layer1, jax or jax-exact) on
    ``env_cfg``'s board with the ``--solver`` fields ``solver_options`` (``search.solver_and_guess``)."""
    options = dict(solver_options or {}, **({"max_layer": 1} if player == "layer1" else {}))
    if player == "jax-exact":
        from msjax import reference

        first = reference.first_click_cell(env_cfg.H, env_cfg.W, env_cfg.guarantee_safe_neighborhood)
        options = {"probabilities": "exact", "first_click": divmod(first, env_cfg.W), **options}
    from msjax import search

    return search.solver_and_guess(options)


def env_config(board: str, rule: str):
    """The game of a table row: a standard board with the first-click ``rule``."""
    from msjax import env

    height, width, mines = STANDARD_BOARDS[board]
    return env.EnvConfig(H=height, W=width, mine_count=mines, guarantee_safe_neighborhood=RULES[rule])


def run_jax(
    player: str, board: str, rule: str, games: int, batch: int, seed: int, chunk_steps: int,
    solver_options: dict | None = None,
) -> dict:
    """Plays ``games`` games of ``player`` (random, layer1 or jax) in batches of ``batch``;
    ``solver_options`` are ``SolverConfig`` fields for the solver players."""
    import jax
    import jax.numpy as jnp

    from msjax import env

    env_cfg = env_config(board, rule)
    batch = min(batch, games)
    quota = -(-games // batch)
    policy, memory_of = _jax_policy(player, env_cfg, solver_options)

    @jax.jit
    def play_chunk(carry):
        def one_step(carry, _):
            states, memory, key, finished, wins = carry
            key, act_key = jax.random.split(key)
            actions, memory = policy(states, jax.random.split(act_key, batch), memory)
            states, _, done, info = env.batch_step(states, actions, env_cfg)
            counted = done & (finished < quota)
            wins = wins + (counted & info["won"]).astype(jnp.int32)
            finished = finished + done.astype(jnp.int32)
            return (states, memory, key, finished, wins), None

        carry, _ = jax.lax.scan(one_step, carry, None, length=chunk_steps)
        return carry

    key = jax.random.key(seed)
    reset_key, play_key = jax.random.split(key)
    states = env.batch_reset(reset_key, env_cfg, batch)
    zeros = jnp.zeros(batch, jnp.int32)
    carry = (states, memory_of(states), play_key, zeros, zeros)
    compile_start = time.perf_counter()
    compiled = play_chunk.lower(carry).compile()
    compile_s = time.perf_counter() - compile_start
    start = time.perf_counter()
    while True:
        carry = compiled(carry)
        if int(jnp.min(carry[3])) >= quota:
            break
    elapsed = time.perf_counter() - start
    finished = np.minimum(np.asarray(carry[3]), quota)
    return {
        "games": int(finished.sum()),
        "wins": int(np.asarray(carry[4]).sum()),
        # Slots keep playing past their quota while the slowest slot finishes: those games
        # are played to the end but not scored (the win rate counts each slot's first
        # ``quota`` games only, so long games are not under-counted), and count in games/s.
        "games_per_s": float(np.asarray(carry[3]).sum()) / elapsed,
        "device": distributed.device_name(),
        "compile_s": compile_s,
        "batch": batch,
    }


# ----------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line; a bad value is one argparse ``error:`` line (exit status 2) naming
    the flag and what it allows, the ``--solver`` fields checked by building each JAX
    solver player's ``SolverConfig`` before any game."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.solver_winrate", description=__doc__.split("\n")[0])
    parser.add_argument("--players", type=comma_list(PLAYERS), default=list(PLAYERS), help=f"comma list of {PLAYERS}")
    parser.add_argument("--boards", type=comma_list(STANDARD_BOARDS), default=list(STANDARD_BOARDS),
                        help=f"comma list of {tuple(STANDARD_BOARDS)}")
    parser.add_argument("--rules", type=comma_list(RULES), default=["safe", "opening"], help="comma list of safe, opening")
    parser.add_argument("--games", type=cli_args.positive_int, default=None,
                        help="games per row (default: 20k beginner, 5k larger)")
    parser.add_argument("--quick", action="store_true", help="few games per row, a smoke test")
    parser.add_argument("--workers", type=cli_args.positive_int, default=1, help="processes for the reference player")
    parser.add_argument("--batch", type=cli_args.positive_int, default=1024, help="boards per batch for the JAX players")
    parser.add_argument("--chunk-steps", type=cli_args.positive_int, default=64, help="env steps per jitted chunk")
    parser.add_argument("--seed", type=cli_args.seed, default=0, help=f"0..{cli_args.MAX_SEED}")
    parser.add_argument("--first-click", type=cell, default=None, help="R,C: the reference player's first click on every board")
    parser.add_argument(
        "--solver", type=cli_args.solver_fields, default={}, metavar="FIELD=VALUE,...",
        help="SolverConfig and search.SearchConfig fields for the JAX solver players, e.g. contradiction_cells=16",
    )
    args = parser.parse_args(argv)
    for board in args.boards:
        for rule in args.rules:
            for player in [player for player in args.players if player not in ("random", "exact")]:
                try:
                    solver_config(player, env_config(board, rule), args.solver)
                except (TypeError, ValueError) as error:
                    parser.error(f"argument --solver: {error}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    players, boards, rules = args.players, args.boards, args.rules
    first_click, solver_options = args.first_click, args.solver
    rows = []
    header = f"{'player':8} {'board':13} {'rule':8} {'games':>7} {'win %':>7} {'95% CI':>15} {'games/s':>9} {'PSEQ %':>7}"
    print(header)
    print("-" * len(header))
    for board in boards:
        for rule in rules:
            for player in players:
                games = args.games or DEFAULT_GAMES[board]
                if args.quick:
                    games = QUICK_GAMES[player]
                if player == "exact":
                    result = run_exact(board, rule, games, args.workers, args.seed, first_click)
                else:
                    result = run_jax(
                        player, board, rule, games, args.batch, args.seed, args.chunk_steps, solver_options
                    )
                row = make_row(player, board, rule, result)
                row["pseq"] = PSEQ[board][RULES[rule]] / 100
                low, high = row["ci_low"], row["ci_high"]
                rows.append(row)
                print(
                    f"{player:8} {row['board']:13} {rule:8} {row['games']:>7} {100 * row['win_rate']:>6.2f}% "
                    f"[{100 * low:5.2f}, {100 * high:5.2f}] {row['games_per_s']:>9.1f} {100 * row['pseq']:>6.1f}%",
                    flush=True,
                )
    print()
    for row in rows:
        print(json.dumps(row))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

"""Where an agent passes over a proof: its forced states split by what the proofs offer.

Plays ``--games`` boards of the agent's own board (greedy, its own first click; the boards
of ``python -m msjax evaluate --episodes N --seed S``) and judges every reveal as
``msjax.evaluate.diagnostics`` does (``judge_moves``), against the rule solver's layers 1-2 (the
imitation stage's labels): a reveal made while some hidden cell is proved safe is a forced
state, and one of another cell passes the proofs over. The forced states are split by the
layer of the proofs on offer (some layer-1 proof, or layer-2 proofs only) and by how many
cells are proved; each row gives the states, how many times the agent passed the proofs
over, and how many of those reveals hit a mine (a lost game)::

    python -m benchmarks.missed_proofs runs/expert_cpu --games 200 --seed 7

A second table asks the agent's own two heads about the states it passed over (``diagnostics.PROOF_BELIEFS``):
how much of its policy went to the proved cells, and whether its mine head saw the proof
(believed the chosen cell at least as safe as every proved one, or some proved cell safe
beyond doubt). Where the mine head shares the misreading, no rule that plays by the mine
head can mend it.

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import functools
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

import msjax
from msjax import distributed, solver
from msjax.evaluate import diagnostics
from msjax import env as ms_env
from msjax import evaluate as evaluate_lib
from msjax.agent import Agent

LABEL_SOLVER = solver.SolverConfig(max_layer=2)
CATEGORIES = {
    "layer1": "some layer-1 proof",
    "layer2_only": "layer-2 proofs only",
    "one": "one proved cell",
    "two_three": "2-3 proved cells",
    "four_plus": ">= 4 proved cells",
    "all": "all forced states",
}


def count_passed_over(
    agent: Agent, states: ms_env.EnvState, actions: jax.Array, cfg: ms_env.EnvConfig
) -> dict[str, jax.Array]:
    """``evaluate.play_batch``'s ``count_moves`` (with ``agent`` bound): per category of
    ``CATEGORIES``, ``{category}_states``, ``{category}_passed_over`` and
    ``{category}_hit_mine``, and per entry of ``diagnostics.PROOF_BELIEFS`` the passed-over states it
    describes (int32[B]), for one move of each game."""
    forced = solver.batch_forced_moves(states, cfg, LABEL_SOLVER)
    kinds = diagnostics.judge_moves(states, actions, cfg, forced)
    safe = forced.safe & ~states.revealed
    layer1 = jnp.any(safe & (forced.layer == 1), axis=(1, 2))
    proved = jnp.sum(safe, axis=(1, 2))
    chosen = {
        "layer1": layer1, "layer2_only": ~layer1, "one": proved == 1,
        "two_three": (proved >= 2) & (proved <= 3), "four_plus": proved >= 4, "all": True,
    }
    counts = {}
    for name, category in chosen.items():
        in_category = kinds.safe_available & category
        counts[f"{name}_states"] = in_category.astype(jnp.int32)
        counts[f"{name}_passed_over"] = (in_category & kinds.avoidable).astype(jnp.int32)
        counts[f"{name}_hit_mine"] = (in_category & kinds.avoidable & kinds.hit).astype(jnp.int32)
    passed_over = kinds.safe_available & kinds.avoidable
    for name, described in diagnostics.proof_beliefs(agent, states, actions, cfg, safe).items():
        counts[name] = (passed_over & described).astype(jnp.int32)
    return counts


def split_rows(games: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """The per-game counters of ``count_passed_over`` summed into one row per category."""
    rows = {}
    for name, label in CATEGORIES.items():
        states, passed_over = int(games[f"{name}_states"].sum()), int(games[f"{name}_passed_over"].sum())
        rows[label] = dict(states=states, passed_over=passed_over, rate=passed_over / max(states, 1),
                           hit_mine=int(games[f"{name}_hit_mine"].sum()))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", help="a run directory or checkpoint (msjax.load_agent)")
    parser.add_argument("--games", type=int, default=200, help="boards to play, >= 1")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--batch-size", type=int, default=200, help="games per compiled batch, >= 1")
    args = parser.parse_args()

    agent = msjax.load_agent(args.run)
    cfg = agent.env_cfg
    play = functools.partial(evaluate_lib.play_batch, count_moves=functools.partial(count_passed_over, agent))
    start = time.time()
    try:
        games = evaluate_lib.play_in_batches(play, agent, cfg, args.games, args.seed, args.batch_size)
    except ValueError as error:  # --games or --batch-size below 1, named
        parser.error(str(error))
    seconds = time.time() - start
    rows = split_rows(games)
    beliefs = {label: int(games[name].sum()) for name, label in diagnostics.PROOF_BELIEFS.items()}
    won = float(np.mean(games["won"]))

    print(f"{args.run} on {cfg.H}x{cfg.W}x{cfg.mine_count}, {args.games} games, won {won:.1%}, {seconds:.0f} s")
    print("| forced states | states | passed over | rate | revealed a mine |\n|---|---:|---:|---:|---:|")
    for label, row in rows.items():
        print(f"| {label} | {row['states']} | {row['passed_over']} | {row['rate']:.2%} | {row['hit_mine']} |")
    passed_over = max(rows[CATEGORIES["all"]]["passed_over"], 1)
    print("\n| of the passed-over states | states | share |\n|---|---:|---:|")
    for label, count in beliefs.items():
        print(f"| {label} | {count} | {count / passed_over:.0%} |")
    print(json.dumps(dict(run=args.run, device=distributed.device_name(), games=args.games,
                          seed=args.seed, won=won, seconds=round(seconds, 1), rows=rows, beliefs=beliefs)))


if __name__ == "__main__":
    main()

"""Where an agent passes over a proof: its forced states split by what the proofs offer.

Plays ``--games`` boards of the agent's own board (greedy, its own first click) and, at
every state where the rule solver's layers 1-2 prove some hidden cell safe, records whether
the agent's move is one of them. The forced states are split by the layer of the proofs on
offer (some layer-1 proof, or layer-2 proofs only) and by how many cells are proved; each
row gives the states, how many times the agent passed the proofs over, and how many of those
moves revealed a mine (a lost game)::

    python benchmarks/missed_proofs.py runs/expert_cpu --games 200 --seed 7

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

import msjax
from msjax import env as ms_env
from msjax import solver

LABEL_SOLVER = solver.SolverConfig(max_layer=2)


def forced_state_records(agent, states: ms_env.EnvState, key: jax.Array):
    """One greedy move on each of ``states`` ``[N]``: ``(next states, records)``, the records
    bool/int[N]: ``took`` (the move reveals a proved-safe cell), ``hit`` (it reveals a mine),
    ``has_layer1`` / ``has_layer2`` (some hidden cell proved safe by that layer),
    ``proved_cells`` (how many), ``live`` (the game is on and its mines are placed)."""
    cfg = agent.env_cfg
    num_games, num_cells = states.revealed.shape[0], cfg.H * cfg.W
    action = agent.act_batch(states, jax.random.split(key, num_games))
    forced = jax.vmap(lambda state: solver.forced_moves(state, cfg, LABEL_SOLVER))(states)
    safe = forced.safe & ~states.revealed
    games = jnp.arange(num_games)
    cell = jnp.clip(action, 0, num_cells - 1)
    reveals = action < num_cells
    records = dict(
        took=reveals & safe.reshape(num_games, -1)[games, cell],
        hit=reveals & states.mine_mask.reshape(num_games, -1)[games, cell],
        has_layer1=jnp.any(safe & (forced.layer == 1), axis=(1, 2)),
        has_layer2=jnp.any(safe & (forced.layer == 2), axis=(1, 2)),
        proved_cells=jnp.sum(safe, axis=(1, 2)),
        live=~states.done & states.first_click_done,
    )
    next_states, _, _, _ = ms_env.batch_step(states, action, cfg, auto_reset=False)
    return next_states, records


def split_rows(records: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """The forced states of ``records`` (arrays over every move played) by category."""
    forced = records["live"] & (records["has_layer1"] | records["has_layer2"])
    proved = records["proved_cells"]
    categories = {
        "some layer-1 proof": forced & records["has_layer1"],
        "layer-2 proofs only": forced & ~records["has_layer1"],
        "one proved cell": forced & (proved == 1),
        "2-3 proved cells": forced & (proved >= 2) & (proved <= 3),
        ">= 4 proved cells": forced & (proved >= 4),
        "all forced states": forced,
    }
    rows = {}
    for name, chosen in categories.items():
        passed_over = chosen & ~records["took"]
        rows[name] = dict(
            states=int(chosen.sum()),
            passed_over=int(passed_over.sum()),
            rate=float(passed_over.sum() / max(int(chosen.sum()), 1)),
            hit_mine=int((passed_over & records["hit"]).sum()),
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", help="a run directory or checkpoint (msjax.load_agent)")
    parser.add_argument("--games", type=int, default=200, help="boards to play, >= 1")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--max-moves", type=int, default=1000, help="moves per game at most, >= 1")
    args = parser.parse_args()
    if args.games < 1 or args.max_moves < 1:
        parser.error(f"--games={args.games} and --max-moves={args.max_moves} must be >= 1")

    agent = msjax.load_agent(args.run)
    cfg = agent.env_cfg
    step = jax.jit(lambda states, key: forced_state_records(agent, states, key))
    states = ms_env.batch_reset(jax.random.key(args.seed), cfg, args.games)
    key = jax.random.key(args.seed + 1)
    played, start = [], time.time()
    for _ in range(args.max_moves):
        key, move_key = jax.random.split(key)
        states, records = step(states, move_key)
        played.append(jax.device_get(records))
        if bool(jnp.all(states.done)):
            break
    seconds = time.time() - start
    records = {name: np.concatenate([move[name] for move in played]) for name in played[0]}
    rows = split_rows(records)
    won = float(jnp.mean(states.won))

    print(f"{args.run} on {cfg.H}x{cfg.W}x{cfg.mine_count}, {args.games} games, won {won:.1%}, {seconds:.0f} s")
    print("| forced states | states | passed over | rate | revealed a mine |\n|---|---:|---:|---:|---:|")
    for name, row in rows.items():
        print(f"| {name} | {row['states']} | {row['passed_over']} | {row['rate']:.2%} | {row['hit_mine']} |")
    print(json.dumps(dict(run=args.run, device=jax.devices()[0].device_kind, games=args.games,
                          seed=args.seed, won=won, seconds=round(seconds, 1), rows=rows)))


if __name__ == "__main__":
    main()

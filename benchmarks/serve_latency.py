"""Move round-trips of the web inspector on 16x30x99: request, step, beliefs, response.

A live server (uvicorn on 127.0.0.1, a free port) and one keep-alive HTTP client: each
timed request is one ``/step`` (or one ``/move`` for a person's reveal) with the overlays
the row names, so it covers the JSON in, the jitted move, the beliefs and the JSON out.
Compile time (the first request of each kind) is reported apart; then ``--warmup`` moves,
then ``--moves`` timed moves (a finished game restarts with the next seed).

The agent is untrained, with the network of ``--config`` (default configs/expert.py): a
move costs the same with trained weights.

    python -m benchmarks.serve_latency [--moves 200] [--config configs/expert.py]

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import httpx
import jax

from msjax import agent as agent_lib
from msjax import models, web
from msjax.run.config import load_config

BOARD = "expert"
ROWS = (  # (name, player, overlays)
    ("solver step + solver beliefs", "solver", ["solver"]),
    ("agent step + agent beliefs", "agent", ["agent"]),
    ("solver step + all three overlays", "solver", ["agent", "solver", "exact"]),
    ("solver step + exact overlay", "solver", ["exact"]),
)


def time_row(client: httpx.Client, player: str, overlays: list[str], warmup: int, moves: int) -> dict:
    """Compile seconds and per-move milliseconds (median, p90, mean) of one kind of step."""
    seed = 0
    game = None
    compile_s = None
    times = []
    while len(times) < moves:
        if game is None or game["status"] not in ("new", "playing"):
            seed += 1
            game = client.post("/api/games", json={"board": BOARD, "seed": seed}).json()
        started = time.perf_counter()
        response = client.post(f"/api/games/{game['id']}/step", json={"player": player, "overlays": overlays})
        elapsed = time.perf_counter() - started
        response.raise_for_status()
        game = response.json()
        if compile_s is None:
            compile_s = elapsed
        elif warmup > 0:
            warmup -= 1
        else:
            times.append(1000 * elapsed)
    times.sort()
    return {
        "compile_s": round(compile_s, 2),
        "median_ms": round(statistics.median(times), 1),
        "p90_ms": round(times[int(0.9 * (len(times) - 1))], 1),
        "mean_ms": round(statistics.fmean(times), 1),
        "moves": len(times),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--moves", type=int, default=200, help="timed moves per row")
    parser.add_argument("--warmup", type=int, default=20, help="moves after the first before timing")
    parser.add_argument("--config", default="configs/expert.py", help="the agent's network (untrained)")
    args = parser.parse_args()
    cfg = load_config(args.config)
    params = models.init_params(jax.random.key(0), cfg.model, cfg.env)
    agent = agent_lib.from_params(params, cfg)
    inspector = web.Inspector(agent, "untrained", default_board=BOARD)
    results = {}
    with web.serve_in_thread(web.create_app(inspector)) as url, httpx.Client(base_url=url, timeout=600) as client:
        for name, player, overlays in ROWS:
            results[name] = time_row(client, player, overlays, args.warmup, args.moves)
    print(f"16x30x99 move round-trips over HTTP on 127.0.0.1 ({jax.default_backend()}, {args.moves} moves each)")
    print(f"{'request':36s} {'compile s':>9s} {'median ms':>9s} {'p90 ms':>7s} {'mean ms':>8s}")
    for name, row in results.items():
        print(f"{name:36s} {row['compile_s']:9.2f} {row['median_ms']:9.1f} {row['p90_ms']:7.1f} {row['mean_ms']:8.1f}")
    print(json.dumps({"benchmark": "serve_latency", "board": "16x30x99", "config": args.config, "rows": results}))


if __name__ == "__main__":
    main()

"""A bounded load test of the web inspector with one hostile client (issue 25, item 6).

A live server (uvicorn on 127.0.0.1, a free port, the rule solver, no agent) serves
``--clients`` honest clients, each playing beginner games to the end with the solver (one
``/step`` with the solver overlay per move), ``--games`` of them and as many more as
start within ``--seconds`` (and before the burst below is answered), while one hostile
client sends, in a loop until the honest ones are done: a 20 KB body of 2,000 overlays,
an overlay list of 20 repeats, and a game on a board no one played before (``HxWxM``
growing) with a move and a solver step, each of which compiles. With ``--burst N``, N
more clients start at once, each asking for a new board (``ROWSxROWSxM``, M from 2 x ROWS
on) with every overlay and then a solver step with every overlay, asking again after the
``Retry-After`` of each 503 until both are answered. It stops by itself.

Measured: the honest requests' latency (median, p95, max) and the server process's
resident memory at its peak (sampled every 0.2 s). The run fails (exit 1) when the
honest p95 passes ``--max-p95-s`` or the memory passes ``--max-rss-gib``. Before the
bounds on compiled boards (an LRU of ``web.programs.MAX_BOARDS``), every custom board's
programs were kept, and a compile held the lock every game waited on; before the compile
slot (``web.programs.CompileSlot``), a burst of new boards compiled all at once.

    PYTHONPATH=. python -m benchmarks.serve_hostile [--clients 3] [--games 2] [--seconds 120]
        [--max-p95-s 10] [--max-rss-gib 3] [--burst 4] [--burst-rows 11]

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from typing import Callable

import httpx

from msjax import web


def resident_bytes() -> int:
    """This process's resident memory (Linux ``/proc``)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def honest_client(url: str, games: int, more: Callable[[], bool], seed: int, latencies: list[float]) -> None:
    """Plays ``games`` beginner games with the solver, and more while ``more()``, timing
    every request."""
    with httpx.Client(base_url=url, timeout=600) as client:
        game_index = 0
        while game_index < games or more():
            game_index += 1
            started = time.perf_counter()
            game = client.post("/api/games", json={"board": "beginner", "seed": seed + game_index}).json()
            latencies.append(time.perf_counter() - started)
            while game["status"] in ("new", "playing"):
                started = time.perf_counter()
                response = client.post(f"/api/games/{game['id']}/step", json={"player": "solver", "overlays": ["solver"]})
                latencies.append(time.perf_counter() - started)
                game = response.json()


def hostile_client(url: str, stop: threading.Event, counts: dict[str, int]) -> None:
    """Hostile requests in a loop until ``stop``; counts the answers by status."""
    with httpx.Client(base_url=url, timeout=600) as client:
        game = client.post("/api/games", json={"board": "beginner", "seed": 1}).json()
        size = 10
        while not stop.is_set():
            answers = [
                client.post(f"/api/games/{game['id']}/step", json={"player": "solver", "overlays": ["solver"] * 2000}),
                client.post(f"/api/games/{game['id']}/step", json={"player": "solver", "overlays": ["solver"] * 20}),
            ]
            custom = client.post("/api/games", json={"board": f"{size}x{size}x{size}", "seed": size})
            answers.append(custom)
            if custom.status_code == 201:
                answers.append(client.post(f"/api/games/{custom.json()['id']}/step", json={"player": "solver"}))
            size += 1
            for answer in answers:
                counts[str(answer.status_code)] = counts.get(str(answer.status_code), 0) + 1


def burst_client(url: str, board: str, counts: dict[str, int], seconds: dict[str, float]) -> None:
    """A new ``board`` with every overlay, then a solver step with every overlay, each asked
    again after its ``Retry-After`` while the answer is a 503; counts the answers by status
    and records the seconds until both were answered."""
    started = time.perf_counter()
    overlays = list(web.OVERLAYS)
    with httpx.Client(base_url=url, timeout=900) as client:

        def until_answered(method: str, path: str, body: dict) -> httpx.Response:
            while True:
                answer = client.request(method, path, json=body)
                counts[str(answer.status_code)] = counts.get(str(answer.status_code), 0) + 1
                if answer.status_code != 503:
                    return answer
                time.sleep(float(answer.headers.get("Retry-After", "1")))

        game = until_answered("POST", "/api/games", {"board": board, "seed": 1, "overlays": overlays}).json()
        until_answered("POST", f"/api/games/{game['id']}/step", {"player": "solver", "overlays": overlays})
    seconds[board] = round(time.perf_counter() - started, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=3)
    parser.add_argument("--games", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--max-p95-s", type=float, default=10.0)
    parser.add_argument("--max-rss-gib", type=float, default=3.0)
    parser.add_argument("--burst", type=int, default=0, help="clients that each open a new board at once")
    parser.add_argument("--burst-rows", type=int, default=11, help="rows (and columns) of the burst's boards")
    args = parser.parse_args()
    inspector = web.Inspector()
    peak, stop, counts, latencies = [resident_bytes()], threading.Event(), {}, []
    burst_counts, burst_seconds = {}, {}

    def sample() -> None:
        while not stop.wait(0.2):
            peak[0] = max(peak[0], resident_bytes())

    with web.serve_in_thread(web.create_app(inspector)) as url:
        with httpx.Client(base_url=url, timeout=600) as warm:  # compile the honest boards' programs first
            game = warm.post("/api/games", json={"board": "beginner", "seed": 0}).json()
            warm.post(f"/api/games/{game['id']}/step", json={"player": "solver", "overlays": ["solver"]})
        threads = [threading.Thread(target=sample), threading.Thread(target=hostile_client, args=(url, stop, counts))]
        rows = args.burst_rows
        burst = [
            threading.Thread(target=burst_client, args=(url, f"{rows}x{rows}x{2 * rows + i}", burst_counts, burst_seconds))
            for i in range(args.burst)
        ]
        started = time.perf_counter()
        until = started + args.seconds

        def more() -> bool:  # until --seconds pass and the burst is answered
            return time.perf_counter() < until or any(thread.is_alive() for thread in burst)

        honest = [
            threading.Thread(target=honest_client, args=(url, args.games, more, 1000 * i, latencies))
            for i in range(args.clients)
        ]
        for thread in threads + burst + honest:
            thread.start()
        for thread in honest + burst:
            thread.join()
        stop.set()
        for thread in threads:
            thread.join()
    ordered = sorted(latencies)
    figures = {
        "clients": args.clients,
        "games_each": args.games,
        "honest_requests": len(ordered),
        "median_s": round(statistics.median(ordered), 3),
        "p95_s": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
        "max_s": round(ordered[-1], 3),
        "peak_rss_gib": round(peak[0] / 2**30, 2),
        "hostile_answers": counts,
        "custom_boards_kept": len(inspector.programs.boards()) if hasattr(inspector, "programs") else "all",
        "burst_answers": burst_counts,
        "burst_seconds": burst_seconds,
        "seconds": round(time.perf_counter() - started, 1),
    }
    for name, value in figures.items():
        print(f"{name:>16}: {value}")
    print(json.dumps(figures))
    within = figures["p95_s"] <= args.max_p95_s and figures["peak_rss_gib"] <= args.max_rss_gib
    if not within:
        print(f"over a bound: p95 {figures['p95_s']} s (max {args.max_p95_s}), memory {figures['peak_rss_gib']} GiB (max {args.max_rss_gib})")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())

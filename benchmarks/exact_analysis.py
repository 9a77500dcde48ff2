"""The device's exact analysis (``msjax.solver.exact``) against ``msjax.reference.analyse`` on
positions from real games: agreement (``check``) and positions per second (``speed``).

Positions: opening-start games on 8x8x10, 16x16x40 and 16x30x99, half played by
the reference player and half by a "deep" player whose guesses are cells the layout
says are safe (so late positions, with long frontiers, are in the sample); a few views
per game (the last, the one with the longest frontier, random others). With ``--agent
RUN`` a third of the games are played by that trained agent instead (greedy, its own
first click). Positions are cached per board and seed in ``--cache`` (an ``.npz`` each).

  check: every position analysed on the device (batches of 256) and by the NumPy reference (``msjax.reference.analyse``):
    the largest |p_device - p_exact| over every hidden cell of every view the device
    calls exact, proofs compared cell by cell (any difference fails), the flagged share.
  speed: positions per second at batches 1, 256 and 4,096 (positions repeated to fill a
    batch), compile timed apart, beside ``msjax.reference.analyse`` on the same positions in
    the same run (one position at a time, no cache).

Each prints a table, then one JSON line per row. Examples:

    python -m benchmarks.exact_analysis check --positions 1000
    python -m benchmarks.exact_analysis speed --boards beginner,intermediate --batches 1,256,4096
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from msjax.distributed import device_name
from msjax.env import STANDARD_BOARDS


def _snapshots(board, rng, player, per_game, agent=None):
    """Views seen in one game: (revealed, counts) at up to ``per_game`` moves."""
    from msjax import reference

    height, width = board.revealed.shape
    board.reveal(reference.first_click_cell(height, width, True))
    cache, views = {}, []
    while not (board.won or board.lost):
        counts = np.where(board.revealed, board.counts, 0)
        analysis = reference.analyse(board.revealed, counts, board.mine_count, cache=cache)
        frontier = int(np.count_nonzero(~board.revealed & (np.asarray(_around(board.revealed)) > 0)))
        views.append((board.revealed.copy(), counts, frontier))
        if analysis.safe:
            for cell in analysis.safe:
                if not board.revealed.reshape(-1)[cell]:
                    board.reveal(cell)
            continue
        if player == "exact":
            cell = reference.choose_guess(board.revealed, analysis, board.mine_count, cache=cache)
        else:
            safe = np.flatnonzero(~board.revealed.reshape(-1) & ~board.mine_mask.reshape(-1))
            cell = int(rng.choice(safe))
        board.reveal(cell)
        if len(cache) > 20_000:
            cache.clear()
    if not views:
        return []
    picks = {len(views) - 1, max(range(len(views)), key=lambda i: views[i][2])}
    others = [i for i in range(len(views)) if i not in picks]
    rng.shuffle(others)
    picks.update(others[: max(0, per_game - len(picks))])
    return [views[i][:2] for i in sorted(picks)]


def _around(revealed):
    padded = np.pad(revealed, 1)
    height, width = revealed.shape
    return sum(
        padded[1 + dr : 1 + dr + height, 1 + dc : 1 + dc + width].astype(int)
        for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc
    )


def _agent_views(agent_dir, height, width, mines, games, seed, per_game):
    """Views from games played by a trained agent (greedy), a few per game."""
    import jax

    from msjax import env
    from msjax.run.agents import load_agent

    cfg = env.EnvConfig(H=height, W=width, mine_count=mines, guarantee_safe_neighborhood=True)
    agent = load_agent(agent_dir).for_board(cfg)
    rng = np.random.default_rng(seed)
    act = jax.jit(lambda state: agent.act(state, jax.random.key(0)))
    step = jax.jit(lambda state, action: env.step(state, action, cfg))
    views = []
    for game in range(games):
        state = env.reset(jax.random.key(seed * 100_003 + game), cfg)
        seen = []
        for _ in range(height * width):
            state, _, done, _ = step(state, act(state))
            if bool(done):
                break
            revealed = np.asarray(state.revealed)
            seen.append((revealed, np.where(revealed, np.asarray(state.counts), 0)))
        if seen:
            for i in sorted(set(rng.choice(len(seen), size=min(per_game, len(seen)), replace=False).tolist())):
                views.append(seen[i])
    return views


def collect(board: str, positions: int, seed: int, cache_dir: str, agent: str | None):
    """``(revealed bool[N, H, W], counts int32[N, H, W], mines int)``, at least ``positions``."""
    from msjax import reference

    height, width, mines = STANDARD_BOARDS[board]
    path = os.path.join(cache_dir, f"{board}-{positions}-{seed}{'-agent' if agent else ''}.npz")
    if os.path.exists(path):
        data = np.load(path)
        return data["revealed"], data["counts"], mines
    rng = np.random.default_rng(seed)
    views, game = [], 0
    if agent:
        views += _agent_views(agent, height, width, mines, games=max(1, positions // 15), seed=seed, per_game=5)
    while len(views) < positions:
        player = "exact" if game % 2 == 0 else "deep"
        views += _snapshots(reference.Board(height, width, mines, True, rng), rng, player, per_game=5)
        game += 1
        print(f"\r{board}: {len(views)}/{positions} positions from {game} games", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    revealed = np.stack([v[0] for v in views]).astype(bool)
    counts = np.stack([v[1] for v in views]).astype(np.int32)
    os.makedirs(cache_dir, exist_ok=True)
    np.savez_compressed(path, revealed=revealed, counts=counts)
    return revealed, counts, mines


def run_check(board, revealed, counts, mines, batch: int = 256) -> dict:
    import jax.numpy as jnp

    from msjax import reference
    from msjax.solver.exact import exact_analysis

    worst, flagged, proof_errors, exact_views = 0.0, 0, 0, 0
    for start in range(0, len(revealed), batch):
        part = slice(start, start + batch)
        size = len(revealed[part])
        pad = lambda x: np.concatenate([x, np.repeat(x[:1], batch - size, axis=0)])
        result = exact_analysis(jnp.asarray(pad(revealed[part])), jnp.asarray(pad(counts[part])), jnp.full(batch, mines))
        probability, safe, is_mine, is_exact = (np.asarray(x)[:size] for x in (result.mine_prob, result.safe, result.mines, result.exact))
        for i in range(size):
            host = reference.analyse(revealed[start + i], counts[start + i], mines)
            if not is_exact[i]:
                flagged += 1
                continue
            exact_views += 1
            hidden = ~revealed[start + i]
            worst = max(worst, float(np.abs(probability[i] - host.mine_prob)[hidden].max(initial=0.0)))
            proof_errors += sorted(np.flatnonzero(safe[i])) != host.safe
            proof_errors += sorted(np.flatnonzero(is_mine[i])) != host.mines
    return {
        "check": "agreement", "board": board, "positions": len(revealed), "exact_views": exact_views,
        "flagged_share": flagged / len(revealed), "max_abs_error": worst, "proof_mismatches": int(proof_errors),
        "device": device_name(),
    }


def run_speed(board, revealed, counts, mines, batches, repeats: int = 3) -> list[dict]:
    import jax
    import jax.numpy as jnp

    from msjax import reference
    from msjax.solver.exact import exact_analysis

    start = time.perf_counter()
    for i in range(len(revealed)):
        reference.analyse(revealed[i], counts[i], mines)
    host_per_position = (time.perf_counter() - start) / len(revealed)
    rows = []
    for batch in batches:
        index = np.arange(batch) % len(revealed)
        args = (jnp.asarray(revealed[index]), jnp.asarray(counts[index]), jnp.full(batch, mines))
        compile_start = time.perf_counter()
        compiled = exact_analysis.lower(*args).compile()
        compile_s = time.perf_counter() - compile_start
        jax.block_until_ready(compiled(*args))
        # the batch cycles through the positions, so at batch 1 time a run over many of them
        calls = max(repeats, min(64, len(revealed))) if batch == 1 else repeats
        run_start = time.perf_counter()
        for call in range(calls):
            if batch == 1:
                args = (jnp.asarray(revealed[call : call + 1]), jnp.asarray(counts[call : call + 1]), jnp.full(1, mines))
            result = compiled(*args)
        jax.block_until_ready(result)
        seconds = (time.perf_counter() - run_start) / calls
        rows.append({
            "bench": "exact_speed", "board": board, "batch": batch, "device": device_name(),
            "positions_per_s": batch / seconds, "host_positions_per_s": 1.0 / host_per_position,
            "speedup": (batch / seconds) * host_per_position, "compile_s": round(compile_s, 1),
            "flagged_share": float(1.0 - np.asarray(result.exact).mean()),
        })
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("check", "speed"))
    parser.add_argument("--boards", default="beginner,intermediate,expert")
    parser.add_argument("--positions", type=int, default=1000, help="positions per board (at least)")
    parser.add_argument("--batches", default="1,256,4096", help="speed: comma list of batch sizes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--agent", default=None, help="a run directory: a third of the games by that agent")
    parser.add_argument("--cache", default="/tmp/msjax-exact-positions", help="folder for the collected positions")
    args = parser.parse_args(argv)
    boards = [b for b in args.boards.split(",") if b]
    bad = [b for b in boards if b not in STANDARD_BOARDS]
    if bad:
        parser.error(f"--boards: unknown {bad}; allowed {tuple(STANDARD_BOARDS)}")
    rows = []
    for board in boards:
        revealed, counts, mines = collect(board, args.positions, args.seed, args.cache, args.agent)
        if args.mode == "check":
            row = run_check(board, revealed, counts, mines)
            print(f"{board:13} {row['positions']:>6} positions  flagged {100 * row['flagged_share']:5.2f}%  "
                  f"max |dp| {row['max_abs_error']:.2e}  proof mismatches {row['proof_mismatches']}", flush=True)
            rows.append(row)
        else:
            for row in run_speed(board, revealed, counts, mines, [int(b) for b in args.batches.split(",")]):
                print(f"{board:13} batch {row['batch']:>5}  {row['positions_per_s']:>9.1f} pos/s  host "
                      f"{row['host_positions_per_s']:>7.1f} pos/s  x{row['speedup']:.2f}  compile {row['compile_s']} s",
                      flush=True)
                rows.append(row)
    print()
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()

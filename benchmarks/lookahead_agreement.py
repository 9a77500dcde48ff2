"""Does the JAX player guess where the reference player guesses? Position by position.

Plays opening-start games with the reference player (its 6-candidate lookahead) and
keeps every view where it guesses (no cell certainly safe). Each view is then given to the
JAX exact analysis and lookahead (``msjax.solver.exact``, ``msjax.search.lookahead``: the
safest cells within the solver's tie tolerance, ``--candidates`` of them looked ahead), in
batches, and the two cells are compared:

* same cell;
* another cell, less safe (by more than 1e-9 in the NumPy reference's probabilities): a worse
  guess;
* another cell, equally safe: then the table counts where the host's cell had the higher
  P(progress) or, progress equal, the higher P(zero) (both from ``msjax.reference.lookahead``).

Views the JAX analysis flags (past its limits) are counted apart: the solver guesses there
on belief propagation. A fast check of the win-rate gap between the two players without
playing 20,000 games: each disagreement is a guess the JAX player makes differently.

    python -m benchmarks.lookahead_agreement --board expert --games 120 --seed 21
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from msjax import distributed
from msjax.env import STANDARD_BOARDS


def guess_views(height: int, width: int, mines: int, games: int, seed: int):
    """[(revealed, counts, host cell, host analysis)] at each guess of the reference player."""
    from msjax import reference

    rng = np.random.default_rng(seed)
    views = []
    for game in range(games):
        board = reference.Board(height, width, mines, True, rng)
        board.reveal(reference.first_click_cell(height, width, True))
        cache: dict = {}
        while not (board.won or board.lost):
            counts = np.where(board.revealed, board.counts, 0)
            analysis = reference.analyse(board.revealed, counts, mines, reference.ExactConfig().max_nodes, cache)
            if analysis.safe:
                for cell in analysis.safe:
                    if not board.revealed.reshape(-1)[cell]:
                        board.reveal(cell)
                continue
            cell = reference.choose_guess(board.revealed, analysis, mines, reference.ExactConfig(), cache)
            views.append((board.revealed.copy(), counts, cell, analysis))
            board.reveal(cell)
        print(f"\r{game + 1}/{games} games, {len(views)} guess views", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return views


def device_choices(views, mines: int, candidates: int, batch: int):
    """(cell int[N], exact bool[N]): the JAX lookahead's guess in each view."""
    import jax
    import jax.numpy as jnp

    from msjax.solver.exact import exact_analysis
    from msjax.search.lookahead import lookahead_choice
    from msjax.solver.types import EXACT_TIES
    from msjax.solver.types import ExactLimits

    limits = ExactLimits()

    @jax.jit
    def choose(revealed, counts, mine_count):
        analysis = exact_analysis(revealed, counts, mine_count, limits)
        probability = jnp.where(revealed, jnp.inf, analysis.mine_prob)
        lowest = jnp.min(probability.reshape(probability.shape[0], -1), axis=1)
        good = ~revealed & (probability <= lowest[:, None, None] + EXACT_TIES)
        cell, _, _ = lookahead_choice(revealed, counts, mine_count, analysis.log_layouts, good, candidates, limits)
        return cell, analysis.exact

    revealed = np.stack([v[0] for v in views])
    counts = np.stack([v[1] for v in views]).astype(np.int32)
    cells, exact_views = [], []
    for start in range(0, len(views), batch):
        part = slice(start, start + batch)
        size = len(revealed[part])
        pad = lambda x: np.concatenate([x, np.repeat(x[:1], batch - size, axis=0)])
        cell, is_exact = choose(jnp.asarray(pad(revealed[part])), jnp.asarray(pad(counts[part])), jnp.full(batch, mines))
        cells += np.asarray(cell)[:size].tolist()
        exact_views += np.asarray(is_exact)[:size].tolist()
    return np.asarray(cells), np.asarray(exact_views)


def compare(views, cells, exact_views, mines: int) -> dict:
    from msjax import reference

    tally = {"same": 0, "less_safe": 0, "host_more_progress": 0, "host_more_zero": 0, "equal_other": 0}
    for (revealed, _, host_cell, analysis), cell, is_exact in zip(views, cells, exact_views):
        if not is_exact:
            continue
        if cell == host_cell:
            tally["same"] += 1
            continue
        probability = analysis.mine_prob.reshape(-1)
        if probability[cell] > probability[host_cell] + 1e-9:
            tally["less_safe"] += 1
            continue
        host_zero, host_progress = reference.lookahead(revealed, host_cell, analysis, mines, reference.ExactConfig(), {})
        zero, progress = reference.lookahead(revealed, int(cell), analysis, mines, reference.ExactConfig(), {})
        if host_progress > progress + 1e-9:
            tally["host_more_progress"] += 1
        elif host_zero > zero + 1e-9 and abs(host_progress - progress) <= 1e-9:
            tally["host_more_zero"] += 1
        else:
            tally["equal_other"] += 1
    return tally


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", default="expert", choices=tuple(STANDARD_BOARDS))
    parser.add_argument("--games", type=int, default=120, help="games of the reference player (>= 1)")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--candidates", type=int, default=6, help="cells looked ahead (search.SearchConfig.lookahead_candidates)")
    parser.add_argument("--batch", type=int, default=64, help="views per device call")
    args = parser.parse_args(argv)
    if args.games < 1 or args.candidates < 1 or args.batch < 1:
        parser.error("--games, --candidates and --batch must be >= 1")

    height, width, mines = STANDARD_BOARDS[args.board]
    started = time.perf_counter()
    views = guess_views(height, width, mines, args.games, args.seed)
    cells, exact_views = device_choices(views, mines, args.candidates, args.batch)
    tally = compare(views, cells, exact_views, mines)
    compared = int(exact_views.sum())
    row = {
        "bench": "lookahead_agreement", "board": args.board, "games": args.games, "seed": args.seed,
        "guess_views": len(views), "flagged": len(views) - compared, "compared": compared, **tally,
        "same_share": tally["same"] / max(compared, 1), "candidates": args.candidates,
        "device": distributed.device_name(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(f"{'board':13} {'views':>6} {'flagged':>7} {'same':>6} {'less safe':>9} {'host: more progress':>19} "
          f"{'host: more P(zero)':>18} {'other, equal':>12}")
    print(f"{args.board:13} {len(views):>6} {row['flagged']:>7} {tally['same']:>6} {tally['less_safe']:>9} "
          f"{tally['host_more_progress']:>19} {tally['host_more_zero']:>18} {tally['equal_other']:>12}")
    print(json.dumps(row))


if __name__ == "__main__":
    main()

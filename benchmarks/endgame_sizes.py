"""What a larger endgame bound can win: in the games of ``msjax.exact``'s player, the guess
views that few layouts fit, and the win chance its one-move guess leaves there against the
best click (optimal play after both), by layout count.

For each guess view with at most ``--bound`` layouts, every layout is listed (backtracking
over the hidden cells against the numbers and the mine count, checked against the
analysis' count) and the game tree is solved by memoised recursion over the sets of
layouts (the DP of ``msjax.solver.endgame``, here in plain Python): ``V`` of the view, and
of the player's guess followed by optimal play. ``loss / game`` is their mean difference
per game, in points: a lower bound on what an endgame of that bound adds to the player
(its play after the guess is not optimal either). ``sets`` counts the sets of layouts the
player can come to know (``solver.endgame.reachable_sets``' table), ``cells`` the cells
whose outcome differs between the layouts (its ``max_cells``).

    python benchmarks/endgame_sizes.py --board beginner --games 20000 --bound 64 --seed 2
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from msjax.env import STANDARD_BOARDS  # noqa: E402
from msjax.exact import analyse  # noqa: E402
from msjax.exact.board import Board  # noqa: E402
from msjax.exact.grid import neighbour_lists  # noqa: E402
from msjax.exact.player import choose_guess, first_click_cell  # noqa: E402

MINE = 9
BUCKETS = ((2, 8), (9, 16), (17, 32), (33, 64), (65, 128), (129, 256))
TABLES = (1024, 4096, 16384, 65536)  # reachable-set table sizes: the loss of the views each would hold


def layouts_of(revealed: np.ndarray, counts: np.ndarray, mines: int, neighbours, limit: int) -> list[frozenset]:
    """Every layout (the set of its mine cells) that fits the view, or more than ``limit``."""
    flat, shown = revealed.reshape(-1), counts.reshape(-1)
    hidden = [c for c in range(flat.size) if not flat[c]]
    constraints = [(int(shown[c]), [n for n in neighbours[c] if not flat[n]])
                   for c in range(flat.size) if flat[c] and any(not flat[n] for n in neighbours[c])]
    of_cell: dict[int, list[int]] = {c: [] for c in hidden}
    for index, (_, cells) in enumerate(constraints):
        for c in cells:
            of_cell[c].append(index)
    placed, unset = [0] * len(constraints), [len(cells) for _, cells in constraints]
    found: list[frozenset] = []
    chosen: list[int] = []

    def place(i: int, used: int) -> None:
        if len(found) > limit:
            return
        if i == len(hidden):
            if used == mines:
                found.append(frozenset(chosen))
            return
        cell = hidden[i]
        for mine in (0, 1):
            if used + mine > mines or mines - used - mine > len(hidden) - i - 1:
                continue
            fits = True
            for j in of_cell[cell]:
                unset[j] -= 1
                placed[j] += mine
                fits &= placed[j] <= constraints[j][0] <= placed[j] + unset[j]
            if fits:
                chosen.extend([cell] * mine)
                place(i + 1, used + mine)
                del chosen[len(chosen) - mine:]
            for j in of_cell[cell]:
                unset[j] += 1
                placed[j] -= mine

    place(0, 0)
    return found


def solve(layouts: list[frozenset], hidden: list[int], neighbours) -> tuple[float, dict[int, float], int, int]:
    """``(V of the view, V after clicking each hidden cell first, cells whose outcome
    differs, sets of layouts reached)``."""
    outcome = {c: [MINE if c in mines else sum(n in mines for n in neighbours[c]) for mines in layouts]
               for c in hidden}
    cells = [c for c in hidden if len(set(outcome[c])) > 1]

    def parts(group: int, cell: int) -> dict[int, int]:
        split: dict[int, int] = {}
        for layout in range(len(layouts)):
            if group >> layout & 1:
                split[outcome[cell][layout]] = split.get(outcome[cell][layout], 0) | 1 << layout
        return split

    def after(group: int, split: dict[int, int]) -> float:  # the win chance of the click that splits so
        size = bin(group).count("1")
        return sum(bin(part).count("1") / size * value(part) for shown, part in split.items() if shown != MINE)

    known: dict[int, float] = {}  # V of the sets of two layouts or more met so far

    def value(group: int) -> float:
        if bin(group).count("1") == 1:
            return 1.0
        if group not in known:
            splits = (parts(group, c) for c in cells)
            known[group] = max((after(group, split) for split in splits if len(split) > 1 or MINE in split),
                               default=0.0)
        return known[group]

    everything = (1 << len(layouts)) - 1
    best = value(everything)
    by_cell = {c: after(everything, parts(everything, c)) for c in hidden}
    return best, by_cell, len(cells), len(known) - 1  # the view's own set is not in the solver's table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", default="beginner", choices=tuple(STANDARD_BOARDS))
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--bound", type=int, default=64, help="views with at most this many layouts, 2..256")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.games < 1 or not 2 <= args.bound <= 256:
        parser.error(f"--games={args.games} must be >= 1 and --bound={args.bound} in [2, 256]")
    height, width, mines = STANDARD_BOARDS[args.board]
    neighbours = neighbour_lists(height, width)
    rng = np.random.default_rng(args.seed)
    rows, wins, began = [], 0, time.perf_counter()
    for _ in range(args.games):
        board = Board(height, width, mines, safe_neighbourhood=True, rng=rng)
        board.reveal(first_click_cell(height, width, True))
        while not (board.won or board.lost):
            shown = np.where(board.revealed, board.counts, 0)
            analysis = analyse(board.revealed, shown, mines)
            hidden = np.flatnonzero(~board.revealed.reshape(-1))
            if analysis.safe:
                for cell in analysis.safe:
                    if not board.revealed.reshape(-1)[cell]:
                        board.reveal(cell)
                continue
            cell = choose_guess(board.revealed, analysis, mines)
            if 2 <= analysis.total <= args.bound:
                layouts = layouts_of(board.revealed, shown, mines, neighbours, args.bound)
                if len(layouts) != analysis.total:
                    raise RuntimeError(f"{len(layouts)} layouts listed, the analysis counts {analysis.total}")
                best, by_cell, cells, sets = solve(layouts, hidden.tolist(), neighbours)
                rows.append((analysis.total, best - by_cell[cell], cells, sets))
            board.reveal(cell)
        wins += board.won
    rows_array = np.array(rows, dtype=float).reshape(-1, 4)
    print(f"{args.games} games, player won {100 * wins / args.games:.2f}%, {time.perf_counter() - began:.0f} s")
    print(f"{'layouts':>9} {'views/game':>10} {'loss/game (pts)':>15} {'changed':>8} {'cells p50/max':>14} "
          f"{'sets p50/p99/max':>18}  loss held by a table of {'/'.join(map(str, TABLES))} sets")
    buckets = []
    for low, high in BUCKETS:
        if low > args.bound:
            break
        part = rows_array[(rows_array[:, 0] >= low) & (rows_array[:, 0] <= high)]
        if not len(part):
            continue
        bucket = {"layouts": [low, high], "views_per_game": len(part) / args.games,
                  "loss_points_per_game": 100 * part[:, 1].sum() / args.games,
                  "changed": float(np.mean(part[:, 1] > 1e-9)),
                  "cells_p50": float(np.median(part[:, 2])), "cells_max": int(part[:, 2].max()),
                  "sets_p50": float(np.median(part[:, 3])), "sets_p99": float(np.percentile(part[:, 3], 99)),
                  "sets_max": int(part[:, 3].max()),
                  "loss_held_by_table": {size: 100 * part[part[:, 3] <= size, 1].sum() / args.games
                                         for size in TABLES}}
        buckets.append(bucket)
        print(f"{low:>4}-{high:<4} {bucket['views_per_game']:>10.3f} {bucket['loss_points_per_game']:>15.3f} "
              f"{bucket['changed']:>8.2f} {bucket['cells_p50']:>6.0f}/{bucket['cells_max']:<7} "
              f"{bucket['sets_p50']:>6.0f}/{bucket['sets_p99']:.0f}/{bucket['sets_max']}  "
              + "/".join(f"{held:.3f}" for held in bucket["loss_held_by_table"].values()))
    print(json.dumps({"bench": "endgame_sizes", "board": f"{height}x{width}x{mines}", "games": args.games,
                      "seed": args.seed, "bound": args.bound, "win_rate": wins / args.games, "buckets": buckets}))


if __name__ == "__main__":
    main()

"""What a larger endgame bound can win, and what the endgame's tables leave unsolved: in
games of the reference player, the guess views that few layouts fit, and the win chance
its one-move guess leaves there against the best click (optimal play after both), by
layout count.

For each guess view with at most ``--bound`` layouts, every layout is listed (backtracking
over the hidden cells against the numbers and the mine count, checked against the
analysis' count) and the game tree is solved by memoised recursion over the sets of
layouts (the DP of ``msjax.search.endgame``, here in plain Python): ``V`` of the view, and
of the player's guess followed by optimal play. ``loss / game`` is their mean difference
per game, in points: a lower bound on what an endgame of that bound adds to the player
(its play after the guess is not optimal either). ``sets`` counts the sets of layouts the
player can come to know (``search.layout_sets.reachable_sets``' table), ``cells`` the cells
whose outcome differs between the layouts (its ``max_cells``).

``--player search`` plays the search player instead (``SolverConfig(probabilities="exact")``
with ``search.SearchConfig(endgame_layouts=--bound)`` at depth 0, on the host): where the device's endgame solves a
view it plays the endgame's best click (ties to the safest, then the first), elsewhere the
one-move guess. Whether the device solves a view is decided by its own rules: the search guess's
tier of the view's layout count (all subsets up to ``DENSE_LAYOUTS``, then each of
``--sizes``), that tier's ``max_cells`` and its table of sets (``reachable_sets``). A view
within the bound that a tier's cells or sets leave unsolved is *flagged*: ``flagged``
counts them by cause, and ``lost in flagged`` is what its fall-back guess lost there
against the best click, in points per game. ``--save FILE``
keeps every game's outcome with its board and seed, ``--paired-with FILE`` (a saved run of
the same board, seed and games; another is refused) prints the paired difference: two
``--sizes`` on the same boards.

    python -m benchmarks.endgame_sizes --board beginner --games 20000 --bound 64 --seed 2
    python -m benchmarks.endgame_sizes --board beginner --games 2000 --bound 128 --player search
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from msjax.env import STANDARD_BOARDS
from msjax.reference import analyse
from msjax.reference.board import Board
from msjax.reference.grid import neighbour_lists
from msjax.reference.player import choose_guess, first_click_cell
from msjax.search.endgame import SIZES, TIES
from msjax.search.layout_sets import DENSE_LAYOUTS

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


def click_outcomes(layouts: list[frozenset], hidden: list[int], neighbours) -> dict[int, list[int]]:
    """What each hidden cell shows in each layout (``MINE`` or its number)."""
    return {c: [MINE if c in mines else sum(n in mines for n in neighbours[c]) for mines in layouts]
            for c in hidden}


def solve(num_layouts: int, hidden: list[int], outcome: dict[int, list[int]]) -> tuple[float, dict[int, float], list[int], int]:
    """``(V of the view, V after clicking each hidden cell first, the cells whose outcome
    differs (row-major), sets of layouts reached)`` from what each hidden cell shows in
    each of the ``num_layouts`` layouts (``click_outcomes``)."""
    cells = [c for c in hidden if len(set(outcome[c])) > 1]

    def parts(group: int, cell: int) -> dict[int, int]:
        split: dict[int, int] = {}
        for layout in range(num_layouts):
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

    everything = (1 << num_layouts) - 1
    best = value(everything)
    by_cell = {c: after(everything, parts(everything, c)) for c in hidden}
    return best, by_cell, cells, len(known) - 1  # the view's own set is not in the solver's table


def endgame_click(by_cell: dict[int, float], cells: list[int], outcome: dict[int, list[int]]) -> int:
    """The device endgame's click (``solve_endgame``): the best win chance among the cells
    whose outcome differs, ties (``TIES``) to the safest (most layouts without a mine), then
    the first."""
    best = max(by_cell[c] for c in cells)
    return max((c for c in cells if by_cell[c] >= best - TIES), key=lambda c: (-outcome[c].count(MINE), -c))


def parse_sizes(text: str) -> tuple[tuple[int, int, int], ...]:
    """``"32:1024:32,64:4096:40"`` -> ``((32, 1024, 32), (64, 4096, 40))``: (layouts, sets,
    cells) of each endgame tier, as ``msjax.search.endgame.SIZES``."""
    return tuple(tuple(int(x) for x in part.split(":")) for part in text.split(","))


def tier_sizes(num_layouts: int, bound: int, sizes) -> tuple[int | None, int]:
    """``(max_sets, max_cells)`` of the endgame tier that the search player solves a view of
    ``num_layouts`` in (``solver.policy``'s tiers: all subsets up to ``DENSE_LAYOUTS``, max_sets
    None; then each tier of ``sizes`` below ``bound``, then ``bound``; ``endgame.table_size``)."""
    tops = [top for top in (DENSE_LAYOUTS, *(size[0] for size in sizes)) if top < bound] + [bound]
    top = next(top for top in tops if num_layouts <= top)
    max_sets, max_cells = next((sets, cells) for layouts, sets, cells in sizes if top <= layouts)
    return (None if top <= DENSE_LAYOUTS else max(1, min(max_sets, 2**top - top - 2))), max_cells


FLAGS = ("", "cells", "sets")


def device_flag(num_layouts: int, cells: list[int], num_sets: int, bound: int, sizes) -> str:
    """Why the device's endgame leaves a view of at most ``bound`` layouts unsolved:
    ``"cells"`` (more cells whose outcome differs than its tier's ``max_cells``), ``"sets"``
    (more reachable sets, ``num_sets``, than its tier's table holds), or ``""`` (solved)."""
    max_sets, max_cells = tier_sizes(num_layouts, bound, sizes)
    if len(cells) > max_cells:
        return "cells"
    return "sets" if max_sets is not None and num_sets > max_sets else ""


def play_game(board: Board, args, sizes, neighbours, rows: list) -> bool:
    """One game of ``args.player`` to its end (module docstring); appends a row per guess
    view of 2..``args.bound`` layouts: ``(layouts, loss of the click played, cells, sets,
    flag)`` (``FLAGS`` index). Returns whether it was won."""
    height, width, mines = board.height, board.width, board.mine_count
    board.reveal(first_click_cell(height, width, True))
    while not (board.won or board.lost):
        shown = np.where(board.revealed, board.counts, 0)
        analysis = analyse(board.revealed, shown, mines)
        hidden = np.flatnonzero(~board.revealed.reshape(-1)).tolist()
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
            outcome = click_outcomes(layouts, hidden, neighbours)
            best, by_cell, cells, sets = solve(len(layouts), hidden, outcome)
            flag = device_flag(len(layouts), cells, sets, args.bound, sizes)
            if args.player == "search" and not flag:
                cell = endgame_click(by_cell, cells, outcome)
            rows.append((analysis.total, best - by_cell[cell], len(cells), sets, FLAGS.index(flag)))
        board.reveal(cell)
    return board.won


def bucket_row(part: np.ndarray, games: int, low: int, high: int) -> dict:
    """The figures of one layout bucket's rows (``play_game``'s, float[N, 5])."""
    flagged = part[part[:, 4] > 0]
    return {"layouts": [low, high], "views_per_game": len(part) / games,
            "loss_points_per_game": 100 * part[:, 1].sum() / games,
            "changed": float(np.mean(part[:, 1] > 1e-9)),
            "cells_p50": float(np.median(part[:, 2])), "cells_max": int(part[:, 2].max()),
            "sets_p50": float(np.median(part[:, 3])), "sets_p99": float(np.percentile(part[:, 3], 99)),
            "sets_max": int(part[:, 3].max()),
            "loss_held_by_table": {size: 100 * part[part[:, 3] <= size, 1].sum() / games for size in TABLES},
            "flagged_views": {flag: int(np.sum(part[:, 4] == index)) for index, flag in enumerate(FLAGS) if flag},
            "flagged_loss_points_per_game": 100 * flagged[:, 1].sum() / games,
            "flagged_cells_max": int(flagged[:, 2].max()) if len(flagged) else 0,
            "flagged_sets_max": int(flagged[:, 3].max()) if len(flagged) else 0}


def saved_baseline(path: str, this_run: dict, games: int, parser: argparse.ArgumentParser) -> dict:
    """The run ``--save`` wrote to ``path``, checked before anything plays: played on this
    run's board and seed (``paired_exact.check_same_boards``; a file that records no board
    is taken to be this run's, with a warning) and as many games; else one parser error."""
    from benchmarks.paired_exact import check_same_boards, load_saved, unrecorded_warning

    try:
        saved = load_saved(path, ("wins", "seed", "sizes"))
        unrecorded = check_same_boards(saved, this_run)
        if len(saved["wins"]) != games:
            raise ValueError(f"it holds {len(saved['wins'])} games, this run plays {games}")
    except ValueError as error:
        parser.error(f"--paired-with {path}: {error}")
    if unrecorded:
        print(unrecorded_warning(f"--paired-with {path}", unrecorded, this_run), file=sys.stderr)
    return saved


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", default="beginner", choices=tuple(STANDARD_BOARDS))
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--bound", type=int, default=64, help="views with at most this many layouts, 2..256")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--player", default="exact", choices=("exact", "search"),
                        help="the reference player's one-move guess everywhere, or the endgame's click where it solves")
    parser.add_argument("--sizes", default=",".join(":".join(map(str, size)) for size in SIZES),
                        help="the endgame's tiers, layouts:sets:cells each (default: msjax.search.endgame.SIZES)")
    parser.add_argument("--save", default="", help="write every game's outcome (npz: wins, seed, sizes)")
    parser.add_argument("--paired-with", default="", help="a saved run of the same board, seed and games")
    args = parser.parse_args(argv)
    if args.games < 1 or not 2 <= args.bound <= 256:
        parser.error(f"--games={args.games} must be >= 1 and --bound={args.bound} in [2, 256]")
    sizes = parse_sizes(args.sizes)
    height, width, mines = STANDARD_BOARDS[args.board]
    this_run = {"board": f"{height}x{width}x{mines}", "seed": args.seed}
    baseline = saved_baseline(args.paired_with, this_run, args.games, parser) if args.paired_with else None
    neighbours = neighbour_lists(height, width)
    rng = np.random.default_rng(args.seed)
    rows, began = [], time.perf_counter()
    wins = np.array([play_game(Board(height, width, mines, safe_neighbourhood=True, rng=rng), args, sizes,
                               neighbours, rows) for _ in range(args.games)])
    rows_array = np.array(rows, dtype=float).reshape(-1, 5)  # layouts, loss, cells, sets, flag
    print(f"{args.games} games, {args.player} player won {100 * wins.mean():.2f}%, sizes {args.sizes}, "
          f"{time.perf_counter() - began:.0f} s")
    print(f"{'layouts':>9} {'views/game':>10} {'loss/game (pts)':>15} {'changed':>8} {'cells p50/max':>14} "
          f"{'sets p50/p99/max':>18}  {'flagged cells/sets':>18} {'lost in flagged':>15}  "
          f"loss held by a table of {'/'.join(map(str, TABLES))} sets")
    buckets = []
    for low, high in BUCKETS:
        if low > args.bound:
            break
        part = rows_array[(rows_array[:, 0] >= low) & (rows_array[:, 0] <= high)]
        if not len(part):
            continue
        bucket = bucket_row(part, args.games, low, high)
        buckets.append(bucket)
        flagged = bucket["flagged_views"]
        print(f"{low:>4}-{high:<4} {bucket['views_per_game']:>10.3f} {bucket['loss_points_per_game']:>15.3f} "
              f"{bucket['changed']:>8.2f} {bucket['cells_p50']:>6.0f}/{bucket['cells_max']:<7} "
              f"{bucket['sets_p50']:>6.0f}/{bucket['sets_p99']:.0f}/{bucket['sets_max']}  "
              f"{flagged['cells']:>9}/{flagged['sets']:<8} {bucket['flagged_loss_points_per_game']:>15.3f}  "
              + "/".join(f"{held:.3f}" for held in bucket["loss_held_by_table"].values()))
    result = {"bench": "endgame_sizes", "board": f"{height}x{width}x{mines}", "games": args.games,
              "seed": args.seed, "bound": args.bound, "player": args.player, "sizes": args.sizes,
              "win_rate": float(wins.mean()), "buckets": buckets}
    if baseline is not None:
        from benchmarks.paired_exact import paired_row

        result["paired"] = paired_row(baseline["wins"].astype(bool), wins)
        print(f"paired with {args.paired_with} ({baseline['sizes']}): {json.dumps(result['paired'])}")
    if args.save:
        np.savez(args.save, wins=wins, sizes=args.sizes, **this_run)
    print(json.dumps(result))


if __name__ == "__main__":
    main()

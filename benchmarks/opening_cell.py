"""Where to open: each candidate first click of a board, played on coupled layouts, paired.

With an opening start the first click is always a zero, so its mines lie off the clicked cell
and its neighbours: a board opened at another cell is a different draw. To pair the cells
anyway each game draws one random priority per cell; opened at cell ``c``, its mines are the
``mines`` cells of highest priority outside ``c``'s 3x3 block (``coupled_layouts``). Each
cell's layouts are then uniform over its own opening-start boards (as ``msjax.env`` and
``msjax.reference`` draw them), and two cells' layouts share every mine away from their blocks,
so the paired difference of two cells has a far narrower interval than two independent draws.

Players: ``rules``, the JAX rule solver as the imitation stages use it (``SolverConfig()``,
the agents' teacher); ``search``, the search player (``SolverConfig(probabilities="exact")`` with
``search.SearchConfig(lookahead_candidates=--candidates, endgame_layouts=--endgame-layouts)``, the depth-0 + endgame row of
``benchmarks.search_table``). Each row: the cell, its win rate with the 95% Wilson interval and the
paired difference to the first cell given (95% interval on the per-board differences). The
candidate cells default to one representative of each symmetry class within ``--reach`` rows
and columns of the corner, plus the board's centre.

    python -m benchmarks.opening_cell --board beginner --player rules --games 20000
    python -m benchmarks.opening_cell --board beginner --player search --games 20000 --cells 2,2 1,1 3,3
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from benchmarks.paired_exact import device_progress
from msjax import solver
from msjax.distributed import device_name
from msjax.env import STANDARD_BOARDS, EnvConfig
from msjax.evaluate.layouts import candidate_cells, coupled_layouts, device_wins
from msjax.evaluate.paired import paired_row


def player_options(player: str, candidates: int, endgame_layouts: int) -> dict:
    """``SolverConfig`` and ``search.SearchConfig`` fields of the ``rules`` or the ``search`` player
    (``msjax.evaluate.device_solver_config`` reads them)."""
    if player == "rules":
        return {"probabilities": "bp"}
    return {"lookahead_candidates": candidates, "endgame_layouts": endgame_layouts}


def cell_text(text: str) -> tuple[int, int]:
    """argparse type of ``R,C``."""
    try:
        row, col = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not R,C (two integers)") from None
    return row, col


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", default="beginner", choices=tuple(STANDARD_BOARDS))
    parser.add_argument("--player", default="rules", choices=("rules", "search"))
    parser.add_argument("--games", type=int, default=20_000, help="boards per cell (>= 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=1024, help="boards per device call (>= 1)")
    parser.add_argument("--cells", type=cell_text, nargs="+", metavar="R,C",
                        help="first clicks to compare, the first one the baseline (default: see --reach)")
    parser.add_argument("--reach", type=int, default=4, help="candidates within this many rows and columns of the corner")
    parser.add_argument("--candidates", type=int, default=6, help="the search player's look-ahead cells")
    parser.add_argument("--endgame-layouts", type=int, default=128, help="the search player's endgame bound, 2..128")
    parser.add_argument("--save", help="a .npz for every cell's per-board outcomes")
    args = parser.parse_args(argv)
    height, width, mines = STANDARD_BOARDS[args.board]
    if args.games < 2 or args.batch < 1 or args.reach < 1:
        parser.error(f"--games must be >= 2 (got {args.games}), --batch and --reach >= 1 (got {args.batch}, {args.reach})")
    env_cfg = EnvConfig(H=height, W=width, mine_count=mines, guarantee_safe_neighborhood=True)
    cells = args.cells or candidate_cells(height, width, args.reach, solver.first_click(env_cfg))
    for row, col in cells:
        if not (0 <= row < height and 0 <= col < width):
            parser.error(f"--cells: {row},{col} is off the {height}x{width} board")

    options = player_options(args.player, args.candidates, args.endgame_layouts)
    layouts = coupled_layouts(height, width, mines, args.games, args.seed, cells)
    outcomes, rows = {}, []
    for cell in cells:
        began = time.perf_counter()
        wins, compile_s = device_wins(layouts[cell], options, args.batch, opening=cell,
                                      on_batch=device_progress(args.games))
        seconds = time.perf_counter() - began - compile_s
        outcomes[cell] = wins
        paired = paired_row(outcomes[cells[0]], wins)
        row = {"board": args.board, "player": args.player, "cell": list(cell), "games": args.games, "seed": args.seed,
               "win_rate": paired["device_win_rate"], "ci": paired["device_ci"], "baseline_cell": list(cells[0]),
               "vs_baseline": paired["difference"], "vs_baseline_ci": paired["difference_ci"],
               "won_by_baseline_only": paired["baseline_only"], "won_by_this_only": paired["device_only"],
               "solver": options, "seconds": seconds, "compile_s": compile_s,
               "games_per_s": args.games / seconds, "device": device_name()}
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.save:
            np.savez(args.save, cells=np.array([list(c) for c in outcomes]), wins=np.stack(list(outcomes.values())),
                     board=args.board, seed=args.seed, player=args.player)

    pct = lambda x: f"{100 * x:.2f}"
    print(f"\n{args.board} ({height}x{width}x{mines}), {args.player} player, {args.games} coupled boards per cell, "
          f"seed {args.seed}; differences against {cells[0]}")
    print("| first click | win % | 95% CI | vs first row, 95% CI | games/s |")
    print("|---|---:|---:|---:|---:|")
    for row in sorted(rows, key=lambda r: -r["win_rate"]):
        (low, high), (d_low, d_high) = row["ci"], row["vs_baseline_ci"]
        print(f"| ({row['cell'][0]}, {row['cell'][1]}) | {pct(row['win_rate'])} | [{pct(low)}, {pct(high)}] | "
              f"{pct(row['vs_baseline'])} [{pct(d_low)}, {pct(d_high)}] | {row['games_per_s']:.0f} |")


if __name__ == "__main__":
    main()

"""The search player at each depth, with and without the exhaustive endgame, on the same boards.

Every row is the JAX solver on exact probabilities (``SolverConfig(probabilities="exact")``)
with the host player's first click and a search guess (``search.SearchConfig``), playing the same opening-start layouts
(``paired_exact.draw_layouts``), ``--batch`` boards at a time:

- depth 0: the safest cell, ties broken by the reference player's one-move lookahead over
  ``--candidates`` cells (``lookahead_candidates=K``, P(progress) then P(zero));
- depth 1 / 2: the survival lookahead (``lookahead_score="survival"``,
  ``lookahead_tolerance=--tolerance``, ``lookahead_depth``): the cell most likely to
  survive this guess and the next one / two; at depth 2, ``--expand M`` looks the second
  guess further from only the M candidates of best depth-1 score (``lookahead_expand``);
- "+ endgame": the same with ``endgame_layouts=--endgame-layouts``.

Each row gives its win rate with the 95% Wilson interval, the paired difference to the
first row (95% interval on the per-board differences), games/s after compiling, and the
compile time. Each row's JSON line is printed as soon as it is measured, and the table at the
end; ``--rows`` picks rows by name. ``--save DIR`` writes each row's per-board outcomes
(``DIR/<board>_seed<S>[_from<K>]_<row>.npz``, e.g. ``expert_seed1_depth1_endgame32.npz``:
``wins`` bool[games], ``first_board``, and the ``board`` ("HxWxM"), ``seed`` and
``first_click`` [row, col] that picked the layouts) as it finishes, and ``.partial.npz`` with the boards played so far after each batch until
then, so a row run later, in parts or on another machine can be paired with them:
``--first-board K`` plays boards K .. K + games - 1 of the seed's draw (the layouts of a seed
are a prefix of the layouts of the same seed with more games), and ``--paired-with FILE``
makes a saved row of the same board, seed and first click, holding those boards, the
baseline (a file saved before boards and first clicks were recorded is taken to be this
run's, with a warning: its name says its board and seed).

    python -m benchmarks.search_table --board beginner --games 10000 --seed 3
    python -m benchmarks.search_table --board expert --games 20480 --batch 4096 --rows "depth 1+endgame"
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from msjax.distributed import device_name
from msjax.evaluate.layouts import device_solver_config, device_wins, draw_layouts, opening_click
from msjax.evaluate.paired import check_same_boards, load_saved, percent_cells, unrecorded_warning, vs_first
from msjax.cli import args as cli_args
from msjax.env import STANDARD_BOARDS
from msjax.search import MAX_ENDGAME_LAYOUTS

DEPTHS = (0, 1, 2)


def row_options(name: str, candidates: int, tolerance: float, endgame_layouts: int, expand: int = 0) -> dict:
    """``search.SearchConfig`` fields of a row named ``"depth D"`` or ``"depth D+endgame"`` (``expand``:
    ``lookahead_expand`` of the depth-2 rows)."""
    depth_text, _, extra = name.partition("+")
    digits = depth_text.removeprefix("depth").strip()
    depth = int(digits) if digits.isdigit() else None
    if depth not in DEPTHS or extra not in ("", "endgame"):
        raise ValueError(f"row {name!r}: use 'depth D' or 'depth D+endgame' with D in {DEPTHS}")
    options = {"lookahead_candidates": candidates}
    if depth:
        options.update(lookahead_score="survival", lookahead_tolerance=tolerance, lookahead_depth=depth)
    if depth == 2 and expand:
        options["lookahead_expand"] = expand
    if extra:
        options["endgame_layouts"] = endgame_layouts
    return options


def saved_name(board: str, seed: int, first_board: int, name: str, options: dict) -> str:
    """File name of a row's saved outcomes: ``<board>_seed<S>[_from<K>]_<row>.npz``, the row's
    name without spaces, ``+`` as ``_``, the endgame's bound after ``endgame`` and the depth-2
    expansion last (``intermediate_seed21_depth1_endgame32.npz``, ``..._depth2_expand3.npz``)."""
    part = f"_from{first_board}" if first_board else ""
    row = name.replace(" ", "").replace("+", "_") + str(options.get("endgame_layouts", ""))
    expand = f"_expand{options['lookahead_expand']}" if "lookahead_expand" in options else ""
    return f"{board}_seed{seed}{part}_{row}{expand}.npz"


def survival_tolerance(text: str) -> float:
    """argparse type: ``--tolerance``, a number in ``[0, 1)``."""
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be in [0, 1)")
    return value


def paired_outcomes(path: str, boards: range, this_run: dict) -> tuple[np.ndarray, list[str]]:
    """``(wins bool[len(boards)], unrecorded keys)``: the outcomes on ``boards`` (indices of
    the seed's draw) of the row saved in ``path``, which must have been played on
    ``this_run``'s board, seed and first click (``check_same_boards``: the keys it does not
    record are returned, for a warning).

    Raises:
      ValueError: one line: not a saved row, other boards, or not all of ``boards``.
    """
    saved = load_saved(path, ("wins", "first_board", "seed"))
    unrecorded = check_same_boards(saved, this_run)
    start = int(saved["first_board"])
    held = range(start, start + len(saved["wins"]))
    if boards.start not in held or boards.stop - 1 not in held:
        raise ValueError(f"it holds boards {held.start}..{held.stop - 1}, not this run's {boards.start}..{boards.stop - 1}")
    return saved["wins"][boards.start - start : boards.stop - start].astype(bool), unrecorded


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, dict[str, dict]]:
    """The command line and each row's ``SolverConfig`` fields, by row name; a bad value is
    one argparse ``error:`` line (exit status 2) naming the flag and what it allows."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.search_table", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", default="beginner", choices=tuple(STANDARD_BOARDS))
    parser.add_argument("--games", type=cli_args.at_least_two, default=10_000, help="boards, each played by every row (>= 2)")
    parser.add_argument("--seed", type=cli_args.seed, default=0, help=f"picks the layouts, 0..{cli_args.MAX_SEED}")
    parser.add_argument("--first-board", type=cli_args.non_negative_int, default=0,
                        help="index of the first of the seed's boards played")
    parser.add_argument("--batch", type=cli_args.positive_int, default=1024, help="boards per device call")
    parser.add_argument("--candidates", type=cli_args.positive_int, default=6,
                        help="K: cells each guess looks ahead at (>= 1)")
    parser.add_argument("--tolerance", type=survival_tolerance, default=0.1, help="survival window, in [0, 1)")
    parser.add_argument("--expand", type=cli_args.non_negative_int, default=0,
                        help="depth-2 rows: candidates looked at a guess further, 1..K (0: all K)")
    parser.add_argument("--endgame-layouts", type=cli_args.int_in(2, MAX_ENDGAME_LAYOUTS), default=8,
                        help=f"the endgame's bound, 2..{MAX_ENDGAME_LAYOUTS}")
    parser.add_argument("--save", help="folder for each row's per-board outcomes (.npz)")
    parser.add_argument("--paired-with", help="a saved row (.npz) of the same board, seed and first click as the baseline")
    parser.add_argument("--rows", default=",".join(f"depth {d}{e}" for d in DEPTHS for e in ("", "+endgame")),
                        help="comma list of 'depth D' / 'depth D+endgame'; the first is the paired baseline")
    args = parser.parse_args(argv)
    if args.expand > args.candidates:
        parser.error(f"argument --expand: {args.expand} must be in [0, --candidates={args.candidates}]")
    names = [name.strip() for name in args.rows.split(",") if name.strip()]
    height, width, _ = STANDARD_BOARDS[args.board]
    try:
        options = {name: row_options(name, args.candidates, args.tolerance, args.endgame_layouts, args.expand)
                   for name in names}
        for name in names:
            try:
                device_solver_config(height, width, options[name])
            except (TypeError, ValueError) as error:
                raise ValueError(f"row {name!r}: {error}") from None
    except ValueError as error:
        parser.error(f"argument --rows: {error}")
    if args.paired_with:
        boards = range(args.first_board, args.first_board + args.games)
        try:
            args.baseline_wins, unrecorded = paired_outcomes(args.paired_with, boards, boards_played(args))
        except ValueError as error:
            parser.error(f"--paired-with {args.paired_with}: {error}")
        if unrecorded:
            print(unrecorded_warning(f"--paired-with {args.paired_with}", unrecorded, boards_played(args)), file=sys.stderr)
    return args, options


def boards_played(args: argparse.Namespace) -> dict:
    """What picks the layouts a row is played on (saved with its outcomes): the board
    ("HxWxM"), the seed and the first click [row, col]."""
    height, width, mines = STANDARD_BOARDS[args.board]
    return {"board": f"{height}x{width}x{mines}", "seed": args.seed, "first_click": list(opening_click(height, width))}


def main(argv: list[str] | None = None) -> None:
    args, options = parse_args(argv)
    names = list(options)
    height, width, mines = STANDARD_BOARDS[args.board]
    boards = slice(args.first_board, args.first_board + args.games)
    layouts = draw_layouts(height, width, mines, boards.stop, args.seed)[boards]
    device = device_name()
    first = args.baseline_wins if args.paired_with else None
    save = Path(args.save) if args.save else None
    if save:
        save.mkdir(parents=True, exist_ok=True)
    baseline = Path(args.paired_with).stem if args.paired_with else names[0]
    keep = lambda wins, path: np.savez(path, wins=wins, first_board=args.first_board, **boards_played(args))
    rows = []
    for name in names:
        path = save / saved_name(args.board, args.seed, args.first_board, name, options[name]) if save else None
        on_batch = (lambda wins, path=path: keep(wins, path.with_suffix(".partial.npz"))) if save else None
        began = time.perf_counter()
        wins, compile_s = device_wins(layouts, options[name], args.batch, on_batch=on_batch)
        play_s = time.perf_counter() - began - compile_s
        first = wins if first is None else first
        rows.append({"bench": "search_table", "board": f"{height}x{width}x{mines}", "row": name,
                     "options": options[name], "seed": args.seed, "first_board": args.first_board, "games": args.games,
                     **vs_first(first, wins), "games_per_s": args.games / play_s, "compile_s": compile_s, "batch": args.batch,
                     "device": device, "baseline": baseline})
        print(json.dumps(rows[-1]), flush=True)
        if save:
            keep(wins, path)
            path.with_suffix(".partial.npz").unlink()
    print(f"{'row':18} {'games':>7} {'win %':>7} {'95% CI':>16} {'vs ' + baseline:>22} {'games/s':>8} {'compile s':>9}")
    for row in rows:
        win, ci, paired = percent_cells(row)
        print(f"{row['row']:18} {row['games']:>7} {win:>7} {ci:>16} {paired:>22} {row['games_per_s']:>8.1f} {row['compile_s']:>9.0f}")


if __name__ == "__main__":
    main()

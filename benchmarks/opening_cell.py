"""Where to open: each candidate first click of a board, played on coupled layouts, paired.

With an opening start the first click is always a zero, so its mines lie off the clicked cell
and its neighbours: a board opened at another cell is a different draw. To pair the cells
anyway each game draws one random priority per cell; opened at cell ``c``, its mines are the
``mines`` cells of highest priority outside ``c``'s 3x3 block (``coupled_layouts``). Each
cell's layouts are then uniform over its own opening-start boards (as ``msjax.env`` and
``msjax.exact`` draw them), and two cells' layouts share every mine away from their blocks,
so the paired difference of two cells has a far narrower interval than two independent draws.

Players: ``rules``, the JAX rule solver as the imitation stages use it (``SolverConfig()``,
the agents' teacher); ``search``, the search player (``SolverConfig(probabilities="exact",
exact_lookahead=--candidates, endgame_layouts=--endgame-layouts)``, the depth-0 + endgame row of
``search_table.py``). Each row: the cell, its win rate with the 95% Wilson interval and the
paired difference to the first cell given (95% interval on the per-board differences). The
candidate cells default to one representative of each symmetry class within ``--reach`` rows
and columns of the corner, plus the board's centre.

    python benchmarks/opening_cell.py --board beginner --player rules --games 20000
    python benchmarks/opening_cell.py --board beginner --player search --games 20000 --cells 2,2 1,1 3,3
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.exact_analysis import device_name  # noqa: E402
from benchmarks.paired_exact import paired_row  # noqa: E402
from msjax import env, solver  # noqa: E402
from msjax.env import STANDARD_BOARDS, EnvConfig  # noqa: E402


def block_mask(height: int, width: int, cell: tuple[int, int]) -> np.ndarray:
    """bool[H, W]: ``cell`` and its neighbours (the block an opening start keeps mine-free)."""
    row, col = cell
    mask = np.zeros((height, width), bool)
    mask[max(row - 1, 0) : row + 2, max(col - 1, 0) : col + 2] = True
    return mask


def coupled_layouts(height: int, width: int, mines: int, games: int, seed: int,
                    cells: list[tuple[int, int]]) -> dict[tuple[int, int], np.ndarray]:
    """``{cell: bool[games, H, W]}``: for each game one random priority per board cell; opened
    at ``cell``, the mines are the ``mines`` cells of highest priority off ``cell``'s block.

    Each cell's layouts are uniform over the boards an opening start at that cell allows
    (a uniformly random order of the allowed cells, cut after ``mines``)."""
    priority = np.random.default_rng(seed).random((games, height * width))
    layouts = {}
    for cell in cells:
        allowed = ~block_mask(height, width, cell).reshape(-1)
        if allowed.sum() < mines:
            raise ValueError(f"cell {cell}: {allowed.sum()} cells off its block, fewer than {mines} mines")
        ranked = np.argsort(np.where(allowed, -priority, np.inf), axis=1)[:, :mines]
        mask = np.zeros((games, height * width), bool)
        np.put_along_axis(mask, ranked, True, axis=1)
        layouts[cell] = mask.reshape(games, height, width)
    return layouts


def candidate_cells(height: int, width: int, reach: int, first: tuple[int, int]) -> list[tuple[int, int]]:
    """``first``, then one cell of each symmetry class of the board within ``reach`` rows and
    columns of the corner (``row <= col`` on a square board), then the centre; no cell twice."""
    cells = [first] + [(r, c) for r in range(min(reach, height)) for c in range(min(reach, width))
                       if height != width or r <= c]
    cells.append(((height - 1) // 2, (width - 1) // 2))
    return list(dict.fromkeys(cells))


def player_config(player: str, candidates: int, endgame_layouts: int) -> solver.SolverConfig:
    """The ``rules`` or the ``search`` player."""
    if player == "rules":
        return solver.SolverConfig()
    return solver.SolverConfig(probabilities="exact", exact_lookahead=candidates, endgame_layouts=endgame_layouts)


@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def _play_steps(carry, cfg: env.EnvConfig, solver_cfg: solver.SolverConfig, steps: int):
    """``steps`` moves of the solver on every board of ``carry = (states, memory, key, won)``."""

    def one_step(carry, _):
        states, memory, key, won = carry
        key, move_key = jax.random.split(key)
        keys = jax.random.split(move_key, states.done.shape[0])
        actions, _, memory = solver.batch_solver_play(states, keys, memory, cfg, solver_cfg)
        was_done = states.done
        states, _, done, info = env.batch_step(states, actions, cfg, auto_reset=False)
        return (states, memory, key, jnp.where(done & ~was_done, info["won"], won)), None

    return jax.lax.scan(one_step, carry, None, length=steps)[0]


def opened_wins(layouts: np.ndarray, cell: tuple[int, int], solver_cfg: solver.SolverConfig,
                batch: int, steps: int = 32) -> np.ndarray:
    """bool[N]: the player's outcome on each layout (``bool[N, H, W]``), the game opened at
    ``cell`` before it plays: the opening is not the player's move, so one compiled program
    serves every cell (``solver_cfg.first_click`` is never read)."""
    games, height, width = layouts.shape
    cfg = env.EnvConfig(H=height, W=width, mine_count=int(layouts[0].sum()), guarantee_safe_neighborhood=True)
    first = jnp.full(batch, cell[0] * width + cell[1], jnp.int32)
    wins = []
    for start in range(0, games, batch):
        part = layouts[start : start + batch]
        padded = np.concatenate([part, np.repeat(part[:1], batch - len(part), axis=0)])
        states = jax.vmap(lambda mask: env.from_mines(mask, cfg))(jnp.asarray(padded))
        states, _, done, info = env.batch_step(states, first, cfg, auto_reset=False)
        carry = (states, solver.empty_memory(states), jax.random.key(start), done & info["won"])
        while not bool(jnp.all(carry[0].done)):
            carry = _play_steps(carry, cfg, solver_cfg, steps)
        wins.append(np.asarray(carry[3])[: len(part)])
        print(f"\r{start + len(part)}/{games} games", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return np.concatenate(wins)


def player_fields(solver_cfg: solver.SolverConfig) -> dict:
    """The player's ``SolverConfig`` fields that differ from the defaults."""
    default = solver.SolverConfig()
    return {name: value for name, value in vars(solver_cfg).items() if value != getattr(default, name)}


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

    solver_cfg = player_config(args.player, args.candidates, args.endgame_layouts)
    layouts = coupled_layouts(height, width, mines, args.games, args.seed, cells)
    outcomes, rows = {}, []
    for cell in cells:
        began = time.perf_counter()
        wins = opened_wins(layouts[cell], cell, solver_cfg, args.batch)
        seconds = time.perf_counter() - began
        outcomes[cell] = wins
        paired = paired_row(outcomes[cells[0]], wins)
        row = {"board": args.board, "player": args.player, "cell": list(cell), "games": args.games, "seed": args.seed,
               "win_rate": paired["device_win_rate"], "ci": paired["device_ci"], "baseline_cell": list(cells[0]),
               "vs_baseline": paired["difference"], "vs_baseline_ci": paired["difference_ci"],
               "won_by_baseline_only": paired["baseline_only"], "won_by_this_only": paired["device_only"],
               "player_fields": player_fields(solver_cfg), "seconds": seconds,
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

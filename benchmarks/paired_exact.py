"""``msjax.exact``'s player and the JAX solver on exact probabilities, on the same boards.

Two win rates measured on different boards differ by their noise as well as by the
players (two runs of 20,000 expert games: about +-0.7 points each at 95%). Here both
players play the same opening-start layouts, drawn once on the host: the host player with
``msjax.exact.play_board`` (``--workers`` processes), the JAX solver
(``SolverConfig(probabilities="exact", ...)`` with the host player's first click and the
``--solver`` fields) on ``msjax.env.from_mines`` games, ``--batch`` boards at a time on
the device. Most games end alike; the table gives the games each player won alone and the
paired difference of the win rates with its 95% interval (normal approximation on the
per-board differences), far narrower than the two separate intervals.

``--baseline FIELD=VALUE,...`` puts a second JAX solver (those ``SolverConfig`` and
``search.SearchConfig`` fields) in the host player's place, to measure what one option is worth on the same boards:

    python benchmarks/paired_exact.py --board expert --games 4096 --workers 2 --solver lookahead_candidates=6
    python benchmarks/paired_exact.py --board beginner --games 20000 --batch 1024 \
        --solver lookahead_candidates=6,endgame_layouts=8 --baseline lookahead_candidates=6
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.exact_analysis import device_name  # noqa: E402
from benchmarks.solver_winrate import solver_fields, solver_player  # noqa: E402
from msjax.cli import args as cli_args  # noqa: E402
from msjax.env import STANDARD_BOARDS  # noqa: E402


def at_least_two(text: str) -> int:
    """argparse type: a count of boards, an integer >= 2 (a paired interval needs two)."""
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"{value} must be >= 2")
    return value


def opening_click(height: int, width: int) -> tuple[int, int]:
    """``(row, col)``: the exact player's first click with an opening start, which the
    layouts of ``draw_layouts`` keep free of mines and the JAX solver here plays too."""
    from msjax import exact

    return divmod(exact.first_click_cell(height, width, True), width)


def device_solver_config(height: int, width: int, solver_options: dict):
    """``(SolverConfig, guess)``: the JAX solver on exact probabilities with the host player's
    first click and ``solver_options`` (``SolverConfig`` and ``search.SearchConfig`` fields,
    ``solver_winrate.solver_player``), and its search guess; the configs' errors."""
    return solver_player({"probabilities": "exact", "first_click": opening_click(height, width), **solver_options})


def load_saved(path: str, required: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Every array of a ``.npz`` file that a script's ``--save`` wrote (a few per-board
    rows, read whole), which must hold the keys ``required``.

    Raises:
      ValueError: one line for a missing or unreadable file, one that is not a ``.npz``
        archive (truncated, or another kind of file), or one without a ``required`` key.
    """
    not_npz = ValueError("not a .npz file that --save wrote (truncated, or another kind of file)")
    try:
        saved = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise ValueError("no such file") from None
    except OSError as error:
        raise ValueError(f"cannot read it ({error.strerror or error})") from None
    except (ValueError, EOFError, zipfile.BadZipFile):
        raise not_npz from None
    if not isinstance(saved, np.lib.npyio.NpzFile):
        raise not_npz
    try:
        with saved:
            arrays = {name: saved[name] for name in saved.files}
    except (ValueError, EOFError, OSError, zipfile.BadZipFile, zlib.error):
        raise not_npz from None
    for key in required:
        if key not in arrays:
            raise ValueError(f"it holds no {key!r}: not a file that --save wrote")
    return arrays


def check_same_boards(saved: dict[str, np.ndarray], this_run: dict[str, Any]) -> list[str]:
    """Whether a saved file's rows were played on this run's boards: ``this_run`` maps the
    keys that pick the boards (board, seed, first click ...) to this run's values.

    Returns:
      The keys of ``this_run`` that ``saved`` does not record (a file written before they
      were saved), for a warning.

    Raises:
      ValueError: naming every recorded key that differs, e.g. ``"its board 16x30x99,
        this run's 8x8x10; its seed 1, this run's 0"``.
    """
    shown = lambda value: str(np.asarray(value).tolist())
    differ = [f"its {key} {shown(saved[key])}, this run's {shown(value)}"
              for key, value in this_run.items() if key in saved and shown(saved[key]) != shown(value)]
    if differ:
        raise ValueError("; ".join(differ) + " (other boards)")
    return [key for key in this_run if key not in saved]


def unrecorded_warning(source: str, missing: list[str], this_run: dict[str, Any]) -> str:
    """The line that says a saved file (``source``: the flag and its value) was taken to
    hold this run's boards although it does not record the keys ``missing``."""
    assumed = ", ".join(f"{key} {np.asarray(this_run[key]).tolist()}" for key in missing)
    return (f"warning: {source} records no {', '.join(missing)} (a file saved before they were): "
            f"taken to be this run's ({assumed})")


def draw_layouts(height: int, width: int, mines: int, games: int, seed: int) -> np.ndarray:
    """bool[N, H, W]: opening-start layouts (mines kept off the exact player's first click
    and its neighbours), drawn as ``msjax.exact.Board`` draws them."""
    from msjax import exact

    rng = np.random.default_rng(seed)
    first = exact.first_click_cell(height, width, True)
    layouts = []
    for _ in range(games):
        board = exact.Board(height, width, mines, True, rng)
        board.reveal(first)
        layouts.append(board.mine_mask.copy())
    return np.stack(layouts)


def _host_game(mine_mask: np.ndarray) -> bool:
    from msjax import exact

    height, width = mine_mask.shape
    board = exact.Board(height, width, int(mine_mask.sum()), True, mine_mask=mine_mask)
    return exact.play_board(board, exact.first_click_cell(height, width, True)).won


def host_wins(layouts: np.ndarray, workers: int) -> np.ndarray:
    """bool[N]: ``msjax.exact``'s player's outcome on each layout."""
    if workers > 1:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            return np.asarray(pool.map(_host_game, list(layouts), chunksize=4))
    return np.asarray([_host_game(layout) for layout in layouts])


def solver_play_steps(carry, cfg, solver_cfg, guess, steps: int):
    """``steps`` moves of the JAX solver guessing with ``guess`` on every board of ``carry =
    (states, memory, key, won)`` (a finished board keeps its outcome in ``won``); jit it with
    ``cfg``, ``solver_cfg``, ``guess`` and ``steps`` static (``compiled_play``)."""
    import jax
    import jax.numpy as jnp

    from msjax import env, solver

    def one_step(carry, _):
        states, memory, key, won = carry
        key, move_key = jax.random.split(key)
        keys = jax.random.split(move_key, states.done.shape[0])
        actions, _, memory = solver.batch_solver_play(states, keys, memory, cfg, solver_cfg, guess=guess)
        was_done = states.done
        states, _, done, info = env.batch_step(states, actions, cfg, auto_reset=False)
        return (states, memory, key, jnp.where(done & ~was_done, info["won"], won)), None

    return jax.lax.scan(one_step, carry, None, length=steps)[0]


_COMPILED: dict = {}


def compiled_play(carry, cfg, solver_cfg, guess, steps: int) -> tuple[Callable, float]:
    """(``carry -> carry``, compile seconds): ``solver_play_steps`` compiled for this batch
    and these configs, once per process (0.0 seconds when it was already)."""
    import jax

    key = (cfg, solver_cfg, guess, steps, carry[3].shape[0])
    if key in _COMPILED:
        return _COMPILED[key], 0.0
    began = time.perf_counter()
    play = jax.jit(solver_play_steps, static_argnums=(1, 2, 3, 4)).lower(carry, cfg, solver_cfg, guess, steps).compile()
    _COMPILED[key] = play
    return play, time.perf_counter() - began


def device_wins(layouts: np.ndarray, solver_options: dict, batch: int, chunk_steps: int = 32,
                on_batch=None, opening: tuple[int, int] | None = None) -> tuple[np.ndarray, float]:
    """(bool[N], compile seconds): the JAX solver's outcome on each layout, ``batch`` at a time.
    ``on_batch(bool[n])``, if given, receives the outcomes so far after each batch. With
    ``opening`` (a cell its layouts keep clear with its neighbours), each board is opened
    there before the solver moves, so its own first click is never played."""
    import jax
    import jax.numpy as jnp

    from msjax import env, solver

    games, height, width = layouts.shape
    mines = int(layouts[0].sum())
    cfg = env.EnvConfig(H=height, W=width, mine_count=mines, guarantee_safe_neighborhood=True)
    solver_cfg, guess = device_solver_config(height, width, solver_options)
    batch = min(batch, games)

    wins, compile_s = [], 0.0
    for start in range(0, games, batch):
        part = layouts[start : start + batch]
        padded = np.concatenate([part, np.repeat(part[:1], batch - len(part), axis=0)])
        states = jax.vmap(lambda mask: env.from_mines(mask, cfg))(jnp.asarray(padded))
        won = jnp.zeros(batch, bool)
        if opening is not None:
            first = jnp.full(batch, opening[0] * width + opening[1], jnp.int32)
            states, _, done, info = env.batch_step(states, first, cfg, auto_reset=False)
            won = done & info["won"]
        carry = (states, solver.empty_memory(states), jax.random.key(start), won)
        if start == 0:
            compiled, compile_s = compiled_play(carry, cfg, solver_cfg, guess, chunk_steps)
        while not bool(jnp.all(carry[0].done)):
            carry = compiled(carry)
        wins.append(np.asarray(carry[3])[: len(part)])
        if on_batch is not None:
            on_batch(np.concatenate(wins))
        print(f"\r{start + len(part)}/{games} device games", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return np.concatenate(wins), compile_s


def vs_first(first: np.ndarray, wins: np.ndarray) -> dict:
    """A table row's figures for the outcomes ``wins`` (bool[N]) beside the first row's
    ``first`` on the same boards: ``win_rate``, ``ci``, ``vs_first``, ``vs_first_ci`` and the
    boards ``won_by_first_only`` / ``won_by_this_only``."""
    paired = paired_row(first, wins)
    return {"win_rate": paired["device_win_rate"], "ci": paired["device_ci"], "vs_first": paired["difference"],
            "vs_first_ci": paired["difference_ci"], "won_by_first_only": paired["baseline_only"],
            "won_by_this_only": paired["device_only"]}


def percent_cells(row: dict) -> tuple[str, str, str]:
    """A row's ``win_rate``, ``ci`` and ``vs_first`` with ``vs_first_ci`` as table cells
    in percent: ``("52.80", "[52.11, 53.48]", "0.54 [0.20, 0.88]")``."""
    pct = lambda x: f"{100 * x:.2f}"
    (low, high), (d_low, d_high) = row["ci"], row["vs_first_ci"]
    return pct(row["win_rate"]), f"[{pct(low)}, {pct(high)}]", f"{pct(row['vs_first'])} [{pct(d_low)}, {pct(d_high)}]"


def paired_row(baseline: np.ndarray, device: np.ndarray) -> dict:
    """Win rates, discordant games and the paired difference (device - baseline) with its 95% interval."""
    from msjax.stats import paired_difference, wilson_interval

    games = len(baseline)
    row = {"games": games, "baseline_win_rate": float(baseline.mean()), "device_win_rate": float(device.mean())}
    row["baseline_ci"] = wilson_interval(int(baseline.sum()), games)
    row["device_ci"] = wilson_interval(int(device.sum()), games)
    row.update(both=int(np.sum(baseline & device)), baseline_only=int(np.sum(baseline & ~device)),
               device_only=int(np.sum(~baseline & device)), neither=int(np.sum(~baseline & ~device)))
    row["difference"], row["difference_ci"] = paired_difference(baseline, device)
    return row


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line; a bad value is one argparse ``error:`` line (exit status 2) naming
    the flag and what it allows; ``--solver`` and ``--baseline`` are read into
    ``solver_options`` and ``baseline_options`` (None: the host player) and checked by
    building their configs before any game."""
    parser = argparse.ArgumentParser(prog=Path(__file__).name, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", default="expert", choices=tuple(STANDARD_BOARDS))
    parser.add_argument("--games", type=at_least_two, default=1024, help="boards, each played by both (>= 2)")
    parser.add_argument("--seed", type=cli_args.seed, default=0, help=f"picks the layouts, 0..{cli_args.MAX_SEED}")
    parser.add_argument("--workers", type=cli_args.positive_int, default=1, help="processes for the host player")
    parser.add_argument("--batch", type=cli_args.positive_int, default=1024, help="boards per device call")
    parser.add_argument("--solver", default="lookahead_candidates=6", metavar="FIELD=VALUE,...",
                        help="SolverConfig and search.SearchConfig fields of the JAX player (probabilities='exact' always)")
    parser.add_argument("--baseline", default="host", metavar="host|FIELD=VALUE,...",
                        help="msjax.exact's player on the host (default), or a second JAX solver with these fields")
    args = parser.parse_args(argv)
    height, width, _ = STANDARD_BOARDS[args.board]

    def checked_options(flag: str, text: str) -> dict:
        try:
            options = solver_fields(text)
            device_solver_config(height, width, options)
        except (argparse.ArgumentTypeError, TypeError, ValueError) as error:
            parser.error(f"argument {flag}: {error}")
        return options

    args.solver_options = checked_options("--solver", args.solver)
    args.baseline_options = None if args.baseline == "host" else checked_options("--baseline", args.baseline)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)

    height, width, mines = STANDARD_BOARDS[args.board]
    layouts = draw_layouts(height, width, mines, args.games, args.seed)
    began = time.perf_counter()
    baseline_compile_s = 0.0
    if args.baseline_options is None:
        baseline = host_wins(layouts, args.workers)
    else:
        baseline, baseline_compile_s = device_wins(layouts, args.baseline_options, args.batch)
    baseline_s = time.perf_counter() - began - baseline_compile_s
    began = time.perf_counter()
    device, compile_s = device_wins(layouts, args.solver_options, args.batch)
    device_s = time.perf_counter() - began - compile_s
    row = {"bench": "paired_exact", "board": f"{height}x{width}x{mines}", "seed": args.seed,
           "solver": args.solver, "baseline": args.baseline, **paired_row(baseline, device),
           "baseline_games_per_s": args.games / baseline_s, "device_games_per_s": args.games / device_s,
           "compile_s": compile_s, "batch": args.batch, "workers": args.workers,
           "device": device_name()}
    pct = lambda x: f"{100 * x:.2f}"
    name = "host" if args.baseline_options is None else "base"
    print(f"{'board':10} {'games':>6} {name + ' %':>7} {'JAX %':>7} {name + ' only':>9} {'JAX only':>8} "
          f"{'JAX - ' + name:>10} {'95% CI':>16}")
    low, high = row["difference_ci"]
    print(f"{row['board']:10} {args.games:>6} {pct(row['baseline_win_rate']):>7} {pct(row['device_win_rate']):>7} "
          f"{row['baseline_only']:>9} {row['device_only']:>8} {pct(row['difference']):>10} [{pct(low)}, {pct(high)}]")
    print(json.dumps(row))


if __name__ == "__main__":
    main()

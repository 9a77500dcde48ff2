"""Env throughput: random valid reveals with auto-reset, msjax against two baselines.

Every implementation does the same work per env step: draw one reveal per board
uniformly among its hidden cells (from the action mask), step every board, and start a
new game on every board that finished. Measured:

* ``msjax``: ``env.action_mask`` + ``env.batch_step`` in a jitted ``lax.scan`` of
  ``--steps`` steps; compile time (lower + compile) is reported apart from the steady
  state (later calls, ``block_until_ready``).
* ``numpy``: ``msjax/reference/numpy_env.py``, the seed's original design (vectorised NumPy on
  the CPU, same rules as msjax), stepped from a Python loop.
* ``msjax+obs``: the same, with ``env.observe`` of every board kept in the scan's carry,
  as a training loop keeps the observation its policy reads next: the fair baseline for
  the adapters, which must return an observation.
* ``msjax-gymnax``: msjax's gymnax adapter (``msjax.adapters``), ``jax.vmap(env.step)``
  with its own auto-reset, the mask read from ``state.legal_action_mask`` and the
  observation kept in the carry, as PureJaxRL or rejax run it (``pip install -e .[gymnax]``).
* ``msjax-jumanji``: msjax's Jumanji adapter in jumanji's ``VmapAutoResetWrapper``, the
  mask read from the observation, the ``TimeStep`` kept in the carry
  (``pip install -e .[jumanji]``).
* ``jumanji``: jumanji's ``Minesweeper-v0`` (``VmapWrapper(AutoResetWrapper(env))``, its
  own auto-reset) in the same kind of jitted scan. It does less per step: no flood fill,
  no flags, no first-click safety (mines are placed at reset). Skipped with a note when
  jumanji is not installed (``pip install -e .[bench]``).

Reported per implementation x board x batch: env steps/s (boards x steps per second) and
games/s (games finished per second); with ``--repeats N`` the fastest of N turns. One
JSON line per row as it is measured, then a table, the msjax speed-ups and the adapters'
cost.

    python -m benchmarks.env_throughput                # ~3-5 min on a 2-core CPU
    python -m benchmarks.env_throughput --quick        # smoke run, < 1 min
    python -m benchmarks.env_throughput --batches 4096 16384 65536 --impls msjax jumanji  # GPU
    python -m benchmarks.env_throughput --batches 4096 --repeats 3 \
        --impls msjax msjax+obs msjax-gymnax msjax-jumanji   # the adapters' cost
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from msjax import distributed, env
from msjax.adapters import make
from msjax.env import EnvConfig, batch_random_reveals
from msjax.reference import NumpyMinesweeper, random_hidden_cells

DEFAULT_BOARDS = [f"{h}x{w}x{m}" for h, w, m in env.STANDARD_BOARDS.values()]
IMPLS = ("msjax", "msjax+obs", "msjax-gymnax", "msjax-jumanji", "jumanji", "numpy")


@dataclasses.dataclass
class Row:
    impl: str
    device: str
    board: str
    batch: int
    env_steps_per_s: float
    games_per_s: float
    compile_s: float


def steps_per_call(batch: int, requested: int | None) -> int:
    """Scan length: enough env steps per call that dispatch does not dominate."""
    if requested is not None:
        return requested
    return int(np.clip(2**17 // batch, 16, 1000))


# ----------------------------------------------------------------------------- timing


def time_jax_rollout(
    rollout: Callable, carry, key: jax.Array, batch: int, num_steps: int, min_time: float
) -> tuple[float, float, float]:
    """Returns ``(env_steps_per_s, games_per_s, compile_s)`` of a jitted
    ``rollout(carry, key) -> (carry, key, games_finished)``."""
    start = time.perf_counter()
    compiled = jax.jit(rollout, donate_argnums=0).lower(carry, key).compile()
    compile_s = time.perf_counter() - start
    carry, key, _ = jax.block_until_ready(compiled(carry, key))  # warm-up: leave the all-fresh start
    calls, games = 0, 0
    start = time.perf_counter()
    while calls < 2 or time.perf_counter() - start < min_time:
        carry, key, finished = jax.block_until_ready(compiled(carry, key))
        games += int(finished)
        calls += 1
    elapsed = time.perf_counter() - start
    return calls * num_steps * batch / elapsed, games / elapsed, compile_s


def bench_msjax(cfg: EnvConfig, batch: int, num_steps: int, min_time: float) -> tuple[float, float, float]:
    mask_of = jax.vmap(env.action_mask, in_axes=(0, None))

    def one_step(carry, _):
        states, key, games = carry
        key, draw_key = jax.random.split(key)
        actions = batch_random_reveals(draw_key, mask_of(states, cfg)[:, : cfg.num_cells], cfg.H, cfg.W)
        states, _, done, _ = env.batch_step(states, actions, cfg)
        return (states, key, games + jnp.sum(done, dtype=jnp.int32)), None

    def rollout(states, key):
        (states, key, games), _ = jax.lax.scan(one_step, (states, key, jnp.int32(0)), None, length=num_steps)
        return states, key, games

    states = env.batch_reset(jax.random.key(0), cfg, batch)
    return time_jax_rollout(rollout, states, jax.random.key(1), batch, num_steps, min_time)


def bench_msjax_observed(cfg: EnvConfig, batch: int, num_steps: int, min_time: float) -> tuple[float, float, float]:
    mask_of = jax.vmap(env.action_mask, in_axes=(0, None))
    observe = jax.vmap(env.observe, in_axes=(0, None))

    def one_step(carry, _):
        (states, _), key, games = carry
        key, draw_key = jax.random.split(key)
        actions = batch_random_reveals(draw_key, mask_of(states, cfg)[:, : cfg.num_cells], cfg.H, cfg.W)
        states, _, done, _ = env.batch_step(states, actions, cfg)
        return ((states, observe(states, cfg)), key, games + jnp.sum(done, dtype=jnp.int32)), None

    def rollout(carry, key):
        (carry, key, games), _ = jax.lax.scan(one_step, (carry, key, jnp.int32(0)), None, length=num_steps)
        return carry, key, games

    states = env.batch_reset(jax.random.key(0), cfg, batch)
    return time_jax_rollout(rollout, (states, observe(states, cfg)), jax.random.key(1), batch, num_steps, min_time)


def adapters_installed(api: str) -> bool:
    """Whether msjax's adapter for ``api`` (``gymnax`` or ``jumanji``) can be built here."""
    try:
        make(api=api)
    except ImportError:
        return False
    return True


def bench_msjax_gymnax(cfg: EnvConfig, batch: int, num_steps: int, min_time: float) -> tuple[float, float, float]:
    gymnax_env, params = make(cfg, "gymnax")
    step = jax.vmap(gymnax_env.step, in_axes=(0, 0, 0, None))

    def one_step(carry, _):
        (states, _), key, games = carry
        key, draw_key, step_key = jax.random.split(key, 3)
        reveal_mask = states.legal_action_mask[:, : cfg.num_cells]
        actions = batch_random_reveals(draw_key, reveal_mask, cfg.H, cfg.W)
        obs, states, _, terminated, truncated, _ = step(jax.random.split(step_key, batch), states, actions, params)
        return ((states, obs), key, games + jnp.sum(terminated | truncated, dtype=jnp.int32)), None

    def rollout(carry, key):
        (carry, key, games), _ = jax.lax.scan(one_step, (carry, key, jnp.int32(0)), None, length=num_steps)
        return carry, key, games

    obs, states = jax.jit(jax.vmap(gymnax_env.reset, in_axes=(0, None)))(jax.random.split(jax.random.key(0), batch), params)
    return time_jax_rollout(rollout, (states, obs), jax.random.key(1), batch, num_steps, min_time)


def bench_msjax_jumanji(cfg: EnvConfig, batch: int, num_steps: int, min_time: float) -> tuple[float, float, float]:
    from jumanji.wrappers import VmapAutoResetWrapper

    vmapped = VmapAutoResetWrapper(make(cfg, "jumanji"))

    def one_step(carry, _):
        (states, timestep), key, games = carry
        key, draw_key = jax.random.split(key)
        reveal_mask = timestep.observation.action_mask[:, : cfg.num_cells]
        actions = batch_random_reveals(draw_key, reveal_mask, cfg.H, cfg.W)
        states, timestep = vmapped.step(states, actions)
        return ((states, timestep), key, games + jnp.sum(timestep.last(), dtype=jnp.int32)), None

    def rollout(carry, key):
        (carry, key, games), _ = jax.lax.scan(one_step, (carry, key, jnp.int32(0)), None, length=num_steps)
        return carry, key, games

    carry = jax.jit(vmapped.reset)(jax.random.split(jax.random.key(0), batch))
    return time_jax_rollout(rollout, carry, jax.random.key(1), batch, num_steps, min_time)


def make_jumanji(cfg: EnvConfig):
    """jumanji's Minesweeper-v0 on this board, vmapped with its own auto-reset, or None."""
    try:
        import jumanji
        from jumanji.environments.logic.minesweeper.generator import UniformSamplingGenerator
        from jumanji.wrappers import AutoResetWrapper, VmapWrapper
    except ImportError:
        return None
    generator = UniformSamplingGenerator(num_rows=cfg.H, num_cols=cfg.W, num_mines=cfg.mine_count)
    return VmapWrapper(AutoResetWrapper(jumanji.make("Minesweeper-v0", generator=generator)))


def bench_jumanji(cfg: EnvConfig, batch: int, num_steps: int, min_time: float) -> tuple[float, float, float]:
    vmapped = make_jumanji(cfg)

    def one_step(carry, _):
        (states, reveal_mask), key, games = carry
        key, draw_key = jax.random.split(key)
        cells = batch_random_reveals(draw_key, reveal_mask, cfg.H, cfg.W)
        actions = jnp.stack([cells // cfg.W, cells % cfg.W], axis=1)
        states, timestep = vmapped.step(states, actions)
        reveal_mask = timestep.observation.action_mask.reshape(batch, -1)
        games = games + jnp.sum(timestep.last(), dtype=jnp.int32)
        return ((states, reveal_mask), key, games), None

    def rollout(carry, key):
        (carry, key, games), _ = jax.lax.scan(one_step, (carry, key, jnp.int32(0)), None, length=num_steps)
        return carry, key, games

    states, timestep = jax.jit(vmapped.reset)(jax.random.split(jax.random.key(0), batch))
    carry = (states, timestep.observation.action_mask.reshape(batch, -1))
    return time_jax_rollout(rollout, carry, jax.random.key(1), batch, num_steps, min_time)


def bench_numpy(cfg: EnvConfig, batch: int, num_steps: int, min_time: float) -> tuple[float, float, float]:
    numpy_env = NumpyMinesweeper(cfg, batch, seed=0)
    rng = np.random.default_rng(1)

    def run(steps: int) -> int:
        games = 0
        for _ in range(steps):
            cells = random_hidden_cells(numpy_env.action_mask()[:, : cfg.num_cells], rng)
            _, done, _ = numpy_env.step(cells)
            games += int(done.sum())
        return games

    run(num_steps)  # warm-up, as for the jitted implementations
    calls, games = 0, 0
    start = time.perf_counter()
    while calls < 2 or time.perf_counter() - start < min_time:
        games += run(num_steps)
        calls += 1
    elapsed = time.perf_counter() - start
    return calls * num_steps * batch / elapsed, games / elapsed, 0.0


BENCHES = {
    "msjax": bench_msjax,
    "msjax+obs": bench_msjax_observed,
    "msjax-gymnax": bench_msjax_gymnax,
    "msjax-jumanji": bench_msjax_jumanji,
    "jumanji": bench_jumanji,
    "numpy": bench_numpy,
}


# ----------------------------------------------------------------------------- report


def best_rows(rows: list[Row]) -> list[Row]:
    """The fastest row of each (impl, board, batch), in first-seen order."""
    best: dict[tuple[str, str, int], Row] = {}
    for row in rows:
        key = (row.impl, row.board, row.batch)
        if key not in best or row.env_steps_per_s > best[key].env_steps_per_s:
            best[key] = row
    return list(best.values())


def print_table(rows: list[Row]) -> None:
    header = f"{'impl':<13} {'device':<10} {'board':<9} {'batch':>6} {'env steps/s':>12} {'games/s':>11} {'compile s':>9}"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row.impl:<13} {row.device:<10} {row.board:<9} {row.batch:>6} "
            f"{row.env_steps_per_s:>12.3g} {row.games_per_s:>11.3g} {row.compile_s:>9.2f}"
        )


def print_speedups(rows: list[Row]) -> None:
    """msjax env steps/s divided by each baseline's, per board and batch."""
    by_key = {(row.impl, row.board, row.batch): row.env_steps_per_s for row in rows}
    lines = []
    for (impl, board, batch), rate in by_key.items():
        if impl != "msjax":
            continue
        ratios = [
            f"{other} x{rate / by_key[(other, board, batch)]:.1f}"
            for other in ("jumanji", "numpy")
            if (other, board, batch) in by_key
        ]
        if ratios:
            lines.append(f"  {board:<9} batch {batch:>6}: " + ", ".join(ratios))
    if lines:
        print("msjax env steps/s relative to:")
        print("\n".join(lines))


def print_adapter_costs(rows: list[Row]) -> None:
    """Each adapter's env steps/s relative to msjax's with and without the observation."""
    by_key = {(row.impl, row.board, row.batch): row.env_steps_per_s for row in rows}
    lines = []
    for (impl, board, batch), rate in by_key.items():
        if impl not in ("msjax-gymnax", "msjax-jumanji"):
            continue
        ratios = [
            f"{rate / by_key[(base, board, batch)]:.2f} of {base}"
            for base in ("msjax+obs", "msjax")
            if (base, board, batch) in by_key
        ]
        if ratios:
            lines.append(f"  {impl:<13} {board:<9} batch {batch:>6}: " + ", ".join(ratios))
    if lines:
        print("adapter env steps/s relative to the raw env:")
        print("\n".join(lines))


def board_label(text: str) -> str:
    """``HxWxM`` of a board given as ``HxWxM`` or by a standard name (``env.parse_board``)."""
    try:
        return "x".join(str(n) for n in env.parse_board(text))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--boards", nargs="+", type=board_label, default=None,
                        help="HxWxM or beginner/intermediate/expert (default: the three standard boards)")
    parser.add_argument("--batches", nargs="+", type=int, default=None,
                        help="batch sizes (default 1 16 256 4096; add 16384 65536 on a GPU)")
    parser.add_argument("--impls", nargs="+", choices=IMPLS, default=list(IMPLS))
    parser.add_argument("--steps", type=int, default=None,
                        help="env steps per timed call (scan length); default 2**17 // batch in [16, 1000]")
    parser.add_argument("--min-time", type=float, default=None,
                        help="seconds of steady-state timing per row (default 1.0, quick 0.25)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="measure every row this many times, in turn, and keep the fastest "
                             "(on a shared machine, other jobs only ever slow a row down)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 8x8x10, batch 1024")
    args = parser.parse_args(argv)
    args.boards = args.boards or (DEFAULT_BOARDS[:1] if args.quick else DEFAULT_BOARDS)
    args.batches = args.batches or ([1024] if args.quick else [1, 16, 256, 4096])
    args.min_time = args.min_time if args.min_time is not None else (0.25 if args.quick else 1.0)
    return args


def main(argv: list[str] | None = None) -> list[Row]:
    args = parse_args(argv)
    impls = list(args.impls)
    if "jumanji" in impls and make_jumanji(EnvConfig()) is None:
        print("note: jumanji is not installed, skipping it (pip install -e .[bench])", flush=True)
        impls.remove("jumanji")
    for impl, api in (("msjax-gymnax", "gymnax"), ("msjax-jumanji", "jumanji")):
        if impl in impls and not adapters_installed(api):
            print(f"note: {api} is not installed, skipping {impl} (pip install -e .[{api}])", flush=True)
            impls.remove(impl)
    rows = []
    for _ in range(args.repeats):
        for board in args.boards:
            height, width, mines = env.parse_board(board)
            cfg = EnvConfig(H=height, W=width, mine_count=mines)
            for batch in args.batches:
                num_steps = steps_per_call(batch, args.steps)
                for impl in impls:
                    rate, games, compile_s = BENCHES[impl](cfg, batch, num_steps, args.min_time)
                    device = "cpu" if impl == "numpy" else distributed.device_name()
                    row = Row(impl, device, board, batch, rate, games, compile_s)
                    rows.append(row)
                    print(json.dumps(dataclasses.asdict(row)), flush=True)
    rows = best_rows(rows)
    print()
    print_table(rows)
    print()
    print_speedups(rows)
    print_adapter_costs(rows)
    return rows


if __name__ == "__main__":
    main()

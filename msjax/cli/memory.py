"""``python -m msjax memory CONFIG``: what each stage's compiled chunk needs in device
memory, as a table and then one JSON line.

Usage::

    python -m msjax memory CONFIG [--updates N] [--config.section.field=value ...]

CONFIG is a config file or a name in ``configs/``. The chunks are compiled (not run) for
one device of the current backend; on the CPU, ``--config.model.conv_impl=xla`` sizes
the convolutions a GPU runs. On an accelerator the device's limit is printed beside.
Compiling takes minutes for the GPU configs on a CPU: progress (stages compiled, time
left) goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Sequence

import jax

from msjax.run import config as config_lib
from msjax.run import memory
from msjax.run import log as runlog
from msjax import stages as stages_lib
from msjax.cli.args import config_overrides, positive_int


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m msjax memory",
        usage="%(prog)s [-h] [--updates N] CONFIG [--config.SECTION.FIELD=VALUE ...]",
        description=(
            "What each training stage's compiled chunk needs in device memory (compiled, not run), "
            "as a table and then one JSON line; progress goes to stderr."
        ),
    )
    parser.add_argument("config", metavar="CONFIG", help="config file (configs/expert.py) or a name in configs/ (expert)")
    parser.add_argument("--updates", type=positive_int, metavar="N", help="updates per chunk (default: the config's run.chunk_updates)")
    args, rest = parser.parse_known_args(argv)
    args.overrides = config_overrides(rest, parser, example="ppo.microbatch_size=2048")
    return args


def report(config_path: str, figures: list[memory.ChunkMemory], limit: int | None, compile_s: float) -> dict[str, Any]:
    """The JSON line's content."""
    return {
        "config": config_path,
        "backend": jax.default_backend(),
        "device_limit_bytes": limit,
        "compile_s": round(compile_s, 1),
        "stages": [figure.as_dict() for figure in figures],
    }


def print_table(figures: list[memory.ChunkMemory], limit: int | None) -> None:
    gib = memory.GIB
    print(f"{'stage':<10} {'argument':>10} {'output':>10} {'temporary':>10} {'total':>10}  (GiB, per device)")
    for figure in figures:
        print(
            f"{figure.stage:<10} {figure.argument_bytes / gib:>10.2f} {figure.output_bytes / gib:>10.2f} "
            f"{figure.temp_bytes / gib:>10.2f} {figure.total_bytes / gib:>10.2f}"
        )
    print(f"device limit: {'unknown on this backend' if limit is None else f'{limit / gib:.2f} GiB'}")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        cfg = config_lib.apply_overrides(config_lib.load_config(args.config), args.overrides)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    stages = len(stages_lib.run_stages(cfg))
    with runlog.CountProgress(stages, "stages", "compiling each stage's chunk") as progress:
        figures = memory.chunk_memory(cfg, args.updates, on_stage=progress.advance)
    limit = memory.device_limit(cfg.run.device_memory_gib)
    print_table(figures, limit)
    print(json.dumps(report(args.config, figures, limit, time.perf_counter() - started)))
    return 0

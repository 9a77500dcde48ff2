"""``python -m msjax.train``: the command line of a training run (``msjax.run.loop`` runs it).

Usage::

    python -m msjax.train --config configs/small.py [--workdir runs/NAME] [--resume | --resume-step N]
        [--config.ppo.lr=1e-4 --config.env.H=16 ...]
        [--coordinator HOST:PORT --num-processes N --process-id I [--init-timeout SECONDS]]

The three last flags start one process of a multi-host run (``jax.distributed.initialize``;
``--coordinator auto`` alone lets JAX detect a Slurm, Open MPI or Kubernetes cluster):
every process runs the same command with its own ``--process-id``. Without ``--workdir``
the run directory is the config's ``run.workdir``, or, when that holds a run already,
the first of ``WORKDIR-2``, ``WORKDIR-3``, ... that does not (an explicit ``--workdir``
that holds a run is refused). ``--resume`` continues from the latest intact checkpoint
(of ``--workdir``, else of ``run.workdir``), saying which, and first runs its
evaluation if that did not finish; on a run already complete it says so in one line
and writes nothing; ``--resume-step N`` continues from kept step N.
What a run does and writes is told in ``msjax.run.loop``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
from pathlib import Path
from typing import Any, Sequence

from msjax.run import config as config_lib
from msjax import distributed
from msjax.run import divergence
from msjax.run import disk as outofspace
from msjax.run import log as runlog
from msjax.run import loop as train_lib
from msjax.cli.args import config_overrides, non_negative_int, positive_float
from msjax.run.config import ExperimentConfig
from msjax.run.control import (
    RunStopped,
    check_no_dangling_link,
    finished_run,
    holds_run,
    interrupted_advice,
    next_run_config,
    prepare_run_dir,
    resume_command,
    warm_start_params,
)
from msjax.run.lock import RunDirLock

EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Trains as the command line says; returns the final evaluation."""
    args = parse_args(argv)
    distributed.initialize(args.coordinator, args.num_processes, args.process_id, args.init_timeout)
    cfg = resolve_config(args)
    if args.workdir is None and not args.resume and holds_run(Path(cfg.run.workdir)):
        cfg = next_run_config(cfg)
    if args.resume and args.resume_step is None:
        stages = train_lib.make_stages(cfg, distributed.make_mesh(cfg.run.num_devices))
        finished = finished_run(Path(cfg.run.workdir), cfg, stages)
        if finished is not None:  # say so, write nothing (not even train.log)
            if distributed.is_main_process():
                print(finished[0])
            return finished[1]
    warm_start = None if args.resume else warm_start_params(cfg)  # before the run directory: fail first
    run_lock = RunDirLock()  # one writer per run directory, held until the run ends
    run_dir = prepare_run_dir(Path(cfg.run.workdir), cfg, args.resume, run_lock)
    main_process = distributed.is_main_process()
    with run_lock, runlog.TextLog(run_dir / "train.log") if main_process else contextlib.nullcontext():
        try:
            checkpoint_path, final = train_lib.train(cfg, run_dir, args.resume, args.resume_step, warm_start)
        except RunStopped as stopped:
            if main_process:
                print(f"{stopped}; continue with: {resume_command(run_dir)}")
            raise SystemExit(stopped.exit_code)
        except KeyboardInterrupt:
            if main_process:
                print(interrupted_advice(run_dir, argv))
            raise SystemExit(EXIT_INTERRUPTED)
        except divergence.TrainingDiverged as diverged:
            raise SystemExit(f"error: {diverged}")
        except (OSError, ValueError) as err:
            if not outofspace.is_out_of_space(err):
                raise
            raise SystemExit(f"error: {outofspace.out_of_space_line(run_dir, err)}") from None
        if main_process:
            report(run_dir, checkpoint_path, final)
    return final


# ----------------------------------------------------------------------------- command line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """``--config``, ``--workdir``, ``--resume``; every ``--config.section.field=value`` is
    collected into ``args.overrides``."""
    parser = argparse.ArgumentParser(
        prog="python -m msjax.train",
        usage=(
            "%(prog)s [-h] [--config CONFIG] [--workdir DIR] [--resume | --resume-step N]\n"
            "                             [--config.SECTION.FIELD=VALUE ...]\n"
            "                             [--coordinator HOST:PORT --num-processes N --process-id I]"
        ),
        description="Trains an agent: imitation of the rule solver, then PPO, as jitted chunks of updates.",
        epilog=(
            "Overrides: --config.SECTION.FIELD=VALUE, e.g. --config.ppo.lr=1e-4 (an unknown key lists the "
            "valid ones). --resume continues the run in --workdir (it says from which checkpoint; a run "
            "already complete is left as it is)."
        ),
    )
    parser.add_argument("--config", help="config file (configs/small.py) or a name in configs/ (small)")
    parser.add_argument("--workdir", metavar="DIR", help="run directory (default: the config's run.workdir)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --workdir")
    parser.add_argument(
        "--resume-step", type=non_negative_int, metavar="N", help="continue from kept checkpoint N (implies --resume)"
    )
    parser.add_argument(
        "--init-timeout", type=positive_float, default=300.0, metavar="SECONDS",
        help="how long a multi-process run waits for all its processes (default 300)",
    )  # fmt: skip
    parser.add_argument(
        "--coordinator", metavar="HOST:PORT", help="HOST:PORT of process 0 in a multi-process run ('auto': JAX detects the cluster)"
    )
    parser.add_argument("--num-processes", type=int, metavar="N", help="processes in a multi-process run")
    parser.add_argument("--process-id", type=int, metavar="I", help="this process's index, 0..num-processes-1")
    args, rest = parser.parse_known_args(argv)
    args.overrides = config_overrides(rest, parser)
    args.resume = args.resume or args.resume_step is not None
    if args.config is None and not (args.resume and args.workdir):
        parser.error("--config is required (or --workdir with --resume, to reuse the run's config)")
    return args


def resolve_config(args: argparse.Namespace) -> ExperimentConfig:
    """The config file (or, resuming without one, the run's saved config), the overrides,
    and ``--workdir``."""
    if args.config is not None:
        cfg = config_lib.load_config(args.config)
    else:
        check_no_dangling_link(Path(args.workdir))
        saved = Path(args.workdir) / "config.json"
        if not saved.is_file():
            raise SystemExit(f"error: {saved} not found; pass --config to say what to train")
        cfg = config_lib.load_json(saved)
    cfg = config_lib.apply_overrides(cfg, args.overrides)
    if args.workdir is not None:
        cfg = dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, workdir=str(args.workdir)))
    return cfg


def report(run_dir: Path, checkpoint_path: Path, final: dict[str, Any]) -> None:
    """Prints the final evaluation, the checkpoint and how to load it."""
    low, high = final["win_rate_ci95"]
    print(
        f"final evaluation ({final['episodes']} games): win rate {final['win_rate']:.1%} "
        f"[95% CI {low:.1%}-{high:.1%}], safe cells revealed {final['revealed_fraction']:.1%}, "
        f"invalid actions {final['invalid_action_rate']:.2%}"
    )
    print(f"checkpoint: {checkpoint_path}")
    print(f"load it with: msjax.load_agent({str(run_dir)!r})")


def command(argv: Sequence[str] | None = None) -> int:
    """``main`` as a process runs it: a config or checkpoint that cannot be used is one
    ``error:`` line and exit status 1."""
    try:
        main(argv)
    except (ValueError, FileNotFoundError) as err:
        sys.exit(f"error: {err}")
    return 0

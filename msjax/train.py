"""The training entry point: ``python -m msjax.train --config configs/small.py``.

A run is two stages on the device: imitation of the rule solver (when enabled), then
PPO initialised from its parameters. Each stage runs as jitted chunks of
``run.chunk_updates`` updates; this module sees only the chunk boundaries, where it
logs the per-update metrics (``msjax.runlog``: ``metrics.jsonl`` and TensorBoard),
evaluates the greedy policy on fresh boards (every board of a board mix, and promotes a
curriculum to its next level: ``msjax.curriculum``), saves Orbax checkpoints and shows
progress. It parses the command line and owns the run directory.

Command line (the Flax examples' override convention)::

    python -m msjax.train --config configs/small.py [--workdir runs/NAME] [--resume | --resume-step N]
        [--config.ppo.lr=1e-4 --config.env.H=16 ...]
        [--coordinator HOST:PORT --num-processes N --process-id I [--init-timeout SECONDS]]

Training runs data-parallel on every visible device (``run.num_devices``, 0 = all;
``msjax.distributed``). The three last flags start one process of a multi-host run
(``jax.distributed.initialize``; ``--coordinator auto`` alone lets JAX detect a Slurm,
Open MPI or Kubernetes cluster): every process runs the same command with its own
``--process-id``, all take part in the computation and in writing checkpoints, and only
process 0 logs, prints and writes the run's other files.

The run directory holds ``config.json``, ``metrics.jsonl``, ``tb/`` (TensorBoard),
``checkpoints/`` and ``final_eval.json``. Without ``--workdir`` it is the config's
``run.workdir``, or, when that holds a run already, the first of ``WORKDIR-2``,
``WORKDIR-3``, ... that does not (an explicit ``--workdir`` that holds a run is refused).
``--resume`` continues from the latest intact checkpoint (of ``--workdir``, else of
``run.workdir``) exactly as the run would have gone on (a damaged one is skipped, and
named), saying which checkpoint (stage, update, env steps); on a run already complete it
says so in one line and writes nothing; ``--resume-step N`` from kept step N (later steps are moved aside to
``checkpoints-after-N/``). A new run in a directory that holds an earlier run's files but
no checkpoint (a run killed before its first one) moves them aside to ``abandoned-K/``.
``train.log`` holds the lines printed on the terminal (``tail -f`` it under nohup).

SIGINT (Ctrl-C) and SIGTERM (``timeout``, Slurm, Kubernetes, ``docker stop``) let the
chunk in flight finish, write its metrics, save a checkpoint and exit with
128 + the signal's number, printing how to continue; a second signal stops at once,
keeping the state before the chunk in flight if it can.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import jax
from jax.sharding import Mesh

from msjax import agent as agent_lib
from msjax import checkpoint as checkpoint_lib
from msjax import config as config_lib
from msjax import curriculum as curriculum_lib
from msjax import distributed, divergence
from msjax import evaluate as evaluate_lib
from msjax import imitation, outofspace, ppo, runfiles, runlog
from msjax import memory as memory_lib
from msjax.config import ExperimentConfig
from msjax.cli.args import non_negative_int, positive_float
from msjax.runcontrol import (
    RunStopped,
    StopSignals,
    finished_run,
    holds_run,
    hard_stop_note,
    interrupted_advice,
    next_run_config,
    prepare_run_dir,
    resume_command,
    restore_checkpoint,
    set_aside_later_steps,
    warm_start_params,
)
from msjax.runlock import RunDirLock
from msjax.runlog import MetricsWriter, NoWriter, Progress

EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Trains as the command line says; returns the final evaluation."""
    args = parse_args(argv)
    distributed.initialize(args.coordinator, args.num_processes, args.process_id, args.init_timeout)
    cfg = resolve_config(args)
    if args.workdir is None and not args.resume and holds_run(Path(cfg.run.workdir)):
        cfg = next_run_config(cfg)
    if args.resume and args.resume_step is None:
        stages = make_stages(cfg, distributed.make_mesh(cfg.run.num_devices))
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
            checkpoint_path, final = train(cfg, run_dir, args.resume, args.resume_step, warm_start)
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
    args.overrides = _collect_overrides(rest, parser)
    args.resume = args.resume or args.resume_step is not None
    if args.config is None and not (args.resume and args.workdir):
        parser.error("--config is required (or --workdir with --resume, to reuse the run's config)")
    return args


def _collect_overrides(rest: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """``--config.a.b=v`` or ``--config.a.b v`` -> ``["a.b=v", ...]``."""
    overrides, i = [], 0
    while i < len(rest):
        item = rest[i]
        if not item.startswith("--config."):
            parser.error(f"unrecognised argument {item!r} (overrides look like --config.ppo.lr=1e-4)")
        if "=" in item:
            overrides.append(item[len("--config.") :])
            i += 1
        elif i + 1 < len(rest):
            overrides.append(f"{item[len('--config.'):]}={rest[i + 1]}")
            i += 2
        else:
            parser.error(f"{item} needs a value")
    return overrides


def resolve_config(args: argparse.Namespace) -> ExperimentConfig:
    """The config file (or, resuming without one, the run's saved config), the overrides,
    and ``--workdir``."""
    if args.config is not None:
        cfg = config_lib.load_config(args.config)
    else:
        saved = Path(args.workdir) / "config.json"
        if not saved.is_file():
            raise SystemExit(f"error: {saved} not found; pass --config to say what to train")
        cfg = config_lib.load_json(saved)
    cfg = config_lib.apply_overrides(cfg, args.overrides)
    if args.workdir is not None:
        cfg = dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, workdir=str(args.workdir)))
    return cfg


def report(run_dir: Path, checkpoint_path: Path, final: dict[str, Any]) -> None:
    low, high = final["win_rate_ci95"]
    print(
        f"final evaluation ({final['episodes']} games): win rate {final['win_rate']:.1%} "
        f"[95% CI {low:.1%}-{high:.1%}], safe cells revealed {final['revealed_fraction']:.1%}, "
        f"invalid actions {final['invalid_action_rate']:.2%}"
    )
    print(f"checkpoint: {checkpoint_path}")
    print(f"load it with: msjax.load_agent({str(run_dir)!r})")


# ----------------------------------------------------------------------------- stages


@dataclasses.dataclass(frozen=True)
class Stage:
    """One training stage as the loop sees it.

    Attributes:
      name: ``"imitation"`` or ``"ppo"`` (the checkpoint's stage).
      total_updates: updates the stage runs.
      first_step: checkpoint step of the stage's update 0 (steps count across stages).
      first_env_step: environment steps taken before the stage.
      env_steps_per_update: games x steps per update.
      init: ``params or None -> state``, the stage's fresh state, placed on the mesh.
      make_chunk: ``num_updates -> (state -> (state, metrics))``, compiled for the mesh.
    """

    name: str
    total_updates: int
    first_step: int
    first_env_step: int
    env_steps_per_update: int
    init: Callable[[Any], Any]
    make_chunk: Callable[[int], Callable]


@functools.lru_cache(maxsize=None)
def _ppo_chunk(env_cfg, model_cfg, ppo_cfg, num_updates: int, mesh: Mesh):
    chunk = ppo.train_chunk_fn(env_cfg, model_cfg, ppo_cfg, num_updates)
    abstract = jax.eval_shape(lambda k: ppo.init_train_state(k, env_cfg, model_cfg, ppo_cfg), jax.random.key(0))
    return distributed.jit_chunk(chunk, abstract, mesh, "ppo.num_envs")


@functools.lru_cache(maxsize=None)
def _imitation_chunk(env_cfg, model_cfg, il_cfg, num_updates: int, mesh: Mesh):
    chunk = imitation.imitation_chunk_fn(env_cfg, model_cfg, il_cfg, num_updates)
    abstract = jax.eval_shape(
        lambda k: imitation.init_imitation_state(k, env_cfg, model_cfg, il_cfg), jax.random.key(0)
    )
    return distributed.jit_chunk(chunk, abstract, mesh, "imitation.num_envs")


def make_stages(cfg: ExperimentConfig, mesh: Mesh) -> list[Stage]:
    """The run's stages in order, each with its own PRNG stream from ``run.seed``, their
    games split over ``mesh``'s devices (a ``ValueError`` if they do not split evenly).
    Chunks are compiled once per process for each config and length."""
    if cfg.imitation.enabled:
        distributed.check_divides("imitation.num_envs", cfg.imitation.num_envs, mesh)
    distributed.check_divides("ppo.num_envs", cfg.ppo.num_envs, mesh)
    il_key, ppo_key = jax.random.split(jax.random.key(cfg.run.seed))
    stages = []
    if cfg.imitation.enabled:
        il = cfg.imitation
        il_env = curriculum_lib.imitation_env(cfg.env)  # a board mix imitates on its first board
        stages.append(
            Stage(
                name="imitation",
                total_updates=il.num_updates,
                first_step=0,
                first_env_step=0,
                env_steps_per_update=il.num_envs * il.steps_per_update,
                init=lambda params: distributed.place(
                    imitation.init_imitation_state(il_key, il_env, cfg.model, il, params=params), mesh
                ),
                make_chunk=lambda n: _imitation_chunk(il_env, cfg.model, il, n, mesh),
            )
        )
    done_updates = sum(stage.total_updates for stage in stages)
    done_env_steps = sum(stage.total_updates * stage.env_steps_per_update for stage in stages)
    stages.append(
        Stage(
            name="ppo",
            total_updates=cfg.ppo.total_updates,
            first_step=done_updates,
            first_env_step=done_env_steps,
            env_steps_per_update=cfg.ppo.num_envs * cfg.ppo.steps_per_env,
            init=lambda params: distributed.place(
                ppo.init_train_state(
                    ppo_key, cfg.env, cfg.model, cfg.ppo, params=params, curriculum_cfg=cfg.curriculum
                ),
                mesh,
            ),
            make_chunk=lambda n: _ppo_chunk(cfg.env, cfg.model, cfg.ppo, n, mesh),
        )
    )
    return stages


def check_memory(stages: list[Stage], cfg: ExperimentConfig) -> None:
    """Before the first update: raises ``memory.DoesNotFit`` (one ``error:`` line on the
    command line) when a stage's compiled chunk needs more memory than a device has,
    ``run.device_memory_gib`` or else what the device says (nothing is checked where
    neither is known: the CPU). The chunks compiled here are those the run then uses."""
    limit = memory_lib.device_limit(cfg.run.device_memory_gib)
    if limit is None:
        return
    programs = memory_lib.stage_programs(cfg, 1)  # for the abstract states
    microbatch_sizes = {"ppo": cfg.ppo.microbatch_size, "imitation": cfg.imitation.microbatch_size}
    for stage in stages:
        chunk = stage.make_chunk(min(cfg.run.chunk_updates, stage.total_updates))
        figures = memory_lib.compiled_memory(stage.name, chunk.lower(programs[stage.name][1]))
        memory_lib.check_fits(figures, limit, microbatch_sizes[stage.name])


# ----------------------------------------------------------------------------- the loop


@dataclasses.dataclass
class RunContext:
    """What the stage loop writes to: config, checkpoints, metrics and the progress bar,
    and the signals that stop it."""

    cfg: ExperimentConfig
    checkpoints: checkpoint_lib.Checkpoints
    writer: runlog.RunWriter
    progress: Progress
    stop: StopSignals = dataclasses.field(default_factory=StopSignals)


def evaluate_params(params: Any, cfg: ExperimentConfig, episodes: int) -> dict[str, Any]:
    """The greedy policy of ``params`` on ``episodes`` fresh boards (the same boards at every
    evaluation of a run, so evaluations compare like with like); with a board mix,
    ``episodes`` games on each board (``curriculum.evaluate_boards``).

    Every process plays the same boards on its own default device (so all agree on the
    checkpoint's win rate); the parameters are copied there from their mesh.
    """
    agent = agent_lib.from_params(distributed.host_value(params), cfg)
    seed = cfg.run.seed + 1_000_003  # boards never drawn by training's keys
    batch_size = cfg.run.eval_batch_size
    if cfg.env.boards:
        eval_mines = cfg.curriculum.eval_mines or (None,) * len(cfg.env.boards)
        return curriculum_lib.evaluate_boards(agent, cfg.env, episodes, seed, batch_size, eval_mines)
    return evaluate_lib.evaluate(agent, cfg.env, episodes=episodes, seed=seed, batch_size=batch_size)


def _crossed(before: int, after: int, every: int) -> bool:
    return every > 0 and after // every > before // every


def run_stage(
    stage: Stage, state: Any, ctx: RunContext, eval_episodes_at_end: int
) -> tuple[Any, dict | None]:
    """Runs ``stage`` from ``state`` to its last update; returns the state and its last
    evaluation (None when the stage had nothing left to do).

    A stop signal (``ctx.stop``) ends the run after the chunk in flight (``RunStopped``);
    a ``KeyboardInterrupt`` anywhere in the loop first writes the finished chunk's rows
    and saves the newest state.
    """
    update, results = int(distributed.host_value(state.update)), None
    while update < stage.total_updates:
        unwritten = None
        try:
            num_updates = min(ctx.cfg.run.chunk_updates, stage.total_updates - update)
            started = time.perf_counter()
            # Rebind at once: the chunk donates its input, so the old state is gone.
            state, metrics = stage.make_chunk(num_updates)(state)
            unwritten = (update, metrics)
            metrics = distributed.host_value(metrics)
            ctx.writer.write_updates(stage, update, metrics)
            unwritten = None
            divergence.check_chunk(stage.name, update, metrics, state.params, ctx.checkpoints, ctx.cfg)
            update_after = int(distributed.host_value(state.update))
            ctx.progress.chunk_done(stage, update_after, num_updates, time.perf_counter() - started)
            state, results = after_chunk(stage, state, update, ctx, eval_episodes_at_end)
            update = update_after
        except KeyboardInterrupt:
            _save_on_interrupt(stage, state, ctx, unwritten)
            raise
        if ctx.stop.requested():
            raise RunStopped(_save_on_stop(stage, state, ctx), ctx.stop.exit_code())
    return state, results


def after_chunk(
    stage: Stage,
    state: Any,
    previous: int,
    ctx: RunContext,
    eval_episodes_at_end: int,
) -> tuple[Any, dict | None]:
    """After a chunk (its rows written), evaluates (and, with a curriculum, promotes) and
    checkpoints when due: at the first chunk boundary past each interval and at the end of
    the stage. Returns the state (its curriculum advanced by a promotion) and the
    evaluation, if any."""
    run_cfg, update = ctx.cfg.run, int(distributed.host_value(state.update))
    at_end = update == stage.total_updates
    results = None
    if at_end or _crossed(previous, update, run_cfg.eval_every_updates):
        episodes = eval_episodes_at_end if at_end else run_cfg.eval_episodes
        ctx.progress.evaluating(stage, update, episodes)
        results = evaluate_params(state.params, ctx.cfg, episodes)
        ctx.writer.write_eval(stage, update, results)
        ctx.progress.evaluated(stage, update, results)
        state = maybe_promote(stage, state, update, results, ctx)
    if results is not None or _crossed(previous, update, run_cfg.checkpoint_every_updates):
        step = stage.first_step + update
        ctx.checkpoints.save(step, state, stage=stage.name, update=update, cfg=ctx.cfg, metrics=results)
    ctx.writer.flush()
    return state, results


def maybe_promote(stage: Stage, state: Any, update: int, results: dict[str, Any], ctx: RunContext) -> Any:
    """``state`` moved on to the curriculum's next level when this evaluation earns it
    (``curriculum.promote``); the promotion is logged (by every process's writer: the
    ``NoWriter`` of processes other than 0 writes nothing). Only the traced weights
    change, so the compiled chunk is reused."""
    current = getattr(state, "curriculum", None)
    if current is None:
        return state
    win_rates = curriculum_lib.board_win_rates(results, ctx.cfg.env)
    promoted, changed = curriculum_lib.promote(distributed.host_value(current), win_rates, update, ctx.cfg.curriculum)
    if not changed:
        return state
    to_level = int(promoted.stage)
    board = curriculum_lib.board_name(ctx.cfg.env.boards[to_level])
    ctx.writer.write_promotion(stage, update, to_level, board, win_rates[to_level - 1])
    ctx.progress.promoted(stage, update, board)
    return state.replace(curriculum=distributed.put_like(promoted, current))


def _save_on_stop(stage: Stage, state: Any, ctx: RunContext) -> str:
    """Saves ``state`` at a chunk boundary unless it is saved already; says where."""
    update = int(distributed.host_value(state.update))
    step = stage.first_step + update
    if step not in ctx.checkpoints.steps:
        ctx.checkpoints.save(step, state, stage=stage.name, update=update, cfg=ctx.cfg)
    ctx.writer.flush()
    name = ctx.stop.received.name if ctx.stop.received is not None else "another process's signal"
    return f"stopped by {name} at {stage.name} update {update}: checkpoint {ctx.checkpoints.path(step)}"


def _save_on_interrupt(stage: Stage, state: Any, ctx: RunContext, unwritten: tuple | None = None) -> None:
    """Writes the rows of a chunk that finished (``unwritten``: its first update and its
    metrics, not yet read) and saves ``state``, unless it is already saved (or its buffers
    were donated away)."""
    if any(getattr(leaf, "is_deleted", lambda: False)() for leaf in jax.tree.leaves(state)):
        print("\ninterrupted while a chunk was starting; the last saved checkpoint stands")
        return
    if unwritten is not None:
        ctx.writer.write_updates(stage, unwritten[0], distributed.host_value(unwritten[1]))
    update = int(distributed.host_value(state.update))
    step = stage.first_step + update
    if step not in ctx.checkpoints.steps:
        ctx.checkpoints.save(step, state, stage=stage.name, update=update, cfg=ctx.cfg)
    ctx.writer.flush()
    print(f"\ninterrupted at {stage.name} update {update}; checkpoint saved to {ctx.checkpoints.path(step)}")


def train(
    cfg: ExperimentConfig, run_dir: Path, resume: bool, resume_step: int | None = None, warm_start: Any = None
) -> tuple[Path, dict[str, Any]]:
    """Runs every stage (when resuming, from checkpoint ``resume_step``, or the newest
    intact one; else from the parameters ``warm_start`` when given); returns the last
    checkpoint's path and the final evaluation, also written to ``final_eval.json``.
    SIGINT and SIGTERM stop it at a chunk boundary with ``RunStopped``, its checkpoint
    saved."""
    mesh = distributed.make_mesh(cfg.run.num_devices)
    stages = make_stages(cfg, mesh)
    main_process = distributed.is_main_process()
    keep = cfg.run.keep_checkpoints
    with contextlib.closing(checkpoint_lib.Checkpoints(run_dir / "checkpoints", keep=keep)) as checkpoints:
        start_index, state = 0, None
        if resume:
            step, start_index, state = restore_checkpoint(checkpoints, stages, cfg, mesh, resume_step)
            set_aside_later_steps(checkpoints, step, run_dir)
        check_memory(stages[start_index:], cfg)
        done = stages[start_index].first_step
        done += int(distributed.host_value(state.update)) if state is not None else 0
        if main_process:
            config_lib.save_json(cfg, run_dir / "config.json")
            writer = MetricsWriter(run_dir, cfg.run.tensorboard, resume_step=done if resume else None)
        else:
            writer = NoWriter()
        progress = Progress(stages, done, cfg.run.progress_bar and main_process, printing=main_process)
        with contextlib.closing(writer), contextlib.closing(progress), StopSignals(hard_stop_note(writer, run_dir)) as stop:
            ctx = RunContext(cfg, checkpoints, writer, progress, stop)
            final = run_stages(stages, start_index, state, ctx, warm_start)
        checkpoint_path = checkpoints.path(checkpoints.latest_step)
    if main_process:
        write_final_eval(run_dir / "final_eval.json", final, checkpoint_path)
    return checkpoint_path, final


def run_stages(
    stages: list[Stage], start_index: int, state: Any, ctx: RunContext, warm_start: Any = None
) -> dict[str, Any]:
    """Runs ``stages[start_index:]``, the first from ``state`` (None: fresh, with the
    parameters ``warm_start`` when given), each later one from its predecessor's
    parameters; returns the final evaluation."""
    final = None
    for index in range(start_index, len(stages)):
        stage = stages[index]
        if state is None or index != start_index:
            state = stage.init(state.params if state is not None else warm_start)
        last = index == len(stages) - 1
        episodes = ctx.cfg.run.final_eval_episodes if last else ctx.cfg.run.eval_episodes
        state, final = run_stage(stage, state, ctx, episodes)
    if final is None:  # resumed a finished run: nothing ran, so evaluate what is there
        final = evaluate_params(state.params, ctx.cfg, ctx.cfg.run.final_eval_episodes)
    return final


def write_final_eval(path: Path, final: dict[str, Any], checkpoint_path: Path) -> None:
    summary = {k: runlog.finite_or_none(v) if isinstance(v, float) else v for k, v in final.items()}
    runfiles.write_json_atomic(path, {**summary, "checkpoint": str(checkpoint_path)})


if __name__ == "__main__":
    try:
        main()
    except (ValueError, FileNotFoundError) as err:
        sys.exit(f"error: {err}")

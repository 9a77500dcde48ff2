"""A training run: its stages in order, as jitted chunks of updates, and what happens
between chunks (``python -m msjax.train`` is its command line, ``msjax.cli.train``).

A run plays the stages of ``msjax.stages.run_stages`` in order: imitation of the rule
solver, self-play with search targets and PPO (each when enabled), each initialised from
its predecessor's parameters. Each stage runs as
jitted chunks of ``run.chunk_updates`` updates; this module sees only the chunk
boundaries, where it logs the per-update metrics (``msjax.run.log``: ``metrics.jsonl``
and TensorBoard), saves Orbax checkpoints, then evaluates the greedy policy on fresh
boards (every board of a board mix, and promotes a curriculum to its next level:
``msjax.stages.curriculum``), and shows progress. The checkpoint comes before its
evaluation, so that nothing trained is lost however the evaluation ends; its win rate
is recorded with it when the evaluation finishes, and a resume from a checkpoint whose
evaluation did not finish runs that evaluation first.

Training runs data-parallel on every visible device (``run.num_devices``, 0 = all;
``msjax.distributed``); in a multi-process run all processes compute and write
checkpoints, and only process 0 logs, prints and writes the run's other files.

The run directory holds ``config.json``, ``metrics.jsonl``, ``tb/`` (TensorBoard),
``checkpoints/``, ``final_eval.json`` and ``train.log`` (the lines printed on the
terminal). A resume continues from a checkpoint exactly as the run would have gone on.

SIGINT (Ctrl-C) and SIGTERM (``timeout``, Slurm, Kubernetes, ``docker stop``) let the
chunk in flight finish, write its metrics, save a checkpoint and exit with
128 + the signal's number, printing how to continue; during an evaluation, they end it
after the batch of games in flight (its checkpoint is saved already). A second signal
stops at once, keeping the state before the chunk in flight if it can.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from pathlib import Path
from typing import Any, Callable

import jax
from jax.sharding import Mesh

from msjax import agent as agent_lib
from msjax.run import checkpoint as checkpoint_lib
from msjax.run import config as config_lib
from msjax.stages import curriculum as curriculum_lib
from msjax import distributed
from msjax.run import divergence
from msjax import env as ms_env
from msjax import evaluate as evaluate_lib
from msjax.run import files as runfiles
from msjax.run import log as runlog
from msjax import stages as stages_lib
from msjax.run import memory as memory_lib
from msjax.run.config import ExperimentConfig
from msjax.run.control import (
    EvaluationStopped,
    RunStopped,
    StopSignals,
    hard_stop_note,
    restore_checkpoint,
    set_aside_later_steps,
)
from msjax.run.log import MetricsWriter, NoWriter, Progress
from msjax.stages import StageSpec

__all__ = [
    "RunContext",
    "Stage",
    "after_chunk",
    "check_memory",
    "compiled_chunk",
    "evaluate_checkpoint",
    "evaluate_params",
    "make_stages",
    "maybe_promote",
    "run_stage",
    "run_stages",
    "train",
    "write_final_eval",
]


# ----------------------------------------------------------------------------- stages


@dataclasses.dataclass(frozen=True)
class Stage:
    """One training stage of a run as the loop sees it: the stage (``StageSpec``) and
    where it sits in the run.

    Attributes:
      spec: the stage (its name, config fields, state and chunk).
      num_updates: updates the stage runs.
      first_step: checkpoint step of the stage's update 0 (steps count across stages).
      first_env_step: environment steps taken before the stage.
      env_steps_per_update: games x steps per update.
      init: ``params or None -> state``, the stage's fresh state, placed on the mesh.
      make_chunk: ``chunk_updates -> (state -> (state, metrics))``, compiled for the mesh.
    """

    spec: StageSpec
    num_updates: int
    first_step: int
    first_env_step: int
    env_steps_per_update: int
    init: Callable[[Any], Any]
    make_chunk: Callable[[int], Callable]

    @property
    def name(self) -> str:
        """The stage's name (the checkpoint's stage)."""
        return self.spec.name


_CHUNKS: dict[tuple, Callable] = {}


def compiled_chunk(spec: StageSpec, cfg: ExperimentConfig, chunk_updates: int, mesh: Mesh) -> Callable:
    """``spec``'s chunk of ``chunk_updates`` updates under ``cfg``, compiled for ``mesh``;
    once per process for each program (the sections the stage reads) and length."""
    key = (spec, spec.program_config(cfg), chunk_updates, mesh)
    if key not in _CHUNKS:
        chunk = spec.chunk_fn(cfg, chunk_updates)
        _CHUNKS[key] = distributed.jit_chunk(chunk, spec.abstract_state(cfg), mesh, spec.setting("num_envs"))
    return _CHUNKS[key]


def make_stages(cfg: ExperimentConfig, mesh: Mesh) -> list[Stage]:
    """The run's stages in order (``stages.run_stages``), each with its own PRNG stream
    from ``run.seed``, their games split over ``mesh``'s devices (a ``ValueError`` if
    they do not split evenly)."""
    specs = stages_lib.run_stages(cfg)
    for spec in specs:
        distributed.check_divides(spec.setting("num_envs"), spec.config(cfg).num_envs, mesh)
    keys = stages_lib.stage_keys(cfg.run.seed)
    stages, done_updates, done_env_steps = [], 0, 0
    for spec in specs:
        stage = Stage(
            spec=spec,
            num_updates=spec.config(cfg).num_updates,
            first_step=done_updates,
            first_env_step=done_env_steps,
            env_steps_per_update=spec.config(cfg).env_steps_per_update,
            init=functools.partial(_init_placed, spec, keys[spec.name], cfg, mesh),
            make_chunk=functools.partial(compiled_chunk, spec, cfg, mesh=mesh),
        )
        stages.append(stage)
        done_updates += stage.num_updates
        done_env_steps += stage.num_updates * stage.env_steps_per_update
    return stages


def _init_placed(spec: StageSpec, key: jax.Array, cfg: ExperimentConfig, mesh: Mesh, params: Any) -> Any:
    return distributed.place(spec.init_state(key, cfg, params), mesh)


def check_memory(stages: list[Stage], cfg: ExperimentConfig) -> None:
    """Before the first update: raises ``memory.DoesNotFit`` (one ``error:`` line on the
    command line) when a stage's compiled chunk needs more memory than a device has,
    ``run.device_memory_gib`` or else what the device says (nothing is checked where
    neither is known: the CPU). The chunks compiled here are those the run then uses."""
    limit = memory_lib.device_limit(cfg.run.device_memory_gib)
    if limit is None:
        return
    for stage in stages:
        chunk = stage.make_chunk(min(cfg.run.chunk_updates, stage.num_updates))
        figures = memory_lib.compiled_memory(stage.name, chunk.lower(stage.spec.abstract_state(cfg)))
        memory_lib.check_fits(figures, limit, stage.spec, cfg)


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


def evaluate_params(
    params: Any, cfg: ExperimentConfig, episodes: int, on_batch: Callable[[int], None] | None = None
) -> dict[str, Any]:
    """The greedy policy of ``params`` on ``episodes`` fresh boards (the same boards at every
    evaluation of a run, so evaluations compare like with like); with a board mix,
    ``episodes`` games on each board (``evaluate.evaluate_boards``). ``on_batch`` is called
    after each batch of ``run.eval_batch_size`` games (what it raises ends the evaluation).

    Every process plays the same boards on its own default device (so all agree on the
    checkpoint's win rate); the parameters are copied there from their mesh.
    """
    agent = agent_lib.from_params(distributed.host_value(params), cfg)
    seed = cfg.run.seed + 1_000_003  # boards never drawn by training's keys
    batch_size = cfg.run.eval_batch_size
    if cfg.env.boards:
        eval_mines = cfg.curriculum.eval_mines or (None,) * len(cfg.env.boards)
        return evaluate_lib.evaluate_boards(agent, cfg.env, episodes, seed, batch_size, eval_mines, on_batch)
    return evaluate_lib.evaluate(agent, cfg.env, episodes=episodes, seed=seed, batch_size=batch_size, on_batch=on_batch)


def _crossed(before: int, after: int, every: int) -> bool:
    return every > 0 and after // every > before // every


def run_stage(
    stage: Stage, state: Any, ctx: RunContext, eval_episodes_at_end: int, evaluation_pending: bool = False
) -> tuple[Any, dict | None]:
    """Runs ``stage`` from ``state`` to its last update; returns the state and its last
    evaluation (None when the stage had nothing left to do). ``evaluation_pending``: the
    checkpoint ``state`` was resumed from was saved before an evaluation that did not
    finish, which runs first.

    A stop signal (``ctx.stop``) ends the run after the chunk in flight, or between two
    batches of an evaluation (``RunStopped``, the state saved); a ``KeyboardInterrupt``
    anywhere in the loop first writes the finished chunk's rows and saves the newest state.
    """
    update, results = int(distributed.host_value(state.update)), None
    if evaluation_pending:
        episodes = _evaluation_games(stage, update, ctx, eval_episodes_at_end)
        if distributed.is_main_process():
            path = ctx.checkpoints.path(stage.first_step + update)
            print(f"the evaluation of checkpoint {path} did not finish: evaluating it ({episodes} games)")
        try:
            state, results = evaluate_checkpoint(stage, state, ctx, episodes)
        except EvaluationStopped:
            raise _stopped_in_evaluation(stage, state, ctx) from None
    while update < stage.num_updates:
        state, results, update = _run_chunk(stage, state, update, ctx, eval_episodes_at_end)
        if ctx.stop.requested():
            raise RunStopped(_save_on_stop(stage, state, ctx), ctx.stop.exit_code())
    return state, results


def _run_chunk(
    stage: Stage, state: Any, update: int, ctx: RunContext, eval_episodes_at_end: int
) -> tuple[Any, dict | None, int]:
    """One chunk from ``update``, its rows, and what follows it (``after_chunk``): the
    state, the evaluation (or None) and the update reached."""
    unwritten = None
    try:
        chunk_updates = min(ctx.cfg.run.chunk_updates, stage.num_updates - update)
        started = time.perf_counter()
        # Rebind at once: the chunk donates its input, so the old state is gone.
        state, metrics = stage.make_chunk(chunk_updates)(state)
        unwritten = (update, metrics)
        metrics = distributed.host_value(metrics)
        ctx.writer.write_updates(stage, update, metrics)
        unwritten = None
        divergence.check_chunk(stage.spec, update, metrics, state.params, ctx.checkpoints, ctx.cfg)
        update_after = int(distributed.host_value(state.update))
        ctx.progress.chunk_done(stage, update_after, chunk_updates, time.perf_counter() - started)
        state, results = after_chunk(stage, state, update, ctx, eval_episodes_at_end)
    except EvaluationStopped:
        raise _stopped_in_evaluation(stage, state, ctx) from None
    except KeyboardInterrupt:
        _save_on_interrupt(stage, state, ctx, unwritten)
        raise
    return state, results, update_after


def _stopped_in_evaluation(stage: Stage, state: Any, ctx: RunContext) -> RunStopped:
    """The ``RunStopped`` of a signal that ended the evaluation of ``state``'s checkpoint."""
    note = " (its evaluation did not finish: a resume runs it first)"
    return RunStopped(_save_on_stop(stage, state, ctx) + note, ctx.stop.exit_code())


def after_chunk(
    stage: Stage,
    state: Any,
    previous: int,
    ctx: RunContext,
    eval_episodes_at_end: int,
) -> tuple[Any, dict | None]:
    """After a chunk (its rows written), checkpoints and then evaluates (and, with a
    curriculum, promotes) when due: at the first chunk boundary past each interval and at
    the end of the stage. The checkpoint comes first, so that a signal, or a kill, during
    a long evaluation loses no update (``evaluate_checkpoint``). Returns the state (its
    curriculum advanced by a promotion) and the evaluation, if any."""
    run_cfg, update = ctx.cfg.run, int(distributed.host_value(state.update))
    at_end = update == stage.num_updates
    evaluates = at_end or _crossed(previous, update, run_cfg.eval_every_updates)
    if evaluates or _crossed(previous, update, run_cfg.checkpoint_every_updates):
        step = stage.first_step + update
        ctx.checkpoints.save(step, state, stage=stage.name, update=update, cfg=ctx.cfg, evaluation_due=evaluates)
    ctx.writer.flush()
    if not evaluates:
        return state, None
    return evaluate_checkpoint(stage, state, ctx, _evaluation_games(stage, update, ctx, eval_episodes_at_end))


def _evaluation_games(stage: Stage, update: int, ctx: RunContext, eval_episodes_at_end: int) -> int:
    """The games of the evaluation at ``update``: ``eval_episodes_at_end`` at the stage's
    last update, else ``run.eval_episodes``."""
    return eval_episodes_at_end if update == stage.num_updates else ctx.cfg.run.eval_episodes


def evaluate_checkpoint(stage: Stage, state: Any, ctx: RunContext, episodes: int) -> tuple[Any, dict]:
    """Evaluates ``state``, saved as its checkpoint just before, on ``episodes`` games:
    logs the figures, records the win rate with the checkpoint (``record_evaluation``)
    and, when it promotes a curriculum, saves the promoted state in its place. Returns
    the state and the evaluation.

    Raises:
      EvaluationStopped: a stop signal came before the evaluation or between two of its
        batches (the checkpoint stays, its evaluation unrecorded: a resume runs it).
    """
    update = int(distributed.host_value(state.update))
    step = stage.first_step + update
    ctx.stop.stop_between_batches()  # a signal during the chunk: not one game
    ctx.progress.evaluating(stage, update, episodes)
    results = evaluate_params(state.params, ctx.cfg, episodes, ctx.stop.stop_between_batches)
    ctx.writer.write_eval(stage, update, results)
    ctx.progress.evaluated(stage, update, results)
    promoted = maybe_promote(stage, state, update, results, ctx)
    if promoted is state:
        ctx.checkpoints.record_evaluation(step, results)
    else:
        ctx.checkpoints.replace(step, promoted, stage=stage.name, update=update, cfg=ctx.cfg, metrics=results)
    ctx.writer.flush()
    return promoted, results


def maybe_promote(stage: Stage, state: Any, update: int, results: dict[str, Any], ctx: RunContext) -> Any:
    """``state`` moved on to the curriculum's next level when this evaluation earns it
    (``curriculum.promote``); the promotion is logged (by every process's writer: the
    ``NoWriter`` of processes other than 0 writes nothing). Only the traced weights
    change, so the compiled chunk is reused."""
    current = getattr(state, "curriculum", None)
    if current is None:
        return state
    win_rates = evaluate_lib.board_win_rates(results, ctx.cfg.env)
    promoted, changed = curriculum_lib.promote(distributed.host_value(current), win_rates, update, ctx.cfg.curriculum)
    if not changed:
        return state
    to_level = int(promoted.level)
    board = ms_env.board_name(ctx.cfg.env.boards[to_level])
    ctx.writer.write_promotion(stage, update, to_level, board, win_rates[to_level - 1])
    ctx.progress.promoted(stage, update, board)
    return state.replace(curriculum=distributed.put_like(promoted, current))


def _save_unless_saved(stage: Stage, state: Any, ctx: RunContext) -> tuple[int, Path]:
    """Saves ``state`` as its checkpoint unless it is saved already and flushes the
    metrics; its update and the checkpoint's path."""
    update = int(distributed.host_value(state.update))
    path = ctx.checkpoints.save_unless_saved(
        stage.first_step + update, state, stage=stage.name, update=update, cfg=ctx.cfg
    )
    ctx.writer.flush()
    return update, path


def _save_on_stop(stage: Stage, state: Any, ctx: RunContext) -> str:
    """Saves ``state`` at a chunk boundary unless it is saved already; says where."""
    update, path = _save_unless_saved(stage, state, ctx)
    name = ctx.stop.received.name if ctx.stop.received is not None else "another process's signal"
    return f"stopped by {name} at {stage.name} update {update}: checkpoint {path}"


def _save_on_interrupt(stage: Stage, state: Any, ctx: RunContext, unwritten: tuple | None = None) -> None:
    """Writes the rows of a chunk that finished (``unwritten``: its first update and its
    metrics, not yet read) and saves ``state``, unless it is already saved (or its buffers
    were donated away)."""
    if any(getattr(leaf, "is_deleted", lambda: False)() for leaf in jax.tree.leaves(state)):
        print("\ninterrupted while a chunk was starting; the last saved checkpoint stands")
        return
    if unwritten is not None:
        ctx.writer.write_updates(stage, unwritten[0], distributed.host_value(unwritten[1]))
    update, path = _save_unless_saved(stage, state, ctx)
    print(f"\ninterrupted at {stage.name} update {update}; checkpoint saved to {path}")


def train(
    cfg: ExperimentConfig, run_dir: Path, resume: bool, resume_step: int | None = None, warm_start: Any = None
) -> tuple[Path, dict[str, Any]]:
    """Runs every stage (when resuming, from checkpoint ``resume_step``, or the newest
    intact one, first finishing its evaluation if that did not finish; else from the
    parameters ``warm_start`` when given); returns the last checkpoint's path and the
    final evaluation, also written to ``final_eval.json``. SIGINT and SIGTERM stop it at a
    chunk boundary, or between two batches of an evaluation, with ``RunStopped``, its
    checkpoint saved."""
    mesh = distributed.make_mesh(cfg.run.num_devices)
    stages = make_stages(cfg, mesh)
    main_process = distributed.is_main_process()
    keep = cfg.run.keep_checkpoints
    with contextlib.closing(checkpoint_lib.Checkpoints(run_dir / "checkpoints", keep=keep)) as checkpoints:
        start_index, state, evaluation_pending = 0, None, False
        if resume:
            step, start_index, state = restore_checkpoint(checkpoints, stages, cfg, mesh, resume_step)
            set_aside_later_steps(checkpoints, step, run_dir)
            evaluation_pending = checkpoints.info(step).evaluation_pending
        check_memory(stages[start_index:], cfg)
        done = stages[start_index].first_step
        done += int(distributed.host_value(state.update)) if state is not None else 0
        # The signals are taken over before metrics.jsonl is opened: once it exists, a
        # SIGTERM stops the run at a chunk boundary (tests/test_run_faults.py waits on it).
        with StopSignals() as stop:
            if main_process:
                config_lib.save_json(cfg, run_dir / "config.json")
                writer = MetricsWriter(run_dir, cfg.run.tensorboard, resume_step=done if resume else None)
            else:
                writer = NoWriter()
            stop.before_exit = hard_stop_note(writer, run_dir)
            progress = Progress(stages, done, cfg.run.progress_bar and main_process, printing=main_process)
            with contextlib.closing(writer), contextlib.closing(progress):
                ctx = RunContext(cfg, checkpoints, writer, progress, stop)
                final = run_stages(stages, start_index, state, ctx, warm_start, evaluation_pending)
        checkpoint_path = checkpoints.path(checkpoints.latest_step)
    if main_process:
        write_final_eval(run_dir / "final_eval.json", final, checkpoint_path)
    return checkpoint_path, final


def run_stages(
    stages: list[Stage],
    start_index: int,
    state: Any,
    ctx: RunContext,
    warm_start: Any = None,
    evaluation_pending: bool = False,
) -> dict[str, Any]:
    """Runs ``stages[start_index:]``, the first from ``state`` (None: fresh, with the
    parameters ``warm_start`` when given; ``evaluation_pending``: see ``run_stage``), each
    later one from its predecessor's parameters; returns the final evaluation."""
    final = None
    for index in range(start_index, len(stages)):
        stage = stages[index]
        if state is None or index != start_index:
            state = stage.init(state.params if state is not None else warm_start)
        last = index == len(stages) - 1
        episodes = ctx.cfg.run.final_eval_episodes if last else ctx.cfg.run.eval_episodes
        state, final = run_stage(stage, state, ctx, episodes, evaluation_pending and index == start_index)
    if final is None:  # resumed a finished run, its evaluation recorded: evaluate what is there
        try:
            final = evaluate_params(state.params, ctx.cfg, ctx.cfg.run.final_eval_episodes, ctx.stop.stop_between_batches)
        except EvaluationStopped:
            raise _stopped_in_evaluation(stages[-1], state, ctx) from None
    return final


def write_final_eval(path: Path, final: dict[str, Any], checkpoint_path: Path) -> None:
    """Writes ``final`` (non-finite figures as null) and the checkpoint's path as JSON."""
    summary = {k: runlog.finite_or_none(v) if isinstance(v, float) else v for k, v in final.items()}
    runfiles.write_json_atomic(path, {**summary, "checkpoint": str(checkpoint_path)})

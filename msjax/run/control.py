"""The run directory and the signals that stop a run (what ``msjax.run.loop`` does around
its loop).

A run directory holds one run: ``prepare_run_dir`` refuses a new run where checkpoints
are, and moves an earlier run's leftovers (a run killed before its first checkpoint)
aside to ``abandoned-K/``; before any training it refuses a ``--workdir`` through a
symbolic link to nothing and run files of the wrong kind or not writable
(``RUN_PATHS``). A resume from an earlier step moves the later checkpoints to
``checkpoints-after-STEP/``; ``warm_start_params`` reads the network a new run starts
from (``run.init_from``). ``finished_run`` tells a resume that there is nothing left to
do. ``StopSignals`` turns SIGINT and SIGTERM into a request to stop at the next chunk
boundary or between two batches of an evaluation (``EvaluationStopped``); a second
signal ends the process at once (``exit_at_once``). Only process 0 moves files or prints.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shlex
import shutil
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

import jax
from jax.sharding import Mesh

from msjax.run import checkpoint as checkpoint_lib

from msjax.run import agents as agents_lib
from msjax.run import config as config_lib
from msjax.run import integrity
from msjax import distributed, models
from msjax.run import files as runfiles
from msjax.run.config import ExperimentConfig
from msjax.run.files import resume_command
from msjax.run.lock import LOCK_FILE, RunDirBusy, RunDirLock
from msjax.run.log import StageInfo

RUN_FILES = ("config.json", "metrics.jsonl", "tb", "final_eval.json", "train.log")
"""What a run writes in its directory besides checkpoints (a new run moves them aside)."""

RUN_PATHS = {
    "checkpoints": ("directory", "checkpoints"),
    "tb": ("directory", "TensorBoard events"),
    "config.json": ("file", "config"),
    "metrics.jsonl": ("file", "metrics rows"),
    "train.log": ("file", "printed lines"),
    "final_eval.json": ("file", "final evaluation"),
    LOCK_FILE: ("file", "lock"),
}
"""Every path a run writes in its directory: the kind it must be and what it holds."""


def holds_run(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a run's checkpoints."""
    return (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").iterdir())


def next_run_config(cfg: ExperimentConfig) -> ExperimentConfig:
    """``cfg`` whose ``run.workdir`` (a directory that holds a run) becomes the first of
    ``WORKDIR-2``, ``WORKDIR-3``, ... that holds none; says so on process 0. (Holding no
    checkpoints, rather than not existing, is the test, so that every process of a
    multi-process run picks the same directory while process 0 creates it.)"""
    workdir = cfg.run.workdir.rstrip("/")
    number = 2
    while holds_run(Path(f"{workdir}-{number}")):
        number += 1
    new_workdir = f"{workdir}-{number}"
    if distributed.is_main_process():
        print(f"{workdir} already holds a run (continue it with --resume); this run goes to {new_workdir}")
    return dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, workdir=new_workdir))


def prepare_run_dir(run_dir: Path, cfg: ExperimentConfig, resume: bool, lock: RunDirLock | None = None) -> Path:
    """Creates the run directory, so that it holds one run.

    A new run refuses a directory that already holds checkpoints (resume it or pick
    another) and moves an earlier run's leftover files aside (``abandoned-K/``, only
    process 0 moves files); a resumed run needs checkpoints. A path through a symbolic
    link to nothing is refused (``check_no_dangling_link``), and so are the run's files
    and folders there of the wrong kind or not writable (``check_run_paths``), before any
    training. With ``lock``, process 0 takes the directory's lock (``lock_run_dir``)
    before anything is written there. Every refusal is a ``SystemExit`` with a one-line
    ``error:``.
    """
    check_no_dangling_link(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise SystemExit(f"error: --workdir {run_dir} is a file; name a directory for the run")
    has_checkpoints = holds_run(run_dir)
    if resume and not has_checkpoints:
        raise SystemExit(f"error: --resume, but {run_dir} holds no checkpoints to resume from")
    if not resume and has_checkpoints:
        raise SystemExit(
            f"error: {run_dir} already holds a run; pass --resume to continue it or --workdir for a new one"
        )
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        if not os.access(run_dir, os.W_OK | os.X_OK):
            raise PermissionError(f"no permission to write in {run_dir}")
    except OSError as err:
        reason = err.strerror or str(err)
        raise SystemExit(f"error: cannot use {run_dir} as the run directory ({reason}); pick another --workdir")
    # A new run moves an earlier run's files aside; what it keeps must be usable as it stands.
    check_run_paths(run_dir, [name for name in RUN_PATHS if resume or name not in RUN_FILES], cfg.run.tensorboard)
    if lock is not None:
        lock_run_dir(lock, run_dir)
    if distributed.is_main_process() and not resume:
        set_aside_leftovers(run_dir)
    return run_dir


def dangling_link(path: Path) -> Path | None:
    """The first of ``path``'s parents, or ``path`` itself, from the top down, that is a
    symbolic link to nothing; None when none is."""
    for part in reversed([path, *path.parents]):
        if part.is_symlink() and not part.exists():
            return part
    return None


def check_no_dangling_link(run_dir: Path) -> None:
    """A ``SystemExit`` whose one ``error:`` line names the symbolic link to nothing (and
    its target) that ``run_dir`` goes through, if any: its target is not created, since
    it may be a disk that is not mounted."""
    link = dangling_link(run_dir)
    if link is not None:
        where = f"--workdir {link}" if link == run_dir else f"--workdir {run_dir}: {link}"
        raise SystemExit(
            f"error: {where} is a symbolic link to {os.readlink(link)}, which does not exist; "
            "create it or pick another --workdir"
        )


def check_run_paths(run_dir: Path, names: Sequence[str], tensorboard: bool) -> None:
    """A ``SystemExit`` whose one ``error:`` line names the first of ``names`` (keys of
    ``RUN_PATHS``; ``tb`` only with ``tensorboard``) in ``run_dir`` that exists but is not
    of its kind, or that this process cannot write; so the run fails before its first
    update, not at its first save."""
    for name in names:
        path, (kind, holds) = run_dir / name, RUN_PATHS[name]
        if (name == "tb" and not tensorboard) or not path.exists():
            continue
        if path.is_dir() != (kind == "directory"):
            found = "directory" if path.is_dir() else "file"
            raise SystemExit(
                f"error: {path} is a {found}, where the run keeps its {holds} (a {kind}); "
                "move it away or pick another --workdir"
            )
        if not os.access(path, os.W_OK | (os.X_OK if kind == "directory" else 0)):
            raise SystemExit(f"error: {path} is not writable (no permission); make it writable or pick another --workdir")


def lock_run_dir(lock: RunDirLock, run_dir: Path) -> None:
    """Process 0 takes ``run_dir``'s lock (``msjax.run.lock``); when another live process
    holds it, every process of the run stops with a ``SystemExit`` whose one ``error:``
    line names the directory and the holder's process id."""
    busy = ""
    if distributed.is_main_process():
        try:
            lock.acquire(run_dir)
        except RunDirBusy as err:
            busy = str(err)
    if distributed.any_process(bool(busy)):
        raise SystemExit(f"error: {busy or f'{run_dir} is in use by another run (process 0 says which)'}")


def set_aside_leftovers(run_dir: Path) -> None:
    """Moves the files of an earlier run that saved no checkpoint to ``run_dir/abandoned-K``."""
    leftovers = [name for name in RUN_FILES if (run_dir / name).exists()]
    if not leftovers:
        return
    number = 1
    while (run_dir / f"abandoned-{number}").exists():
        number += 1
    aside = run_dir / f"abandoned-{number}"
    aside.mkdir()
    for name in leftovers:
        shutil.move(str(run_dir / name), str(aside / name))
    listed = ", ".join(leftovers)
    print(f"{run_dir} held files of an earlier run that saved no checkpoint ({listed}); moved them to {aside}")


def restore_checkpoint(
    checkpoints: checkpoint_lib.Checkpoints,
    stages: Sequence[StageInfo],
    cfg: ExperimentConfig,
    mesh: Mesh,
    step: int | None = None,
) -> tuple[int, int, Any]:
    """``(step, stage index, state)`` of checkpoint ``step`` (None: the newest intact one; a
    damaged one is named in one line and skipped), checked against ``cfg`` and placed on
    ``mesh`` (whatever the devices it was saved from).

    Raises:
      CheckpointError: no checkpoint (or ``step`` is not kept), one of another game,
        network or stage, one past the stage's target number of updates, or none intact.
    """
    kept = checkpoints.steps
    if not kept:
        raise checkpoint_lib.CheckpointError(f"no checkpoint in {checkpoints.directory} to resume from")
    if step is not None and step not in kept:
        raise checkpoint_lib.CheckpointError(
            f"--resume-step {step}: {checkpoints.directory} keeps no checkpoint {step}; kept steps: {kept}"
        )
    names = [stage.name for stage in stages]

    def load(chosen: int) -> tuple[list[str], int, Any]:
        info = checkpoints.info(chosen)
        changed = checkpoint_lib.check_compatible(info.config, cfg)
        if info.stage not in names:
            raise checkpoint_lib.CheckpointError(
                f"checkpoint {info.path} is from the {info.stage} stage, which this config does not run ({names})"
            )
        stage = stages[names.index(info.stage)]
        if info.update > stage.num_updates:
            target, field = stage.num_updates, stage.spec.setting("num_updates")
            raise checkpoint_lib.CheckpointError(
                f"checkpoint {info.path} is at {info.stage} update {info.update}, past this run's "
                f"{field}={target}; set --config.{field} to at least {info.update}"
            )
        template = stage.spec.abstract_state(cfg)
        try:
            state = checkpoints.restore(chosen, template, distributed.state_shardings(template, mesh))
        except checkpoint_lib.StateStructureMismatch as err:
            stored = checkpoints.stored_arrays(chosen)
            raise checkpoint_lib.CheckpointError(f"{err}; {shaping_changes(stored, info.config, cfg, stage)}") from None
        return changed, names.index(info.stage), state

    say = print if distributed.is_main_process() else (lambda line: None)
    candidates = [step] if step is not None else sorted(kept, reverse=True)
    step, (changed, index, state) = checkpoint_lib.newest_intact(checkpoints, candidates, load, say)
    update = int(distributed.host_value(state.update))
    say(f"resuming from checkpoint {checkpoints.path(step)}: {where_in_run(stages[index], update)}")
    if changed:
        say("resuming with changed settings: " + "; ".join(changed))
    return step, index, state


def shaping_changes(stored: dict[str, Any], saved: ExperimentConfig, cfg: ExperimentConfig, stage: StageInfo) -> str:
    """What a resume whose checkpoint holds a state of another structure says: the settings
    that ``cfg`` changed from the checkpoint's config ``saved`` and that each alone give
    ``stage``'s state another structure (its arrays not all among ``stored``:
    ``Checkpoints.stored_arrays``), or, when no one setting does, every changed setting of
    the sections the state depends on."""
    changed = [line for line in config_lib.differences(saved, cfg) if line.split(".")[0] in stage.spec.reads]

    def shapes_alone(line: str) -> bool:
        section, field = line.split(":")[0].split(".", 1)
        saved_value = getattr(getattr(saved, section), field)
        try:
            reverted = dataclasses.replace(cfg, **{section: dataclasses.replace(getattr(cfg, section), **{field: saved_value})})
        except (ValueError, TypeError):  # not a valid config with that one setting as saved
            return False
        return not integrity.missing_arrays(stored, stage.spec.abstract_state(reverted))

    culprits = [line for line in changed if shapes_alone(line)]
    if culprits:
        return f"{'; '.join(culprits)} changes it: resume with the saved value, or start a new run"
    if changed:
        return f"changed since it was saved: {'; '.join(changed)}; resume with the saved settings, or start a new run"
    return f"no setting of {', '.join(stage.spec.reads)} changed since it was saved (saved by another msjax?)"


def where_in_run(stage: StageInfo, update: int) -> str:
    """``"ppo update 4/10, 5,120 env steps"``: how far a run got in ``stage``."""
    env_steps = stage.first_env_step + update * stage.env_steps_per_update
    return f"{stage.name} update {update}/{stage.num_updates}, {env_steps:,} env steps"


def finished_run(run_dir: Path, cfg: ExperimentConfig, stages: Sequence[StageInfo]) -> tuple[str, dict] | None:
    """``(one line saying so, final_eval.json's figures)`` when ``run_dir``'s run has nothing
    left to do under ``cfg``; None when a resume has training (or its final evaluation)
    left, or anything is amiss (the resume then says what).

    Finished means: the newest checkpoint is intact and compatible with ``cfg``, it is
    the last stage at its target update, and ``final_eval.json`` was written from it.
    Reads only; writes nothing.
    """
    final_path = run_dir / "final_eval.json"
    if not (final_path.is_file() and holds_run(run_dir)):
        return None
    last = stages[-1]
    checkpoints = checkpoint_lib.Checkpoints(run_dir / "checkpoints", read_only=True)
    try:
        step = checkpoints.latest_step
        info = checkpoints.info(step)
        final = runfiles.read_json(final_path)
        if (info.stage, info.update) != (last.name, last.num_updates) or Path(final["checkpoint"]).name != str(step):
            return None
        checkpoint_lib.check_compatible(info.config, cfg)
        checkpoints.restore(step, last.spec.abstract_state(cfg))  # intact, or DamagedCheckpoint
    except (checkpoint_lib.CheckpointError, ValueError, KeyError, TypeError, OSError):
        return None
    finally:
        checkpoints.close()
    line = (
        f"{run_dir} is already complete ({where_in_run(last, info.update)}; checkpoint {info.path}); "
        f"final evaluation in {final_path}: win rate {final['win_rate']:.1%} over {final['episodes']} games. "
        "Nothing to do."
    )
    return line, final


def set_aside_later_steps(checkpoints: checkpoint_lib.Checkpoints, step: int, run_dir: Path) -> None:
    """Moves the checkpoints after ``step`` (a resume from an earlier or the newest intact
    step) to ``run_dir/checkpoints-after-STEP``, so the resumed run owns the steps it
    saves; process 0 moves them and says so."""
    later = [s for s in checkpoints.steps if s > step]
    if later and distributed.is_main_process():
        aside = checkpoints.set_aside(later, run_dir / f"checkpoints-after-{step}")
        print(f"resuming from step {step}: moved the later checkpoints ({', '.join(map(str, later))}) to {aside}")


class RunStopped(Exception):
    """The run stopped at a chunk boundary on a signal, its checkpoint saved (the text says
    where); ``exit_code`` is 128 + the signal's number."""

    def __init__(self, text: str, exit_code: int):
        super().__init__(text)
        self.exit_code = exit_code


class EvaluationStopped(Exception):
    """A stop signal ended an evaluation between two of its batches (``StopSignals.
    stop_between_batches``)."""


class StopSignals:
    """While entered (in the main thread), SIGINT and SIGTERM ask the run to stop at the
    next chunk boundary, or between two batches of an evaluation
    (``stop_between_batches``); a second one ends the process at once (``exit_at_once``) with
    128 + its number, after ``before_exit()`` (flush what is written; its text, such as
    how to continue, is printed). ``before_exit`` may be set after entering, once what it
    flushes exists."""

    def __init__(self, before_exit: Callable[[], str] | None = None):
        self.received: signal.Signals | None = None
        self._previous: dict[int, Any] = {}
        self.before_exit = before_exit

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc_info) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def _handle(self, number: int, frame: Any) -> None:
        if self.received is not None:
            exit_at_once(signal.Signals(number), self.before_exit)
        self.received = signal.Signals(number)
        # os.write: print() is not safe inside a signal handler (the main thread may be printing).
        text = f"\n{self.received.name}: stopping after the chunk or evaluation batch in flight, with a checkpoint (again: stop at once)\n"
        os.write(sys.__stdout__.fileno(), text.encode())

    def exit_code(self) -> int:
        """128 + the signal's number, the shell's convention (SIGTERM for another process's)."""
        return 128 + int(self.received or signal.SIGTERM)

    def requested(self) -> bool:
        """Whether any process received a signal (a collective in a multi-process run)."""
        return distributed.any_process(self.received is not None)

    def stop_between_batches(self, games: int = 0) -> None:
        """An evaluation's ``on_batch`` (``evaluate.play_in_batches``; ``games``, the batch's,
        is not used): raises ``EvaluationStopped`` when a stop was requested. Every process
        plays the same batches, so the collective ``requested`` lines up."""
        if self.requested():
            raise EvaluationStopped()


def exit_at_once(received: signal.Signals, before_exit: Callable[[], str] | None) -> None:
    """Ends the process now with 128 + ``received``'s number, after ``before_exit()``
    and a flush of stdout and stderr (whatever fails there is skipped).

    ``os._exit``, not an exception: the signal lands anywhere, also inside JAX while it
    traces or compiles, and unwinding from there and then finalising the interpreter
    while XLA's compile threads still run crashed the process (exit 139) or ended it as
    an interrupt (130) instead of 128 + the signal's number.
    """
    note = ""
    with contextlib.suppress(Exception):
        note = before_exit() if before_exit is not None else ""
    text = f"\n{received.name} again: stopped at once{note}\n"
    try:  # through sys.stdout, so that train.log has it too; it may be busy writing
        sys.stdout.write(text)
    except Exception:  # noqa: BLE001 - then straight to the terminal
        with contextlib.suppress(OSError):
            os.write(sys.__stdout__.fileno(), text.encode())
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(128 + int(received))


def hard_stop_note(writer: Any, run_dir: Path) -> Callable[[], str]:
    """``StopSignals``' ``before_exit`` for a run: flushes ``writer``'s rows, then says
    how to go on (``interrupted_advice``)."""

    def before_exit() -> str:
        writer.flush()
        return interrupted_advice(run_dir, None)

    return before_exit


def interrupted_advice(run_dir: Path, argv: Sequence[str] | None) -> str:
    """What to run after a hard interrupt: ``--resume`` when a checkpoint was saved, the
    same command again when none was."""
    if holds_run(run_dir):
        return f"\ninterrupted; continue with: {resume_command(run_dir)}"
    command = shlex.join(sys.argv[1:] if argv is None else [str(arg) for arg in argv])
    return (
        "\ninterrupted before the first checkpoint: nothing was saved; "
        f"start again with: python -m msjax.train {command}"
    )


def warm_start_params(cfg: ExperimentConfig) -> Any:
    """The network parameters of the run or checkpoint ``cfg.run.init_from`` (None when
    it is ""), placed on the host.

    ``model.recycles`` and ``model.carry_beliefs`` may differ where both networks have the
    same parameters (both read a belief plane, or neither: ``ModelConfig.has_belief_plane``),
    and a network without the plane starts one with it (``models.with_belief_plane``: it
    plays as the plain one until trained).

    Raises:
      ValueError: nothing there can be read, its network differs from ``cfg.model``
        otherwise, or it sees other observation channels; the message names
        ``run.init_from``.
    """
    if not cfg.run.init_from:
        return None
    try:
        agent = agents_lib.load_agent(cfg.run.init_from)
    except checkpoint_lib.CheckpointError as err:
        raise ValueError(
            f"run.init_from={cfg.run.init_from!r}: {err} (train that run first, or set run.init_from='')"
        ) from err
    saved, wanted = agent.config.model, cfg.model
    if saved.has_belief_plane and not wanted.has_belief_plane:
        raise ValueError(
            f"run.init_from={cfg.run.init_from!r} holds a network with model.recycles={saved.recycles} and "
            f"model.carry_beliefs={saved.carry_beliefs}, whose first layer reads the belief plane: it cannot "
            "start a network without one (model.recycles=0, model.carry_beliefs=False)"
        )
    other_network = [
        line
        for line in config_lib.differences(agent.config, cfg)
        if line.startswith("model.") and not line.startswith(("model.recycles:", "model.carry_beliefs:"))
    ]
    if other_network:
        raise ValueError(f"run.init_from={cfg.run.init_from!r} holds another network: {'; '.join(other_network)}")
    agent.for_board(cfg.env)  # the same observation channels, or a ValueError naming them
    if wanted.has_belief_plane and not saved.has_belief_plane:
        return jax.device_get(models.with_belief_plane(agent.params))
    return agent.params

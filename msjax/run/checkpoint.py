"""Orbax checkpoints of a run: the whole training state, the config and the stage.

A checkpoint directory (``runs/NAME/checkpoints/<step>``) holds two items: ``state``,
the stage's state pytree exactly as training carries it (parameters, optimizer state,
boards in play, PRNG key, update counter), and ``meta``, JSON with the stage's name
(``msjax.stages.STAGES``), the stage's update counter, the full config and whether an
evaluation of the checkpoint follows (``evaluation_due``). Typed PRNG keys are stored
as their raw key data and wrapped again on restore. The manager keeps the last ``keep``
checkpoints and the best one by evaluation win rate (Orbax preservation policies
``LatestN`` + ``BestN``); a run saves a checkpoint before evaluating it, and
``record_evaluation`` adds the win rate where Orbax keeps a save's metrics once the
evaluation finishes (``CheckpointInfo.evaluation_pending`` until then).

``msjax.run.agents.load_agent`` turns a run's checkpoint into an ``Agent``
(``msjax.load_agent``).

Anything that cannot be restored as asked (a missing or damaged checkpoint, a different
board or network, a state of another structure such as another optimizer's, a config
field this msjax does not know) raises ``CheckpointError`` with the reason; nothing
falls back to a fresh start. Damage is told apart (``DamagedCheckpoint``): ``meta`` records a SHA-256
digest of every array's bytes at save time, and a restore recomputes them and checks
that every floating-point array is finite (checkpoints saved before digests get the
finite check alone), so flipped, truncated or missing bytes are caught instead of
loading as NaN weights. ``newest_intact`` then falls back to the newest checkpoint that
restores, and says which one was skipped.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from pathlib import Path
from typing import Any, Callable, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

from msjax.run import config as config_lib
from msjax.run import integrity
from msjax.run.integrity import (
    CheckpointError,
    DamagedCheckpoint,
    StateStructureMismatch,
    check_intact,
    check_matches,
    missing_arrays,
    renamed_digests,
    stored_array,
)
from msjax.run import files as runfiles
from msjax import stages as stages_lib

WIN_RATE = "win_rate"

@dataclasses.dataclass(frozen=True)
class CheckpointInfo:
    """What a checkpoint says about itself (its ``meta`` item)."""

    path: Path
    step: int
    stage: str
    update: int
    config: config_lib.ExperimentConfig
    metrics: dict[str, float] | None
    evaluation_due: bool = False

    @property
    def evaluation_pending(self) -> bool:
        """Whether the checkpoint was saved before an evaluation that did not finish (a
        resume runs it first): one was due, and no win rate is recorded."""
        return self.evaluation_due and self.metrics is None


class _DropExpectedOrbaxWarnings(logging.Filter):
    """Orbax warns on every save without metrics (most of ours have none, by design), on
    every read-only manager (how ``load_agent`` opens a run), and, with tracebacks, from
    each thread on a full disk (one line says it: ``msjax.run.disk``)."""

    EXPECTED = ("did not provide metrics", "read_only=True", "Given directory is read only", "No space left on device")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(expected in message for expected in self.EXPECTED)


logging.getLogger("absl").addFilter(_DropExpectedOrbaxWarnings())
logging.getLogger("asyncio").addFilter(_DropExpectedOrbaxWarnings())  # Orbax's tasks on a full disk
LOG = logging.getLogger("msjax.run.checkpoint")


# ----------------------------------------------------------------------------- keys


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def keys_to_data(tree: Any) -> Any:
    """``tree`` with every typed PRNG key replaced by its raw ``uint32`` key data."""
    return jax.tree.map(lambda x: jax.random.key_data(x) if _is_key(x) else x, tree)


def _data_struct(leaf: Any) -> jax.ShapeDtypeStruct:
    """The shape and dtype that ``keys_to_data`` gives ``leaf`` (concrete or abstract).

    Leaf by leaf, never one trace of the whole state: jax 0.10's ``PyTreeDef`` equality
    ignores a dataclass node's type, so a ``PPOState`` and an ``ImitationState`` of equal
    shapes compare equal, and a jit cache matching on it can hand one stage's restore the
    other's structure (CI hit this once, at random)."""
    if _is_key(leaf):
        return jax.eval_shape(jax.random.key_data, jax.ShapeDtypeStruct(leaf.shape, leaf.dtype))
    return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype)


def keys_from_data(tree: Any, template: Any) -> Any:
    """Inverse of ``keys_to_data``: wraps the leaves that are keys in ``template``
    (concrete or abstract) with the default key implementation."""
    return jax.tree.map(lambda x, t: jax.random.wrap_key_data(x) if _is_key(t) else x, tree, template)


# ----------------------------------------------------------------------------- paths


def resolve(path: str | Path) -> tuple[Path, int | None]:
    """``(checkpoints_dir, step)`` for a run directory, a checkpoints directory or one
    checkpoint's directory (``step`` is None unless ``path`` names one checkpoint)."""
    path = Path(path).resolve()
    if not path.exists():
        raise CheckpointError(f"{path} does not exist")
    if not path.is_dir():
        raise CheckpointError(
            f"{path} is a file; give a run directory (runs/NAME), its checkpoints directory, or one checkpoint"
        )
    if (path / "checkpoints").is_dir():
        return path / "checkpoints", None
    if (path / "meta").is_dir() and path.name.isdigit():
        return path.parent, int(path.name)
    if any(child.name.isdigit() for child in path.iterdir()):
        return path, None
    raise CheckpointError(
        f"{path} is neither a run directory (with checkpoints/), a checkpoints directory, "
        "nor one checkpoint"
    )


# ----------------------------------------------------------------------------- manager


class Checkpoints:
    """The checkpoints of one run, managed by Orbax.

    Args:
      directory: where the step directories live (``runs/NAME/checkpoints``).
      keep: most recent checkpoints kept; the best by ``metrics["win_rate"]`` is kept too.
      read_only: open an existing directory without creating or deleting anything.
    """

    def __init__(self, directory: str | Path, keep: int = 3, read_only: bool = False):
        self.directory = Path(directory).resolve()
        if read_only and not self.directory.is_dir():
            raise CheckpointError(f"no checkpoints directory at {self.directory}")
        best_fn = lambda metrics: metrics[WIN_RATE]  # noqa: E731
        policies = ocp.checkpoint_managers
        preservation = policies.AnyPreservationPolicy(
            [
                policies.LatestN(n=keep),
                policies.BestN(get_metric_fn=best_fn, n=1, keep_checkpoints_without_metrics=False),
            ]
        )
        options = ocp.CheckpointManagerOptions(
            best_fn=best_fn,
            best_mode="max",
            preservation_policy=preservation,
            # Synchronous: the next training chunk donates (reuses) the state's buffers.
            enable_async_checkpointing=False,
            read_only=read_only,
            create=not read_only,
        )
        handlers = {"state": ocp.StandardCheckpointHandler(), "meta": ocp.JsonCheckpointHandler()}
        self._manager = ocp.CheckpointManager(self.directory, options=options, item_handlers=handlers)

    @property
    def steps(self) -> list[int]:
        return list(self._manager.all_steps())

    @property
    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    @property
    def best_step(self) -> int | None:
        """The step with the highest evaluation win rate (latest if none was evaluated)."""
        return self._manager.best_step()

    def path(self, step: int) -> Path:
        return self.directory / str(step)

    def save(
        self,
        step: int,
        state: Any,
        *,
        stage: str,
        update: int,
        cfg: config_lib.ExperimentConfig,
        metrics: dict[str, float] | None = None,
        evaluation_due: bool = False,
    ) -> Path:
        """Writes ``state`` (any pytree of arrays and keys) as checkpoint ``step``, with
        ``metrics["win_rate"]`` when given; ``evaluation_due``: an evaluation of it follows,
        whose win rate ``record_evaluation`` adds once it finishes."""
        stages_lib.stage_named(stage)  # a ValueError naming the stages for any other name
        state = keys_to_data(state)
        meta = {
            "stage": stage,
            "update": int(update),
            "config": config_lib.to_dict(cfg),
            "digests": integrity.array_digests(state),
            "evaluation_due": bool(evaluation_due),
        }
        args = ocp.args.Composite(
            state=ocp.args.StandardSave(state),
            meta=ocp.args.JsonSave(meta),
        )
        metrics = None if metrics is None else _tracked(metrics)
        try:
            self._manager.save(step, args=args, metrics=metrics, force=True)
            self._manager.wait_until_finished()
        except BaseException:  # a full disk, an interrupt: remove Orbax's unfinished step folder
            for unfinished in self.directory.glob(f"{step}.orbax-checkpoint-tmp*"):
                shutil.rmtree(unfinished, ignore_errors=True)
            raise
        return self.path(step)

    def save_unless_saved(self, step: int, state: Any, **save_args: Any) -> Path:
        """``save`` (``save_args`` as it takes them) unless checkpoint ``step`` is there
        already (a stop right after a chunk's save); the checkpoint's path either way."""
        if step not in self.steps:
            self.save(step, state, **save_args)
        return self.path(step)

    def record_evaluation(self, step: int, results: dict[str, Any]) -> None:
        """Records the win rate of checkpoint ``step``'s evaluation (saved before it ran),
        where Orbax keeps the metrics a save is given, so that it competes for the best
        checkpoint and a resume knows the evaluation finished. Every process writes the same
        bytes, atomically, so each one's manager reads them back."""
        self._require(step)
        item = self.path(step) / ocp.checkpoint_manager.METRIC_ITEM_NAME
        item.mkdir(exist_ok=True)
        runfiles.write_json_atomic(item / ocp.checkpoint_manager.METRIC_ITEM_NAME, _tracked(results))
        self._manager.reload()

    def replace(self, step: int, state: Any, **save_args: Any) -> Path:
        """Saves ``state`` as checkpoint ``step`` in place of the one there (``save_args`` as
        ``save`` takes them): a curriculum promoted by the checkpoint's evaluation. A crash
        in between loses that step alone (a resume takes the newest one left)."""
        self._require(step)
        self._manager.delete(step)
        return self.save(step, state, **save_args)

    def info(self, step: int) -> CheckpointInfo:
        """The stage, update counter, config and metrics of checkpoint ``step``."""
        meta = self._meta(step)
        try:
            stage, update, saved_config = meta["stage"], int(meta["update"]), dict(meta["config"])
        except Exception as err:  # noqa: BLE001 - any failure here means the files are unusable
            raise DamagedCheckpoint(
                f"checkpoint {self.path(step)} has no readable metadata (damaged, or not written "
                f"by msjax): {type(err).__name__}: {_first_line(err)}"
            ) from err
        cfg = self._saved_config(step, saved_config)
        if stage not in [known.name for known in stages_lib.STAGES]:
            raise CheckpointError(f"checkpoint {self.path(step)} names an unknown stage {stage!r}")
        metrics = self._manager.metrics(step)
        return CheckpointInfo(self.path(step), step, stage, update, cfg, metrics, bool(meta.get("evaluation_due")))

    def _saved_config(self, step: int, saved: dict[str, Any]) -> config_lib.ExperimentConfig:
        """The config in checkpoint ``step``'s metadata (``saved``, as stored).

        Raises ``CheckpointError`` (not damage: the files read fine) naming the fields this
        msjax does not know, or else what ``config.from_dict`` says is wrong."""
        unknown = unknown_config_fields(saved)
        if unknown:
            raise CheckpointError(
                f"checkpoint {self.path(step)} was saved with config field{'s' * (len(unknown) > 1)} "
                f"{', '.join(unknown)}, which this msjax does not know (saved by a newer msjax?)"
            )
        try:
            return config_lib.from_dict(saved)
        except (ValueError, TypeError) as err:
            raise CheckpointError(f"checkpoint {self.path(step)} holds a config this msjax cannot use: {err}") from err

    def _meta(self, step: int) -> dict[str, Any]:
        self._require(step)
        try:
            meta = self._manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"]
        except Exception as err:  # noqa: BLE001 - any failure here means the files are unusable
            meta = err
        if not isinstance(meta, dict):
            raise DamagedCheckpoint(
                f"checkpoint {self.path(step)} has no readable metadata (damaged, or not written "
                f"by msjax): {type(meta).__name__}: {_first_line(meta)}"
            )
        return meta

    def restore(self, step: int, template: Any, shardings: Any = None) -> Any:
        """Checkpoint ``step``'s state, restored into the structure, shapes and dtypes of
        ``template`` (a state of the same stage and config, concrete or abstract).

        Raises ``DamagedCheckpoint`` when the files cannot be read or an array differs
        from its digest or holds NaN or infinity, ``StateStructureMismatch`` when arrays of
        ``template`` are not in the checkpoint, ``CheckpointError`` when the arrays do not
        fit ``template`` otherwise.

        ``shardings`` (a pytree like ``template`` of ``jax.sharding.Sharding``, e.g.
        ``distributed.state_shardings``) restores each array straight into its place on
        a mesh, whatever the mesh it was saved from; without it the arrays come back on
        this process's first device (also whatever the devices it was saved from).
        """
        self._require(step)
        abstract = jax.tree.map(_data_struct, template)
        # Always name the target devices: Orbax otherwise reuses the saved shardings,
        # which fail on another set of devices.
        local = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
        targets = jax.tree.map(lambda _: local, abstract) if shardings is None else shardings
        abstract = jax.tree.map(
            lambda leaf, sharding: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding),
            abstract,
            targets,
        )
        self._check_stored_shapes(step, abstract)
        try:
            try:
                restored = self._manager.restore(
                    step, args=ocp.args.Composite(state=ocp.args.StandardRestore(abstract))
                )["state"]
            except ValueError as err:
                if "structures do not match" not in str(err):
                    raise
                restored = self._restore_by_name(step, abstract)
        except Exception as err:  # noqa: BLE001 - re-raised with the path and the cause
            raise DamagedCheckpoint(
                f"checkpoint {self.path(step)} cannot be restored (damaged or incomplete files): "
                f"{type(err).__name__}: {_first_line(err)}"
            ) from err
        check_matches(restored, abstract, self.path(step))
        check_intact(restored, renamed_digests(self._meta(step).get("digests")), self.path(step))
        if shardings is not None:
            return keys_from_data(restored, template)
        # Orbax returns arrays committed to a device; fresh states are uncommitted, and
        # jit compiles separately for each, so a resumed run would recompile its chunks.
        restored = jax.tree.map(lambda x: jnp.asarray(np.asarray(x)), restored)
        return keys_from_data(restored, template)

    def close(self) -> None:
        self._manager.close()

    def set_aside(self, steps: list[int], destination: Path) -> Path:
        """Moves checkpoints ``steps`` into ``destination`` (a new directory; its number
        gets a ``~K`` suffix if taken) and forgets them; returns the directory."""
        destination, number = Path(destination), 2
        while destination.exists():
            destination = destination.with_name(f"{destination.name.split('~')[0]}~{number}")
            number += 1
        destination.mkdir(parents=True)
        for step in steps:
            self.path(step).rename(destination / str(step))
        self._manager.reload()
        return destination

    def _restore_by_name(self, step: int, abstract: Any) -> Any:
        """The stored arrays, matched to ``abstract``'s leaves by name.

        For checkpoints written before an array was renamed (``integrity.RENAMED_ARRAYS``), and
        before a state gained an optional field that is None in this run (``PPOState.curriculum``, ``EnvState.board`` without a board mix): the
        tree on disk lacks that field, which has no arrays, so Orbax's structure check
        fails although every array is there.
        """
        stored = self._manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore()))["state"]
        by_name = {integrity.leaf_name(path): leaf for path, leaf in jax.tree_util.tree_leaves_with_path(stored)}
        names = [integrity.leaf_name(path) for path, _ in jax.tree_util.tree_leaves_with_path(abstract)]
        missing = [name for name in names if stored_array(by_name, name) is None]
        if missing:
            raise ValueError(f"arrays missing from the checkpoint: {', '.join(missing[:5])}")
        return jax.tree.unflatten(jax.tree.structure(abstract), [stored_array(by_name, name) for name in names])

    def stored_arrays(self, step: int) -> dict[str, Any]:
        """``{array name: its metadata (shape, dtype)}`` of checkpoint ``step``'s state, read
        from its metadata alone; a ``DamagedCheckpoint`` when that is unreadable."""
        self._require(step)
        try:
            stored = self._manager.item_metadata(step)["state"]
            stored_leaves = jax.tree_util.tree_leaves_with_path(stored)
        except Exception as err:  # noqa: BLE001 - unreadable metadata means a damaged checkpoint
            raise DamagedCheckpoint(
                f"checkpoint {self.path(step)} cannot be restored: its array metadata is unreadable "
                f"(damaged?): {type(err).__name__}: {_first_line(err)}"
            ) from err
        return {integrity.leaf_name(path): leaf for path, leaf in stored_leaves}

    def _check_stored_shapes(self, step: int, abstract: Any) -> None:
        """Compares the arrays on disk with ``abstract`` before reading them, so a
        checkpoint of another state (``StateStructureMismatch``), board or network fails
        with the array's name."""
        on_disk = self.stored_arrays(step)
        missing = missing_arrays(on_disk, abstract)
        if missing:
            raise StateStructureMismatch(
                f"checkpoint {self.path(step)} holds a state of another structure: {missing[0]}"
                + (f" and {len(missing) - 1} more arrays of this run's state are" if len(missing) > 1 else " is")
                + " not in it (another optimizer, or a setting that shapes the state?)"
            )
        for path, want in jax.tree_util.tree_leaves_with_path(abstract):
            got = stored_array(on_disk, integrity.leaf_name(path))
            if got is not None and (tuple(got.shape) != want.shape or got.dtype != want.dtype):
                raise CheckpointError(
                    f"checkpoint {self.path(step)} cannot be restored into this run's state: "
                    f"{integrity.leaf_name(path)} is {got.dtype}{list(got.shape)} in the checkpoint, this run "
                    f"expects {want.dtype}{list(want.shape)} (a different board, network or batch size)"
                )

    def _require(self, step: int) -> None:
        if step not in self.steps:
            raise CheckpointError(f"no checkpoint {step} in {self.directory}; there are {self.steps}")


def _tracked(results: dict[str, Any]) -> dict[str, float]:
    """The figures of an evaluation that a checkpoint keeps: its win rate."""
    return {WIN_RATE: float(results[WIN_RATE])}


def unknown_config_fields(saved: dict[str, Any]) -> list[str]:
    """``section.field`` (or ``section``) of every entry of a stored config (``config.to_dict``'s
    form) that this msjax's ``ExperimentConfig`` does not have, the fields of earlier msjax
    (``config.OLD_FIELDS``: retired or renamed) aside."""
    known = config_lib.to_dict(config_lib.ExperimentConfig())
    earlier = {f"{section}.{field}" for section, field in config_lib.OLD_FIELDS}
    unknown = []
    for section, values in saved.items():
        if section not in known:
            unknown.append(section)
        elif isinstance(values, dict):
            unknown += [f"{section}.{field}" for field in values if field not in known[section]]
    return [name for name in unknown if name not in earlier]


def _first_line(err: BaseException) -> str:
    """The first line of an error's text (TensorStore's run to dozens of lines)."""
    text = str(err).strip()
    return text.splitlines()[0][:300] if text else ""


Loaded = TypeVar("Loaded")


def newest_intact(
    checkpoints: "Checkpoints", steps: list[int], load: Callable[[int], Loaded], say: Callable[[str], None]
) -> tuple[int, Loaded]:
    """``(step, load(step))`` for the first of ``steps`` whose ``load`` raises no
    ``DamagedCheckpoint``; each damaged step skipped is named in one line to ``say``.

    Raises:
      DamagedCheckpoint: every one of ``steps`` is damaged (each named).
    """
    damaged = []
    for step in steps:
        try:
            loaded = load(step)
        except DamagedCheckpoint as err:
            damaged.append(err)
            continue
        for err in damaged:
            say(f"{err}; using step {step}, the newest intact checkpoint")
        return step, loaded
    raise DamagedCheckpoint(
        f"no intact checkpoint in {checkpoints.directory}: " + "; ".join(str(err) for err in damaged)
    )


def check_compatible(saved: config_lib.ExperimentConfig, current: config_lib.ExperimentConfig) -> list[str]:
    """Differences between a checkpoint's config and the current one that a resume allows.

    Raises ``CheckpointError`` naming every field that makes the checkpoint unusable:
    the game (``env.*``), the network (``model.*``) and the batch sizes of the stages'
    boards in play. Other differences (e.g. logging, evaluation, learning rate) are
    returned, so the caller can report them.
    """
    changed = config_lib.differences(saved, current)
    # the games in play of every stage fix the shapes of its state
    shape_fields = [stage.setting("num_envs") for stage in stages_lib.STAGES]
    fatal = [line for line in changed if line.startswith(("env.", "model.")) or line.split(":")[0] in shape_fields]
    if fatal:
        raise CheckpointError(
            "the checkpoint was trained with a different game, network or batch size: "
            + "; ".join(fatal)
        )
    return changed

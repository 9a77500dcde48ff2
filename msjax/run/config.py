"""Experiment configs: typed, frozen sections loaded from ``configs/*.py`` and overridden
from the command line.

An ``ExperimentConfig`` groups one frozen dataclass per concern (``env``, ``model``,
``ppo``, ``imitation``, ``selfplay``, ``run``, ``curriculum``); each section validates
itself when built, so a bad value fails with a ``ValueError`` that names the field. A config file is a Python module
whose ``get_config()`` returns an ``ExperimentConfig`` (the Flax examples' convention).
Overrides such as ``ppo.lr=1e-4`` or ``model.channels=(32,32)`` are parsed to the
field's declared type and applied with ``dataclasses.replace``, so they are validated
like the file's own values. ``to_dict``/``from_dict`` round-trip a config through JSON
for the run directory and checkpoints.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import json
import types
import typing
from pathlib import Path
from typing import Any, Sequence

from msjax.run import files as runfiles
from msjax.checks import Allowed, check_fields, ints, numbers
from msjax.stages.curriculum import CurriculumConfig, validate_with_env
from msjax.env import EnvConfig
from msjax.stages.imitation import ImitationConfig
from msjax.models import ModelConfig
from msjax.stages.ppo import PPOConfig
from msjax.stages.selfplay import SelfPlayConfig

CONFIGS_DIR = Path(__file__).resolve().parents[2] / "configs"


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """How a run is driven: seeding, chunking, evaluation, checkpoints and logging.

    Attributes:
      seed: seeds everything (network init, boards, sampling, evaluation boards).
      chunk_updates: updates per compiled chunk; Python sees only chunk boundaries, so
        evaluation and checkpoints happen at the first boundary past their interval.
      eval_every_updates: evaluate on fresh boards every this many updates (0 = only at
        the end of each stage).
      eval_episodes: games per periodic evaluation.
      final_eval_episodes: games of the evaluation printed at the end of the run.
      eval_batch_size: boards played together during evaluation.
      checkpoint_every_updates: save a checkpoint every this many updates (0 = only at
        evaluations, stage ends and Ctrl-C).
      keep_checkpoints: most recent checkpoints kept (the best by evaluation win rate is
        kept as well).
      workdir: the run directory used when ``--workdir`` is not given.
      tensorboard: also write TensorBoard event files under ``workdir/tb``.
      progress_bar: show a tqdm progress bar.
      num_devices: devices the training stages run on, data-parallel (0 = all devices of
        every process); each enabled stage's ``num_envs`` must divide by it.
      device_memory_gib: device memory each compiled chunk must fit in, GiB, checked
        before the first update (``msjax.run.memory.check_fits``); 0 = what the device says
        it has (``memory_stats()``: accelerators only, no check on the CPU), >= 0.
      init_from: a run directory or one checkpoint whose network parameters start the
        run's first stage (a warm start: e.g. a 16x16 agent from an 8x8 one; the network
        is fully convolutional); its ``model`` section and observation channels must be
        this run's, except that a plain network (``model.recycles=0``) may start a
        recycling one (``runcontrol.warm_start_params``). "" = fresh parameters. Ignored
        when resuming.
    """

    seed: int = 0
    chunk_updates: int = 10
    eval_every_updates: int = 50
    eval_episodes: int = 500
    final_eval_episodes: int = 2000
    eval_batch_size: int = 1000
    checkpoint_every_updates: int = 100
    keep_checkpoints: int = 3
    workdir: str = "runs/default"
    tensorboard: bool = True
    progress_bar: bool = True
    num_devices: int = 0
    device_memory_gib: float = 0.0
    init_from: str = ""

    def __post_init__(self):
        check_fields(self, (
            (ints(0), ("seed", "eval_every_updates", "checkpoint_every_updates", "num_devices")),
            (ints(1), ("chunk_updates", "eval_episodes", "final_eval_episodes", "eval_batch_size", "keep_checkpoints")),
            (numbers(0), ("device_memory_gib",)),
            (Allowed("a non-empty path", lambda value: isinstance(value, str) and bool(value)), ("workdir",)),
            (Allowed("a path (a run or a checkpoint) or ''", lambda value: isinstance(value, str)), ("init_from",)),
        ))


@dataclasses.dataclass(frozen=True)
class ExperimentConfig:
    """One experiment: the game, the network, the training stages and the run.

    Frozen and hashable (every field is), so sections pass to jitted code as static
    arguments.
    """

    env: EnvConfig = EnvConfig()
    model: ModelConfig = ModelConfig()
    ppo: PPOConfig = PPOConfig()
    imitation: ImitationConfig = ImitationConfig()
    selfplay: SelfPlayConfig = SelfPlayConfig()
    run: RunConfig = RunConfig()
    curriculum: CurriculumConfig = CurriculumConfig()

    def __post_init__(self):
        for name, section_type in SECTION_TYPES.items():
            value = getattr(self, name)
            if not isinstance(value, section_type):
                raise ValueError(
                    f"ExperimentConfig.{name} must be a {section_type.__name__}, got {type(value).__name__}"
                )
        validate_with_env(self.curriculum, self.env)
        if not self.ppo.enabled:
            if not (self.imitation.enabled or self.selfplay.enabled):
                raise ValueError(
                    "ppo.enabled=False needs imitation.enabled=True or selfplay.enabled=True: a run plays at least "
                    "one stage"
                )
            if self.curriculum.enabled:
                raise ValueError("ppo.enabled=False with curriculum.enabled=True: only the PPO stage plays a curriculum")
        if self.selfplay.enabled and self.env.boards:
            raise ValueError(
                "selfplay.enabled=True needs env.boards=() (one board size): the network search reads whole boards"
            )
        if self.model.carry_beliefs:
            if self.selfplay.enabled:
                raise ValueError(
                    "model.carry_beliefs=True needs selfplay.enabled=False: the network search plays each move from "
                    "a zero prior"
                )
            if self.ppo.enabled:
                raise ValueError(
                    "model.carry_beliefs=True needs ppo.enabled=False: the PPO stage plays each move from a zero prior"
                )
            problem = self.imitation.belief_carry_problem()
            if problem:
                raise ValueError(f"model.carry_beliefs=True needs {problem}")


SECTION_TYPES: dict[str, type] = {field.name: type(field.default) for field in dataclasses.fields(ExperimentConfig)}
"""Each section of an ``ExperimentConfig`` and its config class (read from the fields)."""


# ----------------------------------------------------------------------------- files


def load_config(path: str | Path) -> ExperimentConfig:
    """Imports a config file and returns its ``get_config()``.

    ``path`` is a ``.py`` file, or the bare name of one in the repository's ``configs/``
    (``"small"`` finds ``configs/small.py``).
    """
    path = Path(path)
    if not path.exists() and path.suffix == "" and (CONFIGS_DIR / f"{path.name}.py").exists():
        path = CONFIGS_DIR / f"{path.name}.py"
    if path.is_dir():
        raise ValueError(f"config file {str(path)!r} is a directory; name a .py file (configs/small.py) or a name in configs/ (small)")
    if not path.is_file():
        raise FileNotFoundError(f"config file {str(path)!r} not found")
    if path.suffix != ".py":
        raise ValueError(f"config file {str(path)!r} must be a Python file ending in .py, with a get_config() function")
    spec = importlib.util.spec_from_file_location(f"msjax_config_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        raise ValueError(f"config file {str(path)!r} line {err.lineno}: {err.msg}") from err
    except Exception as err:  # noqa: BLE001 - any failure while importing the user's file
        raise ValueError(f"config file {str(path)!r} cannot be imported: {type(err).__name__}: {err}") from err
    if not hasattr(module, "get_config"):
        raise ValueError(f"config file {str(path)!r} has no get_config() function")
    cfg = module.get_config()
    if not isinstance(cfg, ExperimentConfig):
        raise ValueError(
            f"get_config() in {str(path)!r} returned a {type(cfg).__name__}, not an ExperimentConfig"
        )
    return cfg


def to_dict(cfg: ExperimentConfig) -> dict[str, dict[str, Any]]:
    """Plain JSON-ready nested dict (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(cfg)))


@dataclasses.dataclass(frozen=True)
class Retired:
    """A field msjax no longer has: a saved config holding it at ``no_op`` (the value that
    made it do nothing, its former default) loads as if it were absent; any other value
    raises, since the run cannot be reproduced. ``page``: the experiment that measured it."""

    no_op: Any
    page: str


@dataclasses.dataclass(frozen=True)
class Renamed:
    """A field msjax now calls ``to`` (in the same section): a saved config's value under
    the old name loads under the new one."""

    to: str


_MINE_COUNT_PAGE = "docs/experiments/031-the-mine-count-in-the-observation-and-global-pooling.md"
_EXACT_TARGETS_PAGE = "docs/experiments/075-exact-targets-and-training-time-symmetries-in-the-imitation.md"
_SEARCH_TEACHER_PAGE = "docs/experiments/093-the-16x16-recipe-s-scaling-curve-and-the-search-player-as-its-teacher.md"

OLD_FIELDS: dict[tuple[str, str], Retired | Renamed] = {
    ("imitation", "pass_mine_weight"): Retired(0.0, "docs/experiments/025-count-planes-in-the-observation.md"),
    ("imitation", "hardest_states"): Retired(0, "docs/experiments/057-the-gradient-on-the-hardest-states.md"),
    ("imitation", "augment_symmetries"): Retired(False, _EXACT_TARGETS_PAGE),
    ("imitation", "mine_targets"): Retired("sampled", _EXACT_TARGETS_PAGE),
    ("imitation", "guess_targets"): Retired("solver", _EXACT_TARGETS_PAGE),
    ("imitation", "optimizer"): Retired("adamw", "docs/experiments/023-muon-on-the-kernels.md"),
    ("env", "obs_density"): Retired(False, _MINE_COUNT_PAGE),
    ("model", "global_pool_after"): Retired((), _MINE_COUNT_PAGE),
    ("imitation", "solver_moves_per_label"): Retired(1, "docs/experiments/058-a-deeper-network-six-layers.md"),
    ("imitation", "play_lookahead"): Retired(0, _SEARCH_TEACHER_PAGE),
    ("imitation", "play_lookahead_depth"): Retired(0, _SEARCH_TEACHER_PAGE),
    ("imitation", "play_endgame_layouts"): Retired(0, _SEARCH_TEACHER_PAGE),
    ("model", "norm"): Retired("group", "docs/experiments/054-two-hypotheses-for-the-16x16-gap-ruled-out.md"),
    ("model", "block_order"): Retired("conv_norm_relu", "docs/experiments/042-the-core-spec-s-items-on-configs-small-py.md"),
    ("imitation", "solver_probabilities"): Retired("bp", _EXACT_TARGETS_PAGE),
    ("ppo", "total_updates"): Renamed("num_updates"),
    ("ppo", "steps_per_env"): Renamed("steps_per_update"),
}
"""Fields of configs saved by earlier msjax (a checkpoint's, a run's config.json), by
``(section, field)``: what each is now. ``from_dict`` reads them so runs saved before a
removal or a rename still load and resume."""


def _as_json(value: Any) -> Any:
    """``value`` as JSON reads it back (tuples become lists), for comparing a saved value."""
    return json.loads(json.dumps(value))


def _current_fields(name: str, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` of config section ``name`` in today's field names: renamed fields under
    their new names, retired fields at their no-op value dropped (``OLD_FIELDS``); a
    retired field at any other value raises ``ValueError``."""
    current = {}
    for key, value in values.items():
        old = OLD_FIELDS.get((name, key))
        if isinstance(old, Renamed):
            if old.to in values:
                raise ValueError(f"{name}.{key} and {name}.{old.to} are one setting (its old and new name); give one")
            current[old.to] = value
        elif isinstance(old, Retired):
            if _as_json(value) != _as_json(old.no_op):
                raise ValueError(
                    f"{name}.{key}={value!r}: this msjax no longer has this setting (measured and removed: "
                    f"{old.page}); only runs saved with {old.no_op!r}, its former default, still load"
                )
        else:
            current[key] = value
    return current


def from_dict(data: dict[str, dict[str, Any]]) -> ExperimentConfig:
    """Inverse of ``to_dict``; unknown sections or fields raise ``ValueError``.

    Fields missing from ``data`` take their defaults; fields of earlier msjax
    (``OLD_FIELDS``) are read under today's names.
    """
    unknown = set(data) - set(SECTION_TYPES)
    if unknown:
        raise ValueError(f"unknown config sections {sorted(unknown)}; valid: {list(SECTION_TYPES)}")
    sections = {}
    for name, section_type in SECTION_TYPES.items():
        values = _current_fields(name, dict(data.get(name, {})))
        hints = _field_types(section_type)
        unknown = set(values) - set(hints)
        if unknown:
            raise ValueError(
                f"unknown keys {sorted(unknown)} in config section {name!r}; valid keys: {list(hints)}"
            )
        kwargs = {key: _coerce(value, hints[key], f"{name}.{key}") for key, value in values.items()}
        sections[name] = section_type(**kwargs)
    return ExperimentConfig(**sections)


def save_json(cfg: ExperimentConfig, path: str | Path) -> None:
    """Writes ``cfg`` as JSON to ``path``, atomically (never half a file)."""
    runfiles.write_json_atomic(path, to_dict(cfg))


def load_json(path: str | Path) -> ExperimentConfig:
    """The config saved in ``path``; a ``ValueError`` naming the file if it is not JSON."""
    return from_dict(runfiles.read_json(path))


def differences(old: ExperimentConfig, new: ExperimentConfig) -> list[str]:
    """``section.field: old -> new`` for every field that differs."""
    old_dict, new_dict = to_dict(old), to_dict(new)
    return [
        f"{section}.{key}: {old_dict[section][key]!r} -> {new_dict[section][key]!r}"
        for section in SECTION_TYPES
        for key in new_dict[section]
        if old_dict[section].get(key) != new_dict[section][key]
    ]


# ----------------------------------------------------------------------------- overrides


def valid_keys() -> list[str]:
    """Every overridable ``section.field``."""
    return [f"{name}.{key}" for name, kind in SECTION_TYPES.items() for key in _field_types(kind)]


def apply_overrides(cfg: ExperimentConfig, overrides: Sequence[str]) -> ExperimentConfig:
    """``cfg`` with each ``"section.field=value"`` applied (a later one wins).

    Values are parsed to the field's declared type: ints, floats, bools
    (``true``/``false``), strings, tuples (``(32,64)`` or ``32,64``) and ``None`` where the
    field allows it. An unknown key or a value of the wrong type raises ``ValueError``
    listing the section's valid keys or the expected type. A section is rebuilt once with
    all its overrides, so fields that constrain each other (``env.H`` and
    ``env.mine_count``) can change together; a value the section rejects raises the
    section's own ``ValueError``.
    """
    changes: dict[str, dict[str, Any]] = {}
    for override in overrides:
        key, sep, text = override.partition("=")
        key = key.strip().removeprefix("--").removeprefix("config.")
        if not sep:
            raise ValueError(f"override {override!r} must look like section.field=value, e.g. ppo.lr=1e-4")
        section_name, field_name, value = _parse_override(key, text.strip())
        changes.setdefault(section_name, {})[field_name] = value
    sections = {}
    for section_name, fields in changes.items():
        try:
            sections[section_name] = dataclasses.replace(getattr(cfg, section_name), **fields)
        except ValueError as err:
            given = ", ".join(f"{section_name}.{name}={value!r}" for name, value in fields.items())
            raise ValueError(f"override {given}: {err}") from err
    # One replace, so sections that must agree (env.boards, curriculum.promote_at) change together.
    return dataclasses.replace(cfg, **sections)


def _parse_override(key: str, text: str) -> tuple[str, str, Any]:
    """``(section, field, value)`` of one ``key=text`` override, the value typed."""
    section_name, _, field_name = key.partition(".")
    if section_name not in SECTION_TYPES:
        raise ValueError(f"unknown config key {key!r}: sections are {list(SECTION_TYPES)}")
    hints = _field_types(SECTION_TYPES[section_name])
    if field_name not in hints:
        raise ValueError(
            f"unknown config key {key!r}; valid keys of {section_name!r}: "
            + ", ".join(f"{section_name}.{name}" for name in hints)
        )
    return section_name, field_name, _coerce(_literal(text), hints[field_name], key, text)


def _field_types(section_type: type) -> dict[str, Any]:
    hints = typing.get_type_hints(section_type)
    return {f.name: hints[f.name] for f in dataclasses.fields(section_type)}


def _literal(text: str) -> Any:
    """A Python literal when ``text`` is one, else the text itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def _coerce(value: Any, hint: Any, key: str, text: str | None = None) -> Any:
    """``value`` converted to ``hint`` (int, float, bool, str, tuple[...], a NamedTuple,
    unions with None)."""
    text = str(value) if text is None else text
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        if isinstance(value, str) and value.lower() in ("none", "null") and type(None) in args:
            return None
        for arm in args:
            if arm is type(None):
                continue
            try:
                return _coerce(value, arm, key, text)
            except ValueError:
                pass
        raise ValueError(f"{key}={text!r}: expected {_type_name(hint)}")
    if hint is bool:
        if isinstance(value, bool):
            return value
        if str(value).lower() in _TRUE | _FALSE:
            return str(value).lower() in _TRUE
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif hint is str:
        return value if isinstance(value, str) else text
    elif origin is tuple:
        items = value if isinstance(value, (tuple, list)) else (value,)
        if args and args[-1] is Ellipsis:
            return tuple(_coerce(item, args[0], key) for item in items)
        if len(items) == len(args):
            return tuple(_coerce(item, arm, key) for item, arm in zip(items, args))
    elif hint is Any:
        return value
    elif isinstance(hint, type) and issubclass(hint, tuple) and hasattr(hint, "_fields"):  # a NamedTuple
        items = value if isinstance(value, (tuple, list)) else (value,)
        fields = typing.get_type_hints(hint)
        if len(items) == len(fields):
            return hint(*(_coerce(item, arm, key) for item, arm in zip(items, fields.values())))
    raise ValueError(f"{key}={text!r}: expected {_type_name(hint)}")


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) if typing.get_origin(hint) is None else str(hint)

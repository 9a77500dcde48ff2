"""A training stage as one object: what the runner, the checkpoints, the resume and the
memory report need to know about it.

Every stage's config section is a ``StageConfig``: the fields all stages share (whether it
plays, its updates, games in parallel, steps per game per update, the optimizer, the
micro-batch size), each under one name, checked in one place. A ``StageSpec`` names the
stage and its config section and says how to build its state and its compiled chunk's
function from an experiment config; every other fact (its updates, games per update,
micro-batch setting, the abstract state) is read through it from the section's shared
fields. Each stage module defines its spec (``imitation.STAGE``, ``ppo.STAGE``) and
``msjax.stages.registry`` lists them in the order a run plays them.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import jax

from msjax.checks import check_fields


# ``cfg`` below is an ``msjax.run.config.ExperimentConfig`` (a layer above this one, so it is
# only read through its attributes here).


@dataclasses.dataclass(frozen=True)
class StageConfig:
    """The fields every training stage's config has (a stage's config subclasses this,
    changing the defaults it needs).

    Attributes:
      enabled: whether a run plays the stage.
      num_updates: updates of the whole stage (also the cosine-decay horizon), >= 1.
      num_envs: games played in parallel (split over the devices), >= 1.
      steps_per_update: steps of each game per update, >= 1; an update plays
        ``num_envs * steps_per_update`` moves.
      lr: peak learning rate, > 0.
      weight_decay: AdamW's decoupled weight decay, >= 0.
      max_grad_norm: global gradient-norm clip, > 0.
      anneal_lr: cosine-decay the learning rate to 0 over ``num_updates``; else constant.
      aux_mine_weight: weight of the mine head's BCE, >= 0.
      microbatch_size: the gradient is accumulated over micro-batches of this many states
        (the same gradient in less memory); 0: off. What it must divide is the stage's.
      random_first_click_share: share of new games opened at a uniformly random cell
        before the stage's player sees them (``batchplay.random_first_clicks``), in [0, 1];
        the rest open where their player clicks. 0 (off) by default: measured worse on
        configs/small.py (docs/experiments/042-*).
    """

    enabled: bool = True
    num_updates: int = 1000
    num_envs: int = 256
    steps_per_update: int = 1
    lr: float = 1e-3
    weight_decay: float = 1e-4
    max_grad_norm: float = 1.0
    anneal_lr: bool = True
    aux_mine_weight: float = 0.1
    microbatch_size: int = 0
    random_first_click_share: float = 0.0

    def __post_init__(self):
        check_stage_fields(self)

    @property
    def env_steps_per_update(self) -> int:
        """Game steps of one update: games x steps per game."""
        return self.num_envs * self.steps_per_update


def check_stage_fields(stage_cfg: StageConfig) -> None:
    """Raises ``ValueError`` (``"PPOConfig.lr=-1 must be > 0"``) for the first shared field
    outside its range."""
    check_fields(stage_cfg, (
        ("a bool", ("enabled", "anneal_lr")),
        ("an int >= 1", ("num_updates", "num_envs", "steps_per_update")),
        ("> 0", ("lr", "max_grad_norm")),
        (">= 0", ("weight_decay", "aux_mine_weight")),
        ("in [0, 1]", ("random_first_click_share",)),
    ))


@dataclasses.dataclass(frozen=True)
class StageSpec:
    """One training stage.

    Attributes:
      name: the stage's name, as checkpoints and metrics store it (``"ppo"``).
      section: the ``ExperimentConfig`` field holding the stage's config (``"ppo"``).
      init_state: ``(key, cfg, params or None) -> state``: a fresh state of the stage,
        with ``params`` (the previous stage's, or a warm start) or new ones.
      chunk_fn: ``(cfg, chunk_updates) -> (state -> (state, metrics))``, the unjitted
        chunk of ``chunk_updates`` updates.
      reads: the ``ExperimentConfig`` sections that the state and the chunk depend on
        (two configs equal on them build the same program).
    """

    name: str
    section: str
    init_state: Callable[[jax.Array, Any, Any], Any]
    chunk_fn: Callable[[Any, int], Callable]
    reads: tuple[str, ...]

    def config(self, cfg: Any) -> StageConfig:
        """The stage's section of ``cfg``."""
        return getattr(cfg, self.section)

    def enabled(self, cfg: Any) -> bool:
        """Whether a run of ``cfg`` plays the stage."""
        return self.config(cfg).enabled

    def setting(self, field: str) -> str:
        """``"ppo.num_updates"``: a field of the section as the command line names it."""
        return f"{self.section}.{field}"

    def program_config(self, cfg: Any) -> tuple:
        """The sections of ``cfg`` in ``reads``: a key for caching compiled chunks."""
        return tuple(getattr(cfg, section) for section in self.reads)

    def abstract_state(self, cfg: Any) -> Any:
        """The shapes and dtypes (no values) of the stage's state under ``cfg``
        (``jax.eval_shape`` of ``init_state``; computed once per config)."""
        return _abstract_state(self, cfg)


@functools.lru_cache(maxsize=64)
def _abstract_state(stage: StageSpec, cfg: Any) -> Any:
    return jax.eval_shape(lambda key: stage.init_state(key, cfg, None), jax.random.key(0))

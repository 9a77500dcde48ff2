"""A training stage as one object: what the runner, the checkpoints, the resume and the
memory report need to know about it.

A ``StageSpec`` names the stage and its config section and says how to build its state
and its compiled chunk's function from an experiment config; every other fact (its
update target, games per update, micro-batch setting, the abstract state) is read
through it. Each stage module defines its spec (``imitation.STAGE``, ``ppo.STAGE``) and
``msjax.stages.registry`` lists them in the order a run plays them.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import jax


# ``cfg`` below is an ``msjax.run.config.ExperimentConfig`` (a layer above this one, so it is
# only read through its attributes here).


@dataclasses.dataclass(frozen=True)
class StageSpec:
    """One training stage.

    Attributes:
      name: the stage's name, as checkpoints and metrics store it (``"ppo"``).
      section: the ``ExperimentConfig`` field holding the stage's config (``"ppo"``).
      init_state: ``(key, cfg, params or None) -> state``: a fresh state of the stage,
        with ``params`` (the previous stage's, or a warm start) or new ones.
      chunk_fn: ``(cfg, num_updates) -> (state -> (state, metrics))``, the unjitted
        chunk of ``num_updates`` updates.
      enabled: ``cfg -> bool``, whether a run of ``cfg`` plays the stage.
      target_field: the section's field holding the stage's number of updates.
      games_field: the section's field holding the games played in parallel (split over
        the devices, and fixing the state's shapes).
      steps_field: the section's field holding steps of each game per update.
      microbatch_field: the section's field that shrinks the chunk's memory (gradient
        accumulation) without changing its data per update.
      reads: the ``ExperimentConfig`` sections that the state and the chunk depend on
        (two configs equal on them build the same program).
    """

    name: str
    section: str
    init_state: Callable[[jax.Array, Any, Any], Any]
    chunk_fn: Callable[[Any, int], Callable]
    enabled: Callable[[Any], bool]
    target_field: str
    games_field: str
    steps_field: str
    microbatch_field: str
    reads: tuple[str, ...]

    def config(self, cfg: Any) -> Any:
        """The stage's section of ``cfg``."""
        return getattr(cfg, self.section)

    def setting(self, field: str) -> str:
        """``"ppo.total_updates"``: a field of the section as the command line names it."""
        return f"{self.section}.{field}"

    def total_updates(self, cfg: Any) -> int:
        """Updates the stage runs under ``cfg``."""
        return getattr(self.config(cfg), self.target_field)

    def num_games(self, cfg: Any) -> int:
        """Games the stage plays in parallel under ``cfg``."""
        return getattr(self.config(cfg), self.games_field)

    def env_steps_per_update(self, cfg: Any) -> int:
        """Game steps of one update: games x steps per game."""
        return self.num_games(cfg) * getattr(self.config(cfg), self.steps_field)

    def microbatch_size(self, cfg: Any) -> int:
        """The stage's micro-batch setting under ``cfg`` (0: off)."""
        return getattr(self.config(cfg), self.microbatch_field)

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

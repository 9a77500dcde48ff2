"""The training stages a run can play, in order: the one table of stage names.

Adding a stage is a module that defines its ``StageSpec`` and one entry here. Each stage
draws its own PRNG stream from ``run.seed`` (``stage_keys``).
"""

from __future__ import annotations

import jax

from msjax.stages import imitation, ppo
from msjax.stages.spec import StageSpec

STAGES: tuple[StageSpec, ...] = (imitation.STAGE, ppo.STAGE)
"""Every stage, in the order a run plays those it enables."""


def stage_named(name: str) -> StageSpec:
    """The stage called ``name``.

    Raises:
      ValueError: no stage has that name (the message lists them).
    """
    for stage in STAGES:
        if stage.name == name:
            return stage
    raise ValueError(f"stage={name!r} must be one of {[stage.name for stage in STAGES]}")


def run_stages(cfg) -> list[StageSpec]:
    """The stages a run of ``cfg`` (an ``ExperimentConfig``) plays, in order."""
    return [stage for stage in STAGES if stage.enabled(cfg)]


def stage_keys(seed: int) -> dict[str, jax.Array]:
    """Each stage's PRNG key (by name), split from ``seed``; the same whether or not a
    stage is enabled."""
    keys = jax.random.split(jax.random.key(seed), len(STAGES))
    return {stage.name: key for stage, key in zip(STAGES, keys)}

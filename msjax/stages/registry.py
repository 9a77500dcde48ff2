"""The training stages a run can play, in order: the one table of stage names.

Adding a stage is a module that defines its ``StageSpec`` and one entry here. Each stage
draws its own PRNG stream from ``run.seed`` (``stage_keys``).
"""

from __future__ import annotations

import zlib

import jax

from msjax.stages import imitation, ppo, selfplay
from msjax.stages.spec import StageSpec

STAGES: tuple[StageSpec, ...] = (imitation.STAGE, selfplay.STAGE, ppo.STAGE)
"""Every stage, in the order a run plays those it enables."""

SPLIT_KEYED = ("imitation", "ppo")
"""The stages whose keys are ``run.seed``'s key split in two, as they were before any other
stage existed: kept so, so that their runs stay bit-identical; every later stage's key is
folded in from its name (``stage_keys``)."""


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
    """Each stage's PRNG key (by name) from ``seed``; the same whether or not a stage is
    enabled, and whatever stages are added: the ``SPLIT_KEYED`` stages' keys are the split
    of ``seed``'s key in two, any other's ``jax.random.fold_in`` of it with the CRC-32 of
    the stage's name."""
    root = jax.random.key(seed)
    keys = dict(zip(SPLIT_KEYED, jax.random.split(root, len(SPLIT_KEYED))))
    for stage in STAGES:
        if stage.name not in keys:
            keys[stage.name] = jax.random.fold_in(root, zlib.crc32(stage.name.encode()))
    return keys

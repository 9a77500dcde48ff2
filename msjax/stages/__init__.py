"""The training stages: one module per stage (``imitation``, ``selfplay``, ``ppo``), each
defining its ``StageSpec``; ``registry`` lists them in the order a run plays them;
``batchplay`` holds what they do when they play a batch of games and learn from it;
``curriculum`` holds the curriculum levels that the PPO stage plays through; ``spec`` the
shared config fields of a stage (``StageConfig``) and the stage object (``StageSpec``)."""

from msjax.stages import batchplay, curriculum, imitation, ppo, registry, selfplay
from msjax.stages.registry import STAGES, run_stages, stage_keys, stage_named
from msjax.stages.spec import StageConfig, StageSpec

__all__ = [
    "STAGES",
    "StageConfig",
    "StageSpec",
    "batchplay",
    "curriculum",
    "imitation",
    "ppo",
    "registry",
    "run_stages",
    "selfplay",
    "stage_keys",
    "stage_named",
]

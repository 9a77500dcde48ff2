"""The training stages: one module per stage (``imitation``, ``ppo``), each defining its
``StageSpec``; ``registry`` lists them in the order a run plays them; ``batchplay`` holds
what both do when they play a batch of games and learn from it; ``gradient_states`` which
states of an imitation update enter its gradient step; ``curriculum`` holds the
curriculum levels that the PPO stage plays through."""

from msjax.stages import batchplay, curriculum, gradient_states, imitation, ppo, registry
from msjax.stages.registry import STAGES, run_stages, stage_keys, stage_named
from msjax.stages.spec import StageConfig, StageSpec

__all__ = [
    "STAGES",
    "StageConfig",
    "StageSpec",
    "batchplay",
    "curriculum",
    "gradient_states",
    "imitation",
    "ppo",
    "registry",
    "run_stages",
    "stage_keys",
    "stage_named",
]

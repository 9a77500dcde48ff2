"""8x8 boards with 10 mines and an opening start, sized for a 2-core CPU.

``python -m msjax.train --config configs/small.py`` finishes in about ten minutes on a
2-core CPU, compile included: imitation of the rule solver teaches the deductions, then
a short PPO stage fine-tunes on the game's own rewards. The target is >= 65% wins over
2,000 games (layer-1 rules with random guessing); the exact-probability player wins 90%.
"""

from msjax.config import ExperimentConfig, RunConfig
from msjax.env import EnvConfig
from msjax.imitation import ImitationConfig
from msjax.models import ModelConfig
from msjax.ppo import PPOConfig


def get_config() -> ExperimentConfig:
    return ExperimentConfig(
        env=EnvConfig(H=8, W=8, mine_count=10, guarantee_safe_neighborhood=True),
        model=ModelConfig(channels=(32, 64, 64)),
        imitation=ImitationConfig(enabled=True, num_envs=256, steps_per_update=16, num_updates=300, lr=1e-3),
        ppo=PPOConfig(
            num_envs=128,
            steps_per_env=32,
            mini_batches=4,
            ppo_epochs=2,
            lr=1e-4,
            frontier_mask_until_updates=0,
            total_updates=100,
        ),
        run=RunConfig(
            chunk_updates=10,
            eval_every_updates=50,
            eval_episodes=500,
            final_eval_episodes=2000,
            checkpoint_every_updates=50,
            workdir="runs/small",
        ),
    )

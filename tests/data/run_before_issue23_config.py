"""A tiny curriculum run (two padded boards, 8 games a stage), written by the code before
issue 23's renames, for tests/data/run_before_issue23."""
from msjax.run.config import ExperimentConfig, RunConfig
from msjax.curriculum import CurriculumConfig
from msjax.env import EnvConfig
from msjax.imitation import ImitationConfig
from msjax.models import ModelConfig
from msjax.ppo import PPOConfig


def get_config() -> ExperimentConfig:
    return ExperimentConfig(
        env=EnvConfig(H=5, W=5, boards=((4, 4, 2, 2), (5, 5, 3, 3))),
        curriculum=CurriculumConfig(enabled=True, promote_at=(0.0,)),
        model=ModelConfig(channels=(4,), value_hidden=4),
        imitation=ImitationConfig(enabled=True, num_envs=8, num_updates=2),
        ppo=PPOConfig(num_envs=8, steps_per_env=4, mini_batches=2, ppo_epochs=1, total_updates=2),
        run=RunConfig(chunk_updates=1, eval_every_updates=1, eval_episodes=8, final_eval_episodes=8,
                      eval_batch_size=8, checkpoint_every_updates=1, keep_checkpoints=1,
                      tensorboard=False, progress_bar=False),
    )

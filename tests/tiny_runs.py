"""Tiny configs and checkpoints for the runner's tests (4x4 boards, a one-layer net)."""

from pathlib import Path

import jax

from msjax import checkpoint as checkpoint_lib
from msjax import config as config_lib
from msjax.stages import ppo
from msjax.config import ExperimentConfig, RunConfig
from msjax.env import EnvConfig
from msjax.stages.imitation import ImitationConfig
from msjax.models import ModelConfig
from msjax.stages.ppo import PPOConfig

TINY = ExperimentConfig(
    env=EnvConfig(H=4, W=4, mine_count=2),
    model=ModelConfig(channels=(8,), value_hidden=8),
    ppo=PPOConfig(num_envs=16, steps_per_env=8, mini_batches=2, ppo_epochs=1, total_updates=4),
    imitation=ImitationConfig(enabled=False),
    run=RunConfig(
        chunk_updates=2,
        eval_every_updates=2,
        eval_episodes=32,
        final_eval_episodes=32,
        eval_batch_size=32,
        progress_bar=False,
    ),
)


def fresh_ppo_state(cfg: ExperimentConfig = TINY, seed: int = 0) -> ppo.PPOState:
    return ppo.init_ppo_state(jax.random.key(seed), cfg.env, cfg.model, cfg.ppo)


def saved_run(run_dir: Path, cfg: ExperimentConfig = TINY, steps=(1,), metrics=None) -> Path:
    """A run directory as training leaves it, holding untrained PPO states at ``steps``
    (``metrics[i]`` is the evaluation win rate recorded with ``steps[i]``, or None)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    config_lib.save_json(cfg, run_dir / "config.json")
    checkpoints = checkpoint_lib.Checkpoints(run_dir / "checkpoints", keep=cfg.run.keep_checkpoints)
    for i, step in enumerate(steps):
        win_rate = None if metrics is None else metrics[i]
        checkpoints.save(
            step,
            fresh_ppo_state(cfg, seed=step),
            stage="ppo",
            update=step,
            cfg=cfg,
            metrics=None if win_rate is None else {"win_rate": win_rate},
        )
    checkpoints.close()
    return run_dir

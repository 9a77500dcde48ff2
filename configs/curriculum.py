"""One agent for beginner, intermediate and expert: a curriculum 8x8x10 -> 16x16x40 -> 16x30x99.

Derives from expert.py (its network, PPO and imitation recipe), from scratch. Every board is
padded to 16x30 and played in one batch (``env.boards``), mine densities mixed in a band
around each standard count. Imitation warms up on 8x8; then PPO, and when the greedy
policy's win rate on the current board passes 30% the next board takes over, 20% of games
replaying earlier boards and 10% previewing the next: one compiled program for every level.
Micro-batches keep every chunk within a 16 GB card
(``python -m msjax memory configs/curriculum.py --config.model.conv_impl=xla``).
Time and win rate: GPU-scale, unmeasured. Tiny settings run the whole pipeline end to end in
one to two minutes on a 2-core CPU (they win no games, so stay on 8x8;
``tests/test_curriculum.py`` checks promotion on a scripted evaluation)::

    python -m msjax.train --config configs/curriculum.py --workdir runs/curriculum_tiny \\
        --config.imitation.num_envs=16 --config.imitation.num_updates=4 \\
        --config.ppo.num_envs=32 --config.ppo.steps_per_update=8 --config.ppo.mini_batches=2 \\
        --config.ppo.ppo_epochs=1 --config.ppo.num_updates=6 --config.model.residual=false \\
        --config.model.channels=16 --config.model.dtype=float32 --config.run.chunk_updates=2 \\
        --config.run.eval_every_updates=2 --config.run.eval_episodes=16 \\
        --config.run.final_eval_episodes=32 --config.run.eval_batch_size=16
"""

import dataclasses

from msjax.run.config import ExperimentConfig, apply_overrides, load_config
from msjax.env import EnvConfig, board_spec
from msjax.stages.curriculum import CurriculumConfig


def get_config() -> ExperimentConfig:
    cfg = apply_overrides(
        load_config("expert"),
        [
            "imitation.steps_per_update=16",  # its 8x8 warm-up: beginner.py's 16 moves an update
            "imitation.num_updates=2000",
            "imitation.microbatch_size=4096",
            "ppo.num_updates=8000",
            "run.eval_every_updates=100",
            "run.checkpoint_every_updates=250",
            "run.eval_episodes=2000",
            "run.eval_batch_size=2000",
            "run.workdir=runs/curriculum",
        ],
    )
    boards = (
        board_spec(8, 8, density_band=(0.12, 0.20)),  # 8..12 mines
        board_spec(16, 16, density_band=(0.12, 0.20)),  # 31..51 mines
        board_spec(16, 30, density_band=(0.15, 0.21)),  # 72..100 mines
    )
    curriculum = CurriculumConfig(
        enabled=True, promote_at=(0.30, 0.30), replay_fraction=0.2, preview_fraction=0.1, eval_mines=(10, 40, 99)
    )
    env = EnvConfig(H=16, W=30, guarantee_safe_neighborhood=True, boards=boards)
    return dataclasses.replace(cfg, env=env, curriculum=curriculum)

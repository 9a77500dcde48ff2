"""One agent for beginner, intermediate and expert: a curriculum 8x8x10 -> 16x16x40 -> 16x30x99.

Every board is padded to 16x30 and played in one batch (``env.boards``), each with mine
densities mixed in a band around its standard count (the seed: 12-20%; expert's own
20.6% is the top of its band). Training starts on 8x8; when the greedy policy's eval win
rate on the current board (at its standard mine count) passes the seed's threshold
(30%, the middle of its 25-35%), the next board takes over, while 20% of the games
replay the earlier boards and, before a promotion, 10% preview the next one. Only these
traced weights change, so one compiled program trains every level. Imitation of the rule
solver warms the network up on the first board; then PPO at the expert config's GPU
scale. Micro-batches bound the memory of each gradient step without changing its data
(the same gradient up to float rounding), so that every compiled chunk fits a 16 GB card
by XLA's memory analysis (``python -m msjax.memory configs/curriculum.py
--config.model.conv_impl=xla``; benchmarks/RESULTS.md).

On a 2-core CPU, tiny settings run the whole pipeline (imitation, PPO on the padded mix,
per-board evaluations, checkpoints) end to end in one to two minutes::

    python -m msjax.train --config configs/curriculum.py --workdir runs/curriculum_tiny \\
        --config.imitation.num_envs=16 --config.imitation.num_updates=4 \\
        --config.ppo.num_envs=32 --config.ppo.steps_per_env=8 --config.ppo.mini_batches=2 \\
        --config.ppo.ppo_epochs=1 --config.ppo.total_updates=6 --config.model.residual=false \\
        --config.model.channels=16 --config.model.dtype=float32 --config.run.chunk_updates=2 \\
        --config.run.eval_every_updates=2 --config.run.eval_episodes=16 \\
        --config.run.final_eval_episodes=32 --config.run.eval_batch_size=16

(A run this short wins no games, so it stays on 8x8; ``tests/test_curriculum.py`` checks
promotion, its log and its checkpoint on a scripted evaluation.)

Everything else is ``expert.py`` (its network, PPO and imitation recipe), with the
stages' lengths, micro-batches and evaluation sizes below.
"""

import dataclasses

from msjax.config import ExperimentConfig, apply_overrides, load_config
from msjax.env import EnvConfig, board_spec
from msjax.stages.curriculum import CurriculumConfig


def get_config() -> ExperimentConfig:
    cfg = apply_overrides(
        load_config("expert"),
        [
            "imitation.num_updates=2000",
            "imitation.microbatch_size=4096",
            "ppo.total_updates=8000",
            "run.eval_every_updates=100",
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

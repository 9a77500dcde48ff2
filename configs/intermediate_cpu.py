"""Intermediate (16x16, 40 mines, opening start), trained on a 2-core CPU within an hour.

Run configs/small.py first: this run starts from its 8x8 agent (``run.init_from``, a warm
start; the network is fully convolutional, so the same weights play any board size, and
the 8x8 agent already wins about 70% of 16x16 games). It then imitates the rule solver on
16x16 boards with small.py's recipe: 128 boards, half of them played by the network
itself (DAgger), every state labelled by the solver (its layer 1-2 proofs; its first
click before the first click; its own move, lightly weighted, elsewhere), at a lower
learning rate than from scratch; then a short PPO stage::

    python -m msjax.train --config configs/small.py              # -> runs/small
    python -m msjax.train --config configs/intermediate_cpu.py   # -> runs/intermediate_cpu

From scratch instead, the same network reached only 25% after 1500 updates (12 minutes).
Result, command and wall time of both runs: benchmarks/RESULTS.md, "Agents against their
teacher".
"""

from msjax.config import ExperimentConfig, RunConfig
from msjax.env import EnvConfig
from msjax.imitation import ImitationConfig
from msjax.models import ModelConfig
from msjax.ppo import PPOConfig


def get_config() -> ExperimentConfig:
    return ExperimentConfig(
        env=EnvConfig(H=16, W=16, mine_count=40, guarantee_safe_neighborhood=True),
        model=ModelConfig(channels=(64, 64, 64, 64), value_hidden=32, flag_actions=False),
        imitation=ImitationConfig(
            enabled=True,
            num_envs=128,
            steps_per_update=1,
            num_updates=6000,
            lr=1e-3,
            guess_weight=0.1,
            opening_weight=1.0,
            aux_mine_weight=0.1,
            label_max_layer=2,
            play_max_layer=4,
            learner_fraction=0.5,
        ),
        ppo=PPOConfig(
            num_envs=64,
            steps_per_env=32,
            mini_batches=4,
            ppo_epochs=2,
            lr=3e-5,
            ent_coef=0.001,
            frontier_mask_until_updates=20,
            total_updates=20,
        ),
        run=RunConfig(
            chunk_updates=50,
            eval_every_updates=1000,
            eval_episodes=300,
            final_eval_episodes=1000,
            eval_batch_size=500,
            checkpoint_every_updates=500,
            workdir="runs/intermediate_cpu",
            init_from="runs/small",
        ),
    )

"""Beginner (8x8, 10 mines, opening start) at GPU scale: the seed's PPO with 4096 boards.

Trains: from scratch, 1,000 imitation updates of the rule solver (4096 boards, 16 steps
each, half played by the network: small.py's labels, the proven-mine term, the few-proofs
weight and the proof term), then 2,000 PPO updates with the seed's hyper-parameters
(gamma 0.995, lambda 0.95, clip 0.2, entropy 0.003, AdamW 3e-4 cosine, 3 epochs, 8
minibatches; 32-step rollouts, ~131k transitions an update).
Network: four 64-channel conv layers in bfloat16, one pass (small.py has since moved to
six 48-channel layers; this config keeps the four, unmeasured at this scale); the policy
only reveals. Micro-batches keep every compiled chunk within a 16 GB card
(``python -m msjax memory configs/beginner.py --config.model.conv_impl=xla``).
Time and win rate: GPU-scale, unmeasured (no GPU run has trained it to the end).

    python -m msjax.train --config configs/beginner.py       # -> runs/beginner

intermediate.py, expert.py and curriculum.py derive from this config. Its earlier
docstring: docs/experiments/configs-history.md.
"""

from msjax.run.config import ExperimentConfig, RunConfig
from msjax.env import EnvConfig
from msjax.stages.imitation import ImitationConfig
from msjax.models import ModelConfig
from msjax.stages.ppo import PPOConfig


def get_config() -> ExperimentConfig:
    return ExperimentConfig(
        env=EnvConfig(H=8, W=8, mine_count=10, guarantee_safe_neighborhood=True),
        model=ModelConfig(channels=(64, 64, 64, 64), dtype="bfloat16", flag_actions=False),
        imitation=ImitationConfig(
            enabled=True, num_envs=4096, steps_per_update=16, num_updates=1000, lr=1e-3, learner_fraction=0.5,
            opening_weight=1.0, guess_weight=0.1, proven_mine_weight=3.0, few_proofs_weight=0.5,
            proof_bce_weight=1.0,
            microbatch_size=16384,
        ),
        ppo=PPOConfig(
            num_envs=4096,
            steps_per_update=32,
            mini_batches=8,
            ppo_epochs=3,
            frontier_mask_until_updates=0,  # off: unmeasured at this scale (docs/experiments/042-*)
            num_updates=2000,
        ),
        run=RunConfig(
            chunk_updates=25,
            eval_every_updates=100,
            eval_episodes=4000,
            final_eval_episodes=10000,
            eval_batch_size=4000,
            checkpoint_every_updates=250,
            workdir="runs/beginner",
        ),
    )

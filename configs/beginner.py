"""Beginner (8x8, 10 mines, opening start) at GPU scale: the seed's PPO with 4096 boards.

The seed's hyper-parameters (gamma 0.995, lambda 0.95, clip 0.2, entropy 0.003, AdamW
3e-4 with cosine decay, 3 epochs, 8 minibatches) with ``num_envs`` raised from 256 to
4096 boards and the rollout shortened to 32 steps, so an update still sees ~131k
transitions (minibatches of ~16k). Imitation of the rule solver comes first, with half
the boards played by the network itself (DAgger). The policy only reveals
(``flag_actions=False``): flags never help to win, and a policy that may flag can
stall instead of committing to a reveal.
Micro-batches bound the memory of each gradient step without changing its data (the same
gradient up to float rounding): every compiled chunk fits a 16 GB card by XLA's memory
analysis (``python -m msjax.memory configs/beginner.py --config.model.conv_impl=xla``;
benchmarks/RESULTS.md).

The recipe of configs/small.py is adopted, scaled: imitation also teaches the first click
(``opening_weight``) and, lightly, the solver's move where nothing is proven
(``guess_weight=0.1``), a term keeps the policy off the cells the labels prove to be mines
(``proven_mine_weight=3``), the forced states with one to three proved cells count again
(``few_proofs_weight=0.5``), every reveal logit is also read alone as "this cell is proven
safe" on forced states (``proof_bce_weight=1.0``), and the network is four 64-channel layers
deep. What each of these was worth on small.py: its docstring and benchmarks/RESULTS.md,
"Agents against their teacher". This scale is unmeasured (no GPU was lent).
``intermediate.py``, ``expert.py`` and ``curriculum.py`` derive from this config.
"""

from msjax.config import ExperimentConfig, RunConfig
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
            steps_per_env=32,
            mini_batches=8,
            ppo_epochs=3,
            frontier_mask_until_updates=0,  # off: not measured at this scale (small.py: RESULTS.md, issue 16)
            total_updates=2000,
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

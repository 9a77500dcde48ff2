"""8x8 boards with 10 mines and an opening start, sized for a 2-core CPU: the README's quickstart.

Trains: from scratch, 6,000 updates imitating the JAX rule solver on 128 boards, half of
them played by the network itself (DAgger). Every state is labelled by the solver: its
layer 1-2 proofs, its first click, its own move (lightly) where nothing is proven, the true
mines for the mine head, a term that keeps the policy off proven mines, the few-proofs
weight and the proof term (each reveal logit read alone as "this cell is proven safe").
Network: six 48-channel conv layers, one pass; the policy only reveals. No PPO stage: at
this scale no fine-tune paid (``--config.ppo.enabled=true`` runs the former one).

Time: 8 to 15 minutes on a 2-core CPU (478 s from a fresh clone, 2026-12-05, compile and
the 2,000-game final evaluation included).
Reaches: 88.26% [87.61, 88.88] of 10,000 opening-start games, choosing its own first
click; its teacher, the rule solver, wins 89.02% of the same boards (+0.76 [+0.23, +1.29]
paired): docs/results/agents.md.

    python -m msjax.train --config configs/small.py          # -> runs/small

What each setting was worth, and the figures this docstring used to carry:
docs/experiments/configs-history.md.
"""

from msjax.run.config import ExperimentConfig, RunConfig
from msjax.env import EnvConfig
from msjax.stages.imitation import ImitationConfig
from msjax.models import ModelConfig
from msjax.stages.ppo import PPOConfig


def get_config() -> ExperimentConfig:
    return ExperimentConfig(
        env=EnvConfig(H=8, W=8, mine_count=10, guarantee_safe_neighborhood=True),
        model=ModelConfig(channels=(48, 48, 48, 48, 48, 48), value_hidden=32, flag_actions=False),
        imitation=ImitationConfig(
            enabled=True,
            num_envs=128,
            steps_per_update=1,
            num_updates=6000,
            lr=2e-3,
            guess_weight=0.1,
            opening_weight=1.0,
            aux_mine_weight=0.1,
            proven_mine_weight=3.0,
            few_proofs_weight=0.5,
            proof_bce_weight=1.0,
            label_max_layer=2,
            play_max_layer=4,
            learner_fraction=0.5,
        ),
        ppo=PPOConfig(
            enabled=False,
            num_envs=64,
            steps_per_update=32,
            mini_batches=4,
            ppo_epochs=2,
            lr=3e-5,
            ent_coef=0.001,
            frontier_mask_until_updates=20,
            num_updates=20,
        ),
        run=RunConfig(
            chunk_updates=20,
            eval_every_updates=1000,
            eval_episodes=300,
            final_eval_episodes=2000,
            eval_batch_size=500,
            checkpoint_every_updates=500,
            workdir="runs/small",
        ),
    )

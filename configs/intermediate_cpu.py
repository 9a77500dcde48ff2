"""Intermediate (16x16, 40 mines, opening start), trained on a 2-core CPU within an hour.

Run configs/small.py first: this run starts from its 8x8 agent (``run.init_from``, a warm
start; the network is fully convolutional, so the same weights play any board size, and
the 8x8 agent already wins many 16x16 games). It is small.py with the overrides
below: it imitates the rule solver on 16x16 boards with small.py's recipe (128 boards,
half of them played by the network itself, every state labelled by the solver: its
layer 1-2 proofs, its first click, its own move lightly weighted elsewhere, the
proven-mine term) for 1,000 updates at a tenth of small.py's learning rate::

    python -m msjax.train --config configs/small.py              # -> runs/small
    python -m msjax.train --config configs/intermediate_cpu.py   # -> runs/intermediate_cpu

With small.py's six 48-channel layers (2026-11-28; the 8x8 run at ``run.seed=1``, this
stage as configured, one core beside another run): **81.55% [79.79, 83.19] of 2,000 boards**
(``python benchmarks/paired_agents.py runs/intermediate_cpu --games 2000 --seed 7``), 77.4%
[74.7, 79.9] of its own 1,000 final boards, the stage in 1,746 s; the same chain with four
64-channel layers, on the same boards: 79.20% and 74.9% (+2.35 points [+0.80, +3.90]
paired, RESULTS.md, "A deeper network: six layers"). The issue's target (85%) is not
reached.

The learning rate is a fine-tune's (measured with four 64-channel layers): from small.py's
8x8 agent (73.3% of the 1,000 final boards on its own), 1,000 updates at 2e-4 reach 76.3%
[73.6, 78.8] of those boards (2,345 s on one core of this CPU beside another run, compile
and evaluations included), where 1e-3 first loses the 8x8 agent's level and recovers it
only as the rate decays (75.2% after 2,000 updates; RESULTS.md, "The 16x16 stage's learning
rate"). Twice the updates at 2e-4 give 76.5%, +0.20 [-1.58, +1.98] over 1,000 on the same
boards. The gradient on the 128 hardest of 256 played states (``imitation.hardest_states``)
gives 76.4% on the same boards at 1.25 times the time: not used. The forced states with 1-3
proved cells weighted again in both stages (``--config.imitation.few_proofs_weight=0.5`` in
small.py and here, 2026-11-28): 79.1% of the final boards, and +1.88 points [+0.81, +2.94]
over 4,000 paired boards (seeds 7 and 8) against the chain as configured; small.py's agent
87.0% against 87.4% (not separated). Not yet shipped (RESULTS.md, "Weighting the states
with few proofs"). The older 6,000-update
stage at 1e-3, its curve and a run from scratch: RESULTS.md, "configs/intermediate_cpu.py:
16x16x40 within the hour".
"""

from msjax.config import ExperimentConfig, apply_overrides, load_config


def get_config() -> ExperimentConfig:
    return apply_overrides(
        load_config("small"),  # its network, labels, DAgger share, PPO stage and evaluation sizes
        [
            "env.H=16",
            "env.W=16",
            "env.mine_count=40",
            "imitation.lr=2e-4",  # a fine-tune: a tenth of small.py's lr from scratch
            "imitation.num_updates=1000",
            "run.chunk_updates=50",
            "run.final_eval_episodes=1000",
            "run.workdir=runs/intermediate_cpu",
            "run.init_from=runs/small",
        ],
    )

"""Intermediate (16x16, 40 mines, opening start), trained on a 2-core CPU within an hour.

Run configs/small.py first: this run starts from its 8x8 agent (``run.init_from``, a warm
start; the network is fully convolutional, so the same weights play any board size, and
the 8x8 agent already wins many 16x16 games). It is small.py with the overrides
below: it imitates the rule solver on 16x16 boards with small.py's recipe (128 boards,
half of them played by the network itself, every state labelled by the solver: its
layer 1-2 proofs, its first click, its own move lightly weighted elsewhere, the
proven-mine term, the few-proofs weight) for 1,000 updates at a tenth of small.py's
learning rate::

    python -m msjax.train --config configs/small.py              # -> runs/small
    python -m msjax.train --config configs/intermediate_cpu.py   # -> runs/intermediate_cpu

As the chain stands (2026-11-29, this 2-core CPU, the two commands above, nothing else
running): **78.1% [75.4, 80.6] and 80.2% [77.6, 82.6] of the 1,000 final boards** in two
regenerations on two machines of one kind (the stage 536 s and 455 s, the chain 22 and 17
minutes with small.py's 792 s and 569 s; the runs are not bit-exact across machines). The
forced states with one to three proved cells weighted again in both stages
(``imitation.few_proofs_weight=0.5``, small.py's) lift it: the chain without them gave 76.5%
[73.8, 79.0] of the same boards, and paired, `python benchmarks/paired_agents.py OTHER
runs/intermediate_cpu --games 2000 --seed S` at seeds 7 and 8 for each of two regenerations of
both chains (2026-11-28 and -29), the weighted chain won +1.13 points [+0.41, +1.85] more of
8,000 boards (81.65% against 80.53%; +1.88 the first time, +0.38 the second; RESULTS.md,
"Weighting the states with few proofs"). Heavier weights in this stage alone change nothing:
``few_proofs_weight=1.5`` +0.05 [-0.73, +0.83], ``proven_mine_weight=10`` +0.00 [-0.89, +0.89],
2,000 paired boards each (RESULTS.md, "Heavier weights in the 16x16 stage alone"). A second
pass of the network on each position (``--config.model.recycles=1`` in both stages, the 8x8 run
into its own workdir and ``run.init_from`` pointing to it) wins +1.50 points [+0.48, +2.52]
over 4,000 paired boards (83.60% against 82.10%) at twice each stage's time (the stage 901 s);
not set here, as its 8x8 run would be over small.py's 10 minutes (RESULTS.md, "The 16x16 stage
with `recycles=1`"). The issue's target (85% of 2,000) is not reached. The same chain without
the weight at ``run.seed=1`` for the 8x8 run, one core beside another run: 81.55% [79.79,
83.19] of 2,000 boards (seed 7), 77.4% [74.7, 79.9] of its own 1,000 final boards, the stage in
1,746 s; with four 64-channel layers, on the same boards: 79.20% and 74.9% (+2.35 points
[+0.80, +3.90] paired for six 48-channel layers, RESULTS.md, "A deeper network: six layers").

The learning rate is a fine-tune's (measured with four 64-channel layers): from small.py's
8x8 agent (73.3% of the 1,000 final boards on its own), 1,000 updates at 2e-4 reach 76.3%
[73.6, 78.8] of those boards (2,345 s on one core of this CPU beside another run, compile
and evaluations included), where 1e-3 first loses the 8x8 agent's level and recovers it
only as the rate decays (75.2% after 2,000 updates; RESULTS.md, "The 16x16 stage's learning
rate"). Twice the updates at 2e-4 give 76.5%, +0.20 [-1.58, +1.98] over 1,000 on the same
boards. The gradient on the 128 hardest of 256 played states (``imitation.hardest_states``)
gives 76.4% on the same boards at 1.25 times the time: not used. The older 6,000-update
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

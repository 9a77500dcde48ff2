"""Intermediate (16x16, 40 mines, opening start), trained on a 2-core CPU within an hour.

Run configs/small.py first: this run starts from its 8x8 agent (``run.init_from``, a warm
start; the network is fully convolutional, so the same weights play any board size, and
the 8x8 agent already wins many 16x16 games). It is small.py with the overrides
below: it imitates the rule solver on 16x16 boards with small.py's recipe (128 boards,
half of them played by the network itself, every state labelled by the solver: its
layer 1-2 proofs, its first click, its own move lightly weighted elsewhere) at half the
learning rate, then runs small.py's short PPO stage::

    python -m msjax.train --config configs/small.py              # -> runs/small
    python -m msjax.train --config configs/intermediate_cpu.py   # -> runs/intermediate_cpu

Its result against a run from scratch, with commands and wall times: benchmarks/RESULTS.md,
"configs/intermediate_cpu.py: 16x16x40 within the hour".
"""

from msjax.config import ExperimentConfig, apply_overrides, load_config


def get_config() -> ExperimentConfig:
    return apply_overrides(
        load_config("small"),  # its network, labels, DAgger share, PPO stage and evaluation sizes
        [
            "env.H=16",
            "env.W=16",
            "env.mine_count=40",
            "imitation.lr=1e-3",  # a fine-tune: half of small.py's lr from scratch
            "run.chunk_updates=50",
            "run.final_eval_episodes=1000",
            "run.workdir=runs/intermediate_cpu",
            "run.init_from=runs/small",
        ],
    )

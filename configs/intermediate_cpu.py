"""Intermediate (16x16, 40 mines, opening start) on a 2-core CPU: the second link of the chains.

Derives from small_recycled.py (its network with the second pass, its labels and
evaluation) and warm-starts from its agent (``run.init_from=runs/small_recycled``: the
network is fully convolutional, so the same weights play any board size). Trains 1,000
imitation updates on 16x16x40 at a tenth of small.py's learning rate (2e-4, a fine-tune).
Time: about 12 minutes alone on a 2-core CPU (735 s), 27 minutes with small_recycled.py.
Reaches: 84.2% of its 1,000 final boards; 85.28% [84.36, 86.16] of 6,000 other boards, the
same as dense_cpu.py's shipped agent after it (0.00 [-0.63, +0.63] paired), 2.05 points
under its teacher, the rule solver (87.33% of the same boards): docs/results/agents.md.

    python -m msjax.train --config configs/small_recycled.py     # -> runs/small_recycled
    python -m msjax.train --config configs/intermediate_cpu.py   # -> runs/intermediate_cpu

Then configs/dense_cpu.py (the shipped 16x16 agent) or configs/expert_cpu.py (16x30x99).
What each lever was worth, and the figures this docstring used to carry:
docs/experiments/configs-history.md.
"""

from msjax.run.config import ExperimentConfig, apply_overrides, load_config


def get_config() -> ExperimentConfig:
    return apply_overrides(
        load_config("small_recycled"),  # small.py's network (recycled), labels, DAgger share, evaluation sizes
        [
            "env.H=16",
            "env.W=16",
            "env.mine_count=40",
            "imitation.lr=2e-4",  # a fine-tune: a tenth of small.py's lr from scratch
            "imitation.num_updates=1000",
            "run.chunk_updates=50",
            "run.final_eval_episodes=1000",
            "run.workdir=runs/intermediate_cpu",
            "run.init_from=runs/small_recycled",
        ],
    )

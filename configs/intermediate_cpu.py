"""Intermediate (16x16, 40 mines, opening start) on a 2-core CPU: the second link of the chains.

Derives from small_recycled.py (its network with the second pass, its labels and
evaluation) and warm-starts from its agent (``run.init_from=runs/small_recycled``: the
network is fully convolutional, so the same weights play any board size). Trains 2,000
imitation updates on 16x16x40 at a tenth of small.py's learning rate (2e-4, a fine-tune):
twice the 1,000 it had until 2026-12-06 (the scaling curve in the results: twice paid,
four times did not).
Time: 34 minutes on a 2-core CPU shared with two to four other jobs (2,040 s, 2026-12-06;
1,000 updates took 735 s alone); 47 minutes with small_recycled.py, shared.
Reaches: msjax's best 16x16 agent, shipped as ``intermediate``, still under its teacher, the
rule solver: its figures are in docs/results/agents.md.

    python -m msjax.train --config configs/small_recycled.py     # -> runs/small_recycled
    python -m msjax.train --config configs/intermediate_cpu.py   # -> runs/intermediate_cpu

Then configs/dense_cpu.py (10x10x20, the end of the 16x16 chain) or configs/expert_cpu.py (16x30x99).
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
            "imitation.num_updates=2000",  # twice the former 1,000 (docs/results/agents.md)
            "run.chunk_updates=50",
            "run.final_eval_episodes=1000",
            "run.workdir=runs/intermediate_cpu",
            "run.init_from=runs/small_recycled",
        ],
    )

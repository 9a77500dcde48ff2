"""10x10 with 20 mines (the expert density) on a 2-core CPU: the stage that ends the 16x16 chain.

Derives from intermediate_cpu.py (its labels and second pass) at expert_cpu.py's learning
rate (1e-3) on a 10x10x20 board, 1,200 updates, and warm-starts from
intermediate_cpu.py's 16x16 agent (``run.init_from=runs/intermediate_cpu``). A small
crowded board was a cheap teacher of the crowded regions where 16x16 games are lost.
Time: about 5 minutes alone on a 2-core CPU (289 s); the whole chain small_recycled.py ->
intermediate_cpu.py -> dense_cpu.py 32 minutes (1,940 s, training seed 2).
Reaches (measured after intermediate_cpu.py's former 1,000 updates): 66.8% of its 500
10x10x20 games, and on 16x16x40 nothing over the 16x16 stage's agent before it (the same
win rate on 6,000 boards; before the proof term it added +1.25 points). Not yet measured
after the 2,000-update stage, whose agent is the best 16x16 one: docs/results/agents.md.

    python -m msjax.train --config configs/small_recycled.py     # -> runs/small_recycled
    python -m msjax.train --config configs/intermediate_cpu.py   # -> runs/intermediate_cpu
    python -m msjax.train --config configs/dense_cpu.py          # -> runs/dense_cpu

Which crowded board, and the figures this docstring used to carry:
docs/experiments/configs-history.md.
"""

from msjax.run.config import ExperimentConfig, apply_overrides, load_config


def get_config() -> ExperimentConfig:
    return apply_overrides(
        load_config("intermediate_cpu"),  # its network, labels and evaluation; its start is that run
        [
            "imitation.lr=1e-3",  # expert_cpu.py's
            "env.H=10",
            "env.W=10",
            "env.mine_count=20",
            "imitation.num_updates=1200",
            "run.eval_every_updates=0",
            "run.final_eval_episodes=500",
            "run.workdir=runs/dense_cpu",
            "run.init_from=runs/intermediate_cpu",
        ],
    )

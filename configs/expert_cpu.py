"""Expert (16x30, 99 mines, opening start) on a 2-core CPU: the last link of a warm-start chain.

Derives from intermediate_cpu.py (small.py's labels and proof term, the second pass) on
16x30x99 and warm-starts from its 16x16 agent (``run.init_from=runs/intermediate_cpu``);
12,000 imitation updates at half small.py's learning rate (1e-3, cosine decay over the
stage), evaluated every 500: four times the 3,000 it had until 2026-12-06 (the 16x30
scaling curve in the results: each doubling paid).
Time: about 3 hours for this stage alone on a 2-core CPU (0.64 s an update, 2.1 hours, and
its evaluations), estimated; the shipped run took 4.7 hours on a CPU shared with other jobs
over three sessions (``--resume``). The
shipped ``expert`` started from intermediate_cpu.py's former 1,000-update agent; the chain
from today's 2,000-update one is not yet measured.
Reaches: msjax's best 16x30 agent, shipped as ``expert``, still under its teacher, the rule
solver: its figures are in docs/results/agents.md.

    python -m msjax.train --config configs/small_recycled.py     # -> runs/small_recycled
    python -m msjax.train --config configs/intermediate_cpu.py   # -> runs/intermediate_cpu
    python -m msjax.train --config configs/expert_cpu.py         # -> runs/expert_cpu

The updates, crowded stages and labels tried here, and the figures this docstring used to
carry: docs/experiments/configs-history.md.
"""

from msjax.run.config import ExperimentConfig, apply_overrides, load_config


def get_config() -> ExperimentConfig:
    return apply_overrides(
        load_config("intermediate_cpu"),  # small.py's recipe, recycled; a fine-tune's lr; 1,000 final games
        [
            "env.W=30",
            "env.mine_count=99",
            "imitation.lr=1e-3",
            "imitation.num_updates=12000",  # four times the former 3,000 (docs/results/agents.md)
            "run.eval_every_updates=500",
            "run.eval_episodes=200",
            "run.workdir=runs/expert_cpu",
            "run.init_from=runs/intermediate_cpu",
        ],
    )

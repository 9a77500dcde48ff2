"""Expert (16x30, 99 mines, opening start) on a 2-core CPU: the last link of a warm-start chain.

Derives from intermediate_cpu.py (small.py's labels and proof term, the second pass) on
16x30x99 and warm-starts from its 16x16 agent (``run.init_from=runs/intermediate_cpu``);
3,000 imitation updates at half small.py's learning rate (1e-3), evaluated every 500.
Time: about 1.5 hours for this stage alone on a 2-core CPU (5,464 s before the proof term,
which adds nothing measurable per update), the chain about 2 hours. The shipped ``expert``
started from intermediate_cpu.py's former 1,000-update agent; the chain from today's
2,000-update one is not yet measured.
Reaches: 36.2% [33.3, 39.2] of its 1,000 final boards (the run the package ships as
``expert``; an earlier run 36.8%); 38.70% of 1,000 other boards, where its teacher, the rule
solver, wins 52.10% (+13.40 [+10.21, +16.59] paired; docs/results/agents.md).

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
            "imitation.num_updates=3000",  # 34.1%; 2,000 gave 30.4%, 4,000 35.2%; neither separated (docstring)
            "run.eval_every_updates=500",
            "run.eval_episodes=200",
            "run.workdir=runs/expert_cpu",
            "run.init_from=runs/intermediate_cpu",
        ],
    )

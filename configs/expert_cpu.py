"""Expert (16x30, 99 mines, opening start) on a 2-core CPU: the last link of a warm-start chain.

Derives from intermediate_cpu.py (small.py's labels and proof term, the second pass) on
16x30x99 and warm-starts from its 16x16 agent (``run.init_from=runs/intermediate_cpu``);
48,000 imitation updates of 16 boards each (768,000 labelled states) at half small.py's
learning rate (1e-3, cosine decay over the stage), evaluated every 12,000 on 200 games.
Small batches pay on this board: the stage is short of gradient steps at 128 boards an
update, and a state costs about the same at any batch on a CPU.
Time: about 2.1 hours for this stage alone on a 2-core CPU (0.127 s an update, 1.7 hours,
and its evaluations); the whole chain about 2.9 hours.
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
            "imitation.num_envs=16",  # an eighth of the batch, eight times the gradient steps (docs/results/agents.md)
            "imitation.num_updates=48000",
            "run.eval_every_updates=12000",
            "run.eval_episodes=200",
            "run.checkpoint_every_updates=2000",
            "run.workdir=runs/expert_cpu",
            "run.init_from=runs/intermediate_cpu",
        ],
    )

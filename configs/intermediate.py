"""Intermediate (16x16, 40 mines, opening start) at GPU scale.

Derives from beginner.py (its PPO, imitation recipe, 4096 boards and evaluation) on a
16x16 board, from scratch, with a deeper residual tower (six 64-channel blocks: a wider
board needs a larger receptive field), the CPU chains' second pass (``model.recycles=1``),
one labelled move of each of its 4096 boards an update (beginner.py's 16 moves x 2,000
updates as 32,000 updates of one move: the same states in sixteen times the gradient steps),
4,000 PPO updates, and micro-batches that keep every compiled chunk within a 16 GB card
(``python -m msjax memory configs/intermediate.py --config.model.conv_impl=xla``).
Time and win rate: GPU-scale, unmeasured. ``benchmarks/gpu_run.py --config intermediate``
sizes it to one device call.

    python -m msjax.train --config configs/intermediate.py   # -> runs/intermediate
"""

from msjax.run.config import ExperimentConfig, apply_overrides, load_config


def get_config() -> ExperimentConfig:
    return apply_overrides(
        load_config("beginner"),  # its PPO, imitation recipe, batch sizes and evaluation
        [
            "env.H=16",
            "env.W=16",
            "env.mine_count=40",
            "model.channels=(32,64,64)",  # unused by the residual tower: the default
            "model.residual=true",
            "model.num_res_blocks=6",
            "model.res_channels=64",
            "model.recycles=1",  # the CPU chain's second pass (intermediate_cpu.py)
            "imitation.steps_per_update=1",  # more gradient steps per state: docs/experiments/101-*
            "imitation.num_updates=32000",
            "imitation.microbatch_size=1024",
            "ppo.num_updates=4000",
            "ppo.microbatch_size=1024",
            "run.eval_every_updates=1000",
            "run.checkpoint_every_updates=1000",
            "run.workdir=runs/intermediate",
        ],
    )

"""Intermediate (16x16, 40 mines, opening start) at GPU scale: ``beginner.py`` on a
16x16 board, with the deeper residual network (wider boards need a larger receptive
field), twice the updates of each stage, and micro-batches sized so that every compiled
chunk fits a 16 GB card (``python -m msjax.memory configs/intermediate.py
--config.model.conv_impl=xla``; figures in benchmarks/RESULTS.md).

As in the CPU chains (intermediate_cpu.py, expert_cpu.py), the network takes a second pass
over each position with its first pass's mine beliefs as an input plane
(``model.recycles=1``: +10.9 points on 16x30 at CPU scale; on 8x8 level, so beginner.py
stays with one pass). It doubles the network's work per step and its activations, so the
micro-batches are half what one pass needed. This scale is unmeasured (no GPU was lent).
"""

from msjax.config import ExperimentConfig, apply_overrides, load_config


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
            "imitation.num_updates=2000",
            "imitation.microbatch_size=1024",
            "ppo.total_updates=4000",
            "ppo.microbatch_size=1024",
            "run.eval_every_updates=200",
            "run.workdir=runs/intermediate",
        ],
    )

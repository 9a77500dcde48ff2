"""Expert (16x30, 99 mines, opening start) at GPU scale.

Derives from intermediate.py (its second pass and residual tower) on a 16x30 board, from
scratch, with eight residual blocks, 48,000 imitation updates of one move of each board
(the states of 3,000 updates of 16 moves), 6,000 PPO updates, and smaller micro-batches (every compiled chunk fits a 16 GB card: ``python -m msjax memory
configs/expert.py --config.model.conv_impl=xla``).
Time and win rate: GPU-scale, unmeasured. ``benchmarks/gpu_run.py --config expert`` sizes
it to one device call.

    python -m msjax.train --config configs/expert.py         # -> runs/expert
"""

from msjax.run.config import ExperimentConfig, apply_overrides, load_config


def get_config() -> ExperimentConfig:
    return apply_overrides(
        load_config("intermediate"),
        [
            "env.W=30",
            "env.mine_count=99",
            "model.num_res_blocks=8",
            "imitation.num_updates=48000",
            "imitation.microbatch_size=512",
            "ppo.num_updates=6000",
            "ppo.microbatch_size=256",
            "run.workdir=runs/expert",
        ],
    )

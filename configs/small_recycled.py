"""configs/small.py with a second pass of the network on each position: the 8x8 start of the
16x16 and 16x30 chains.

Trains: small.py's recipe from scratch (6,000 imitation updates, its labels, the proof
term) with ``model.recycles=1``: the tower runs twice on each position, the second time
with the first pass's mine beliefs as one more input plane.
Time: 15 minutes alone on a 2-core CPU (916 s, 2026-12-05); about twice small.py.
Reaches: 88.53% of 10,000 8x8x10 boards, level with small.py; it is here for the stages
that warm-start from it (intermediate_cpu.py, then dense_cpu.py or expert_cpu.py), where
the second pass paid, before the proof term, +1.50 points on 16x16 and +10.9 on 16x30
(docs/results/agents.md).

    python -m msjax.train --config configs/small_recycled.py     # -> runs/small_recycled
    python -m msjax.train --config configs/intermediate_cpu.py   # -> runs/intermediate_cpu

History and measurements: docs/experiments/configs-history.md.
"""

from msjax.run.config import ExperimentConfig, apply_overrides, load_config


def get_config() -> ExperimentConfig:
    return apply_overrides(
        load_config("small"),
        [
            "model.recycles=1",
            "run.workdir=runs/small_recycled",
        ],
    )

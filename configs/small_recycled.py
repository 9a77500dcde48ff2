"""configs/small.py with a second pass of the network on each position: the 8x8 start of the
16x16 and 16x30 chains.

``model.recycles=1``: the tower runs twice on each position, the second time with the first
pass's mine beliefs as one more input plane (the same weights; the heads read the second
pass). The proof term (``imitation.proof_bce_weight=1.0``: on every forced state each reveal
logit is also read alone as the belief that its cell is proven safe, ``losses.proof_bce_sums``)
comes from small.py, and the stages after this one take it from here. Everything else is
small.py: its labels, its 6,000 imitation updates, its evaluation::

    python -m msjax.train --config configs/small_recycled.py     # -> runs/small_recycled
    python -m msjax.train --config configs/intermediate_cpu.py   # -> runs/intermediate_cpu
    python -m msjax.train --config configs/expert_cpu.py         # -> runs/expert_cpu

On 8x8 it plays as small.py does (87.5% [86.0, 88.9] of the 2,000 final boards; paired on
other boards, +0.15 points [-0.59, +0.89] and +0.45 [-0.35, +1.25] over 4,000 each) at about
twice the time (**1,096 s**, compile and evaluations included, nothing else running,
2026-11-29, this 2-core CPU; small.py 569 s in an earlier session), so the README's main job
stays small.py. What it is for is the stages after it: the 16x16 stage
recycled from this agent beats the plain chain by +1.50 points [+0.48, +2.52] over 4,000
paired boards (83.60% against 82.10%), where the same stage recycled from small.py's plain
agent gains nothing (-0.55 [-1.48, +0.38]: at the stage's fine-tune learning rate the new
input plane's weights stay near zero); the 16x30 stage after both ends at 34.1% [31.2,
37.1] of 1,000 games against the plain chain's 23.2% [20.7, 25.9] of the same boards
(benchmarks/RESULTS.md, "The 16x16 stage with `recycles=1`" and the paragraphs after it,
"Shipped: the recycled chain" the last).

The proof term (2026-12-05, RESULTS.md, "Every reveal logit read as a proof"): with it the
whole chain (this run, intermediate_cpu.py, dense_cpu.py) wins 85.28% [84.36, 86.16] of 6,000
16x16x40 boards against 83.67% for the same chain without it trained beside it, **+1.62
[+0.87, +2.37]** paired; this 8x8 agent 88.53% of 10,000 boards against 88.24%, +0.29 [-0.19,
+0.77]; no cost in time (1,610 s each on one core, side by side). The figures above this
paragraph were measured without it.

At 8,000 updates (``--config.imitation.num_updates=8000``, about 7 minutes more) it plays
8x8 better, +0.50 points [+0.05, +0.95] over 10,000 paired boards (88.61% against 88.11%),
and the chain's 16x16 agent after it leans the same way, +0.62 [-0.09, +1.33] over 6,000
(84.62% against 84.00%), one training run each, and with the crowded stage's training seed 1
-0.05 [-1.22, +1.12] (2,000 boards): not separated on 16x16, so the config keeps 6,000
(RESULTS.md, "The 8x8 stage longer", 2026-11-30).
"""

from msjax.config import ExperimentConfig, apply_overrides, load_config


def get_config() -> ExperimentConfig:
    return apply_overrides(
        load_config("small"),
        [
            "model.recycles=1",
            "run.workdir=runs/small_recycled",
        ],
    )

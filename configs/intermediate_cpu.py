"""Intermediate (16x16, 40 mines, opening start), trained on a 2-core CPU within an hour.

Run configs/small_recycled.py first: this run starts from its 8x8 agent (``run.init_from``,
a warm start; the network is fully convolutional, so the same weights play any board size,
and the 8x8 agent already wins many 16x16 games). It is small_recycled.py (small.py with a
second pass of the network on each position, ``model.recycles=1``) with the overrides
below: it imitates the rule solver on 16x16 boards with small.py's recipe (128 boards,
half of them played by the network itself, every state labelled by the solver: its
layer 1-2 proofs, its first click, its own move lightly weighted elsewhere, the
proven-mine term, the few-proofs weight) for 1,000 updates at a tenth of small.py's
learning rate::

    python -m msjax.train --config configs/small_recycled.py     # -> runs/small_recycled
    python -m msjax.train --config configs/intermediate_cpu.py   # -> runs/intermediate_cpu

With the proof term (``imitation.proof_bce_weight=1.0``, from small.py through
small_recycled.py, in both stages; 2026-12-05, the two chains side by side, one core each):
**84.2% of the 1,000 final boards** against 80.9% for the chain without it, the stage 1,367 s
on one core; with dense_cpu.py after it, 85.28% [84.36, 86.16] of 6,000 other boards, +1.62
[+0.87, +2.37] paired (RESULTS.md, "Every reveal logit read as a proof"). **This stage's own
agent wins the same 85.28% of those 6,000 boards** (0.00 [-0.63, +0.63] paired with the
crowded stage's; 2026-12-06): with the term, the chain can stop here, 27 minutes alone on two
cores (RESULTS.md, "The shipped agents beside their teacher on the same boards"). Before the term
(2026-11-29, this 2-core CPU, the two commands above): **80.6% [78.0, 82.9] of the 1,000 final
boards**, the stage 901 s alone, the chain **33 minutes** with
small_recycled.py's 1,096 s (also alone); **83.60% [82.42, 84.72] of 4,000 other boards**
(`python benchmarks/paired_agents.py runs/intermediate_cpu --games 2000 --seed S`, S = 7 and
8). Retrained 2026-12-01 with the one-pass imitation update (the learner's moves from the
gradient pass): the same final evaluations to the game, the stage 930 s, the chain with
dense_cpu.py 41 minutes on a slower day (RESULTS.md, "One network pass fewer"). The issue's
target (85% of 2,000) is not reached. configs/dense_cpu.py, a 10x10x20
stage after this one (6 minutes more), makes the chain's best 16x16 agent: 84.70% of 6,000
boards (these 4,000 and 2,000 of seed 9), +1.25 [+0.56, +1.94] paired with this agent.
The plain chain (small.py, then this config with ``--config.model.recycles=0
--config.run.init_from=runs/small``): 80.2% [77.6, 82.6] of the same final boards, 82.10%
[80.88, 83.26] of the same 4,000, the stage 455 s, the chain 17 minutes. What the levers
were worth, each paired on the same boards with its 95% interval (commands and tables in
benchmarks/RESULTS.md, "A deeper network: six layers" and the sections after it):

- a second pass of the network on each position (``model.recycles=1``) in both stages:
  +1.50 [+0.48, +2.52] (4,000 boards; 83.60% against 82.10%), each stage twice the time;
  in this stage alone, from small.py's plain agent (``run.init_from`` gives the loaded
  network a zero-weighted belief plane): -0.55 [-1.48, +0.38] on 2,000 boards, the stage
  864 s: the gain comes from the recycled 8x8 run (RESULTS.md, "The 16x16 stage with
  `recycles=1`" and "Recycles from a plain agent, and on 16x30");
- six 48-channel layers against four 64-channel ones: +2.35 [+0.80, +3.90] (2,000 boards);
- the few-proofs weight in both stages (``imitation.few_proofs_weight=0.5``, small.py's):
  +1.13 [+0.41, +1.85] (8,000 boards);
- small.py at 4,500 updates instead of 6,000: -1.40 [-2.45, -0.35] (4,000 boards);
- heavier weights in this stage alone, ``few_proofs_weight=1.5`` and
  ``proven_mine_weight=10``: +0.05 [-0.73, +0.83] and +0.00 [-0.89, +0.89] (2,000 each);
- a crowded stage after this one (configs/dense_cpu.py, 1,200 updates on 10x10x20, 349 s):
  +1.25 [+0.56, +1.94] (6,000 boards; 84.70% against 83.45%; with training seed 1, +0.45
  [-0.27, +1.17]); on 12x12x29 +0.63 [-0.06, +1.33] (the same 6,000), on 16x16x52 -0.60
  [-1.97, +0.77] (2,000).
- that crowded stage straight from small_recycled.py's agent, without this stage: -0.50
  [-1.11, +0.11] against the whole chain (6,000 boards, 83.50% against 84.00%, one training
  run each): this stage is worth about half a point before the crowded one.
- small_recycled.py at 8,000 updates instead of 6,000 before this stage and the crowded one
  (about 7 minutes more): +0.62 [-0.09, +1.33] (6,000 boards, 84.62% against 84.00%, one
  training run each; on 8x8 the longer stage gains +0.50 [+0.05, +0.95] over 10,000), and
  with the crowded stage's training seed 1, -0.05 [-1.22, +1.12] (2,000 boards): not
  separated, so the chain keeps 6,000 (RESULTS.md, "The 8x8 stage longer").
- this stage at 2,000 updates instead of 1,000 in the recycled chain (about 11 minutes
  more): 84.27% [83.32, 85.17] of the same 6,000 against 84.70% (one training run each,
  unpaired): no gain (RESULTS.md, "The 16x16 stage at 2,000 updates").

Every lever but the first and the last four was measured on the plain chain.

The learning rate is a fine-tune's (measured with four 64-channel layers): from small.py's
8x8 agent (73.3% of the 1,000 final boards on its own), 1,000 updates at 2e-4 reach 76.3%
[73.6, 78.8] of those boards (2,345 s on one core of this CPU beside another run, compile
and evaluations included), where 1e-3 first loses the 8x8 agent's level and recovers it
only as the rate decays (75.2% after 2,000 updates; RESULTS.md, "The 16x16 stage's learning
rate"). Twice the updates at 2e-4 give 76.5%, +0.20 [-1.58, +1.98] over 1,000 on the same
boards. The gradient on the 128 hardest of 256 played states (``imitation.hardest_states``)
gives 76.4% on the same boards at 1.25 times the time: not used. The older 6,000-update
stage at 1e-3, its curve and a run from scratch: RESULTS.md, "configs/intermediate_cpu.py:
16x16x40 within the hour".
"""

from msjax.config import ExperimentConfig, apply_overrides, load_config


def get_config() -> ExperimentConfig:
    return apply_overrides(
        load_config("small_recycled"),  # small.py's network (recycled), labels, DAgger share, evaluation sizes
        [
            "env.H=16",
            "env.W=16",
            "env.mine_count=40",
            "imitation.lr=2e-4",  # a fine-tune: a tenth of small.py's lr from scratch
            "imitation.num_updates=1000",
            "run.chunk_updates=50",
            "run.final_eval_episodes=1000",
            "run.workdir=runs/intermediate_cpu",
            "run.init_from=runs/small_recycled",
        ],
    )

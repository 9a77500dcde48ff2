"""Expert (16x30, 99 mines, opening start) on a 2-core CPU: the last link of a warm-start chain.

Run configs/small_recycled.py and configs/intermediate_cpu.py first: this run starts from
the 16x16 agent (``run.init_from``, a warm start; the network is fully convolutional, so the
same weights play any board size). It is intermediate_cpu.py on a 16x30 board with 99 mines:
small.py's labels (the rule solver's layer 1-2 proofs, its first click, its own move lightly
weighted elsewhere, the proven-mine term, the few-proofs weight), a second pass of the
network on each position with the first pass's mine beliefs as an input plane
(``model.recycles=1``, set in small_recycled.py), half of the boards played by the network
itself, for 3,000 updates at half small.py's learning rate (1e-3; intermediate_cpu.py's
2e-4, from its 1,000-update agent, at 1,000 updates of this stage, gave 13.8% [11.8, 16.1]
of the same 1,000 final boards with the four-layer network: no change)::

    python -m msjax.train --config configs/small_recycled.py     # -> runs/small_recycled
    python -m msjax.train --config configs/intermediate_cpu.py   # -> runs/intermediate_cpu
    python -m msjax.train --config configs/expert_cpu.py         # -> runs/expert_cpu

Since 2026-12-05 the chain carries the proof term (``imitation.proof_bce_weight=1.0``, from
small.py: +1.62 points on 16x16, RESULTS.md, "Every reveal logit read as a proof"). This stage
with it, from that chain's 16x16 agent (2026-12-05, one core beside other runs, resumed once
from update 1,000): **36.8% [33.9, 39.8] of the same 1,000 final boards** as the figures
below (at 200 games every 500 updates 24.0, 28.5, 32.5, 31.0, 37.0%: ahead of the chain
without it at every point), +2.7 points over its 34.1%, unpaired and not separated; 2.3 s
per update on one core, the term adding nothing measurable per update. The target (>= 40%)
is not reached. Its teacher, the rule solver, on 1,000 other boards (seed 7 of
``paired_agents.py --solver rules``): 52.10% against this agent's 38.50%, 13.6 points
[+10.47, +16.73] more (RESULTS.md, "The shipped agents beside their teacher on the same
boards"). 1,000 more updates from that agent at 3e-4 (a later session): 37.2% [34.3,
40.2] of the same boards with the exact targets (``imitation.guess_targets=safest
imitation.mine_targets=exact``), 37.7% [34.7, 40.7] with these labels; on 1,000 other boards,
paired over the agent it started from (38.50%), +2.30 [-0.14, +4.74] and +1.60 [-0.80,
+4.00] (40.80% and 40.10%), not separated, the two fine-tunes level (+0.70 [-1.73, +3.13]):
more training, not the labels; about half an hour more: not shipped (RESULTS.md, "The 16x30
agent fine-tuned on the exact guesses"). Every other 16x30 figure
below is the chain without it. As the chain stood (2026-11-29, this 2-core CPU, the three
commands above, this stage with nothing else running): **34.1% [31.2, 37.1] of 1,000 games** (the stage's final evaluation;
at 200 games every 500 updates 16.5, 23.0, 29.0, 25.5, 33.0%), the stage in 5,464 s (3,000
updates, about 1.2 s each; the 1,000-game final evaluation about 15 minutes, the recycled
network playing at half the plain one's rate), the whole chain **2 h 4 min** (small_recycled.py
1,096 s, intermediate_cpu.py 901 s; each alone). The target (>= 40% within 2.5 hours) is not reached.
The same stage at 2,000 updates: 30.4% [27.6, 33.3] of the same boards (4,765 s, partly beside
other work); paired on 1,000 other boards, 3,000 updates against 2,000: +1.80 [-0.98, +4.58]
(35.40% against 33.60%), not separated: 3,000 are kept, the curve still rising at 2,500.
4,000 updates, evaluated every 1,000 (``--config.imitation.num_updates=4000
--config.run.eval_every_updates=1000``): 35.2% [32.3, 38.2] of the same boards, the stage in
6,367 s, the chain 2 h 19 min; paired with 3,000 on 2,000 other boards +1.35 [-0.48, +3.18]
(36.60% against 35.25%), not separated: 3,000 are kept, 15 minutes cheaper. The plain chain (small.py, intermediate_cpu.py and this stage with
``model.recycles=0``, each from the plain run before it): **23.2% [20.7, 25.9]** of the same
boards (at 200 games every 500 updates 9.5, 13.0, 10.5, 17.0, 23.0%), the stage in 3,799 s
(another run beside it), the chain 85 minutes. The second pass is worth +10.9 points on the
same 1,000 boards (unpaired; the intervals do not overlap), but only when every stage takes
it: after a 16x16 stage recycled from small.py's plain agent, the recycled stage at 2,000
updates gave 25.4% [22.8, 28.2] (RESULTS.md, "Recycles from a plain agent, and on 16x30").

A 12x12x29 stage (the expert density on 144 cells, 0.38 s per update) before this one, screened at
about equal time from runs/int_rc: 1,200 updates there and 1,000 here gave 32.85% of 2,000 paired
boards against 30.50% for 1,500 updates here alone, +2.35 [+0.41, +4.29] (separated); but this
stage's full 3,000 updates from that 12x12 agent gave 32.6% [29.8, 35.6] of the same 1,000 final
boards, and -0.70 [-3.19, +1.79] paired with the shipped agent on 1,000 others: a short cut, not
a higher end, so this stage starts from the 16x16 agent. Crowded stages pay on 16x16 instead:
configs/dense_cpu.py (10x10x20) ends the 16x16 chain. Playing the shipped agent
with a third pass (``model.recycles=2``) at play time only: -3.00 [-6.01, +0.01] on 1,000
paired boards. RESULTS.md, "Two new levers on 16x30" and "The dense stage in the full chain,
and on 16x16". Beliefs carried over moves in every stage (``--config.model.carry_beliefs=true``,
this stage from the carry chain's 16x16 agent, 2026-12-03, beside other runs): 33.2% [30.4,
36.2] of the same final boards, no gain (RESULTS.md, "Beliefs carried over moves").

Earlier, all on the plain chain: the same chain without the few-proofs weight
(2026-11-28, nothing else running): 21.8% [19.4, 24.5] of the same final boards, the stage in
3,707 s, the chain 84 minutes; with the weight in this stage only, from that chain's 16x16
agent: 20.1% [17.7, 22.7]. Every lever below was measured on the chain without it. The same
stage at 1,000 updates: 14.9% [12.8, 17.2] of the same final boards in 1,497 s (chain 47
minutes); the chain's earlier network, four 64-channel layers, at 1,000 updates (2026-11-27, a
slow day, from a 2,000-update 16x16 agent): 13.6% [11.6, 15.9], the chain 2 h 50 min. 5,000
updates (a later session, a slower day): 23.4% [20.9, 26.1] of the same final boards, flat from
3,000 on (24.0% of 200 at 3,000 and 4,000), the chain 2 h 3 min: not separated, not shipped.
Exact targets (``--config.imitation.guess_targets=safest
--config.imitation.mine_targets=exact``, 3,000 updates, the next session): 23.8% [21.3, 26.5]
of the same boards, the stage 1.45 times as long, the chain 1 h 55 min: not separated, not
shipped. The solver's games labelled every fourth move (``imitation.solver_moves_per_label=4``,
four times the games): 21.9%, no change. Eight 48-channel layers for the whole chain
(``--config.model.channels=48,48,48,48,48,48,48,48`` in all three commands): 24.7% [22.1, 27.5]
of the same boards, the chain 1 h 40 min: not separated, not shipped. Commands and figures:
benchmarks/RESULTS.md, "A deeper network: six layers" (the few-proofs chain: its paragraph
"Weighting the states with few proofs").
"""

from msjax.config import ExperimentConfig, apply_overrides, load_config


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

"""Self-play with search targets on 8x8x10, from the shipped beginner agent (configs/small.py's).

Trains: no imitation and no PPO: ``run.init_from="beginner"`` starts the network, and the
self-play stage plays 64 games at a time, 32 moves each per update, every guess searched by
Gumbel AlphaZero's root over 8 clicks on 16 drawn layouts (``search.network_search``, its
Gumbel noise on: the move played is sampled among them). The policy learns the search's
improved policy on the guesses and the moves played elsewhere, the value head the games'
outcomes, the mine head the mines. ``leaf="safe"``: a click is worth its exact chance to be
safe, since the beginner's value head was never trained (imitation does not train it) and
cannot yet guide the search; this stage trains it, so a run from this one can set
``selfplay.leaf=value``.

Time: about 4 minutes on a 2-core CPU shared with another run (248 s, 2026-12-06, compile and
the 2,000-game final evaluation included): 60 updates of 2,048 moves.

Reaches: not yet its start's level (the network alone after it against the beginner agent,
paired on 10,000 boards): docs/experiments/094-a-search-that-asks-the-network-and-self-play-from-it.md.

    python -m msjax.train --config configs/selfplay_small.py     # -> runs/selfplay_small
"""

from msjax.run.config import ExperimentConfig, apply_overrides, load_config


def get_config() -> ExperimentConfig:
    return apply_overrides(
        load_config("small"),
        [
            "imitation.enabled=false",
            "selfplay.enabled=true",
            "selfplay.num_envs=64",
            "selfplay.steps_per_update=32",
            "selfplay.num_updates=60",
            "selfplay.lr=5e-4",
            "selfplay.value_weight=0.25",
            "selfplay.simulations=8",
            "selfplay.samples=16",
            "selfplay.leaf=safe",
            "run.init_from=beginner",
            "run.chunk_updates=5",
            "run.eval_every_updates=30",
            "run.eval_episodes=500",
            "run.final_eval_episodes=2000",
            "run.checkpoint_every_updates=10",
            "run.workdir=runs/selfplay_small",
        ],
    )

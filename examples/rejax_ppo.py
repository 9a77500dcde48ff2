"""Train rejax's PPO on an msjax board through msjax's gymnax adapter, mask applied.

    pip install -e '.[rejax]'
    python examples/rejax_ppo.py                          # 5x5x3, 200,000 steps: minutes on a CPU
    python examples/rejax_ppo.py --board beginner --timesteps 5000000   # on a GPU

Why rejax: it is on PyPI (``pip install rejax``), it speaks gymnax (the five-value step
through gymnax's ``LegacyStepAPIWrapper``: ``msjax.adapters.make(board, "gymnax-legacy")``),
its whole training run is one jitted ``train(rng)`` (rollout, GAE and PPO epochs in
``lax.scan``, as msjax's own training), and its PPO takes any Flax actor, so the action
mask (and a convolutional body) go into a subclass of its ``DiscretePolicy`` without
touching its training code.
PureJaxRL is a script to copy rather than a package; Stoix and Mava (Jumanji's side) are
configured through Hydra files and are heavier to install for one example.

The mask: the env appends the legal reveals and flags to the observation
(``mask_in_observation=True``), the only thing a rejax policy sees; the policy keeps the
legal reveals (it never flags: flags change nothing about which cells are safe) and sets
every other logit to a large negative number (``MaskedConvPolicy``). The script trains, then plays each of
``--games`` boards' first game with the trained policy and with a random player (uniform
among the legal reveals, the same mask) and prints both win rates.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import distrax
import jax
import jax.numpy as jnp
from flax import linen as nn
from rejax import PPO
from rejax.networks import DiscretePolicy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from msjax import adapters  # noqa: E402

ILLEGAL_LOGIT = -1e9
"""Logit of a masked action: finite, so the entropy and log-probabilities stay finite."""


def legal_reveals(obs: jax.Array) -> jax.Array:
    """bool[..., 2*H*W]: the legal actions carried by the observation, flags removed.

    ``obs``: float32[..., C+2, H, W] from ``make(..., mask_in_observation=True)``."""
    legal = adapters.legal_actions_in_observation(obs)
    cells = legal.shape[-1] // 2
    return legal.at[..., cells:].set(False)


class MaskedConvPolicy(DiscretePolicy):
    """rejax's discrete policy with a convolutional body and the illegal actions masked out.

    rejax's own ``DiscretePolicy`` is an MLP on the flattened board; a Minesweeper move
    depends on the numbers around a cell, wherever it is, which 3x3 convolutions see
    directly. ``hidden_layer_sizes`` are the conv layers' channels; a 1x1 conv gives one
    reveal and one flag logit per cell, in the adapter's action order. The methods rejax's
    PPO calls (``act``, ``action_log_prob``, ``log_prob_entropy``) are inherited.
    """

    def setup(self):
        self.convs = [nn.Conv(channels, (3, 3)) for channels in self.hidden_layer_sizes]
        self.head = nn.Conv(2, (1, 1))

    def _action_dist(self, obs):
        x = jnp.moveaxis(obs, -3, -1)  # [B, C, H, W] -> [B, H, W, C]
        for conv in self.convs:
            x = self.activation(conv(x))
        logits = jnp.moveaxis(self.head(x), -1, -3).reshape(obs.shape[0], -1)  # [B, 2*H*W]
        return distrax.Categorical(logits=jnp.where(legal_reveals(obs), logits, ILLEGAL_LOGIT))


def build(board: str, timesteps: int, num_envs: int = 64, num_steps: int = 64, hidden: int = 32, **rules) -> PPO:
    """rejax's PPO on ``board`` through the adapter, its actor replaced by ``MaskedConvPolicy``
    (``hidden`` channels, three conv layers); ``rules``: ``EnvConfig`` fields."""
    env, params = adapters.make(board, "gymnax-legacy", mask_in_observation=True, **rules)
    algo = PPO.create(
        env=env,
        env_params=params,
        total_timesteps=timesteps,
        eval_freq=timesteps,
        skip_initial_evaluation=True,
        num_envs=num_envs,
        num_steps=num_steps,
        num_epochs=4,
        num_minibatches=8,
        learning_rate=3e-4,
        gamma=0.99,
        gae_lambda=0.95,
        ent_coef=0.01,
        max_grad_norm=0.5,
        agent_kwargs={"hidden_layer_sizes": (64, 64), "activation": "relu"},  # the critic's MLP
    )
    actor = MaskedConvPolicy(env.action_space(params).n, (hidden, hidden, hidden), nn.relu)
    return algo.replace(actor=actor, eval_callback=lambda algo, ts, rng: ())


def first_game_results(policy, env, params, key: jax.Array, num_games: int) -> dict[str, jax.Array]:
    """Plays each of ``num_games`` boards until its first game ends.

    Args:
      policy: ``(obs float32[B, C+2, H, W], key) -> actions int32[B]``.
      env, params: the gymnax-legacy env and its params.

    Returns:
      ``won`` (bool[B]) and ``illegal`` (int32[B], moves the mask should have ruled out).
    """
    reset_key, play_key = jax.random.split(key)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, num_games), params)
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def one_move(carry, move_key):
        obs, state, over, won, illegal = carry
        actions = policy(obs, move_key)
        legal = jnp.take_along_axis(state.legal_action_mask, actions[:, None], axis=1)[:, 0]
        obs, state, _, done, info = step(jax.random.split(move_key, num_games), state, actions, params)
        illegal = illegal + (~over & ~legal)
        won = jnp.where(over, won, done & info["won"])
        return (obs, state, over | done, won, illegal), None

    start = (obs, state, jnp.zeros(num_games, bool), jnp.zeros(num_games, bool), jnp.zeros(num_games, jnp.int32))
    move_keys = jax.random.split(play_key, params.max_steps_in_episode)
    (_, _, _, won, illegal), _ = jax.lax.scan(one_move, start, move_keys)
    return {"won": won, "illegal": illegal}


def random_policy(obs: jax.Array, key: jax.Array) -> jax.Array:
    """int32[B]: a uniform legal reveal per board."""
    return jax.random.categorical(key, jnp.where(legal_reveals(obs), 0.0, -jnp.inf)).astype(jnp.int32)


def trained_policy(algo: PPO, train_state):
    """The trained actor as ``(obs [B, ...], key) -> actions [B]`` (sampled, as in training)."""
    act = algo.make_act(train_state)
    return lambda obs, key: jax.vmap(act)(obs, jax.random.split(key, obs.shape[0])).astype(jnp.int32)


def run(board: str, timesteps: int, games: int, seed: int, **build_kwargs) -> dict[str, float]:
    """Trains, evaluates both players on the same boards, and returns the figures."""
    algo = build(board, timesteps, **build_kwargs)
    start = time.perf_counter()
    train_state, _ = jax.block_until_ready(jax.jit(algo.train)(jax.random.key(seed)))
    train_s = time.perf_counter() - start
    eval_key = jax.random.key(seed + 1)
    evaluate = jax.jit(first_game_results, static_argnums=(0, 1, 4))
    trained = evaluate(trained_policy(algo, train_state), algo.env, algo.env_params, eval_key, games)
    rand = evaluate(random_policy, algo.env, algo.env_params, eval_key, games)
    return {
        "train_s": train_s,
        "ppo_win_rate": float(trained["won"].mean()),
        "random_win_rate": float(rand["won"].mean()),
        "illegal_moves": int(trained["illegal"].sum() + rand["illegal"].sum()),
    }


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--board", default="5x5x3", help="beginner, intermediate, expert or HxWxM")
    parser.add_argument("--timesteps", type=int, default=200_000, help="env steps of training")
    parser.add_argument("--games", type=int, default=2000, help="boards each player plays once")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    result = run(args.board, args.timesteps, args.games, args.seed)
    print(
        f"{args.board}: rejax PPO (masked) wins {result['ppo_win_rate']:.1%} of {args.games} games, "
        f"a random player {result['random_win_rate']:.1%}; trained {args.timesteps:,} steps in "
        f"{result['train_s']:.0f} s (compile included); illegal moves: {result['illegal_moves']}"
    )
    return result


if __name__ == "__main__":
    main()

"""msjax's PPO loop beside rejax's PPO, training the same board with the same network.

Both sides train ``--board`` (8x8x10 by default) for ``--updates`` PPO updates of
``--num-envs`` boards x ``--steps-per-env`` steps, ``--ppo-epochs`` epochs of
``--mini-batches`` minibatches each, in one compiled program per side:

- msjax: the PPO stage's chunk (``msjax.stages.ppo.make_ppo_chunk``), ``--updates``
  updates per call;
- rejax: ``rejax.PPO``'s ``train`` (its whole run is one jitted function: rollout, GAE
  and the epochs in ``lax.scan``), on msjax's game through the gymnax adapter
  (``msjax.adapters.make(board, "gymnax-legacy", mask_in_observation=True)``).

The network is msjax's own (``msjax.models.MinesweeperNet``, plain tower of
``--channels``, value head of ``--value-hidden``, no flag actions) on both sides: rejax's
actor is the network's masked policy logits and its critic the network's value (each
with its own parameters: rejax keeps separate actor and critic networks, so it runs the
tower twice per position where msjax's one network serves both heads). rejax's PPO sees
the observation with the legal-action planes appended; its networks read the msjax
observation planes and mask the illegal actions with the other two. The hyper-parameters
that change no work are set alike (gamma 0.99, lambda 0.95, clip 0.2, learning rate
3e-4, entropy 0.01); msjax's mine-head loss is off (``aux_mine_weight=0``), as rejax has
none.

Each side is called once (compile + run), then ``--repeats`` rounds call each side once
in turn (so both share the machine's load alike); env steps/s is
``num_envs * steps_per_env * updates`` over the fastest steady call (a whole rejax
``train`` call also initialises its state, which is small beside the updates), and
compile_s is the first call minus that call. Output: a table and one JSON line with the
device, the batch, each side's steps/s and compile seconds, and msjax's over rejax's ratio.

    pip install -e '.[rejax]'
    python -m benchmarks.rejax_side_by_side                           # CPU-sized: minutes
    python -m benchmarks.rejax_side_by_side --num-envs 1024 --steps-per-env 64 --updates 8 \\
        --channels 32,64,64                                           # a GPU
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp

from msjax import adapters, distributed, models
from msjax import env as ms_env
from msjax.cli import args as cli_args
from msjax.stages import ppo

ILLEGAL_LOGIT = -1e9
"""Logit of a masked action in rejax's actor: finite, so log-probabilities stay finite."""

SHARED = {"gamma": 0.99, "gae_lambda": 0.95, "clip_eps": 0.2, "vf_coef": 0.5, "ent_coef": 0.01,
          "max_grad_norm": 0.5}
"""PPO settings that both sides take alike (msjax's PPOConfig names)."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rejax_side_by_side", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", default="8x8x10", help="beginner, intermediate, expert or HxWxM")
    parser.add_argument("--num-envs", type=cli_args.positive_int, default=64, help="boards stepped together")
    parser.add_argument("--steps-per-env", type=cli_args.positive_int, default=32, help="rollout steps per update")
    parser.add_argument("--mini-batches", type=cli_args.positive_int, default=4, help="minibatches per epoch")
    parser.add_argument("--ppo-epochs", type=cli_args.positive_int, default=3, help="passes over each rollout")
    parser.add_argument("--updates", type=cli_args.positive_int, default=4, help="PPO updates per timed call")
    parser.add_argument("--repeats", type=cli_args.positive_int, default=2, help="steady calls timed per side")
    parser.add_argument("--channels", default="16,32,32", help="the plain tower's widths (multiples of 4)")
    parser.add_argument("--value-hidden", type=cli_args.positive_int, default=64, help="the value head's width")
    args = parser.parse_args(argv)
    try:
        args.env_cfg = ms_env.EnvConfig(**dict(zip(("H", "W", "mine_count"), ms_env.parse_board(args.board))))
        args.model_cfg = models.ModelConfig(channels=tuple(int(c) for c in args.channels.split(",")),
                                            value_hidden=args.value_hidden, flag_actions=False)
    except ValueError as error:
        parser.error(f"argument --board/--channels: {error}")
    if (args.num_envs * args.steps_per_env) % args.mini_batches:
        parser.error(f"argument --mini-batches: {args.mini_batches} must divide --num-envs x --steps-per-env "
                     f"({args.num_envs * args.steps_per_env})")
    return args


def timed_calls(calls: dict[str, Callable[[], Any]], repeats: int) -> dict[str, tuple[float, float]]:
    """``{name: (compile seconds, steady seconds)}``: each call once (compile + run), then
    ``repeats`` rounds of one call each, taken in turn so that both sides share the
    machine's load alike; the steady figure is a call's fastest, compile its first call
    minus that."""
    def seconds(call):
        began = time.perf_counter()
        jax.block_until_ready(call())
        return time.perf_counter() - began

    first = {name: seconds(call) for name, call in calls.items()}
    steady = {name: [] for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            steady[name].append(seconds(call))
    return {name: (max(first[name] - min(steady[name]), 0.0), min(steady[name])) for name in calls}


def param_count(params: Any) -> int:
    """Scalars in a parameter tree."""
    return sum(leaf.size for leaf in jax.tree.leaves(params))


def msjax_side(args: argparse.Namespace) -> tuple[Callable[[], Any], int]:
    """(call, parameter count): msjax's PPO chunk, ``--updates`` updates per call, its state
    carried from call to call."""
    ppo_cfg = ppo.PPOConfig(num_envs=args.num_envs, steps_per_update=args.steps_per_env, mini_batches=args.mini_batches,
                            ppo_epochs=args.ppo_epochs, frontier_mask_until_updates=0, aux_mine_weight=0.0,
                            anneal_lr=False, weight_decay=0.0, **SHARED)
    chunk = ppo.make_ppo_chunk(args.env_cfg, args.model_cfg, ppo_cfg, args.updates)
    holder = [jax.block_until_ready(ppo.init_ppo_state(jax.random.key(0), args.env_cfg, args.model_cfg, ppo_cfg))]
    params = param_count(holder[0].params)

    def call():
        holder[0], metrics = chunk(holder[0])  # the chunk donates its input state
        return metrics

    return call, params


def rejax_networks(model_cfg: models.ModelConfig):
    """(actor class, critic class): msjax's network as rejax's actor (masked policy logits)
    and as its critic (the value); rejax imported here, so that the module imports without it."""
    import distrax
    from flax import linen as nn
    from rejax.networks import DiscretePolicy

    class MsjaxActor(DiscretePolicy):
        """rejax's discrete policy with msjax's network as its body and the illegal actions masked."""

        def setup(self):
            self.net = models.make_model(model_cfg)

        def _action_dist(self, obs):
            logits, _, _ = self.net(obs[:, :-2])  # the msjax planes; the last two are the legal actions
            legal = adapters.legal_actions_in_observation(obs)
            return distrax.Categorical(logits=jnp.where(legal, logits, ILLEGAL_LOGIT))

    class MsjaxCritic(nn.Module):
        """msjax's network's value, as rejax's critic (its own parameters)."""

        @nn.compact
        def __call__(self, obs):
            return models.make_model(model_cfg)(obs[:, :-2])[1]

    return MsjaxActor, MsjaxCritic


def rejax_side(args: argparse.Namespace) -> tuple[Callable[[], Any], int]:
    """(call, parameter count): rejax's PPO ``train`` of ``--updates`` updates through the
    gymnax adapter, each call a whole run from a fresh state."""
    from flax import linen as nn
    from rejax import PPO

    env, env_params = adapters.make(args.env_cfg, "gymnax-legacy", mask_in_observation=True)
    timesteps = args.num_envs * args.steps_per_env * args.updates
    algo = PPO.create(env=env, env_params=env_params, total_timesteps=timesteps, eval_freq=timesteps,
                      skip_initial_evaluation=True, num_envs=args.num_envs, num_steps=args.steps_per_env,
                      num_epochs=args.ppo_epochs, num_minibatches=args.mini_batches, learning_rate=3e-4,
                      **SHARED)
    actor, critic = rejax_networks(args.model_cfg)
    algo = algo.replace(actor=actor(env.action_space(env_params).n, (), nn.relu), critic=critic(),
                        eval_callback=lambda algo, ts, rng: ())
    train = jax.jit(algo.train)
    state = algo.init_state(jax.random.key(0))
    params = param_count(state.actor_ts.params) + param_count(state.critic_ts.params)
    return (lambda: train(jax.random.key(1))[0].global_step), params


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    env_steps = args.num_envs * args.steps_per_env * args.updates
    sides = {"msjax": msjax_side(args), "rejax": rejax_side(args)}
    times = timed_calls({name: call for name, (call, _) in sides.items()}, args.repeats)
    row = {"bench": "rejax_side_by_side", "device": distributed.device_name(), "board": args.board,
           "num_envs": args.num_envs, "steps_per_env": args.steps_per_env, "mini_batches": args.mini_batches,
           "ppo_epochs": args.ppo_epochs, "updates": args.updates, "channels": args.channels,
           "value_hidden": args.value_hidden}
    for name, (_, params) in sides.items():
        compile_s, steady_s = times[name]
        row[f"{name}_env_steps_per_s"] = round(env_steps / steady_s, 1)
        row[f"{name}_compile_s"] = round(compile_s, 2)
        row[f"{name}_params"] = params
    row["msjax_over_rejax"] = round(row["msjax_env_steps_per_s"] / row["rejax_env_steps_per_s"], 2)
    header = f"{'side':<6} {'env steps/s':>12} {'compile s':>10} {'params':>9}"
    print(f"{row['device']} {args.board}: {args.num_envs} boards x {args.steps_per_env} steps, "
          f"{args.ppo_epochs} epochs x {args.mini_batches} minibatches, {args.updates} updates per call, "
          f"channels {args.channels}")
    print(header + "\n" + "-" * len(header))
    for name in sides:
        print(f"{name:<6} {row[f'{name}_env_steps_per_s']:>12,.0f} {row[f'{name}_compile_s']:>10.1f} "
              f"{row[f'{name}_params']:>9,}")
    print(f"msjax / rejax: {row['msjax_over_rejax']:.2f}x")
    print(json.dumps(row))
    return row


if __name__ == "__main__":
    main()

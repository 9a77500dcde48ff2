"""A trained agent loaded from a run: ``load_agent(path).act(state, key)``.

``Agent`` is a pytree (the parameters are its leaves; the network and game configs are
static), so its methods are pure functions of an ``EnvState`` that jit and vmap over
boards, and ``evaluate`` can take new parameters without recompiling. It reads only what
a player sees (``observe`` and ``action_mask``), never the hidden mines. The network is
fully convolutional, so ``agent.for_board(env_cfg)`` plays another board size with the
same weights.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
from flax import struct

from msjax import checkpoint as checkpoint_lib
from msjax import config as config_lib
from msjax import env as ms_env
from msjax import models
from msjax import ppo


@struct.dataclass
class Agent:
    """A policy network with the game it plays.

    Attributes:
      params: the network's parameters.
      model_cfg: the network (static).
      env_cfg: the game it plays (static); observations and legal moves follow it.
      greedy: play the most likely legal action (default) instead of sampling one.
      config: the training run's full config, when loaded from a run (static).
    """

    params: Any
    model_cfg: models.ModelConfig = struct.field(pytree_node=False)
    env_cfg: ms_env.EnvConfig = struct.field(pytree_node=False)
    greedy: bool = struct.field(pytree_node=False, default=True)
    config: config_lib.ExperimentConfig | None = struct.field(pytree_node=False, default=None)

    def act(self, state: ms_env.EnvState, key: jax.Array | None = None) -> jax.Array:
        """int32[]: the move on one board (``key`` is needed only when sampling)."""
        key = jax.random.key(0) if key is None else key
        return ppo.policy_action(self.params, self.model_cfg, self.env_cfg, state, key, self.greedy)

    def outputs(self, state: ms_env.EnvState) -> tuple[jax.Array, jax.Array, jax.Array]:
        """The network on one board: ``(logits f32[2HW], value f32[], mine_logits f32[H, W])``."""
        obs = ms_env.observe(state, self.env_cfg)[None]
        logits, value, mine_logits = models.make_model(self.model_cfg).apply(self.params, obs)
        return logits[0], value[0], mine_logits[0]

    def action_probabilities(self, state: ms_env.EnvState) -> jax.Array:
        """f32[2HW]: the policy over legal actions (reveals first, then flags)."""
        logits, _, _ = self.outputs(state)
        legal = ms_env.action_mask(state, self.env_cfg)
        return jax.nn.softmax(ppo.masked_logits(logits, legal)) * legal

    def mine_probabilities(self, state: ms_env.EnvState) -> jax.Array:
        """f32[H, W]: the mine head's belief that each cell holds a mine."""
        _, _, mine_logits = self.outputs(state)
        return jax.nn.sigmoid(mine_logits)

    def value(self, state: ms_env.EnvState) -> jax.Array:
        """f32[]: the value head's estimate of the return from ``state``."""
        return self.outputs(state)[1]

    def for_board(self, env_cfg: ms_env.EnvConfig) -> "Agent":
        """The same weights playing ``env_cfg`` (any board size with the same observation channels)."""
        if ms_env.num_channels(env_cfg) != ms_env.num_channels(self.env_cfg):
            raise ValueError(
                f"env_cfg gives {ms_env.num_channels(env_cfg)} observation channels, the network "
                f"was trained on {ms_env.num_channels(self.env_cfg)} "
                "(obs_frontier and obs_scalars must match)"
            )
        return self.replace(env_cfg=env_cfg)

    def sampling(self) -> "Agent":
        """This agent sampling from its policy instead of playing greedily."""
        return self.replace(greedy=False)


def from_params(params: Any, cfg: config_lib.ExperimentConfig, greedy: bool = True) -> Agent:
    """An agent playing ``cfg.env`` with ``params`` (the config itself is not kept, so
    agents of runs that differ only outside env/model share compiled code)."""
    return Agent(params=params, model_cfg=cfg.model, env_cfg=cfg.env, greedy=greedy)


def load_agent(path: str | Path, step: int | str = "latest", greedy: bool = True) -> Agent:
    """The agent saved in a run.

    Args:
      path: a run directory (``runs/NAME``), its ``checkpoints`` directory, or one
        checkpoint (``runs/NAME/checkpoints/1200``).
      step: ``"latest"``, ``"best"`` (highest evaluation win rate) or a step number;
        ignored when ``path`` names one checkpoint.
      greedy: play the most likely action; ``False`` samples from the policy.

    Raises:
      CheckpointError: no checkpoint there, or one that cannot be read.
    """
    directory, named_step = checkpoint_lib.resolve(path)
    checkpoints = checkpoint_lib.Checkpoints(directory, read_only=True)
    try:
        chosen = named_step if named_step is not None else _pick_step(checkpoints, step)
        info = checkpoints.info(chosen)
        template = checkpoint_lib.abstract_state(info.stage, info.config)
        state = checkpoints.restore(chosen, template)
    finally:
        checkpoints.close()
    agent = from_params(state.params, info.config, greedy)
    return agent.replace(config=info.config)


def _pick_step(checkpoints: checkpoint_lib.Checkpoints, step: int | str) -> int:
    if not checkpoints.steps:
        raise checkpoint_lib.CheckpointError(f"no checkpoints in {checkpoints.directory}")
    if step == "latest":
        return checkpoints.latest_step
    if step == "best":
        return checkpoints.best_step
    if isinstance(step, int) and not isinstance(step, bool):
        return step
    raise ValueError(f"step={step!r} must be 'latest', 'best' or a checkpoint number")

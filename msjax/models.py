"""The policy/value network: a small fully convolutional net with three heads.

It follows the seed's CNN: stride-1 3x3 convolutions with GroupNorm and ReLU keep the
board's ``H x W`` layout, so one set of weights runs on any board size. From the shared
feature map come a policy head (1x1 conv, a reveal and a flag logit per cell), a value
head (global average pool, MLP) and a mine head (1x1 conv, a mine logit per cell). A
deeper residual tower is selectable by config.

One addition to the seed: the network appends a constant all-ones plane to its input.
Convolutions pad with zeros, and a hidden cell is all zeros in the observation, so
without that plane the first layer could not tell the board's edge from a hidden cell
(and edge cells have fewer neighbours, which matters for every count).

The model knows nothing of PPO: it maps observations to logits and a value.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import linen as nn

from msjax import env as ms_env

_DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Static description of the network.

    Attributes:
      channels: output channels of the plain tower's 3x3 convolutions, one per layer.
      residual: use the residual tower instead (a stem conv and ``num_res_blocks``
        blocks of two convs of ``res_channels``).
      num_res_blocks: residual blocks (residual tower only), >= 1.
      res_channels: width of the residual tower, a multiple of 4.
      value_hidden: width of the value head's hidden layer.
      flag_actions: when False the policy proposes reveals only: the flag logits are
        the float32 minimum (the action layout stays ``2*H*W``), so every consumer of
        the logits (PPO, evaluation, agents) plays no flags. Flags never help to win,
        and a policy that may flag can stall a game instead of risking a loss.
      dtype: compute dtype, ``"float32"`` or ``"bfloat16"``; parameters and outputs are
        always float32.
    """

    channels: tuple[int, ...] = (32, 64, 64)
    residual: bool = False
    num_res_blocks: int = 6
    res_channels: int = 64
    value_hidden: int = 64
    dtype: str = "float32"
    flag_actions: bool = True

    def __post_init__(self):
        if not isinstance(self.channels, tuple) or not self.channels:
            raise ValueError(f"ModelConfig.channels={self.channels!r} must be a non-empty tuple of ints")
        for width in self.channels:
            if not isinstance(width, int) or width < 4 or width % 4:
                raise ValueError(
                    f"ModelConfig.channels={self.channels!r}: each width must be an int >= 4 "
                    "and a multiple of 4 (GroupNorm groups)"
                )
        if not isinstance(self.num_res_blocks, int) or self.num_res_blocks < 1:
            raise ValueError(f"ModelConfig.num_res_blocks={self.num_res_blocks!r} must be an int >= 1")
        if not isinstance(self.res_channels, int) or self.res_channels < 4 or self.res_channels % 4:
            raise ValueError(
                f"ModelConfig.res_channels={self.res_channels!r} must be an int >= 4 and a multiple of 4"
            )
        if not isinstance(self.value_hidden, int) or self.value_hidden < 1:
            raise ValueError(f"ModelConfig.value_hidden={self.value_hidden!r} must be an int >= 1")
        if not isinstance(self.flag_actions, bool):
            raise ValueError(f"ModelConfig.flag_actions={self.flag_actions!r} must be a bool")
        if self.dtype not in _DTYPES:
            raise ValueError(f"ModelConfig.dtype={self.dtype!r} must be one of {sorted(_DTYPES)}")


def _num_groups(width: int) -> int:
    """GroupNorm groups as in the seed (4 for 32 channels, 8 for 64): about 8 channels each."""
    groups = max(1, width // 8)
    while width % groups:
        groups -= 1
    return groups


class ConvBlock(nn.Module):
    """3x3 stride-1 conv, GroupNorm, ReLU: ``[B, H, W, *] -> [B, H, W, width]``."""

    width: int
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x):
        x = nn.Conv(self.width, (3, 3), padding="SAME", dtype=self.dtype)(x)
        x = nn.GroupNorm(num_groups=_num_groups(self.width), dtype=self.dtype)(x)
        return nn.relu(x)


class ResidualBlock(nn.Module):
    """Two 3x3 convs with GroupNorm and a skip connection: ``[B, H, W, F] -> [B, H, W, F]``."""

    width: int
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x):
        y = ConvBlock(self.width, self.dtype)(x)
        y = nn.Conv(self.width, (3, 3), padding="SAME", dtype=self.dtype)(y)
        y = nn.GroupNorm(num_groups=_num_groups(self.width), dtype=self.dtype)(y)
        return nn.relu(x + y)


class MinesweeperNet(nn.Module):
    """Observations to (policy logits, value, mine logits).

    ``__call__(obs: float32[B, C, H, W])`` returns ``logits: float32[B, 2*H*W]`` (all the
    reveal logits in row-major cell order, then all the flag logits, matching the env's
    action numbering), ``value: float32[B]`` and ``mine_logits: float32[B, H, W]``.
    """

    cfg: ModelConfig

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        dtype = _DTYPES[self.cfg.dtype]
        batch, _, height, width = obs.shape
        x = jnp.transpose(obs, (0, 2, 3, 1))  # NHWC for flax convolutions
        on_board = jnp.ones((batch, height, width, 1), x.dtype)
        x = jnp.concatenate([x, on_board], axis=-1).astype(dtype)

        if self.cfg.residual:
            x = ConvBlock(self.cfg.res_channels, dtype)(x)
            for _ in range(self.cfg.num_res_blocks):
                x = ResidualBlock(self.cfg.res_channels, dtype)(x)
        else:
            for channels in self.cfg.channels:
                x = ConvBlock(channels, dtype)(x)

        num_kinds = 2 if self.cfg.flag_actions else 1  # (reveal, flag) or reveal only
        cell_logits = nn.Conv(num_kinds, (1, 1), dtype=dtype, name="policy_head")(x)  # [B, H, W, k]
        logits = jnp.transpose(cell_logits, (0, 3, 1, 2)).reshape(batch, num_kinds * height * width)
        logits = logits.astype(jnp.float32)
        if not self.cfg.flag_actions:
            no_flags = jnp.full((batch, height * width), jnp.finfo(jnp.float32).min)
            logits = jnp.concatenate([logits, no_flags], axis=1)

        pooled = jnp.mean(x, axis=(1, 2))
        hidden = nn.relu(nn.Dense(self.cfg.value_hidden, dtype=dtype, name="value_hidden")(pooled))
        value = nn.Dense(1, dtype=dtype, name="value_out")(hidden)[:, 0]

        mine_logits = nn.Conv(1, (1, 1), dtype=dtype, name="mine_head")(x)[..., 0]
        return logits, value.astype(jnp.float32), mine_logits.astype(jnp.float32)


def make_model(cfg: ModelConfig) -> MinesweeperNet:
    """The network for ``cfg``."""
    return MinesweeperNet(cfg)


def init_params(key: jax.Array, model_cfg: ModelConfig, env_cfg: ms_env.EnvConfig):
    """Fresh float32 parameters for boards of ``env_cfg`` (any board size works after)."""
    dummy_obs = jnp.zeros((1, ms_env.num_channels(env_cfg), env_cfg.H, env_cfg.W), jnp.float32)
    return make_model(model_cfg).init(key, dummy_obs)

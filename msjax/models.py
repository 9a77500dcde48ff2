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

A 3x3 convolution runs either as XLA's convolution or as one matrix product over the
nine shifted copies of its input (``conv_impl="patches"``; same parameters, same
results up to float rounding). On the CPU backend, XLA's convolution *gradients* inside
a loop (``lax.scan``, as in every training chunk) are far slower than matrix products,
so ``"auto"`` picks patches on the CPU and XLA's convolution elsewhere. The 1x1 heads
are dense layers over the channel axis.

The model knows nothing of PPO: it maps observations to logits and a value.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from flax import linen as nn

from msjax import env as ms_env
from msjax.checks import BOOL, Allowed, check_fields, ints, is_int, one_of, tuple_of

_DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}
_CONV_IMPLS = ("auto", "xla", "patches")
_WIDTH = Allowed("an int >= 4 and a multiple of 4 (GroupNorm groups)", lambda width: is_int(width) and width >= 4 and width % 4 == 0)
"""A layer's channels."""


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
      conv_impl: ``"auto"`` (patches on the CPU backend, XLA elsewhere), ``"xla"`` or
        ``"patches"``; parameters are the same for all three.
      remat: recompute each block of the tower in the backward pass (``jax.checkpoint``)
        instead of keeping its activations: less memory, more compute; the same
        parameters and results.
      recycles: run the tower this many more times on the same position, each time with
        the previous pass's mine beliefs (sigmoid of the mine head) as one more input plane
        (zeros on the first pass): the same weights, a deeper inference at (1 + recycles)
        times the compute; the heads read the last pass, gradients flow through all of them.
        0 (the default): one pass, no extra plane.
      carry_beliefs: the first pass's belief plane is the network's own mine beliefs from
        the game's previous move (``prior`` of the call; ``carried_prior`` masks them to
        the cells still hidden, zeros before a game's first reveal) instead of zeros: a
        recurrence over the game's moves at no extra network pass. The beliefs enter as
        inputs (no gradient flows into the earlier move). The players and stages that
        carry them: ``evaluate.play_games`` (``Agent.act_carry``) and the imitation stage
        with ``forward_is_shared``; everything else plays each move from a zero prior.
        False (the default): no carry. Measured (docs/experiments/026-*, "Beliefs carried
        over moves"): +1.15 points [+0.16, +2.14] on 16x16 for a one-pass network; on 8x8
        (+0.17) and in the recycled 16x16 chain (+0.52 [-0.22, +1.25]), whose second
        pass already reads beliefs, not separated.
    """

    channels: tuple[int, ...] = (32, 64, 64)
    residual: bool = False
    num_res_blocks: int = 6
    res_channels: int = 64
    value_hidden: int = 64
    dtype: str = "float32"
    flag_actions: bool = True
    conv_impl: str = "auto"
    remat: bool = False
    recycles: int = 0
    carry_beliefs: bool = False

    @property
    def has_belief_plane(self) -> bool:
        """Whether the first convolution reads a belief plane (``recycles`` or ``carry_beliefs``)."""
        return bool(self.recycles) or self.carry_beliefs

    def __post_init__(self):
        check_fields(self, (
            (tuple_of(_WIDTH, non_empty=True), ("channels",)),
            (ints(1), ("num_res_blocks", "value_hidden")),
            (_WIDTH, ("res_channels",)),
            (BOOL, ("flag_actions", "carry_beliefs", "remat")),
            (ints(0, 4), ("recycles",)),
            (one_of(*_CONV_IMPLS), ("conv_impl",)),
            (one_of(*_DTYPES), ("dtype",)),
        ))


def _num_groups(width: int) -> int:
    """GroupNorm groups as in the seed (4 for 32 channels, 8 for 64): about 8 channels each."""
    groups = max(1, width // 8)
    while width % groups:
        groups -= 1
    return groups


def _group_norm(width: int, dtype: jnp.dtype, x: jax.Array) -> jax.Array:
    """``x`` ([B, H, W, width]) through GroupNorm of about 8 channels a group."""
    return nn.GroupNorm(num_groups=_num_groups(width), dtype=dtype)(x)


def _resolve_conv_impl(conv_impl: str) -> str:
    if conv_impl != "auto":
        return conv_impl
    return "patches" if jax.default_backend() == "cpu" else "xla"


class Conv3x3(nn.Module):
    """3x3 stride-1 "same" convolution: ``[B, H, W, C] -> [B, H, W, width]``.

    Parameters ``kernel: [3, 3, C, width]`` and ``bias: [width]`` as ``nn.Conv``'s.
    ``impl="patches"`` concatenates the nine zero-padded shifts of the input
    (``[B, H, W, 9C]``, ordered like the kernel's first two axes) and multiplies by the
    kernel reshaped to ``[9C, width]``.
    """

    width: int
    dtype: jnp.dtype
    impl: str

    @nn.compact
    def __call__(self, x):
        channels = x.shape[-1]
        kernel = self.param("kernel", nn.initializers.lecun_normal(), (3, 3, channels, self.width))
        bias = self.param("bias", nn.initializers.zeros_init(), (self.width,))
        x, kernel, bias = x.astype(self.dtype), kernel.astype(self.dtype), bias.astype(self.dtype)
        if self.impl == "xla":
            y = jax.lax.conv_general_dilated(
                x, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
            )
            return y + bias
        height, width = x.shape[1:3]
        padded = jnp.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
        shifts = [padded[:, dr : dr + height, dc : dc + width] for dr in range(3) for dc in range(3)]
        patches = jnp.concatenate(shifts, axis=-1)  # [B, H, W, 9C]
        return patches @ kernel.reshape(9 * channels, self.width) + bias


class ConvBlock(nn.Module):
    """3x3 stride-1 conv, GroupNorm, ReLU: ``[B, H, W, *] -> [B, H, W, width]``."""

    width: int
    dtype: jnp.dtype
    impl: str

    @nn.compact
    def __call__(self, x):
        x = Conv3x3(self.width, self.dtype, self.impl)(x)
        return nn.relu(_group_norm(self.width, self.dtype, x))


class ResidualBlock(nn.Module):
    """Two 3x3 convs with GroupNorm and a skip connection: ``[B, H, W, F] -> [B, H, W, F]``."""

    width: int
    dtype: jnp.dtype
    impl: str

    @nn.compact
    def __call__(self, x):
        y = ConvBlock(self.width, self.dtype, self.impl)(x)
        y = Conv3x3(self.width, self.dtype, self.impl)(y)
        y = _group_norm(self.width, self.dtype, y)
        return nn.relu(x + y)


class MinesweeperNet(nn.Module):
    """Observations to (policy logits, value, mine logits).

    ``__call__(obs: float32[B, C, H, W])`` returns ``logits: float32[B, 2*H*W]`` (all the
    reveal logits in row-major cell order, then all the flag logits, matching the env's
    action numbering), ``value: float32[B]`` and ``mine_logits: float32[B, H, W]``.
    """

    cfg: ModelConfig

    @nn.compact
    def __call__(self, obs: jax.Array, prior: jax.Array | None = None) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``obs`` float32[B, C, H, W]; ``prior`` float32[B, H, W], the first pass's belief
        plane (``carry_beliefs``; None: zeros). Returns ``(logits [B, 2HW], value [B],
        mine_logits [B, H, W])``."""
        dtype = _DTYPES[self.cfg.dtype]
        impl = _resolve_conv_impl(self.cfg.conv_impl)
        batch, _, height, width = obs.shape
        x = jnp.transpose(obs, (0, 2, 3, 1))  # NHWC for flax convolutions
        on_board = jnp.ones((batch, height, width, 1), x.dtype)
        x = jnp.concatenate([x, on_board], axis=-1).astype(dtype)

        # Explicit names, so that the parameters are the same with and without remat.
        conv_block = nn.remat(ConvBlock) if self.cfg.remat else ConvBlock
        residual_block = nn.remat(ResidualBlock) if self.cfg.remat else ResidualBlock
        if self.cfg.residual:
            res_width = self.cfg.res_channels
            tower = [conv_block(res_width, dtype, impl, name="ConvBlock_0")]
            tower += [
                residual_block(res_width, dtype, impl, name=f"ResidualBlock_{index}")
                for index in range(self.cfg.num_res_blocks)
            ]
        else:
            tower = [
                conv_block(channels, dtype, impl, name=f"ConvBlock_{index}")
                for index, channels in enumerate(self.cfg.channels)
            ]
        mine_head = nn.Dense(1, dtype=dtype, name="mine_head")

        # recycles > 0: the tower runs again on the position with the last pass's mine
        # beliefs as one more input plane (the same weights; the first pass sees zeros, or
        # with carry_beliefs the previous move's beliefs, ``prior``).
        if prior is not None and not self.cfg.carry_beliefs:
            raise ValueError("a prior belief plane needs ModelConfig.carry_beliefs=True")
        beliefs = jnp.zeros((batch, height, width, 1), dtype) if prior is None else prior[..., None].astype(dtype)
        for index in range(self.cfg.recycles + 1):
            features = jnp.concatenate([x, beliefs], axis=-1) if self.cfg.has_belief_plane else x
            for block in tower:
                features = block(features)
            mine_logits = mine_head(features)[..., 0]
            beliefs = jax.nn.sigmoid(mine_logits)[..., None].astype(dtype)
        x = features

        num_kinds = 2 if self.cfg.flag_actions else 1  # (reveal, flag) or reveal only
        cell_logits = nn.Dense(num_kinds, dtype=dtype, name="policy_head")(x)  # [B, H, W, k]
        logits = jnp.transpose(cell_logits, (0, 3, 1, 2)).reshape(batch, num_kinds * height * width)
        logits = logits.astype(jnp.float32)
        if not self.cfg.flag_actions:
            no_flags = jnp.full((batch, height * width), jnp.finfo(jnp.float32).min)
            logits = jnp.concatenate([logits, no_flags], axis=1)

        pooled = jnp.mean(x, axis=(1, 2))
        hidden = nn.relu(nn.Dense(self.cfg.value_hidden, dtype=dtype, name="value_hidden")(pooled))
        value = nn.Dense(1, dtype=dtype, name="value_out")(hidden)[:, 0]
        return logits, value.astype(jnp.float32), mine_logits.astype(jnp.float32)


def make_model(cfg: ModelConfig) -> MinesweeperNet:
    """The network for ``cfg``."""
    return MinesweeperNet(cfg)


def init_params(key: jax.Array, model_cfg: ModelConfig, env_cfg: ms_env.EnvConfig):
    """Fresh float32 parameters for boards of ``env_cfg`` (any board size works after)."""
    dummy_obs = jnp.zeros((1, ms_env.num_channels(env_cfg), env_cfg.H, env_cfg.W), jnp.float32)
    return make_model(model_cfg).init(key, dummy_obs)


def with_belief_plane(params: Any) -> Any:
    """The parameters of a network without a belief plane, for the same network with one
    (``ModelConfig.has_belief_plane``: ``recycles >= 1`` or ``carry_beliefs``): the first convolution's kernel ``[3, 3, C, F]`` gains a zero input
    slot, ``[3, 3, C + 1, F]``, for the belief plane.

    The belief plane then adds nothing, so each pass computes what the single pass did and
    the network plays exactly as the plain one until training moves the new weights.
    ``params`` is ``init_params``'s tree (``{"params": {...}}``); the result is a new tree.
    """
    first_conv = params["params"]["ConvBlock_0"]["Conv3x3_0"]
    kernel = first_conv["kernel"]
    widened = jnp.concatenate([kernel, jnp.zeros(kernel.shape[:2] + (1,) + kernel.shape[3:], kernel.dtype)], axis=2)
    return {
        **params,
        "params": {
            **params["params"],
            "ConvBlock_0": {
                **params["params"]["ConvBlock_0"],
                "Conv3x3_0": {**first_conv, "kernel": widened},
            },
        },
    }


# ----------------------------------------------------------------------------- the policy


def masked_logits(logits: jax.Array, mask: jax.Array) -> jax.Array:
    """``logits`` with illegal actions set to the dtype's minimum (finite, so never NaN).

    Args:
      logits: float[..., A]; mask: bool[..., A], True where legal.
    """
    return jnp.where(mask, logits, jnp.finfo(logits.dtype).min)


# The board's symmetries, each a sequence of self-inverse steps on the last two axes (its
# inverse is the same steps in reverse order): the 4 of any rectangle, then on a square
# board the 4 that also transpose it.
_FLIPS = ((), ("flip_rows",), ("flip_cols",), ("flip_rows", "flip_cols"))
_STEPS = {
    "flip_rows": lambda x: jnp.flip(x, axis=-2),
    "flip_cols": lambda x: jnp.flip(x, axis=-1),
    "transpose": lambda x: jnp.swapaxes(x, -1, -2),
}


def board_symmetries(height: int, width: int) -> tuple[tuple[str, ...], ...]:
    """The symmetries of an ``height x width`` board: 8 on a square board (rotations and
    reflections), 4 otherwise (the identity, the two flips and the half turn)."""
    return _FLIPS + (tuple(("transpose",) + f for f in _FLIPS) if height == width else ())


def transform_board(x: jax.Array, steps: tuple[str, ...], inverse: bool = False) -> jax.Array:
    """``x`` (any array whose last two axes are the board's rows and columns) taken through
    one symmetry of ``board_symmetries``, or with ``inverse`` back through it."""
    for step in reversed(steps) if inverse else steps:
        x = _STEPS[step](x)
    return x


def carried_prior(beliefs: jax.Array, revealed: jax.Array) -> jax.Array:
    """float32[B, H, W]: the belief plane a ``carry_beliefs`` network reads on a position,
    from its mine ``beliefs`` (float32[B, H, W], the sigmoid of its mine head on the game's
    previous position) and the position's ``revealed`` (bool[B, H, W]): the beliefs on the
    cells still hidden, and zeros on a board with nothing revealed yet (a new game, so
    that a finished game's beliefs never reach the next game in its slot)."""
    started = jnp.any(revealed, axis=(1, 2), keepdims=True)
    return jnp.where(started & ~revealed, beliefs, 0.0).astype(jnp.float32)


def apply_network(
    params: Any, model_cfg: ModelConfig, obs: jax.Array, symmetric: bool = False, prior: jax.Array | None = None,
):
    """The network on ``obs`` (float32[B, C, H, W]): ``(logits [B, 2HW], value [B],
    mine_logits [B, H, W])``; ``prior`` (float32[B, H, W]) the belief plane of a
    ``carry_beliefs`` network (``carried_prior``; None: zeros).

    With ``symmetric``, the network also sees each symmetry of the boards
    (``board_symmetries``; one call on a batch ``len(symmetries)`` times larger) and the
    outputs are averaged, each cell's logits taken back to the cell they belong to: the
    policy and the mine beliefs of an agent are then exactly symmetric.
    """
    apply = make_model(model_cfg).apply
    if not symmetric:
        return apply(params, obs, prior)
    batch, _, height, width = obs.shape
    group = board_symmetries(height, width)
    all_priors = None if prior is None else jnp.concatenate([transform_board(prior, g) for g in group])
    logits, value, mine_logits = apply(params, jnp.concatenate([transform_board(obs, g) for g in group]), all_priors)
    as_maps = lambda x: x.reshape((len(group), batch) + x.shape[1:])
    logits = as_maps(logits).reshape(len(group), batch, 2, height, width)
    mine_logits = as_maps(mine_logits)
    # sums of terms already divided: a flag-less network's dtype-minimum flag logits stay finite
    mean = lambda maps: sum(transform_board(maps[i], g, inverse=True) / len(group) for i, g in enumerate(group))
    return mean(logits).reshape(batch, 2 * height * width), jnp.mean(as_maps(value), axis=0), mean(mine_logits)


def policy_action(
    params: Any,
    model_cfg: ModelConfig,
    env_cfg: ms_env.EnvConfig,
    state: ms_env.EnvState,
    key: jax.Array,
    greedy: bool = False,
    symmetric: bool = False,
) -> jax.Array:
    """The agent's move on one board: int32[] action, sampled (or argmax) from the masked policy.

    Pure and jittable (``model_cfg``, ``env_cfg``, ``greedy`` and ``symmetric`` static);
    vmap it over boards. Reads only what the player sees. ``symmetric``: the policy
    averaged over the board's symmetries (``apply_network``).
    """
    obs = ms_env.observe(state, env_cfg)[None]
    logits, _, _ = apply_network(params, model_cfg, obs, symmetric)
    return choose_action(logits[0], ms_env.action_mask(state, env_cfg), key, greedy)


def choose_action(logits: jax.Array, legal: jax.Array, key: jax.Array, greedy: bool) -> jax.Array:
    """int32[]: the most likely (``greedy``) or a sampled action among the ``legal`` ones
    (bool[A]) under the policy ``logits`` (f32[A])."""
    logits = masked_logits(logits, legal)
    if greedy:
        return jnp.argmax(logits).astype(jnp.int32)
    return jax.random.categorical(key, logits).astype(jnp.int32)

"""The training maths alone: GAE, the PPO objective, the mine head's BCE, the imitation
objective, and the optimizer with its learning-rate schedule.

Everything here is a pure function of arrays and a few hyper-parameters; nothing knows
of boards in play, rollouts or devices (``msjax.ppo`` and ``msjax.imitation`` run the
algorithms that call these). The loss functions read their hyper-parameters from any
object with the fields their ``Protocol`` names (``PPOConfig``, ``ImitationConfig``).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import distrax
import flax
import jax
import jax.numpy as jnp
import optax

from msjax.models import masked_logits

ApplyFn = Callable[[Any, jax.Array], tuple[jax.Array, jax.Array, jax.Array]]


class PPOLossConfig(Protocol):
    """The hyper-parameters ``ppo_loss`` reads (``msjax.ppo.PPOConfig`` has them)."""

    clip_eps: float
    clip_eps_v: float
    vf_coef: float
    ent_coef: float
    aux_mine_weight: float
    normalize_advantages: bool


class ImitationLossConfig(Protocol):
    """The hyper-parameters ``imitation_loss`` reads (``msjax.imitation.ImitationConfig``)."""

    guess_weight: float
    aux_mine_weight: float


@flax.struct.dataclass
class Batch:
    """A (mini)batch for ``ppo_loss``, flat over ``B`` = steps x games.

    Attributes:
      obs: float32[B, C, H, W]; action_mask: bool[B, 2HW]; action: int32[B];
      log_prob: float32[B] (rollout policy); value: float32[B] (rollout value);
      advantage: float32[B]; target: float32[B] (the GAE return);
      mine_mask: bool[B, H, W]; mine_label_mask: bool[B, H, W].
    """

    obs: jax.Array
    action_mask: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    advantage: jax.Array
    target: jax.Array
    mine_mask: jax.Array
    mine_label_mask: jax.Array


@flax.struct.dataclass
class Labelled:
    """Labelled states for ``imitation_loss``, flat over ``B`` states.

    Attributes:
      obs: float32[B, C, H, W]; action_mask: bool[B, 2HW], the legal actions;
      forced_safe: bool[B, 2HW], reveals of proven-safe cells (the policy target set);
      solver_action: int32[B], the solver's move; has_guess_label: bool[B], states
        without a forced-safe cell whose solver move is a label (an unfinished game);
      mine_mask: bool[B, H, W], the true mines; mine_label_mask: bool[B, H, W], the
        hidden cells of games whose mines are placed.
    """

    obs: jax.Array
    action_mask: jax.Array
    forced_safe: jax.Array
    solver_action: jax.Array
    has_guess_label: jax.Array
    mine_mask: jax.Array
    mine_label_mask: jax.Array


# ----------------------------------------------------------------------------- advantages


def gae(
    rewards: jax.Array,
    values: jax.Array,
    dones: jax.Array,
    last_value: jax.Array,
    gamma: float,
    lam: float,
) -> tuple[jax.Array, jax.Array]:
    """Generalised advantage estimation, time-major.

    ``dones[t]`` means the game ended at step ``t`` (the game then restarted), so
    neither the bootstrap value nor the later advantages cross that boundary.

    Args:
      rewards, values: float32[T, N]; dones: bool[T, N]; last_value: float32[N], the
        value of the state after the last step.

    Returns:
      ``(advantages, returns)``, both float32[T, N], ``returns = advantages + values``.
    """

    def backward_step(carry, step):
        next_advantage, next_value = carry
        reward, value, done = step
        continues = 1.0 - done.astype(jnp.float32)
        delta = reward + gamma * next_value * continues - value
        advantage = delta + gamma * lam * continues * next_advantage
        return (advantage, value), advantage

    init = (jnp.zeros_like(last_value), last_value)
    _, advantages = jax.lax.scan(backward_step, init, (rewards, values, dones), reverse=True)
    return advantages, advantages + values


# ----------------------------------------------------------------------------- losses


def mine_bce(mine_logits: jax.Array, mine_mask: jax.Array, label_mask: jax.Array) -> jax.Array:
    """Mean binary cross-entropy of the mine head over the labelled cells.

    Args:
      mine_logits: float32[B, H, W]; mine_mask: bool[B, H, W], the true mines;
      label_mask: bool[B, H, W], the cells that count (hidden cells of placed games).
    """
    per_cell = optax.sigmoid_binary_cross_entropy(mine_logits, mine_mask.astype(jnp.float32))
    weight = label_mask.astype(jnp.float32)
    return jnp.sum(per_cell * weight) / jnp.maximum(jnp.sum(weight), 1.0)


def ppo_loss(
    params: Any, apply_fn: ApplyFn, batch: Batch, ppo_cfg: PPOLossConfig
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The clipped PPO objective (to minimise) on one minibatch.

    ``loss = policy_loss + vf_coef * value_loss - ent_coef * entropy + aux_mine_weight * mine_bce``.

    Returns:
      ``(loss, metrics)`` with metrics ``policy_loss``, ``value_loss``, ``entropy``,
      ``mine_bce``, ``approx_kl`` and ``clip_frac`` (scalars).
    """
    logits, value, mine_logits = apply_fn(params, batch.obs)
    pi = distrax.Categorical(logits=masked_logits(logits, batch.action_mask))
    log_prob = pi.log_prob(batch.action)

    advantage = batch.advantage
    if ppo_cfg.normalize_advantages:
        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    log_ratio = log_prob - batch.log_prob
    ratio = jnp.exp(log_ratio)
    clipped_ratio = jnp.clip(ratio, 1.0 - ppo_cfg.clip_eps, 1.0 + ppo_cfg.clip_eps)
    policy_loss = -jnp.mean(jnp.minimum(ratio * advantage, clipped_ratio * advantage))

    value_clipped = batch.value + jnp.clip(value - batch.value, -ppo_cfg.clip_eps_v, ppo_cfg.clip_eps_v)
    value_loss = 0.5 * jnp.mean(
        jnp.maximum(jnp.square(value - batch.target), jnp.square(value_clipped - batch.target))
    )
    entropy = jnp.mean(pi.entropy())
    bce = mine_bce(mine_logits, batch.mine_mask, batch.mine_label_mask)

    loss = (
        policy_loss
        + ppo_cfg.vf_coef * value_loss
        - ppo_cfg.ent_coef * entropy
        + ppo_cfg.aux_mine_weight * bce
    )
    metrics = {
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy,
        "mine_bce": bce,
        "approx_kl": jnp.mean((ratio - 1.0) - log_ratio),
        "clip_frac": jnp.mean((jnp.abs(ratio - 1.0) > ppo_cfg.clip_eps).astype(jnp.float32)),
    }
    return loss, metrics


def imitation_loss(
    params: Any, apply_fn: ApplyFn, batch: Labelled, il_cfg: ImitationLossConfig
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Set cross-entropy on forced states, solver cross-entropy on the others, mine BCE.

    ``loss = policy_ce + guess_weight * guess_ce + aux_mine_weight * mine_bce``, each
    term a mean over the states it covers. The policy term on a forced state is
    ``-log sum_{a in forced_safe} pi(a)``, the probability of playing some proven-safe cell.

    Returns:
      ``(loss, metrics)``; metrics ``policy_ce`` (mean over forced states), ``guess_ce``
      (mean over guess states), ``mine_bce``, ``policy_accuracy`` (the greedy move is a
      forced-safe cell, over forced states) and ``forced_fraction`` (forced states over
      all states of unfinished games).
    """
    logits, _, mine_logits = apply_fn(params, batch.obs)
    logits = masked_logits(logits, batch.action_mask)
    log_total = jax.nn.logsumexp(logits, axis=-1)
    has_forced = jnp.any(batch.forced_safe, axis=-1)
    log_safe = jax.nn.logsumexp(masked_logits(logits, batch.forced_safe), axis=-1)
    set_ce = log_total - log_safe  # -log P(play some forced-safe cell)
    solver_logit = jnp.take_along_axis(logits, batch.solver_action[:, None], axis=-1)[:, 0]
    solver_ce = log_total - solver_logit
    is_guess = batch.has_guess_label & ~has_forced

    forced_weight = has_forced.astype(jnp.float32)
    guess_weight = is_guess.astype(jnp.float32)
    num_forced = jnp.maximum(jnp.sum(forced_weight), 1.0)
    num_guess = jnp.maximum(jnp.sum(guess_weight), 1.0)
    policy_ce = jnp.sum(jnp.where(has_forced, set_ce, 0.0)) / num_forced
    guess_ce = jnp.sum(jnp.where(is_guess, solver_ce, 0.0)) / num_guess
    bce = mine_bce(mine_logits, batch.mine_mask, batch.mine_label_mask)

    loss = policy_ce + il_cfg.guess_weight * guess_ce + il_cfg.aux_mine_weight * bce

    greedy = jnp.argmax(logits, axis=-1)
    greedy_is_safe = jnp.take_along_axis(batch.forced_safe, greedy[:, None], axis=-1)[:, 0]
    metrics = {
        "policy_ce": policy_ce,
        "guess_ce": guess_ce,
        "mine_bce": bce,
        "policy_accuracy": jnp.sum(greedy_is_safe & has_forced) / num_forced,
        "forced_fraction": jnp.sum(forced_weight) / jnp.maximum(jnp.sum(forced_weight + guess_weight), 1.0),
    }
    return loss, metrics


# ----------------------------------------------------------------------------- optimizer


def global_norm(tree: Any) -> jax.Array:
    """float32[]: the L2 norm of all leaves of ``tree`` together."""
    return jnp.sqrt(sum(jnp.sum(jnp.square(leaf)) for leaf in jax.tree.leaves(tree)))


def lr_schedule(peak_lr: float, decay_steps: int, anneal: bool) -> optax.Schedule:
    """Learning rate per optimizer step: cosine decay from ``peak_lr`` to 0 over
    ``decay_steps`` steps when ``anneal``, else constant."""
    if not anneal:
        return optax.constant_schedule(peak_lr)
    return optax.cosine_decay_schedule(peak_lr, decay_steps)


def clipped_adamw(
    schedule: optax.Schedule, max_grad_norm: float, weight_decay: float
) -> optax.GradientTransformation:
    """Global-norm gradient clipping, then AdamW on ``schedule``."""
    return optax.chain(
        optax.clip_by_global_norm(max_grad_norm),
        optax.adamw(schedule, weight_decay=weight_decay),
    )

"""The training maths alone: GAE, the PPO objective, the mine head's BCE, the imitation
objective and micro-batched gradients (the optimizer: ``msjax.optimizers``).

Everything here is a pure function of arrays and a few hyper-parameters; nothing knows
of boards in play, rollouts or devices (``msjax.stages.ppo`` and ``msjax.stages.imitation`` run the
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
    """The hyper-parameters ``ppo_loss`` reads (``msjax.stages.ppo.PPOConfig`` has them)."""

    clip_eps: float
    clip_eps_v: float
    vf_coef: float
    ent_coef: float
    aux_mine_weight: float
    normalize_advantages: bool


class ImitationLossConfig(Protocol):
    """The hyper-parameters ``imitation_loss`` reads (``msjax.stages.imitation.ImitationConfig``)."""

    guess_weight: float
    opening_weight: float
    aux_mine_weight: float
    proven_mine_weight: float
    few_proofs_weight: float
    few_proofs_cells: int
    proof_bce_weight: float


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
      forced_mines: bool[B, 2HW], reveals of cells proven to hold a mine (the policy mass
        kept off them with ``proven_mine_weight``);
      teacher_moves: bool[B, 2HW], the teacher's move on states without a forced-safe
        cell: the solver's move alone, or a set of equally good moves (the cells of
        lowest exact mine probability); has_guess_label: bool[B], states without a
        forced-safe cell whose teacher move is a label (an unfinished game);
      is_opening: bool[B], states of unfinished games before their first click (the
        teacher's move there is the solver's first click);
      mine_target: float32[B, H, W] (or bool), the mine head's target: the true mines, or
        a cell's exact mine probability; mine_label_mask: bool[B, H, W], the hidden
        cells of games whose mines are placed.
    """

    obs: jax.Array
    action_mask: jax.Array
    forced_safe: jax.Array
    forced_mines: jax.Array
    teacher_moves: jax.Array
    has_guess_label: jax.Array
    is_opening: jax.Array
    mine_target: jax.Array
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
      rewards: float32[T, N].
      values: float32[T, N].
      dones: bool[T, N].
      last_value: float32[N], the value of the state after the last step.

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


def mine_bce(
    mine_logits: jax.Array, mine_target: jax.Array, label_mask: jax.Array, num_labels: jax.Array | None = None
) -> jax.Array:
    """Mean binary cross-entropy of the mine head over the labelled cells.

    Args:
      mine_logits: float32[B, H, W]; mine_target: bool or float[B, H, W], the true mines
        or soft targets (a mine probability per cell);
      label_mask: bool[B, H, W], the cells that count (hidden cells of placed games);
      num_labels: float32[], the count the mean divides by (default: ``label_mask``'s; a
        micro-batch passes its whole batch's).
    """
    num_labels = jnp.sum(label_mask.astype(jnp.float32)) if num_labels is None else num_labels
    return jnp.sum(mine_bce_sums(mine_logits, mine_target, label_mask)) / jnp.maximum(num_labels, 1.0)


def mine_bce_sums(mine_logits: jax.Array, mine_target: jax.Array, label_mask: jax.Array) -> jax.Array:
    """float32[B]: each state's sum of the mine head's binary cross-entropy over its
    labelled cells (``mine_bce``'s arguments)."""
    per_cell = optax.sigmoid_binary_cross_entropy(mine_logits, mine_target.astype(jnp.float32))
    return jnp.sum(per_cell * label_mask.astype(jnp.float32), axis=(1, 2))


def ppo_loss(
    params: Any, apply_fn: ApplyFn, batch: Batch, ppo_cfg: PPOLossConfig, totals: PPOTotals | None = None
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The clipped PPO objective (to minimise) on one minibatch.

    ``loss = policy_loss + vf_coef * value_loss - ent_coef * entropy + aux_mine_weight * mine_bce``.
    Given the ``totals`` of a whole minibatch that ``batch`` is a micro-batch of, the loss
    and metrics are ``batch``'s share of the minibatch's (they sum to them), advantages
    normalised by the whole minibatch's statistics.

    Returns:
      ``(loss, metrics)`` with metrics ``policy_loss``, ``value_loss``, ``entropy``,
      ``mine_bce``, ``approx_kl`` and ``clip_frac`` (scalars).
    """
    logits, value, mine_logits = apply_fn(params, batch.obs)
    pi = distrax.Categorical(logits=masked_logits(logits, batch.action_mask))
    log_prob = pi.log_prob(batch.action)

    totals = ppo_totals(batch) if totals is None else totals

    def mean(x: jax.Array) -> jax.Array:  # over the whole minibatch
        return jnp.sum(x) / totals.num_samples

    advantage = batch.advantage
    if ppo_cfg.normalize_advantages:
        advantage = (advantage - totals.advantage_mean) / (totals.advantage_std + 1e-8)
    log_ratio = log_prob - batch.log_prob
    ratio = jnp.exp(log_ratio)
    clipped_ratio = jnp.clip(ratio, 1.0 - ppo_cfg.clip_eps, 1.0 + ppo_cfg.clip_eps)
    policy_loss = -mean(jnp.minimum(ratio * advantage, clipped_ratio * advantage))

    value_clipped = batch.value + jnp.clip(value - batch.value, -ppo_cfg.clip_eps_v, ppo_cfg.clip_eps_v)
    value_loss = 0.5 * mean(
        jnp.maximum(jnp.square(value - batch.target), jnp.square(value_clipped - batch.target))
    )
    entropy = mean(pi.entropy())
    bce = mine_bce(mine_logits, batch.mine_mask, batch.mine_label_mask, totals.num_mine_labels)

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
        "approx_kl": mean((ratio - 1.0) - log_ratio),
        "clip_frac": mean((jnp.abs(ratio - 1.0) > ppo_cfg.clip_eps).astype(jnp.float32)),
    }
    return loss, metrics


def proof_bce_sums(logits: jax.Array, forced_safe: jax.Array, legal: jax.Array) -> jax.Array:
    """float32[B]: each state's balanced binary cross-entropy of its reveal logits read one
    cell at a time as "this cell is proven safe": the mean over its forced-safe cells and
    the mean over its other legal reveals, averaged (0 where a class is empty).

    Args:
      logits: float32[B, 2HW], the policy's raw logits (reveals first, then flags);
      forced_safe: bool[B, 2HW], the proven-safe reveals (the positives);
      legal: bool[B, 2HW], the legal actions (their reveals not forced-safe: the negatives).
    """
    num_cells = logits.shape[-1] // 2
    positive = forced_safe[:, :num_cells]
    negative = legal[:, :num_cells] & ~positive
    per_cell = optax.sigmoid_binary_cross_entropy(logits[:, :num_cells], positive.astype(jnp.float32))

    def mean_over(cells: jax.Array) -> jax.Array:
        cells = cells.astype(jnp.float32)
        return jnp.sum(per_cell * cells, axis=-1) / jnp.maximum(jnp.sum(cells, axis=-1), 1.0)

    return 0.5 * (mean_over(positive) + mean_over(negative))


def imitation_loss(
    params: Any, apply_fn: ApplyFn, batch: Labelled, il_cfg: ImitationLossConfig,
    totals: ImitationTotals | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Set cross-entropy on forced states, solver cross-entropy on the others, mine BCE.

    ``loss = policy_ce + guess_weight * guess_ce + opening_weight * opening_ce +
    aux_mine_weight * mine_bce + proven_mine_weight * proven_mine_ce + few_proofs_weight *
    few_proofs_ce + proof_bce_weight * proof_bce``, each term a mean over the states it
    covers. The policy term on a forced state is ``-log sum_{a in forced_safe} pi(a)``, the
    probability of playing some proven-safe cell; ``guess_ce`` is the same set cross-entropy
    of the teacher's moves (``teacher_moves``: the solver's move)
    on the states without one, and ``opening_ce`` the same on the states before the first
    click alone (the solver's first click: the one move of a game that is the same guess on
    every board, so the cheapest to learn).
    ``proven_mine_ce`` is ``-log(1 - sum_{a in forced_mines} pi(a))``, the probability of not
    revealing a proven mine, over the states with one. ``few_proofs_ce`` is the policy
    term again over the forced states with at most ``few_proofs_cells`` forced-safe cells
    (``has_few_proofs``): the rare states whose proof a network passes over most often.
    ``proof_bce`` (``proof_bce_sums``, over the forced states) reads each reveal logit alone
    as the belief that its cell is proven safe: a label for every hidden cell, where the set
    cross-entropy is satisfied once any one proved cell holds the mass.
    Given the ``totals`` of a whole batch that ``batch`` is a micro-batch of, the loss and
    metrics are ``batch``'s share of the whole batch's (they sum to them).

    Returns:
      ``(loss, metrics)``; metrics ``policy_ce`` (mean over forced states), ``guess_ce``
      (mean over guess states), ``opening_ce`` (mean over opening states), ``mine_bce``,
      ``proven_mine_ce`` (mean over states with a proven mine), ``few_proofs_ce`` (mean
      over forced states with few proofs), ``proof_bce`` (mean over forced states),
      ``policy_accuracy`` (the greedy move is a forced-safe cell, over forced states) and
      ``forced_fraction`` (forced states over all states of unfinished games).
    """
    logits, _, mine_logits = apply_fn(params, batch.obs)
    shares, metrics = imitation_loss_shares(logits, mine_logits, batch, il_cfg, totals)
    return jnp.sum(shares), metrics


def imitation_loss_shares(
    logits: jax.Array, mine_logits: jax.Array, batch: Labelled, il_cfg: ImitationLossConfig,
    totals: ImitationTotals | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """``imitation_loss`` state by state, from the network's outputs on ``batch``
    (``logits`` float32[B, 2HW], ``mine_logits`` float32[B, H, W]).

    Returns ``(shares, metrics)``: ``shares`` float32[B], each state's part of the loss
    (their sum is ``imitation_loss``'s), and ``imitation_loss``'s metrics.
    """
    proof_bce = proof_bce_sums(logits, batch.forced_safe, batch.action_mask)
    logits = masked_logits(logits, batch.action_mask)
    log_total = jax.nn.logsumexp(logits, axis=-1)
    has_forced = jnp.any(batch.forced_safe, axis=-1)
    log_safe = jax.nn.logsumexp(masked_logits(logits, batch.forced_safe), axis=-1)
    set_ce = log_total - log_safe  # -log P(play some forced-safe cell)
    teacher_ce = log_total - jax.nn.logsumexp(masked_logits(logits, batch.teacher_moves), axis=-1)
    is_guess = batch.has_guess_label & ~has_forced
    not_mine = batch.action_mask & ~batch.forced_mines
    mine_ce = log_total - jax.nn.logsumexp(masked_logits(logits, not_mine), axis=-1)  # -log P(no proven mine)

    totals = imitation_totals(batch, il_cfg.few_proofs_cells) if totals is None else totals
    num_forced = jnp.maximum(totals.num_forced, 1.0)
    terms = {  # each state's part of each mean
        "policy_ce": jnp.where(has_forced, set_ce, 0.0) / num_forced,
        "guess_ce": jnp.where(is_guess, teacher_ce, 0.0) / jnp.maximum(totals.num_guess, 1.0),
        "opening_ce": jnp.where(batch.is_opening, teacher_ce, 0.0) / jnp.maximum(totals.num_opening, 1.0),
        "mine_bce": mine_bce_sums(mine_logits, batch.mine_target, batch.mine_label_mask)
        / jnp.maximum(totals.num_mine_labels, 1.0),
        "proven_mine_ce": jnp.where(has_proven_mine(batch), mine_ce, 0.0) / jnp.maximum(totals.num_with_mines, 1.0),
        "few_proofs_ce": jnp.where(has_few_proofs(batch, il_cfg.few_proofs_cells), set_ce, 0.0)
        / jnp.maximum(totals.num_few_proofs, 1.0),
        "proof_bce": jnp.where(has_forced, proof_bce, 0.0) / num_forced,
    }
    shares = (
        terms["policy_ce"] + il_cfg.guess_weight * terms["guess_ce"] + il_cfg.opening_weight * terms["opening_ce"]
        + il_cfg.aux_mine_weight * terms["mine_bce"] + il_cfg.proven_mine_weight * terms["proven_mine_ce"]
        + il_cfg.few_proofs_weight * terms["few_proofs_ce"] + il_cfg.proof_bce_weight * terms["proof_bce"]
    )

    greedy = jnp.argmax(logits, axis=-1)
    greedy_is_safe = jnp.take_along_axis(batch.forced_safe, greedy[:, None], axis=-1)[:, 0]
    metrics = {
        **{name: jnp.sum(term) for name, term in terms.items()},
        "policy_accuracy": jnp.sum(greedy_is_safe & has_forced) / num_forced,
        "forced_fraction": jnp.sum(has_forced.astype(jnp.float32)) / jnp.maximum(totals.num_forced + totals.num_guess, 1.0),
    }
    return shares, metrics


# ----------------------------------------------------------------------------- micro-batches
#
# Each loss above is a sum over its batch's samples divided by counts of the batch
# (samples, labelled cells, forced states) and, for PPO, uses the batch's advantage
# statistics. Given those totals of a whole batch (``ppo_totals``, ``imitation_totals``),
# the losses of its micro-batches sum to the whole batch's loss, and so do their
# gradients: ``microbatched_value_and_grad`` passes one micro-batch at a time through
# the network, which bounds the activations kept for the backward pass.


@flax.struct.dataclass
class PPOTotals:
    """Statistics of a whole PPO minibatch that its micro-batches' losses share.

    Attributes:
      num_samples: float32[]; advantage_mean, advantage_std: float32[];
      num_mine_labels: float32[], labelled cells of the mine head.
    """

    num_samples: jax.Array
    advantage_mean: jax.Array
    advantage_std: jax.Array
    num_mine_labels: jax.Array


def ppo_totals(batch: Batch) -> PPOTotals:
    """``PPOTotals`` of ``batch`` (leaves ``[B, ...]``)."""
    return PPOTotals(
        num_samples=jnp.float32(batch.advantage.shape[0]),
        advantage_mean=batch.advantage.mean(),
        advantage_std=batch.advantage.std(),
        num_mine_labels=jnp.sum(batch.mine_label_mask.astype(jnp.float32)),
    )


@flax.struct.dataclass
class ImitationTotals:
    """Counts of a whole imitation batch that its micro-batches' losses share.

    Attributes:
      num_forced: float32[], states with a forced-safe cell; num_guess: float32[], states
        of unfinished games without one; num_opening: float32[], states before the first
        click; num_mine_labels: float32[], labelled cells; num_with_mines: float32[], states
        with a proven mine among their legal moves (``has_proven_mine``); num_few_proofs:
        float32[], forced states with few forced-safe cells (``has_few_proofs``).
    """

    num_forced: jax.Array
    num_guess: jax.Array
    num_opening: jax.Array
    num_mine_labels: jax.Array
    num_with_mines: jax.Array
    num_few_proofs: jax.Array


def imitation_totals(batch: Labelled, few_proofs_cells: int) -> ImitationTotals:
    """``ImitationTotals`` of ``batch`` (leaves ``[B, ...]``); ``few_proofs_cells`` as in
    ``has_few_proofs``."""
    has_forced = jnp.any(batch.forced_safe, axis=-1)
    is_guess = batch.has_guess_label & ~has_forced
    return ImitationTotals(
        num_forced=jnp.sum(has_forced.astype(jnp.float32)),
        num_guess=jnp.sum(is_guess.astype(jnp.float32)),
        num_opening=jnp.sum(batch.is_opening.astype(jnp.float32)),
        num_mine_labels=jnp.sum(batch.mine_label_mask.astype(jnp.float32)),
        num_with_mines=jnp.sum(has_proven_mine(batch).astype(jnp.float32)),
        num_few_proofs=jnp.sum(has_few_proofs(batch, few_proofs_cells).astype(jnp.float32)),
    )


def has_few_proofs(batch: Labelled, few_proofs_cells: int) -> jax.Array:
    """bool[B]: the states with 1 to ``few_proofs_cells`` forced-safe cells."""
    count = jnp.sum(batch.forced_safe, axis=-1)
    return (count >= 1) & (count <= few_proofs_cells)


def has_proven_mine(batch: Labelled) -> jax.Array:
    """bool[B]: states with a proven mine among their legal moves and some other legal move."""
    legal = batch.action_mask
    return jnp.any(legal & batch.forced_mines, axis=-1) & jnp.any(legal & ~batch.forced_mines, axis=-1)


def num_microbatches(batch_size: int, microbatch_size: int) -> int:
    """Micro-batches of ``microbatch_size`` in a batch of ``batch_size``; one when the size is
    0 (off) or covers the whole batch."""
    return batch_size // microbatch_size if 0 < microbatch_size < batch_size else 1


def check_microbatch_size(field: str, microbatch_size: Any, batch_size: int, batch_name: str) -> None:
    """Raises ``ValueError`` unless ``microbatch_size`` is 0 (off), a divisor of
    ``batch_size``, or at least ``batch_size`` (one micro-batch)."""
    if not isinstance(microbatch_size, int) or isinstance(microbatch_size, bool) or microbatch_size < 0 or (
        microbatch_size < batch_size and batch_size % max(microbatch_size, 1)
    ):
        raise ValueError(
            f"{field}={microbatch_size!r} must be 0 (off), a divisor of {batch_name}={batch_size}, or more"
        )


def split_microbatches(batch: Any, num_microbatches: int) -> Any:
    """``batch``'s leaves ``[B, ...]`` as ``[K, B/K, ...]``, micro-batch ``k`` taking the
    samples ``k, k+K, k+2K, ...`` (strided, so that each spans all the batch's games,
    whichever devices hold them)."""

    def split(x: jax.Array) -> jax.Array:
        strided = x.reshape((x.shape[0] // num_microbatches, num_microbatches) + x.shape[1:])
        return jnp.swapaxes(strided, 0, 1)

    return jax.tree.map(split, batch)


def join_microbatches(microbatches: Any) -> Any:
    """The inverse of ``split_microbatches``: leaves ``[K, B/K, ...]`` back to ``[B, ...]``,
    each sample in its place in the batch."""
    return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1).reshape((-1,) + x.shape[2:]), microbatches)


def microbatched_value_and_grad(
    loss_fn: Callable[[Any, Any, Any], tuple[jax.Array, dict[str, jax.Array]]],
    totals_fn: Callable[[Any], Any],
    params: Any,
    batch: Any,
    microbatch_size: int,
    arrange: Callable[[Any], Any] = lambda microbatches: microbatches,
) -> tuple[tuple[jax.Array, dict[str, jax.Array]], Any]:
    """``((loss, metrics), grads)`` of ``loss_fn(params, batch, totals)`` on the whole
    ``batch`` (leaves ``[B, ...]``), its micro-batches of ``microbatch_size`` samples (a
    divisor of ``B``; 0 or ``B`` and more: one micro-batch) passing through the network
    one at a time (``lax.scan``).

    Every micro-batch's loss takes the whole batch's ``totals_fn(batch)``; the sums of
    their losses, metrics and gradients are the whole batch's, up to float rounding.
    With one micro-batch this is ``jax.value_and_grad`` of ``loss_fn(params, batch, None)``.
    ``arrange`` places the micro-batches (leaves ``[K, B/K, ...]``) on the devices.
    """
    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    num_parts = num_microbatches(jax.tree.leaves(batch)[0].shape[0], microbatch_size)
    if num_parts == 1:
        return grad_fn(params, batch, None)
    totals = totals_fn(batch)
    microbatches = arrange(split_microbatches(batch, num_parts))
    first = jax.tree.map(lambda x: x[0], microbatches)
    zeros = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), jax.eval_shape(grad_fn, params, first, totals))

    def add(total, microbatch):
        return jax.tree.map(jnp.add, total, grad_fn(params, microbatch, totals)), None

    total, _ = jax.lax.scan(add, zeros, microbatches)
    return total

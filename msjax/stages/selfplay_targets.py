"""What the self-play stage learns from a rollout: the search's targets and the loss.

A rollout of ``T`` moves of ``N`` games (``SelfPlayStep``, leaves ``[T, N, ...]``) becomes
``SearchTargets`` (``search_targets``):

* **policy**: on a searched state (a guess) the search's improved policy (mctx's
  ``action_weights``); on the others the move played (one-hot): a proved-safe reveal where
  the view has one, the policy's own move at the opening and beyond the exact analysis'
  limits. Both are the ``action_weights`` that ``search.search_policy`` returns; the loss
  takes the two kinds apart, each a mean over its own states, so that the guesses (a few
  states in ten) are not drowned by the proofs.
* **value**: the game's outcome, 1 won and 0 lost, as the return with ``gamma = 1`` and
  ``lambda = 1`` (``losses.gae`` with a reward of 1 at a win and zero values): a state whose
  game ends within the rollout gets its outcome exactly; a game still in play at the
  rollout's end takes the value head's estimate of the state there (clipped to [0, 1], a
  chance to win) for its later states' outcome.

The searched states of past rollouts, with these targets, can be learned from again
(``selfplay_buffer``): a batch is then the rollout and a draw from that buffer, and
``valid`` marks the drawn slots that hold a state.

``selfplay_loss`` weighs them (``SelfPlayConfig``'s ``policy_weight``, ``move_weight``,
``value_weight``, ``aux_mine_weight``); given a whole batch's ``SelfPlayTotals`` its
micro-batches' losses sum to the batch's (``losses.microbatched_value_and_grad``).
"""

from __future__ import annotations

from typing import Any, Protocol

import flax
import jax
import jax.numpy as jnp

from msjax import losses
from msjax.models import masked_logits


class SelfPlayLossConfig(Protocol):
    """The weights ``selfplay_loss`` reads (``msjax.stages.selfplay.SelfPlayConfig`` has them)."""

    policy_weight: float
    move_weight: float
    value_weight: float
    aux_mine_weight: float


@flax.struct.dataclass
class SelfPlayStep:
    """One rollout step of ``N`` games played by the network with search (a rollout stacks
    ``T`` of them: ``[T, N, ...]``).

    Attributes:
      obs: float32[N, C, H, W]; action_mask: bool[N, A] (``A = 2HW``); action: int32[N];
      action_weights: float32[N, A], the search's improved policy where ``searched``, else
        the one-hot of the move; searched: bool[N], the view was a guess and searched;
      corrected: bool[N], the move played is not the network's own favourite (what it
        would have played alone);
      won: bool[N], the game was won at this step; done: bool[N], it ended at this step;
      mine_mask: bool[N, H, W], the true mines (labels only); mine_label_mask: bool[N, H, W],
        hidden cells of games whose mines are placed.
    """

    obs: jax.Array
    action_mask: jax.Array
    action: jax.Array
    action_weights: jax.Array
    searched: jax.Array
    corrected: jax.Array
    won: jax.Array
    done: jax.Array
    mine_mask: jax.Array
    mine_label_mask: jax.Array


@flax.struct.dataclass
class SearchTargets:
    """States of self-play with their targets, leaves ``[B, ...]`` (or ``[T, N, ...]``).

    Attributes:
      obs, action_mask, action, action_weights, searched, mine_mask, mine_label_mask: as in
        ``SelfPlayStep``; outcome: float32[B], the value target (1 won, 0 lost, or the value
        head's estimate at the rollout's end for a game still in play); valid: bool[B], the
        state is one to learn from (False: an empty slot of the buffer).
    """

    obs: jax.Array
    action_mask: jax.Array
    action: jax.Array
    action_weights: jax.Array
    searched: jax.Array
    outcome: jax.Array
    mine_mask: jax.Array
    mine_label_mask: jax.Array
    valid: jax.Array


def outcomes(won: jax.Array, done: jax.Array, last_value: jax.Array) -> jax.Array:
    """float32[T, N]: each state's value target, the outcome of its game.

    Args:
      won: bool[T, N], the game was won at this step.
      done: bool[T, N], the game ended at this step (a finished game restarts).
      last_value: float32[N], the value head on each game after the rollout (clipped to
        [0, 1] here), the outcome of the games still in play.

    Returns:
      1 where the state's game is won within the rollout, 0 where it is lost, and the
      clipped ``last_value`` where it is still in play at the end (``losses.gae`` with
      ``gamma = lambda = 1``, a reward of 1 at a win and zero values).
    """
    rewards = won.astype(jnp.float32)
    bootstrap = jnp.clip(last_value, 0.0, 1.0)
    _, returns = losses.gae(rewards, jnp.zeros_like(rewards), done, bootstrap, 1.0, 1.0)
    return returns


def search_targets(rollout: SelfPlayStep, last_value: jax.Array) -> SearchTargets:
    """The rollout (leaves ``[T, N, ...]``) with its value targets (``outcomes``)."""
    return SearchTargets(
        obs=rollout.obs,
        action_mask=rollout.action_mask,
        action=rollout.action,
        action_weights=rollout.action_weights,
        searched=rollout.searched,
        outcome=outcomes(rollout.won, rollout.done, last_value),
        mine_mask=rollout.mine_mask,
        mine_label_mask=rollout.mine_label_mask,
        valid=jnp.ones(rollout.searched.shape, bool),
    )


# ----------------------------------------------------------------------------- the loss


@flax.struct.dataclass
class SelfPlayTotals:
    """Counts of a whole batch that its micro-batches' losses share (float32[] each):
    num_states, num_searched (the searched states), num_moves (the others),
    num_mine_labels (labelled cells of the mine head)."""

    num_states: jax.Array
    num_searched: jax.Array
    num_moves: jax.Array
    num_mine_labels: jax.Array


def selfplay_totals(batch: SearchTargets) -> SelfPlayTotals:
    """``SelfPlayTotals`` of ``batch``'s valid states (leaves ``[B, ...]``)."""
    valid = batch.valid
    num_searched = jnp.sum(batch.searched & valid, dtype=jnp.float32)
    num_states = jnp.sum(valid, dtype=jnp.float32)
    return SelfPlayTotals(
        num_states=num_states,
        num_searched=num_searched,
        num_moves=num_states - num_searched,
        num_mine_labels=jnp.sum(batch.mine_label_mask & valid[:, None, None], dtype=jnp.float32),
    )


def selfplay_loss(
    params: Any, apply_fn: losses.ApplyFn, batch: SearchTargets, cfg: SelfPlayLossConfig,
    totals: SelfPlayTotals | None = None,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The self-play objective (to minimise) on a batch of ``B`` states.

    ``loss = policy_weight * policy_ce + move_weight * move_ce + value_weight * value_loss
    + aux_mine_weight * mine_bce``: ``policy_ce``, the cross-entropy of the masked policy to
    the improved policy, a mean over the searched states; ``move_ce``, the cross-entropy to
    the move played, a mean over the other states; ``value_loss``, half the squared error
    of the value head to ``outcome``, a mean over all states; ``mine_bce`` as in
    ``losses.mine_bce``; each over the valid states alone. Given the ``totals`` of a whole batch that ``batch`` is a
    micro-batch of, the loss and metrics are ``batch``'s share of the whole batch's.

    Returns:
      ``(loss, metrics)``, metrics (scalars): those four terms, ``policy_kl`` (``policy_ce``
      less the improved policy's entropy: the KL divergence that ``policy_ce`` moves, a mean
      over the searched states) and ``search_changed`` (the share of the searched states
      whose move is not the policy's favourite legal one).
    """
    logits, value, mine_logits = apply_fn(params, batch.obs)
    totals = selfplay_totals(batch) if totals is None else totals
    masked = masked_logits(logits, batch.action_mask)
    cross_entropy = -jnp.sum(batch.action_weights * jax.nn.log_softmax(masked, axis=-1), axis=-1)
    target_entropy = -jnp.sum(jax.scipy.special.xlogy(batch.action_weights, batch.action_weights), axis=-1)
    valid = batch.valid
    searched, moves = batch.searched & valid, ~batch.searched & valid
    changed = searched & (jnp.argmax(masked, axis=-1) != batch.action)
    mine_labels = batch.mine_label_mask & valid[:, None, None]
    terms = {
        "policy_ce": jnp.sum(jnp.where(searched, cross_entropy, 0.0)) / jnp.maximum(totals.num_searched, 1.0),
        "move_ce": jnp.sum(jnp.where(moves, cross_entropy, 0.0)) / jnp.maximum(totals.num_moves, 1.0),
        "value_loss": 0.5 * jnp.sum(jnp.where(valid, jnp.square(value - batch.outcome), 0.0))
        / jnp.maximum(totals.num_states, 1.0),
        "mine_bce": losses.mine_bce(mine_logits, batch.mine_mask, mine_labels, totals.num_mine_labels),
    }
    loss = (
        cfg.policy_weight * terms["policy_ce"] + cfg.move_weight * terms["move_ce"]
        + cfg.value_weight * terms["value_loss"] + cfg.aux_mine_weight * terms["mine_bce"]
    )
    metrics = {
        **terms,
        "policy_kl": jnp.sum(jnp.where(searched, cross_entropy - target_entropy, 0.0))
        / jnp.maximum(totals.num_searched, 1.0),
        "search_changed": jnp.sum(changed, dtype=jnp.float32) / jnp.maximum(totals.num_searched, 1.0),
    }
    return loss, metrics

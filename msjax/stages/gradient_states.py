"""The states that enter an imitation update's gradient step: each taken through a random
symmetry of the board (``ImitationConfig.augment_symmetries``), or only those that carry the
most loss (``ImitationConfig.hardest_states``). Pure functions of a labelled batch
(``losses.Labelled``, leaves ``[B, ...]``); ``stages.imitation`` calls them."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from msjax import losses, models
from msjax.losses import Labelled
from msjax.stages.imitation_config import ImitationConfig


def augment_with_symmetries(batch: Labelled, key: jax.Array, height: int, width: int) -> Labelled:
    """``batch`` (``[B, ...]``) with each state and its labels taken through a symmetry of
    the board drawn uniformly (``models.board_symmetries``)."""
    group = models.board_symmetries(height, width)
    choice = jax.random.randint(key, (batch.obs.shape[0],), 0, len(group))
    as_board = lambda x: x.reshape(x.shape[:1] + (-1, height, width))  # noqa: E731
    boards = {
        "obs": batch.obs, "mine_target": batch.mine_target, "mine_label_mask": batch.mine_label_mask,
        "action_mask": as_board(batch.action_mask), "forced_safe": as_board(batch.forced_safe),
        "forced_mines": as_board(batch.forced_mines),
        "teacher_moves": as_board(batch.teacher_moves),
    }
    branches = [functools.partial(jax.tree.map, functools.partial(models.transform_board, steps=g)) for g in group]
    moved = jax.vmap(lambda index, state: jax.lax.switch(index, branches, state))(choice, boards)
    flat = lambda x: x.reshape(x.shape[0], -1)  # noqa: E731
    return batch.replace(
        obs=moved["obs"], mine_target=moved["mine_target"], mine_label_mask=moved["mine_label_mask"],
        action_mask=flat(moved["action_mask"]), forced_safe=flat(moved["forced_safe"]),
        forced_mines=flat(moved["forced_mines"]),
        teacher_moves=flat(moved["teacher_moves"]),
    )


def hardest(
    batch: Labelled, outputs: tuple[jax.Array, jax.Array], il_cfg: ImitationConfig
) -> tuple[Labelled, dict[str, jax.Array]]:
    """The ``il_cfg.hardest_states`` states of ``batch`` (``[B, ...]``) that carry the most
    loss given the network's ``outputs`` on them (``(logits, mine_logits)``), in the order
    of ``batch``, and the whole batch's loss metrics: ``imitation_loss``'s and ``loss``,
    plus ``hardest_loss_share``, the part of the loss the chosen states carry."""
    shares, metrics = losses.imitation_loss_shares(*outputs, batch, il_cfg)
    _, chosen = jax.lax.top_k(shares, il_cfg.hardest_states)
    chosen = jnp.sort(chosen)  # keep the games' order (and their split over devices)
    loss = jnp.sum(shares)
    metrics = {**metrics, "loss": loss, "hardest_loss_share": jnp.sum(shares[chosen]) / jnp.maximum(loss, 1e-12)}
    return jax.tree.map(lambda x: x[chosen], batch), metrics

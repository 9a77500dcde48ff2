"""The optimizer of the training stages: the learning-rate schedule, global-norm
clipping, then AdamW (``clipped_adamw``). The gradient norm the stages log is
optax's own (``optax.tree.norm``).

Pure optax transformations of parameter trees; the stages build them from their configs
(``msjax.stages.imitation.make_optimizer``, ``msjax.stages.ppo``, ``msjax.stages.selfplay``).
``trainable_only`` limits one to the value head (a stage's ``trainable="value"``).
"""

from __future__ import annotations

import jax
import optax

TRAINABLE = ("all", "value")
"""What a stage's ``trainable`` may be: every parameter, or the value head alone."""
VALUE_HEAD = ("value_hidden", "value_out")
"""The network's modules that ``trainable="value"`` trains (``models``' value head)."""


def lr_schedule(peak_lr: float, decay_steps: int, anneal: bool) -> optax.Schedule:
    """Learning rate per optimizer step: cosine decay from ``peak_lr`` to 0 over
    ``decay_steps`` steps when ``anneal``, else constant."""
    if not anneal:
        return optax.constant_schedule(peak_lr)
    return optax.cosine_decay_schedule(peak_lr, decay_steps)


def clipped_adamw(schedule: optax.Schedule, max_grad_norm: float, weight_decay: float) -> optax.GradientTransformation:
    """Global-norm clipping, then ``optax.adamw`` on ``schedule`` with decoupled
    ``weight_decay``."""
    return optax.chain(optax.clip_by_global_norm(max_grad_norm), optax.adamw(schedule, weight_decay=weight_decay))


def value_head_labels(params):
    """``"train"`` for every leaf of the value head's modules (``VALUE_HEAD``), ``"frozen"``
    for the rest: the labels of ``trainable_only``'s ``"value"``."""

    def label(path, _):
        names = {getattr(entry, "key", None) for entry in path}
        return "train" if names & set(VALUE_HEAD) else "frozen"

    return jax.tree_util.tree_map_with_path(label, params)


def trainable_only(optimizer: optax.GradientTransformation, trainable: str) -> optax.GradientTransformation:
    """``optimizer`` on the parameters ``trainable`` names (``TRAINABLE``): all of them, or the
    value head alone (``"value"``: the other leaves get zero updates)."""
    if trainable == "all":
        return optimizer
    return optax.multi_transform({"train": optimizer, "frozen": optax.set_to_zero()}, value_head_labels)

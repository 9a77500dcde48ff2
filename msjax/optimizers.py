"""The optimizer of the training stages: the learning-rate schedule, global-norm
clipping, then AdamW (``clipped_adamw``). The gradient norm the stages log is
optax's own (``optax.tree.norm``).

Pure optax transformations of parameter trees; the stages build them from their configs
(``msjax.stages.imitation.make_optimizer``, ``msjax.stages.ppo``).
"""

from __future__ import annotations

import optax


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

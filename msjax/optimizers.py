"""The optimizers of the training stages: the learning-rate schedule, global-norm
clipping, then AdamW or Muon (``clipped_optimizer``). The gradient norm the stages log is
optax's own (``optax.tree.norm``).

Pure optax transformations of parameter trees; the stages build them from their configs
(``msjax.stages.imitation.make_optimizer``, ``msjax.stages.ppo``).
"""

from __future__ import annotations

from typing import Any

import jax
import optax


def lr_schedule(peak_lr: float, decay_steps: int, anneal: bool) -> optax.Schedule:
    """Learning rate per optimizer step: cosine decay from ``peak_lr`` to 0 over
    ``decay_steps`` steps when ``anneal``, else constant."""
    if not anneal:
        return optax.constant_schedule(peak_lr)
    return optax.cosine_decay_schedule(peak_lr, decay_steps)


OPTIMIZERS = ("adamw", "muon")


def conv_kernel_dims(params: Any) -> Any:
    """Muon's reshape of each parameter: every 4-D kernel (``[3, 3, C_in, C_out]``) as the
    ``[9 C_in, C_out]`` matrix it multiplies by, ``None`` (Adam) for every other leaf
    (biases, norms, and the 1x1 heads and value MLP, left to Adam as Muon's authors do)."""
    def dims(leaf):
        return optax.contrib.MuonDimensionNumbers((0, 1, 2), 3) if leaf.ndim == 4 else None

    return jax.tree.map(dims, params)


def clipped_optimizer(
    kind: str, schedule: optax.Schedule, max_grad_norm: float, weight_decay: float
) -> optax.GradientTransformation:
    """Global-norm clipping, then ``kind`` on ``schedule``: ``"adamw"`` (``optax.adamw``) or
    ``"muon"`` (``optax.contrib.muon`` on the 3x3 kernels, its updates scaled to AdamW's RMS so
    the same ``schedule`` and decoupled ``weight_decay`` serve both; on every other leaf
    optax's muon's own AdamW, with Nesterov momentum)."""
    if kind == "adamw":
        step = optax.adamw(schedule, weight_decay=weight_decay)
    elif kind == "muon":
        step = optax.contrib.muon(
            schedule, weight_decay=weight_decay, adam_weight_decay=weight_decay,
            muon_weight_dimension_numbers=conv_kernel_dims, consistent_rms=0.2,
        )
    else:
        raise ValueError(f"optimizer {kind!r} must be one of {OPTIMIZERS}")
    return optax.chain(optax.clip_by_global_norm(max_grad_norm), step)

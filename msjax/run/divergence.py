"""A diverged run stops: the finiteness check at each chunk boundary.

A learning rate far too large makes the loss NaN within an update or two; training
would go on to the end, save NaN weights as its newest checkpoint and report success.
``check_chunk`` looks at a finished chunk's per-update ``loss`` and ``grad_norm`` and at
the parameters it produced, before anything of it is saved, and raises
``TrainingDiverged`` with one line: the stage, the update, the quantity, the newest
checkpoint (saved at an earlier boundary, so finite) and the command that resumes from
it with a smaller learning rate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from msjax import distributed
from msjax.run.files import resume_command

__all__ = ["WATCHED", "TrainingDiverged", "first_non_finite", "params_finite", "check_chunk"]

WATCHED = ("loss", "grad_norm")
"""The per-update metrics that must stay finite."""


class TrainingDiverged(Exception):
    """Training produced NaN or infinity; nothing of the chunk was saved. The text says
    where and how to go on."""


def first_non_finite(metrics: dict[str, Any], names: tuple[str, ...] = WATCHED) -> tuple[int, str, float] | None:
    """``(index, name, value)`` of the first update (index into the chunk) where one of
    ``names`` (float[updates] each; absent names are skipped) is NaN or infinite, or None."""
    arrays = {name: np.asarray(metrics[name], np.float64).reshape(-1) for name in names if name in metrics}
    if not arrays:
        return None
    count = min(len(values) for values in arrays.values())
    for index in range(count):
        for name, values in arrays.items():
            if not np.isfinite(values[index]):
                return index, name, float(values[index])
    return None


@jax.jit
def _all_finite(params: Any) -> jax.Array:
    leaves = [jnp.all(jnp.isfinite(leaf)) for leaf in jax.tree.leaves(params) if jnp.issubdtype(leaf.dtype, jnp.inexact)]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.bool_(True)


def params_finite(params: Any) -> bool:
    """Whether every floating-point array of ``params`` is finite (a device reduction:
    only one bool comes to the host; replicated parameters of a mesh are fine)."""
    return bool(distributed.host_value(_all_finite(params)))


def check_chunk(spec: Any, first_update: int, metrics: dict[str, Any], params: Any, checkpoints: Any, cfg: Any) -> None:
    """Raises ``TrainingDiverged`` when the chunk of the stage ``spec``
    (``stages.StageSpec``) that started after update ``first_update`` produced a
    non-finite loss or gradient norm (``metrics``: host arrays, one value per update) or
    non-finite ``params``.

    ``checkpoints`` (``checkpoint.Checkpoints``) names the newest checkpoint, ``cfg``
    (``ExperimentConfig``) holds the stage's learning rate to suggest a tenth of.
    """
    stage = spec.name
    found = first_non_finite(metrics)
    if found is not None:
        index, name, value = found
        what = f"{stage} update {first_update + index + 1}: {name} is {value}"
    elif not params_finite(params):
        count = len(next(iter(metrics.values()))) if metrics else 0
        what = f"{stage} update {first_update + count}: the parameters hold NaN or infinity"
    else:
        return
    raise TrainingDiverged(f"training diverged at {what}; {how_to_go_on(spec, checkpoints, cfg)}")


def how_to_go_on(spec: Any, checkpoints: Any, cfg: Any) -> str:
    """Where the newest (finite) checkpoint is, and the command that resumes from it with a
    tenth of the learning rate of the stage ``spec`` (or starts again, when none was saved)."""
    smaller = f"--config.{spec.setting('lr')}={spec.config(cfg).lr / 10:g}"
    run_dir = Path(checkpoints.directory).parent
    step = checkpoints.latest_step
    if step is None:
        return f"no checkpoint was saved before it; start again with a smaller learning rate ({smaller})"
    command = resume_command(run_dir, smaller)
    return (
        f"nothing past it was saved; the newest finite checkpoint is {checkpoints.path(step)}; "
        f"resume from it with a smaller learning rate: {command}"
    )

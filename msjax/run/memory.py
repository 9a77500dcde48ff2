"""What a run's compiled training chunks need in device memory, before they run.

XLA sizes a compiled program without running it, on any backend:
``jax.jit(chunk).lower(abstract_state).compile().memory_analysis()`` gives its argument,
output and temporary bytes, the state built abstractly (``jax.eval_shape``, nothing
allocated). ``chunk_memory(cfg)`` does this for each stage of a run, built as the runner
builds them (the imitation stage on a board mix's first board); ``device_limit`` reads
what an accelerator has (``device.memory_stats()["bytes_limit"]``); ``check_fits`` turns
a chunk that does not fit into an error that names the setting to change. On the CPU
backend the figures are a proxy for a GPU's (the same program, another compiler), good
enough to size configs; ``model.conv_impl="xla"`` makes the CPU compile the GPU's
convolutions.

``python -m msjax memory CONFIG`` prints the figures (``msjax.cli.memory``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax

from msjax import distributed
from msjax import stages as stages_lib
from msjax.run.config import ExperimentConfig
from msjax.stages import StageSpec

__all__ = ["ChunkMemory", "DoesNotFit", "GIB", "check_fits", "chunk_memory", "compiled_memory", "device_limit"]

GIB = 1024**3


class DoesNotFit(ValueError):
    """A compiled chunk needs more memory than the device has."""


@dataclasses.dataclass(frozen=True)
class ChunkMemory:
    """One compiled chunk's memory, per device, in bytes (XLA's ``memory_analysis``).

    Attributes:
      stage: the stage's name (``msjax.stages.STAGES``).
      argument_bytes: the state passed in.
      output_bytes: the state and metrics passed out.
      alias_bytes: outputs that reuse donated argument buffers (part of both above).
      temp_bytes: everything else the program holds at its peak (activations, rollout).
    """

    stage: str
    argument_bytes: int
    output_bytes: int
    alias_bytes: int
    temp_bytes: int

    @property
    def total_bytes(self) -> int:
        """argument + output + temporary bytes: what the chunk needs, counting the donated
        state twice (so an upper bound by the state's size)."""
        return self.argument_bytes + self.output_bytes + self.temp_bytes

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "total_bytes": self.total_bytes}


def compiled_memory(stage: str, lowered: Any) -> ChunkMemory:
    """``ChunkMemory`` of a lowered program (``jit(f).lower(...)``), compiled here (the
    compilation is cached, so running the program afterwards does not compile again)."""
    analysis = lowered.compile().memory_analysis()
    return ChunkMemory(
        stage=stage,
        argument_bytes=int(analysis.argument_size_in_bytes),
        output_bytes=int(analysis.output_size_in_bytes),
        alias_bytes=int(analysis.alias_size_in_bytes),
        temp_bytes=int(analysis.temp_size_in_bytes),
    )


def chunk_memory(
    cfg: ExperimentConfig, chunk_updates: int | None = None, on_stage: Callable[[int], None] | None = None
) -> list[ChunkMemory]:
    """Each stage's chunk of ``chunk_updates`` updates (default ``run.chunk_updates``),
    compiled for one device of the current backend, in the run's order
    (``stages.run_stages``); ``on_stage(1)``, when given, is called as each stage's
    compile ends."""
    chunk_updates = cfg.run.chunk_updates if chunk_updates is None else chunk_updates
    figures = []
    for stage in stages_lib.run_stages(cfg):
        lowered = distributed.jit_chunk(stage.chunk_fn(cfg, chunk_updates)).lower(stage.abstract_state(cfg))
        figures.append(compiled_memory(stage.name, lowered))
        if on_stage is not None:
            on_stage(1)
    return figures


def device_limit(limit_gib: float = 0.0, device: Any = None) -> int | None:
    """Bytes a chunk may use: ``limit_gib`` GiB when > 0, else what ``device`` (default:
    the first local device) says it has (``memory_stats()["bytes_limit"]``), None where
    it says nothing (the CPU)."""
    if limit_gib > 0:
        return int(limit_gib * GIB)
    device = jax.local_devices()[0] if device is None else device
    try:
        stats = device.memory_stats()
    except (AttributeError, NotImplementedError, RuntimeError):
        return None
    limit = (stats or {}).get("bytes_limit")
    return int(limit) if limit else None


def check_fits(
    memory: ChunkMemory, limit_bytes: int | None, stage: StageSpec | None = None, cfg: ExperimentConfig | None = None
) -> None:
    """Raises ``DoesNotFit`` when ``memory`` needs more than ``limit_bytes`` (None: no limit
    known, nothing to check), naming the need, the limit and the setting to lower (the
    micro-batch setting of ``stage``, with its value under ``cfg``, when given)."""
    if limit_bytes is None or memory.total_bytes <= limit_bytes:
        return
    setting, current = "the batch sizes", ""
    if stage is not None:
        setting = stage.setting("microbatch_size")
        current = f" (now {stage.config(cfg).microbatch_size or 'off'})" if cfg is not None else ""
    raise DoesNotFit(
        f"the {memory.stage} chunk needs {memory.total_bytes / GIB:.2f} GiB of device memory "
        f"(state {memory.argument_bytes / GIB:.2f} GiB in, {memory.output_bytes / GIB:.2f} GiB out, "
        f"{memory.temp_bytes / GIB:.2f} GiB temporary) but the device has {limit_bytes / GIB:.2f} GiB: "
        f"set {setting}{current} to a smaller divisor of its batch, or use fewer boards per update (python -m msjax memory CONFIG shows the figures)"
    )

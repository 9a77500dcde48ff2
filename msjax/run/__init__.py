"""The run: what turns a config into a trained agent in a run directory, and back.

``loop`` (the stages in order, as jitted chunks; ``loop.train``), ``control`` (the run
directory, the signals that stop a run, resume and warm starts), ``config`` (the
experiment config, its overrides and its saved form), ``checkpoint`` (Orbax checkpoints)
and ``integrity`` (their digests), ``agents`` (``load_agent``: a run's agent or a shipped
one), ``log`` (metrics rows, progress, ``train.log``), ``files`` (crash-safe JSON files),
``lock`` (one writer per run directory), the faults ``disk`` (a full disk) and
``divergence`` (a non-finite state), and ``memory`` (what each compiled chunk needs, before
it runs). Submodules are imported on use: ``msjax.run.files`` does not pull in Orbax.
"""

__all__ = [
    "agents", "checkpoint", "config", "control", "disk", "divergence", "files", "integrity", "lock", "log", "loop", "memory",
]

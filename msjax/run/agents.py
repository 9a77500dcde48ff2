"""A trained agent from a run directory, or one that ships with the package, by name:
``load_agent`` (``msjax.load_agent``).

With ``"latest"`` or ``"best"``, a damaged checkpoint is skipped for the newest intact one
(``checkpoint.newest_intact``), with a one-line warning naming it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msjax import agent as agent_lib
from msjax import shipped as shipped_lib
from msjax import stages as stages_lib
from msjax.run.checkpoint import LOG, CheckpointError, CheckpointInfo, Checkpoints, newest_intact, resolve


def load_agent(path: str | Path, step: int | str = "latest", greedy: bool = True) -> agent_lib.Agent:
    """The agent saved in a run, or a shipped agent by name.

    Args:
      path: a shipped agent's name (``"beginner"``, ``"intermediate"``, ``"expert"``: one
        that comes with the package, ``msjax.shipped``), a run directory (``runs/NAME``;
        ``./beginner`` for a run directory of a shipped agent's name), its ``checkpoints``
        directory, or one checkpoint (``runs/NAME/checkpoints/1200``).
      step: ``"latest"``, ``"best"`` (highest evaluation win rate) or a step number;
        ignored when ``path`` names one checkpoint; only ``"latest"`` for a shipped agent.
      greedy: play the most likely action; ``False`` samples from the policy.

    With ``"latest"`` or ``"best"``, a damaged checkpoint is skipped (with a one-line
    warning naming it) for the newest intact one.

    Raises:
      CheckpointError: no checkpoint there, or none that can be read.
      ShippedAgentError: a shipped agent's name that is not shipped (the message lists
        those that are and how to ship one), or whose files differ from their digests.
    """
    if shipped_lib.is_agent_name(path):
        if step != "latest":
            raise ValueError(f"step={step!r}: a shipped agent ({path!r}) has one set of parameters; leave step out")
        return shipped_lib.load(path, greedy=greedy)
    directory, named_step = resolve(path)
    checkpoints = Checkpoints(directory, read_only=True)

    def load(chosen: int) -> tuple[CheckpointInfo, Any]:
        info = checkpoints.info(chosen)
        template = stages_lib.stage_named(info.stage).abstract_state(info.config)
        return info, checkpoints.restore(chosen, template)

    try:
        if named_step is not None or not isinstance(step, str):
            chosen = named_step if named_step is not None else pick_step(checkpoints, step)
            info, state = load(chosen)
        else:  # "latest" or "best": a damaged one falls back to the newest intact one
            first = pick_step(checkpoints, step)
            others = sorted((s for s in checkpoints.steps if s != first), reverse=True)
            _, (info, state) = newest_intact(checkpoints, [first, *others], load, LOG.warning)
    finally:
        checkpoints.close()
    agent = agent_lib.from_params(state.params, info.config, greedy)
    return agent.replace(config=info.config)


def pick_step(checkpoints: Checkpoints, step: int | str) -> int:
    """The checkpoint number ``step`` names: ``"latest"``, ``"best"`` or a number.

    Raises:
      CheckpointError: the directory holds no checkpoint.
      ValueError: ``step`` is none of those.
    """
    if not checkpoints.steps:
        raise CheckpointError(f"no checkpoints in {checkpoints.directory}")
    if step == "latest":
        return checkpoints.latest_step
    if step == "best":
        return checkpoints.best_step
    if isinstance(step, int) and not isinstance(step, bool):
        return step
    raise ValueError(f"step={step!r} must be 'latest', 'best' or a checkpoint number")

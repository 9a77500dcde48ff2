"""Run directories written by earlier code still load and resume.

``tests/data/run_before_issue23`` was written by msjax before issue 23's renames (the
curriculum's level stored as ``curriculum.stage``, its metric as ``curriculum_stage``):
a tiny curriculum run (two padded boards, 8 games a stage, imitation then PPO, promoted
to its second board), made with ``tests/data/run_before_issue23_config.py``. Its one
checkpoint is the PPO stage's last. Nothing here compiles a training chunk.
"""

import contextlib
import io
import shutil
from pathlib import Path

import numpy as np
import pytest

import msjax
from msjax.run import config as config_lib
from msjax.run import loop as train
from msjax.cli import train as train_cli

OLD_RUN = Path(__file__).parent / "data" / "run_before_issue23"


@pytest.fixture
def old_run(tmp_path):
    """A copy of the old run directory (the tests must not write into tests/data)."""
    return Path(shutil.copytree(OLD_RUN, tmp_path / "run"))


def test_an_agent_saved_before_the_renames_loads(old_run):
    agent = msjax.load_agent(old_run)
    assert agent.config.env.boards == ((4, 4, 2, 2), (5, 5, 3, 3))
    assert agent.config.model.channels == (4,)


def test_a_finished_run_saved_before_the_renames_is_recognised_as_complete(old_run):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        final = train_cli.main(["--workdir", str(old_run), "--resume"])
    assert "is already complete" in printed.getvalue()
    assert final["episodes"] == 8


def test_a_run_saved_before_the_renames_resumes_at_its_curriculum_level(old_run):
    from msjax.run import checkpoint as checkpoint_lib
    from msjax import distributed
    from msjax.run import control as runcontrol

    cfg = config_lib.load_json(old_run / "config.json")
    cfg = config_lib.apply_overrides(cfg, ["ppo.num_updates=3"])
    mesh = distributed.make_mesh(cfg.run.num_devices)
    checkpoints = checkpoint_lib.Checkpoints(old_run / "checkpoints")
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            step, index, state = runcontrol.restore_checkpoint(checkpoints, train.make_stages(cfg, mesh), cfg, mesh)
    finally:
        checkpoints.close()
    assert (step, index, int(state.update)) == (4, 1, 2)
    assert int(np.asarray(state.curriculum.level)) == 1  # promoted to the second board

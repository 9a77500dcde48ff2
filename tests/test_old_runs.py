"""Run directories written by earlier code still load and resume.

``tests/data/run_before_issue23`` was written by msjax before issue 23's renames (the
curriculum's level stored as ``curriculum.stage``, its metric as ``curriculum_stage``):
a tiny curriculum run (two padded boards, 8 games a stage, imitation then PPO, promoted
to its second board), made with ``tests/data/run_before_issue23_config.py``. Its one
checkpoint is the PPO stage's last. Nothing here compiles a training chunk.
"""

import contextlib
import io
import json
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


REMOVED_OPTIONS = (  # (section, field, its former default, a value a run could have used)
    ("imitation", "hardest_states", 0, 64),
    ("imitation", "augment_symmetries", False, True),
    ("imitation", "mine_targets", "sampled", "exact"),
    ("imitation", "guess_targets", "solver", "safest"),
    ("imitation", "solver_moves_per_label", 1, 4),
    ("imitation", "optimizer", "adamw", "muon"),
    ("model", "global_pool_after", [], [2, 4]),
    ("env", "obs_density", False, True),
    ("imitation", "play_lookahead", 0, 6),
    ("imitation", "play_lookahead_depth", 0, 1),
    ("imitation", "play_endgame_layouts", 0, 8),
    ("model", "norm", "group", "cell"),
)


def test_a_run_saved_with_the_removed_options_at_their_defaults_loads(old_run):
    before = config_lib.load_json(old_run / "config.json")
    saved = json.loads((old_run / "config.json").read_text())
    for section, field, default, _ in REMOVED_OPTIONS:
        saved[section][field] = default
    (old_run / "config.json").write_text(json.dumps(saved))
    assert config_lib.load_json(old_run / "config.json") == before


@pytest.mark.parametrize("section, field, default, used", REMOVED_OPTIONS)
def test_a_run_that_used_a_removed_option_fails_in_one_line_naming_it(old_run, section, field, default, used):
    saved = json.loads((old_run / "config.json").read_text())
    saved[section][field] = used
    (old_run / "config.json").write_text(json.dumps(saved))
    with pytest.raises(ValueError, match=rf"^{section}\.{field}=.*: this msjax no longer has this setting") as error:
        config_lib.load_json(old_run / "config.json")
    assert "\n" not in str(error.value) and "docs/experiments/" in str(error.value)

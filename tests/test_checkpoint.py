"""Checkpoints: exact round trips, what is kept, and clear errors for unusable ones."""

import json
import shutil

import jax
import numpy as np
import pytest

from msjax.run import checkpoint as checkpoint_lib
from msjax.run.agents import load_agent
from msjax.run.checkpoint import CheckpointError, Checkpoints, DamagedCheckpoint
from msjax.run.config import apply_overrides
from msjax.stages import imitation, ppo
from tiny_runs import TINY, fresh_ppo_state, saved_run


def assert_trees_identical(a, b):
    a, b = checkpoint_lib.keys_to_data(a), checkpoint_lib.keys_to_data(b)
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_a_saved_state_restores_bit_exactly_with_typed_keys(tmp_path):
    state = fresh_ppo_state()
    checkpoints = Checkpoints(tmp_path)
    checkpoints.save(3, state, stage="ppo", update=3, cfg=TINY)
    restored = checkpoints.restore(3, ppo.STAGE.abstract_state(TINY))
    assert_trees_identical(restored, state)
    assert jax.numpy.issubdtype(restored.key.dtype, jax.dtypes.prng_key)
    assert jax.numpy.issubdtype(restored.env_states.key.dtype, jax.dtypes.prng_key)


def test_info_reports_stage_update_config_and_evaluation(tmp_path):
    cfg = apply_overrides(TINY, ["ppo.lr=0.01"])
    saved_run(tmp_path, cfg, steps=(2,), metrics=[0.25])
    info = Checkpoints(tmp_path / "checkpoints", read_only=True).info(2)
    assert (info.stage, info.update, info.config) == ("ppo", 2, cfg)
    assert info.metrics == {"win_rate": 0.25}


def test_the_last_checkpoints_and_the_best_one_are_kept(tmp_path):
    cfg = apply_overrides(TINY, ["run.keep_checkpoints=2"])
    saved_run(tmp_path, cfg, steps=(1, 2, 3, 4, 5), metrics=[0.1, 0.9, None, 0.3, None])
    checkpoints = Checkpoints(tmp_path / "checkpoints", read_only=True)
    assert checkpoints.steps == [2, 4, 5]
    assert checkpoints.best_step == 2
    assert checkpoints.latest_step == 5


def test_restoring_into_another_board_size_names_the_mismatched_array(tmp_path):
    Checkpoints(tmp_path).save(1, fresh_ppo_state(), stage="ppo", update=1, cfg=TINY)
    bigger = apply_overrides(TINY, ["env.H=5", "env.W=5"])
    expected = r"env_states\.\w+ is \w+\[16, 4, 4\] in the checkpoint, this run expects \w+\[16, 5, 5\]"
    with pytest.raises(CheckpointError, match=expected):
        Checkpoints(tmp_path).restore(1, ppo.STAGE.abstract_state(bigger))


def test_a_resume_refuses_another_game_or_network_and_names_the_fields():
    other = apply_overrides(TINY, ["env.mine_count=3", "model.channels=(12,)"])
    with pytest.raises(CheckpointError, match=r"env\.mine_count: 2 -> 3.*model\.channels"):
        checkpoint_lib.check_compatible(TINY, other)
    with pytest.raises(CheckpointError, match=r"ppo\.num_envs"):
        checkpoint_lib.check_compatible(TINY, apply_overrides(TINY, ["ppo.num_envs=8"]))


def test_a_resume_may_change_settings_that_do_not_touch_the_state():
    changed = apply_overrides(TINY, ["ppo.lr=0.01", "run.eval_episodes=64"])
    assert checkpoint_lib.check_compatible(TINY, changed) == [
        "ppo.lr: 0.0003 -> 0.01",
        "run.eval_episodes: 32 -> 64",
    ]


def test_a_damaged_checkpoint_raises_a_clear_error(tmp_path):
    saved_run(tmp_path)
    for path in (tmp_path / "checkpoints" / "1" / "state").rglob("*"):
        if path.is_file():
            path.write_bytes(b"not a checkpoint")
    checkpoints = Checkpoints(tmp_path / "checkpoints", read_only=True)
    with pytest.raises(CheckpointError, match="cannot be restored"):
        checkpoints.restore(1, ppo.STAGE.abstract_state(TINY))


def test_a_checkpoint_without_metadata_raises_a_clear_error(tmp_path):
    saved_run(tmp_path)
    for path in (tmp_path / "checkpoints" / "1" / "meta").rglob("*"):
        if path.is_file():
            path.unlink()
    with pytest.raises(CheckpointError, match="no readable metadata"):
        Checkpoints(tmp_path / "checkpoints", read_only=True).info(1)


def test_asking_for_a_missing_step_lists_the_steps_there(tmp_path):
    saved_run(tmp_path, steps=(1, 2))
    with pytest.raises(CheckpointError, match=r"no checkpoint 7 .* there are \[1, 2\]"):
        Checkpoints(tmp_path / "checkpoints", read_only=True).info(7)


def test_paths_resolve_from_a_run_its_checkpoints_or_one_checkpoint(tmp_path):
    run = saved_run(tmp_path / "run", steps=(1, 2))
    checkpoints = (run / "checkpoints").resolve()
    assert checkpoint_lib.resolve(run) == (checkpoints, None)
    assert checkpoint_lib.resolve(checkpoints) == (checkpoints, None)
    assert checkpoint_lib.resolve(checkpoints / "2") == (checkpoints, 2)
    with pytest.raises(CheckpointError, match="does not exist"):
        checkpoint_lib.resolve(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="neither a run directory"):
        checkpoint_lib.resolve(tmp_path / "empty")


def test_an_unknown_stage_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="stage='warmup'"):
        Checkpoints(tmp_path).save(1, fresh_ppo_state(), stage="warmup", update=1, cfg=TINY)


# ----------------------------------------------------------------------------- damage


def largest_data_file(checkpoint_dir):
    """The biggest array data file of a checkpoint's ``state`` item."""
    files = [p for p in (checkpoint_dir / "state").rglob("*") if p.is_file() and p.parent.name == "d"]
    return max(files, key=lambda p: p.stat().st_size)


def test_flipped_bytes_in_a_data_file_are_caught_at_restore_in_one_line(tmp_path):
    saved_run(tmp_path)
    data_file = largest_data_file(tmp_path / "checkpoints" / "1")
    data = bytearray(data_file.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 400] = bytes(b ^ 0xFF for b in data[middle : middle + 400])  # size unchanged
    data_file.write_bytes(bytes(data))
    checkpoints = Checkpoints(tmp_path / "checkpoints", read_only=True)
    # Raw bytes load as other (often NaN) numbers, compressed ones fail to decode: both are caught.
    with pytest.raises(CheckpointError, match=r"checkpoints/1 (is damaged|cannot be restored)") as error:
        checkpoints.restore(1, ppo.STAGE.abstract_state(TINY))
    assert "\n" not in str(error.value)


def test_arrays_that_differ_from_the_saved_ones_are_named_by_their_digest(tmp_path):
    saved_run(tmp_path, steps=(1, 2))
    state_1, state_2 = (tmp_path / "checkpoints" / step / "state" for step in ("1", "2"))
    shutil.rmtree(state_1)
    shutil.copytree(state_2, state_1)  # readable, finite, and not what step 1 saved
    checkpoints = Checkpoints(tmp_path / "checkpoints", read_only=True)
    with pytest.raises(CheckpointError, match=r"checkpoints/1 is damaged: \S+ differs from the array that was saved"):
        checkpoints.restore(1, ppo.STAGE.abstract_state(TINY))


def test_a_truncated_data_file_is_a_one_line_error(tmp_path):
    saved_run(tmp_path)
    data_file = largest_data_file(tmp_path / "checkpoints" / "1")
    data_file.write_bytes(data_file.read_bytes()[:100])
    checkpoints = Checkpoints(tmp_path / "checkpoints", read_only=True)
    with pytest.raises(CheckpointError) as error:
        checkpoints.restore(1, ppo.STAGE.abstract_state(TINY))
    assert "checkpoints/1 cannot be restored" in str(error.value) and "\n" not in str(error.value)


def test_load_agent_skips_a_damaged_latest_checkpoint_saying_so_once(tmp_path, caplog):
    saved_run(tmp_path, steps=(1, 2))
    (tmp_path / "checkpoints" / "2" / "meta" / "metadata").write_text("{ not json")
    agent = load_agent(tmp_path)
    expected = load_agent(tmp_path / "checkpoints" / "1")
    for got, want in zip(jax.tree.leaves(agent.params), jax.tree.leaves(expected.params)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "checkpoints/2" in warnings[0] and "using step 1" in warnings[0]


def test_a_checkpoint_saved_before_digests_still_loads(tmp_path):
    saved_run(tmp_path)
    meta_file = tmp_path / "checkpoints" / "1" / "meta" / "metadata"
    meta = json.loads(meta_file.read_text())
    del meta["digests"]
    meta_file.write_text(json.dumps(meta))
    checkpoints = Checkpoints(tmp_path / "checkpoints", read_only=True)
    assert_trees_identical(checkpoints.restore(1, ppo.STAGE.abstract_state(TINY)), fresh_ppo_state(seed=1))


def test_load_agent_of_a_file_is_a_checkpoint_error(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(CheckpointError, match="is a file"):
        load_agent(tmp_path / "notes.txt")


def test_opening_a_run_read_only_logs_no_orbax_warnings(tmp_path, caplog):
    saved_run(tmp_path)
    caplog.clear()
    Checkpoints(tmp_path / "checkpoints", read_only=True).close()
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []


def test_a_config_field_from_a_newer_msjax_is_named_not_called_damage(tmp_path):
    saved_run(tmp_path)
    meta_file = tmp_path / "checkpoints" / "1" / "meta" / "metadata"
    meta = json.loads(meta_file.read_text())
    meta["config"]["ppo"]["entropy_schedule"] = "cosine"
    meta_file.write_text(json.dumps(meta))
    for read in (lambda: Checkpoints(tmp_path / "checkpoints", read_only=True).info(1), lambda: load_agent(tmp_path)):
        with pytest.raises(CheckpointError) as error:
            read()
        assert not isinstance(error.value, DamagedCheckpoint)
        assert str(error.value) == (
            f"checkpoint {tmp_path / 'checkpoints' / '1'} was saved with config field ppo.entropy_schedule, "
            "which this msjax does not know (saved by a newer msjax?)"
        )


def test_a_state_of_another_optimizer_is_named_as_such_not_as_damage(tmp_path):
    Checkpoints(tmp_path).save(1, fresh_ppo_state(), stage="ppo", update=1, cfg=TINY)
    value_only = apply_overrides(TINY, ["ppo.trainable=value"])  # another optimizer state: value head alone
    with pytest.raises(CheckpointError) as error:
        Checkpoints(tmp_path).restore(1, ppo.STAGE.abstract_state(value_only))
    message = str(error.value)
    assert not isinstance(error.value, DamagedCheckpoint) and "damaged" not in message
    assert message.startswith(f"checkpoint {tmp_path / '1'} holds a state of another structure: opt_state.")


def test_an_evaluation_recorded_after_its_save_competes_for_the_best_checkpoint(tmp_path):
    checkpoints = Checkpoints(tmp_path, keep=1)
    for step, win_rate in ((1, 0.9), (2, 0.1)):
        checkpoints.save(step, fresh_ppo_state(), stage="ppo", update=step, cfg=TINY, evaluation_due=True)
        assert checkpoints.info(step).evaluation_pending  # saved, its evaluation yet to run
        checkpoints.record_evaluation(step, {"win_rate": win_rate, "episodes": 32})
        assert checkpoints.info(step).metrics == {"win_rate": win_rate}
        assert not checkpoints.info(step).evaluation_pending
    checkpoints.save(3, fresh_ppo_state(), stage="ppo", update=3, cfg=TINY)
    assert (checkpoints.steps, checkpoints.best_step) == ([1, 3], 1)  # the latest, and the best kept
    assert Checkpoints(tmp_path, read_only=True).best_step == 1


def test_an_imitation_restore_after_a_ppo_restore_of_equal_shapes_gets_its_own_structure(tmp_path, monkeypatch):
    # jax 0.10's PyTreeDef equality ignores a dataclass node's type: the two stages' states
    # of equal shapes compare equal. A cache that matches calls on that equality and the
    # leaves' shapes (as jit's did once in CI) must not hand the second restore the first's.
    cfg = apply_overrides(TINY, ["imitation.enabled=true", f"imitation.num_envs={TINY.ppo.num_envs}"])
    states = {"ppo": fresh_ppo_state(cfg), "imitation": imitation.STAGE.init_state(jax.random.key(1), cfg, None)}
    real_eval_shape, seen = jax.eval_shape, []

    def eval_shape_matching_on_equality(fun, *args):
        signature = (jax.tree.structure(args), [(x.shape, x.dtype) for x in jax.tree.leaves(args)])
        for known_fun, known_signature, out in seen:
            if known_fun is fun and known_signature == signature:
                return out
        out = real_eval_shape(fun, *args)
        seen.append((fun, signature, out))
        return out

    monkeypatch.setattr(jax, "eval_shape", eval_shape_matching_on_equality)
    checkpoints = Checkpoints(tmp_path)
    for step, (stage, state) in enumerate(states.items(), start=1):
        checkpoints.save(step, state, stage=stage, update=1, cfg=cfg)
    for step, stage in enumerate(states, start=1):
        restored = checkpoints.restore(step, jax.eval_shape(lambda s: s, states[stage]))
        assert type(restored) is type(states[stage])
        assert_trees_identical(restored, states[stage])

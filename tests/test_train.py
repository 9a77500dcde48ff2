"""The runner end to end on a tiny run: files written, Ctrl-C, bit-exact resume, refusals.

One uninterrupted run (imitation then PPO, two chunks each) is shared by the tests;
a second run of the same config is interrupted and resumed. Both reuse the same
compiled chunks, so the module pays for compilation once.
"""

import json
import os
import re
import shutil
import signal

import jax
import numpy as np
import pytest

from msjax.run import checkpoint as checkpoint_lib

from msjax.run import agents as agents_lib
from msjax.run import config as config_lib
from msjax import distributed
from msjax.run import control as runcontrol
from msjax.run import log as runlog
from msjax.run import loop as train
from msjax.cli import train as train_cli
from msjax.run.checkpoint import CheckpointError, Checkpoints
from msjax.stages import ppo
from tiny_runs import TINY, config_file, run_main, start_endless_run, train_rows, wait_for

TINY_WITH_IMITATION = config_lib.apply_overrides(
    TINY,
    [
        "imitation.enabled=true",
        "imitation.num_envs=16",
        "imitation.steps_per_update=2",
        "imitation.num_updates=4",
        "imitation.label_max_layer=1",
        "imitation.play_max_layer=1",
        "ppo.num_updates=4",
        "run.chunk_updates=2",
        "run.eval_every_updates=2",
    ],
)
IMITATION_UPDATES = TINY_WITH_IMITATION.imitation.num_updates
PPO_UPDATES = TINY_WITH_IMITATION.ppo.num_updates
LAST_STEP = IMITATION_UPDATES + PPO_UPDATES


def final_state(run_dir, cfg=TINY_WITH_IMITATION):
    checkpoints = Checkpoints(run_dir / "checkpoints", read_only=True)
    return checkpoints.restore(LAST_STEP, ppo.STAGE.abstract_state(cfg))


def assert_same_final_state(run_dir, reference_dir):
    resumed = checkpoint_lib.keys_to_data(final_state(run_dir))
    reference = checkpoint_lib.keys_to_data(final_state(reference_dir))
    assert jax.tree.structure(resumed) == jax.tree.structure(reference)
    for got, want in zip(jax.tree.leaves(resumed), jax.tree.leaves(reference)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """``(run_dir, final evaluation, printed text)`` of one uninterrupted tiny run."""
    tmp_path = tmp_path_factory.mktemp("finished")
    run_dir = tmp_path / "run"
    final, printed = run_main(["--config", config_file(tmp_path, TINY_WITH_IMITATION), "--workdir", run_dir])
    return run_dir, final, printed


def test_a_run_writes_its_config_metrics_tensorboard_and_checkpoints(finished_run):
    run_dir, final, printed = finished_run
    assert config_lib.load_json(run_dir / "config.json") == config_lib.apply_overrides(
        TINY_WITH_IMITATION, [f"run.workdir={run_dir}"]
    )
    rows = train_rows(run_dir)
    assert [(row["stage"], row["update"]) for row in rows] == [
        ("imitation", u) for u in range(1, IMITATION_UPDATES + 1)
    ] + [("ppo", u) for u in range(1, PPO_UPDATES + 1)]
    assert [row["step"] for row in rows] == list(range(1, LAST_STEP + 1))
    assert all(np.isfinite(row["loss"]) for row in rows)
    assert list((run_dir / "tb").glob("events.out.tfevents.*"))
    assert Checkpoints(run_dir / "checkpoints", read_only=True).latest_step == LAST_STEP
    assert f"checkpoint: {run_dir.resolve() / 'checkpoints' / str(LAST_STEP)}" in printed
    assert "final evaluation (32 games)" in printed
    saved = json.loads((run_dir / "final_eval.json").read_text())
    assert saved["win_rate"] == final["win_rate"] and 0.0 <= final["win_rate"] <= 1.0


def test_evaluations_are_logged_at_each_interval_of_each_stage(finished_run):
    run_dir, _, _ = finished_run
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    evals = [(row["stage"], row["update"]) for row in rows if row["kind"] == "eval"]
    assert evals == [("imitation", 2), ("imitation", 4), ("ppo", 2), ("ppo", 4)]
    assert all(row["win_rate_low"] <= row["win_rate"] <= row["win_rate_high"] for row in rows if row["kind"] == "eval")


def test_ppo_starts_from_the_imitation_stages_parameters(finished_run):
    run_dir, _, _ = finished_run
    checkpoints = Checkpoints(run_dir / "checkpoints", read_only=True)
    info = checkpoints.info(IMITATION_UPDATES)
    assert (info.stage, info.update) == ("imitation", IMITATION_UPDATES)
    assert checkpoints.info(LAST_STEP).stage == "ppo"


def test_ctrl_c_saves_a_checkpoint_and_resume_continues_bit_exactly(finished_run, tmp_path, monkeypatch):
    reference_dir, _, _ = finished_run
    # No periodic checkpoints: the only checkpoint of the interrupted stage is Ctrl-C's.
    cfg = config_lib.apply_overrides(TINY_WITH_IMITATION, ["run.eval_every_updates=0", "run.checkpoint_every_updates=0"])
    run_dir = tmp_path / "run"
    flushes = []
    real_flush = runlog.MetricsWriter.flush

    def interrupt_after_first_chunk(self):
        flushes.append(1)
        if len(flushes) == 1:
            raise KeyboardInterrupt
        real_flush(self)

    monkeypatch.setattr(runlog.MetricsWriter, "flush", interrupt_after_first_chunk)
    with pytest.raises(SystemExit) as exit_info:
        run_main(["--config", config_file(tmp_path, cfg), "--workdir", run_dir])
    assert exit_info.value.code == train_cli.EXIT_INTERRUPTED
    checkpoints = Checkpoints(run_dir / "checkpoints", read_only=True)
    assert checkpoints.steps == [2]
    assert (checkpoints.info(2).stage, checkpoints.info(2).update) == ("imitation", 2)
    monkeypatch.undo()

    _, printed = run_main(["--workdir", run_dir, "--resume"])

    env_steps = 2 * cfg.imitation.num_envs * cfg.imitation.steps_per_update
    assert f"resuming from checkpoint {checkpoints.path(2)}: imitation update 2/4, {env_steps} env steps" in printed
    resumed, reference = final_state(run_dir, cfg), final_state(reference_dir)
    resumed, reference = checkpoint_lib.keys_to_data(resumed), checkpoint_lib.keys_to_data(reference)
    assert jax.tree.structure(resumed) == jax.tree.structure(reference)
    for got, want in zip(jax.tree.leaves(resumed), jax.tree.leaves(reference)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert train_rows(run_dir) == train_rows(reference_dir)


def test_a_new_run_refuses_a_directory_that_holds_a_run(finished_run, tmp_path):
    run_dir, _, _ = finished_run
    with pytest.raises(SystemExit, match="already holds a run"):
        train_cli.main(["--config", str(config_file(tmp_path, TINY_WITH_IMITATION)), "--workdir", str(run_dir)])


def test_resume_needs_a_checkpoint(tmp_path):
    with pytest.raises(SystemExit, match="no checkpoints to resume from"):
        train_cli.main(["--config", str(config_file(tmp_path, TINY)), "--workdir", str(tmp_path / "new"), "--resume"])


def test_resume_with_another_board_names_the_mismatch_and_changes_nothing(finished_run):
    run_dir, _, _ = finished_run
    before = (run_dir / "config.json").read_text()
    with pytest.raises(CheckpointError, match=r"env\.H: 4 -> 5"):
        train_cli.main(["--workdir", str(run_dir), "--resume", "--config.env.H=5"])
    assert (run_dir / "config.json").read_text() == before


def test_resume_with_another_optimizer_names_the_setting_not_damage(finished_run):
    run_dir, _, _ = finished_run
    before = (run_dir / "config.json").read_text()
    argv = ["--workdir", str(run_dir), "--resume-step", str(LAST_STEP), "--config.ppo.trainable=value"]
    with pytest.raises(CheckpointError) as error:
        train_cli.main(argv)
    message = str(error.value)
    assert "damaged" not in message and "\n" not in message
    assert f"checkpoints/{LAST_STEP} holds a state of another structure: opt_state." in message
    assert message.endswith("; ppo.trainable: 'all' -> 'value' changes it: resume with the saved value, or start a new run")
    assert (run_dir / "config.json").read_text() == before


def test_resume_skips_a_truncated_checkpoint_for_the_newest_intact_one(finished_run, tmp_path):
    run_dir = tmp_path / "copy"
    shutil.copytree(finished_run[0], run_dir)
    for path in (run_dir / "checkpoints" / str(LAST_STEP) / "state").rglob("*"):
        if path.is_file():
            path.write_bytes(b"\0" * 8)
    _, printed = run_main(["--workdir", run_dir, "--resume"])
    intact = LAST_STEP - 2
    assert f"checkpoints/{LAST_STEP} cannot be restored" in printed
    assert f"using step {intact}, the newest intact checkpoint" in printed
    assert (run_dir / f"checkpoints-after-{intact}" / str(LAST_STEP)).is_dir()  # set aside, not deleted
    assert_same_final_state(run_dir, finished_run[0])


def files_and_contents(run_dir):
    return {path: path.read_bytes() for path in sorted(run_dir.rglob("*")) if path.is_file()}


def test_resuming_a_finished_run_says_so_in_one_line_and_writes_nothing(finished_run, tmp_path):
    run_dir = tmp_path / "copy"
    shutil.copytree(finished_run[0], run_dir)
    before = files_and_contents(run_dir)
    final, printed = run_main(["--workdir", run_dir, "--resume"])
    assert final["win_rate"] == finished_run[1]["win_rate"]
    assert printed.count("\n") == 1 and printed.startswith(f"{run_dir} is already complete (ppo update 4/4,")
    assert printed.strip().endswith("Nothing to do.")
    assert files_and_contents(run_dir) == before  # train.log, metrics.jsonl, final_eval.json untouched


def test_resuming_a_finished_run_with_more_updates_trains_them(finished_run, tmp_path):
    run_dir = tmp_path / "copy"
    shutil.copytree(finished_run[0], run_dir)
    _, printed = run_main(["--workdir", run_dir, "--resume", "--config.ppo.num_updates=6"])
    assert "resuming from checkpoint" in printed and "ppo update 4/6" in printed
    assert Checkpoints(run_dir / "checkpoints", read_only=True).latest_step == LAST_STEP + 2


def test_a_plain_rerun_of_the_main_command_starts_a_new_run_next_to_the_old(tmp_path, monkeypatch):
    """No --workdir: the config's run directory holds a run, so the run goes to the first
    of DIR-2, DIR-3, ... that holds none, and says where."""
    default = tmp_path / "runs" / "tiny"
    for run_dir in (default, tmp_path / "runs" / "tiny-2"):
        (run_dir / "checkpoints" / "4").mkdir(parents=True)  # a run is there
    cfg = config_lib.apply_overrides(TINY, [f"run.workdir={default}"])
    final = {"win_rate_ci95": (0.0, 1.0), "episodes": 1, "win_rate": 0.0, "revealed_fraction": 0.0,
             "invalid_action_rate": 0.0}  # fmt: skip
    ran = []

    def fake_train(cfg, run_dir, resume, resume_step=None, warm_start=None):
        ran.append((cfg, run_dir, resume))
        return run_dir / "checkpoints" / "1", final

    monkeypatch.setattr(train, "train", fake_train)
    _, printed = run_main(["--config", config_file(tmp_path, cfg)])
    new_dir = tmp_path / "runs" / "tiny-3"
    assert ran == [(config_lib.apply_overrides(cfg, [f"run.workdir={new_dir}"]), new_dir, False)]
    assert f"this run goes to {new_dir}" in printed
    run_main(["--config", config_file(tmp_path, cfg), "--resume"])  # --resume: the run in the default
    assert ran[-1][1:] == (default, True)


# ----------------------------------------------------------------------------- faults

# No periodic checkpoints or evaluations: the only checkpoint of an interrupted stage is the stop's.
UNSAVED = config_lib.apply_overrides(
    TINY_WITH_IMITATION, ["run.eval_every_updates=0", "run.checkpoint_every_updates=0"]
)


def test_sigint_before_the_first_chunk_ends_saves_it_and_resume_continues_bit_exactly(
    finished_run, tmp_path, monkeypatch, capsys
):
    run_dir = tmp_path / "run"
    real_run_stages = train.run_stages

    def signal_then_run(*args):
        os.kill(os.getpid(), signal.SIGINT)  # arrives before the first chunk has even compiled
        return real_run_stages(*args)

    monkeypatch.setattr(train, "run_stages", signal_then_run)
    with pytest.raises(SystemExit) as exit_info:
        train_cli.main(["--config", str(config_file(tmp_path, UNSAVED)), "--workdir", str(run_dir)])
    assert exit_info.value.code == 128 + signal.SIGINT
    printed = capsys.readouterr().out
    assert f"stopped by SIGINT at imitation update 2: checkpoint {run_dir.resolve()}/checkpoints/2" in printed
    assert f"continue with: python -m msjax.train --workdir {run_dir} --resume" in printed
    assert Checkpoints(run_dir / "checkpoints", read_only=True).steps == [2]
    assert [row["step"] for row in train_rows(run_dir)] == [1, 2]  # the chunk's rows are written
    monkeypatch.undo()

    run_main(["--workdir", run_dir, "--resume"])
    assert_same_final_state(run_dir, finished_run[0])
    assert train_rows(run_dir) == train_rows(finished_run[0])


def test_a_hard_interrupt_before_any_checkpoint_says_nothing_was_saved_and_how_to_start_again(
    tmp_path, monkeypatch, capsys
):
    def interrupt(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(train, "run_stages", interrupt)
    argv = ["--config", str(config_file(tmp_path, UNSAVED)), "--workdir", str(tmp_path / "run")]
    with pytest.raises(SystemExit):
        train_cli.main(argv)
    printed = capsys.readouterr().out
    assert f"nothing was saved; start again with: python -m msjax.train {' '.join(argv)}" in printed
    assert "--resume" not in printed


def test_a_hard_interrupt_while_a_chunk_finishes_still_writes_its_rows(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    real_host_value = distributed.host_value
    interrupted = []

    def interrupt_when_reading_the_first_metrics(tree):
        if isinstance(tree, dict) and not interrupted:
            interrupted.append(True)
            raise KeyboardInterrupt
        return real_host_value(tree)

    monkeypatch.setattr(distributed, "host_value", interrupt_when_reading_the_first_metrics)
    with pytest.raises(SystemExit):
        run_main(["--config", config_file(tmp_path, UNSAVED), "--workdir", run_dir])
    assert Checkpoints(run_dir / "checkpoints", read_only=True).steps == [2]
    assert [row["step"] for row in train_rows(run_dir)] == [1, 2]


def test_sigterm_after_the_first_chunk_saves_and_says_how_to_continue(tmp_path):
    """A real process (``timeout``, Slurm and ``docker stop`` send SIGTERM)."""
    run_dir = tmp_path / "run"
    process = start_endless_run(tmp_path, run_dir)
    try:
        wait_for(run_dir / "metrics.jsonl", process, non_empty=True)  # the first chunk's row
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    step = Checkpoints(run_dir / "checkpoints", read_only=True).latest_step
    assert [row["step"] for row in train_rows(run_dir)] == list(range(1, step + 1))
    stopped = f"stopped by SIGTERM at ppo update {step}: checkpoint {run_dir.resolve()}/checkpoints/{step}"
    assert stopped in stdout and f"--workdir {run_dir} --resume" in stdout
    log = (run_dir / "train.log").read_text()
    assert stopped in log and "\r" not in log


def test_train_log_holds_what_the_run_printed(finished_run):
    run_dir, _, printed = finished_run
    assert (run_dir / "train.log").read_text().startswith(printed)  # later tests resume it and append


def test_a_new_run_moves_a_dead_runs_leftovers_aside_and_says_where(tmp_path, capsys):
    run_dir = tmp_path / "run"
    (run_dir / "tb").mkdir(parents=True)
    (run_dir / "metrics.jsonl").write_text('{"kind": "train", "step": 1}\n')
    (run_dir / "config.json").write_text("{}")
    runcontrol.prepare_run_dir(run_dir, TINY, resume=False)
    aside = run_dir / "abandoned-1"
    assert sorted(path.name for path in aside.iterdir()) == ["config.json", "metrics.jsonl", "tb"]
    assert sorted(path.name for path in run_dir.iterdir()) == ["abandoned-1"]
    assert f"moved them to {aside}" in capsys.readouterr().out


@pytest.mark.parametrize("under_a_file", [False, True], ids=["a file", "under a file"])
def test_a_run_directory_that_cannot_be_one_is_a_one_line_error(tmp_path, under_a_file):
    (tmp_path / "notes.txt").write_text("not a directory")
    run_dir = tmp_path / "notes.txt" / "run" if under_a_file else tmp_path / "notes.txt"
    with pytest.raises(SystemExit) as exit_info:
        runcontrol.prepare_run_dir(run_dir, TINY, resume=False)
    message = str(exit_info.value.code)
    assert message.startswith("error: ") and str(run_dir) in message and "\n" not in message


def test_resuming_past_the_target_is_an_error_naming_both_numbers(finished_run):
    run_dir, _, _ = finished_run
    before = (run_dir / "config.json").read_text()
    with pytest.raises(CheckpointError, match=rf"ppo update {PPO_UPDATES}, past this run's ppo\.num_updates=2"):
        train_cli.main(["--workdir", str(run_dir), "--resume", "--config.ppo.num_updates=2"])
    assert (run_dir / "config.json").read_text() == before


def test_resume_step_must_be_a_kept_step_and_the_error_lists_them(finished_run):
    run_dir, _, _ = finished_run
    kept = Checkpoints(run_dir / "checkpoints", read_only=True).steps
    with pytest.raises(CheckpointError, match=rf"--resume-step 3: .* kept steps: {re.escape(str(kept))}"):
        train_cli.main(["--workdir", str(run_dir), "--resume-step", "3"])


def test_resume_step_continues_from_that_step_and_sets_the_later_ones_aside(finished_run, tmp_path):
    run_dir = tmp_path / "copy"
    shutil.copytree(finished_run[0], run_dir)
    _, printed = run_main(["--workdir", run_dir, "--resume-step", LAST_STEP - 2])
    assert f"moved the later checkpoints ({LAST_STEP})" in printed
    assert (run_dir / f"checkpoints-after-{LAST_STEP - 2}" / str(LAST_STEP)).is_dir()
    assert_same_final_state(run_dir, finished_run[0])


def test_warm_start_reads_the_network_of_a_run_and_refuses_another_network(finished_run):
    run_dir, _, _ = finished_run
    cfg = config_lib.apply_overrides(TINY_WITH_IMITATION, [f"run.init_from={run_dir}"])
    params = runcontrol.warm_start_params(cfg)
    saved = final_state(run_dir).params
    for got, want in zip(jax.tree.leaves(params), jax.tree.leaves(saved)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert runcontrol.warm_start_params(config_lib.apply_overrides(cfg, ["run.init_from="])) is None
    wider = config_lib.apply_overrides(cfg, ["model.channels=8,8,8"])
    with pytest.raises(ValueError, match=r"run.init_from=.* holds another network: model.channels"):
        runcontrol.warm_start_params(wider)
    with pytest.raises(ValueError, match=r"run.init_from=.*missing.* does not exist \(train that run first"):
        runcontrol.warm_start_params(config_lib.apply_overrides(cfg, [f"run.init_from={run_dir / 'missing'}"]))


def test_a_plain_network_warm_starts_a_recycling_one_and_not_the_other_way(finished_run, monkeypatch):
    run_dir, _, _ = finished_run
    cfg = config_lib.apply_overrides(TINY_WITH_IMITATION, [f"run.init_from={run_dir}", "model.recycles=2"])
    params = runcontrol.warm_start_params(cfg)
    saved = final_state(run_dir).params
    kernel = params["params"]["ConvBlock_0"]["Conv3x3_0"]["kernel"]
    saved_kernel = np.asarray(saved["params"]["ConvBlock_0"]["Conv3x3_0"]["kernel"])
    assert kernel.shape == saved_kernel.shape[:2] + (saved_kernel.shape[2] + 1,) + saved_kernel.shape[3:]
    np.testing.assert_array_equal(kernel[:, :, :-1], saved_kernel)
    np.testing.assert_array_equal(kernel[:, :, -1], 0.0)  # the belief plane, weighted zero
    rest = lambda tree: [leaf for path, leaf in jax.tree_util.tree_leaves_with_path(tree) if "ConvBlock_0" not in str(path)]
    for got, want in zip(rest(params), rest(saved)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))

    recycled_agent = agents_lib.load_agent(run_dir)
    recycled_agent = recycled_agent.replace(config=config_lib.apply_overrides(recycled_agent.config, ["model.recycles=1"]))
    monkeypatch.setattr(agents_lib, "load_agent", lambda path: recycled_agent)
    again = runcontrol.warm_start_params(cfg)  # recycles 1 -> 2: the same weights, as stored
    for got, want in zip(jax.tree.leaves(again), jax.tree.leaves(saved)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    plain = config_lib.apply_overrides(cfg, ["model.recycles=0"])
    with pytest.raises(ValueError, match=r"run.init_from=.* model.recycles=1 and .* cannot start a network without one"):
        runcontrol.warm_start_params(plain)
    # a network that carries its beliefs over moves reads the same plane: the recycling one starts it as stored
    carrying = config_lib.apply_overrides(
        cfg, ["model.recycles=0", "model.carry_beliefs=true", "ppo.enabled=false", "imitation.steps_per_update=1",
              "imitation.learner_fraction=0.5"],
    )
    for got, want in zip(jax.tree.leaves(runcontrol.warm_start_params(carrying)), jax.tree.leaves(saved)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_a_run_from_a_missing_warm_start_fails_before_making_its_directory(tmp_path):
    cfg = config_lib.apply_overrides(TINY_WITH_IMITATION, [f"run.init_from={tmp_path / 'none'}"])
    with pytest.raises(ValueError, match="run.init_from="):
        run_main(["--config", config_file(tmp_path, cfg), "--workdir", tmp_path / "run"])
    assert not (tmp_path / "run").exists()


def test_a_warm_started_run_trains_from_the_other_runs_network(finished_run, tmp_path):
    run_dir, _, _ = finished_run
    cfg = config_lib.apply_overrides(TINY_WITH_IMITATION, [f"run.init_from={run_dir}"])
    run_main(["--config", config_file(tmp_path, cfg), "--workdir", tmp_path / "warm"])
    fresh, warm = train_rows(run_dir)[0], train_rows(tmp_path / "warm")[0]
    assert fresh["update"] == warm["update"] == 1
    assert warm["mine_bce"] != fresh["mine_bce"]  # the same boards, another network
    assert config_lib.load_json(tmp_path / "warm" / "config.json").run.init_from == str(run_dir)


def test_an_imitation_only_run_stops_after_imitation_and_a_resume_with_ppo_finishes_it_bit_exactly(finished_run, tmp_path):
    run_dir, _, _ = finished_run
    cfg = config_lib.apply_overrides(TINY_WITH_IMITATION, ["ppo.enabled=false"])
    imitation_only = tmp_path / "imitation_only"
    final, _ = run_main(["--config", config_file(tmp_path, cfg), "--workdir", imitation_only])
    assert train_rows(imitation_only) == train_rows(run_dir)[:IMITATION_UPDATES]  # the same stage, then nothing
    checkpoints = Checkpoints(imitation_only / "checkpoints", read_only=True)
    assert (checkpoints.latest_step, checkpoints.info(checkpoints.latest_step).stage) == (IMITATION_UPDATES, "imitation")
    assert 0.0 <= final["win_rate"] <= 1.0 and (imitation_only / "final_eval.json").exists()
    run_main(["--workdir", imitation_only, "--resume", "--config.ppo.enabled=true"])
    assert_same_final_state(imitation_only, run_dir)

"""Faults around a run (issue 25): one writer per run directory, a diverged run that
stops, files cut short by a crash, a full disk, a second signal, and the one-line errors
of the command lines.

The two-writers case and the double signal run real processes; the rest run in this
process on tiny configs, the full disk simulated (``ENOSPC``).
"""

import errno
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import orbax.checkpoint as ocp
import pytest

from msjax.run import config as config_lib
from msjax import reference
from msjax.run import disk as outofspace
from msjax.run import control as runcontrol
from msjax.run import files as runfiles
from msjax.run import log as runlog
from msjax.cli import train
from msjax.run.checkpoint import Checkpoints
from msjax.run.lock import RunDirBusy, RunDirLock
from msjax.stages import ppo
from test_train import run_main
from tiny_runs import CHILD_ENV, ENDLESS, REPO, TINY, config_file, saved_run, start_endless_run, wait_for


# ----------------------------------------------------------------------------- one writer


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from msjax.run.lock import RunDirLock; "
         f"RunDirLock().acquire({str(tmp_path)!r}); print('held', flush=True); time.sleep(600)"],
        cwd=REPO, env=CHILD_ENV, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunDirBusy, match=rf"in use by another run \(process {holder.pid}, still alive\)"):
            RunDirLock().acquire(tmp_path)
    finally:
        holder.kill()
        holder.wait()
    with RunDirLock() as lock:  # the OS let go of the dead process's lock
        lock.acquire(tmp_path)
        assert (tmp_path / "run.lock").read_text().strip() == str(os.getpid())


def test_a_second_run_on_a_live_runs_directory_is_refused_naming_its_process(tmp_path):
    run_dir = tmp_path / "run"
    process = start_endless_run(tmp_path, run_dir)
    try:
        wait_for(run_dir / "train.log", process)
        for extra in ([], ["--resume"]):
            argv = ["--config", str(config_file(tmp_path, ENDLESS)), "--workdir", str(run_dir), *extra]
            if extra:  # a resume needs a checkpoint to get as far as the lock
                (run_dir / "checkpoints" / "1").mkdir(parents=True)
            with pytest.raises(SystemExit, match=rf"{run_dir} is in use by another run \(process {process.pid},"):
                train.main(argv)
        assert process.poll() is None and not (run_dir / "abandoned-1").exists()
    finally:
        process.kill()
        process.wait()


# ----------------------------------------------------------------------------- divergence


def test_a_diverged_run_stops_with_one_line_and_saves_no_non_finite_checkpoint(tmp_path):
    cfg = config_lib.apply_overrides(
        TINY, ["ppo.lr=1e38", "run.chunk_updates=1", "run.checkpoint_every_updates=1", "run.eval_every_updates=0",
               "run.tensorboard=false"],
    )  # fmt: skip
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as stopped:
        run_main(["--config", config_file(tmp_path, cfg), "--workdir", run_dir])
    line = stopped.value.code
    assert isinstance(line, str) and line.startswith("error: training diverged at ppo update ") and "\n" not in line
    assert "loss is nan" in line or "grad_norm is" in line or "parameters hold NaN" in line
    checkpoints = Checkpoints(run_dir / "checkpoints", read_only=True)
    if checkpoints.steps:
        newest = checkpoints.latest_step
        assert f"newest finite checkpoint is {checkpoints.path(newest)}" in line
        assert f"--workdir {run_dir} --resume --config.ppo.lr=1e+37" in line
        checkpoints.restore(newest, ppo.STAGE.abstract_state(cfg))  # finite: no DamagedCheckpoint
    else:
        assert "no checkpoint was saved before it; start again with a smaller learning rate" in line
    assert not (run_dir / "final_eval.json").exists()


# ----------------------------------------------------------------------------- files cut short


def test_a_half_written_last_metrics_row_is_dropped_on_resume_and_named(tmp_path, capsys):
    path = tmp_path / "metrics.jsonl"
    rows = [{"kind": "train", "step": step, "wall_s": float(step)} for step in (1, 2, 3)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows) + '{"kind": "train", "st')
    writer = runlog.MetricsWriter(tmp_path, tensorboard=False, resume_step=2)
    writer.close()
    assert f"{path} line 4 is cut short" in capsys.readouterr().out
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 2]


def test_a_damaged_line_before_the_last_names_the_file_and_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1}\n{"step": 2, \n{"step": 3}\n')
    with pytest.raises(ValueError, match=rf"{path} line 2 is not valid JSON"):
        runfiles.read_jsonl(path)


def test_a_truncated_config_json_on_resume_names_the_file(tmp_path):
    saved_run(tmp_path / "run")
    config_json = tmp_path / "run" / "config.json"
    config_json.write_text(config_json.read_text()[:100])
    with pytest.raises(ValueError, match=rf"{config_json} is not valid JSON"):
        train.main(["--workdir", str(tmp_path / "run"), "--resume"])


def test_an_atomic_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "config.json"
    path.write_text("old\n")

    def full_disk(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError):
        runfiles.write_text_atomic(path, "new\n")
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]


# ----------------------------------------------------------------------------- full disk


def test_a_checkpoint_save_on_a_full_disk_removes_its_temporary_folder(tmp_path, monkeypatch):
    checkpoints = Checkpoints(tmp_path / "checkpoints")
    error = ValueError("RESOURCE_EXHAUSTED: Failed to write 652810 bytes to file 22: No space left on device")

    def fill_the_disk(manager, step, **kwargs):
        (checkpoints.directory / f"{step}.orbax-checkpoint-tmp" / "state").mkdir(parents=True)
        raise error

    monkeypatch.setattr(ocp.CheckpointManager, "save", fill_the_disk)
    with pytest.raises(ValueError):
        checkpoints.save(4, {"x": np.zeros(3)}, stage="ppo", update=4, cfg=TINY)
    checkpoints.close()
    assert list(checkpoints.directory.iterdir()) == []
    assert outofspace.is_out_of_space(error) and outofspace.needed_bytes(error) == 652810


def test_a_full_disk_is_one_error_line_naming_the_directory_and_the_kept_checkpoint(tmp_path, monkeypatch):
    run_dir = tmp_path / "my runs" / "tiny"
    (run_dir / "checkpoints" / "2").mkdir(parents=True)
    (run_dir / "checkpoints" / "4.orbax-checkpoint-tmp").mkdir()

    def full_disk(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(train.train_lib, "train", full_disk)
    with pytest.raises(SystemExit) as stopped:
        train.main(["--config", str(config_file(tmp_path, TINY)), "--workdir", str(run_dir), "--resume"])
    assert stopped.value.code == (
        f"error: no space left on the device holding {run_dir}; the newest checkpoint, {run_dir}/checkpoints/2, "
        f"is intact and kept; free some space, then continue with: python -m msjax.train --workdir '{run_dir}' --resume"
    )


# ----------------------------------------------------------------------------- signals


@pytest.mark.parametrize("delay_s", [0.3, 1.0])
def test_a_second_sigterm_during_the_compile_exits_143_at_once(tmp_path, delay_s):
    run_dir = tmp_path / "run"
    process = start_endless_run(tmp_path, run_dir)
    try:
        wait_for(run_dir / "metrics.jsonl", process)  # opened just after the signals are taken over
        time.sleep(delay_s)  # somewhere in tracing and compiling the first chunk
        process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    assert "SIGTERM again: stopped at once" in stdout and "Traceback" not in stderr


def test_the_continue_command_quotes_a_directory_with_spaces(tmp_path):
    run_dir = tmp_path / "my runs" / "a"
    (run_dir / "checkpoints" / "1").mkdir(parents=True)
    assert f"continue with: python -m msjax.train --workdir '{run_dir}' --resume" in runcontrol.interrupted_advice(
        run_dir, None
    )


# ----------------------------------------------------------------------------- one-line errors


@pytest.mark.parametrize("name, message", [("conf.txt", "must be a Python file ending in .py"), ("confdir", "is a directory")])
def test_a_config_that_is_not_a_python_file_is_one_line(tmp_path, name, message):
    (tmp_path / "confdir").mkdir()
    (tmp_path / "conf.txt").write_text("def get_config():\n    pass\n")
    with pytest.raises(ValueError, match=message):
        config_lib.load_config(tmp_path / name)


def test_a_board_too_small_for_the_opening_rule_says_so_and_names_the_option():
    from msjax.env import EnvConfig

    with pytest.raises(ValueError, match=r"mine_count=1: a 1x2 board holds no mine with a safe first-click neighbourhood.*--safe-first-click"):
        EnvConfig(H=1, W=2, mine_count=1)


@pytest.mark.parametrize("revealed, counts", [(np.zeros((3, 3), bool), np.zeros((3, 4), int)), (np.zeros(9, bool), np.zeros(9, int))])
def test_reference_analyse_names_the_shapes_it_was_given(revealed, counts):
    shapes = f"got revealed {list(revealed.shape)} and counts {list(counts.shape)}"
    with pytest.raises(ValueError, match=re.escape(shapes)):
        reference.analyse(revealed, counts, 1)


@pytest.mark.parametrize("module", ["evaluate", "play"])
def test_a_seed_too_large_is_one_line_naming_the_range(module, capsys):
    from msjax.cli import play
    from msjax.cli import evaluate

    if module == "evaluate":
        assert evaluate.main(["--solver", "--episodes", "4", "--seed", "99999999999999999999"]) == 2
    else:
        with pytest.raises(SystemExit):
            play.parse_args(["--seed", "99999999999999999999"])
    assert "--seed: 99999999999999999999 must be in [0, 4294967295]" in capsys.readouterr().err


def test_memory_with_zero_updates_is_one_line(capsys):
    from msjax.cli import memory

    with pytest.raises(SystemExit):
        memory.parse_args(["small", "--updates", "0"])
    assert "--updates: 0 must be >= 1" in capsys.readouterr().err


def test_calibration_on_a_board_every_game_of_which_ends_at_the_first_click_is_a_note(monkeypatch, capsys):
    from msjax.evaluate import calibration
    from msjax.evaluate import diagnostics
    from msjax.cli import evaluate

    def no_positions(*args, **kwargs):
        raise calibration.NoPositions("no position after the opening click: every game ended at its first move")

    figures = {"win_rate": 1.0, "win_rate_ci95": (0.5, 1.0), "episodes": 4}
    monkeypatch.setattr(diagnostics, "diagnose", lambda *args, **kwargs: dict(figures))
    monkeypatch.setattr(calibration, "mine_head_calibration", no_positions)
    monkeypatch.setattr(evaluate, "format_table", lambda name, cfg, shown: "table")
    assert evaluate.main(["--solver", "--episodes", "4", "--board", "1x2x1", "--safe-first-click"]) == 0
    assert "(no calibration: every game on 1x2x1 ended at its first click)" in capsys.readouterr().out


# ----------------------------------------------------------------------------- the final evaluation

# One stage of two updates in one chunk, then a final evaluation far too long to wait for,
# in batches of 8 games (the plain "evaluating on" line needs the progress lines on).
LONG_FINAL_EVALUATION = config_lib.apply_overrides(
    ENDLESS, ["ppo.num_updates=2", "run.final_eval_episodes=10000000", "run.eval_batch_size=8", "run.progress_bar=true"]
)


def start_until_the_final_evaluation(tmp_path, run_dir):
    """A real training process of ``LONG_FINAL_EVALUATION``, and its stdout up to the line
    that says the final evaluation starts."""
    command = [sys.executable, "-m", "msjax.train", "--config", str(config_file(tmp_path, LONG_FINAL_EVALUATION))]
    process = subprocess.Popen(
        command + ["--workdir", str(run_dir)], cwd=REPO, env=CHILD_ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    printed = []
    while not printed or "evaluating on" not in printed[-1]:
        line = process.stdout.readline()
        assert line or process.poll() is None, f"the run ended before its final evaluation:\n{''.join(printed)}"
        printed.append(line)
    return process, "".join(printed)


def test_a_sigterm_during_the_final_evaluation_stops_it_with_the_state_saved_and_a_resume_finishes_it(tmp_path):
    run_dir = tmp_path / "run"
    process, printed = start_until_the_final_evaluation(tmp_path, run_dir)
    try:
        # Saved before the evaluation starts: a SIGKILL from here on loses no update.
        assert Checkpoints(run_dir / "checkpoints", read_only=True).steps == [2]
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, stderr[-2000:]
    assert time.monotonic() - started < 30  # between two batches, not after 10,000,000 games
    checkpoint = run_dir.resolve() / "checkpoints" / "2"
    assert f"stopped by SIGTERM at ppo update 2: checkpoint {checkpoint} (its evaluation did not finish" in stdout
    assert not (run_dir / "final_eval.json").exists()

    final, printed = run_main(["--workdir", run_dir, "--resume", "--config.run.final_eval_episodes=8"])
    assert f"the evaluation of checkpoint {checkpoint} did not finish: evaluating it (8 games)" in printed
    assert json.loads((run_dir / "final_eval.json").read_text())["checkpoint"] == str(checkpoint)
    assert final["episodes"] == 8 and Checkpoints(run_dir / "checkpoints", read_only=True).info(2).metrics is not None
    evaluations = [row for row in runfiles.read_jsonl(run_dir / "metrics.jsonl")[1] if row["kind"] == "eval"]
    assert [(row["step"], row["episodes"]) for row in evaluations] == [(2, 8)]


# ----------------------------------------------------------------------------- the run directory's files


def run_dir_with(tmp_path, name, kind, resume):
    """``(run_dir, command-line arguments)``: a run directory (holding a saved run when
    ``resume``) whose ``name`` is a ``kind`` ("file" or "directory"), and a tiny run's
    arguments on it."""
    cfg = config_lib.apply_overrides(TINY, ["run.tensorboard=false"])
    run_dir = saved_run(tmp_path / "run", cfg) if resume else tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    (run_dir / name).unlink(missing_ok=True)  # the saved run's config.json
    (run_dir / name).mkdir() if kind == "directory" else (run_dir / name).write_text("not a directory")
    argv = ["--config", str(config_file(tmp_path, cfg)), "--workdir", str(run_dir)]
    return run_dir, argv + (["--resume"] if resume else [])


def test_a_checkpoints_file_ends_a_real_run_with_one_error_line_and_no_traceback(tmp_path):
    run_dir, argv = run_dir_with(tmp_path, "checkpoints", "file", resume=False)
    finished = subprocess.run(
        [sys.executable, "-m", "msjax.train", *argv], cwd=REPO, env=CHILD_ENV, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert finished.returncode == 1 and "Traceback" not in finished.stderr, finished.stderr[-2000:]
    errors = [line for line in finished.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: {run_dir / 'checkpoints'} is a file, where the run keeps its checkpoints (a directory); "
        "move it away or pick another --workdir"
    ]
    assert "update" not in finished.stdout  # not one update trained, nor evaluated


@pytest.mark.parametrize(
    "name, kind, resume",
    [("run.lock", "directory", False), ("metrics.jsonl", "directory", True), ("train.log", "directory", True),
     ("final_eval.json", "directory", True), ("config.json", "directory", True)],
)  # fmt: skip
def test_a_run_file_of_the_wrong_kind_is_one_error_line_before_any_training(tmp_path, name, kind, resume):
    run_dir, argv = run_dir_with(tmp_path, name, kind, resume)
    with pytest.raises(SystemExit) as stopped:
        train.main(argv)
    assert str(stopped.value.code).startswith(f"error: {run_dir / name} is a {kind}, where the run keeps its ")
    assert "\n" not in stopped.value.code
    written = {path.name for path in run_dir.iterdir()}  # nothing yet: no lock, no log, no metrics
    assert written == ({"checkpoints", "config.json", name} if resume else {name})


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only directory: nothing to observe")
def test_a_read_only_checkpoints_directory_is_one_error_line_before_any_training(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "checkpoints").chmod(0o555)
    with pytest.raises(SystemExit) as stopped:
        train.main(["--config", str(config_file(tmp_path, TINY)), "--workdir", str(run_dir)])
    assert stopped.value.code == (
        f"error: {run_dir / 'checkpoints'} is not writable (no permission); make it writable or pick another --workdir"
    )


@pytest.mark.parametrize("resume", [False, True], ids=["new run", "resume"])
@pytest.mark.parametrize("below", ["", "run"], ids=["the link", "below the link"])
def test_a_workdir_through_a_dangling_link_is_one_line_naming_the_link_and_its_target(tmp_path, resume, below):
    link, target = tmp_path / "runs", tmp_path / "unmounted" / "runs"
    link.symlink_to(target)
    workdir = link / below if below else link
    argv = ["--workdir", str(workdir), "--resume"] if resume else ["--config", str(config_file(tmp_path, TINY)), "--workdir", str(workdir)]
    with pytest.raises(SystemExit) as stopped:
        train.main(argv)
    where = f"--workdir {link}" if workdir == link else f"--workdir {workdir}: {link}"
    assert stopped.value.code == (
        f"error: {where} is a symbolic link to {target}, which does not exist; create it or pick another --workdir"
    )
    assert not target.exists()

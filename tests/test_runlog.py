"""The run's log: the writers' one interface, and progress off a terminal."""

import contextlib
import dataclasses
import inspect
import io
import json

import numpy as np

from msjax.run import log as runlog


@dataclasses.dataclass(frozen=True)
class FakeStage:
    name: str = "ppo"
    num_updates: int = 6
    first_step: int = 0
    first_env_step: int = 0
    env_steps_per_update: int = 128


RESULTS = {"win_rate": 0.5, "win_rate_ci95": (0.4, 0.6), "episodes": 8, "revealed_fraction": 0.7}


def public_methods(cls):
    return {name for name, _ in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_")}


def test_the_writer_of_other_processes_has_every_method_of_the_real_one():
    assert public_methods(runlog.MetricsWriter) <= public_methods(runlog.NoWriter)


def test_both_writers_have_every_method_the_loop_calls():
    wanted = public_methods(runlog.RunWriter)
    assert wanted == {"write_updates", "write_eval", "write_promotion", "flush", "close"}
    for writer in (runlog.MetricsWriter, runlog.NoWriter):
        assert wanted <= public_methods(writer), writer
        for name in wanted:  # and with the protocol's arguments
            assert list(inspect.signature(getattr(writer, name)).parameters) == list(
                inspect.signature(getattr(runlog.RunWriter, name)).parameters
            ), (writer, name)


def printed_by_progress(interactive):
    stage = FakeStage()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        progress = runlog.Progress([stage], 0, enabled=True, interactive=interactive)
        for update in (2, 4, 6):
            progress.chunk_done(stage, update, 2, 1.0)
        progress.evaluating(stage, 6, 8)
        progress.evaluated(stage, 6, RESULTS)
        progress.close()
    return out.getvalue() + err.getvalue()


def test_off_a_terminal_progress_prints_plain_lines_and_no_bar():
    logged = printed_by_progress(interactive=None)  # stdout is a StringIO here: no terminal
    assert "\r" not in logged
    lines = logged.splitlines()
    assert sum("win rate 50.0%" in line for line in lines) == 1
    # the stage's end, the evaluation starting (the bar stands still), its result
    assert [line.split(":")[0] for line in lines] == ["ppo done", "ppo update 6", "ppo update 6"]
    assert lines[1] == "ppo update 6: evaluating on 8 games"


def test_on_a_terminal_progress_draws_the_bar():
    logged = printed_by_progress(interactive=True)
    assert "\r" in logged and "win rate 50.0%" in logged


def test_text_log_holds_the_printed_lines_but_not_the_bar_frames(tmp_path):
    stage = FakeStage()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        with runlog.TextLog(tmp_path / "train.log"):
            progress = runlog.Progress([stage], 0, enabled=True, interactive=True)
            progress.chunk_done(stage, 2, 2, 1.0)
            progress.evaluated(stage, 2, RESULTS)
            progress.close()
    logged = (tmp_path / "train.log").read_text()
    assert "\r" in err.getvalue()  # the terminal got the bar
    assert logged.splitlines() == ["ppo update 2: win rate 50.0% [40.0%-60.0%] over 8 games, safe cells revealed 70.0%"]


def test_wall_seconds_grow_and_carry_over_a_resume_without_the_pause(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(runlog.time, "monotonic", lambda: clock[0])
    stage = FakeStage()
    writer = runlog.MetricsWriter(tmp_path, tensorboard=False, resume_step=None)
    clock[0] += 5.0
    writer.write_updates(stage, 0, {"loss": np.array([1.0, 0.5])})  # steps 1, 2
    clock[0] += 7.0
    writer.write_updates(stage, 2, {"loss": np.array([0.4])})  # step 3: dropped by the resume
    writer.close()
    clock[0] += 3600.0  # the run was stopped for an hour
    writer = runlog.MetricsWriter(tmp_path, tensorboard=False, resume_step=2)
    clock[0] += 2.0
    writer.write_eval(stage, 3, RESULTS)
    writer.close()
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2, 3]
    assert [row["wall_s"] for row in rows] == [5.0, 5.0, 7.0]


def counted(interactive, every_s=0.0):
    """What ``CountProgress`` printed for 3 batches of 10 of 30 games."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()) as out:
        progress = runlog.CountProgress(30, "games", "solver on 8x8x10", interactive=interactive, every_s=every_s)
        for _ in range(3):
            progress.advance(10)
        progress.close()
    assert out.getvalue() == ""  # stdout is kept for a command's results
    return err.getvalue()


def test_off_a_terminal_a_count_shows_done_of_total_rate_and_time_left_in_plain_lines():
    lines = counted(interactive=False).splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "solver on 8x8x10: 10/30 games", "solver on 8x8x10: 20/30 games", "solver on 8x8x10: 30/30 games"
    ]
    assert "games/s" in lines[0] and "left" in lines[0] and "in all" in lines[-1]
    assert "\r" not in "".join(lines)


def test_off_a_terminal_a_count_prints_at_most_every_few_seconds_and_at_the_end():
    lines = counted(interactive=False, every_s=3600.0).splitlines()
    assert len(lines) == 1 and lines[0].startswith("solver on 8x8x10: 30/30 games")


def test_on_a_terminal_a_count_draws_a_bar():
    drawn = counted(interactive=True)
    assert "\r" in drawn and "30/30" in drawn


def test_durations_read_as_seconds_minutes_or_hours():
    assert [runlog.format_duration(s) for s in (4.4, 200, 3 * 3600 + 300)] == ["4 s", "3 min 20 s", "3 h 05 min"]

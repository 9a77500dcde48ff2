"""Terminal views on hand-built boards, and the PNG figures (skipped without matplotlib)."""

import json
import textwrap

import jax.numpy as jnp
import numpy as np
import pytest
from drawings import config_for, position

from msjax import env, viz
from msjax.viz import figures
from msjax.cli import viz as viz_cli

PLAYING_TEXT = """
    # * . .
    # . . .
    . . . F
    """
CFG = config_for(PLAYING_TEXT)
PLAYING = position(PLAYING_TEXT)


def test_board_shows_numbers_flags_and_hidden_cells_with_coordinates():
    assert viz.render_board(PLAYING) == textwrap.dedent(
        """\
           0 1 2 3
        0  # # 1 .
        1  # 1 2 1
        2  . . 1 F
        [playing] mines 2, flags 1"""
    )


def test_finished_board_shows_every_mine_the_hit_one_and_wrong_flags():
    lost = position(
        """
        f * . .
        # . . .
        . . . F
        """
    )
    lost = lost.replace(revealed=lost.revealed.at[0, 1].set(True), done=jnp.bool_(True))
    assert viz.render_board(lost, status=False) == textwrap.dedent(
        """\
           0 1 2 3
        0  x X 1 .
        1  # 1 2 1
        2  . . 1 F"""
    )


def test_mark_points_at_the_cell_about_to_be_played():
    lines = viz.render_board(PLAYING, mark=(1, 0), status=False).splitlines()
    assert lines[2] == "1 ># 1 2 1"


def test_probability_overlay_prints_tenths_on_hidden_cells_only():
    probabilities = np.array(
        [
            [0.05, 1.0, 0.3, 0.3],
            [0.5, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.999],
        ]
    )
    assert viz.render_probabilities(probabilities, PLAYING, legend=False) == textwrap.dedent(
        """\
           0 1 2 3
        0  0 9 . .
        1  5 . . .
        2  . . . 9"""
    )


def test_probability_digits_are_floored_tenths_capped_at_nine():
    digits = viz.probability_digits(np.array([0.0, 0.099, 0.1, 0.35, 0.9, 1.0]))
    assert list(digits) == ["0", "0", "1", "3", "9", "9"]


def test_top_actions_letters_the_most_likely_moves_on_their_cells():
    policy = np.zeros(2 * CFG.num_cells)
    policy[4] = 0.6  # reveal (1, 0)
    policy[0] = 0.3  # reveal (0, 0)
    policy[env.encode_action(1, True, CFG)] = 0.1  # flag (0, 1)
    text = viz.render_top_actions(policy, PLAYING, k=3)
    assert text == textwrap.dedent(
        """\
           0 1 2 3
        0  b C 1 .
        1  a 1 2 1
        2  . . 1 F
        a reveal (1, 0)  60.0%
        b reveal (0, 0)  30.0%
        C flag   (0, 1)  10.0%"""
    )


def test_top_actions_skip_impossible_moves_and_reject_a_wrong_length():
    policy = np.zeros(2 * CFG.num_cells)
    policy[4] = 1.0
    assert [m.letter for m in viz.top_actions(policy, (3, 4), k=5)] == ["a"]
    with pytest.raises(ValueError, match="24"):
        viz.top_actions(np.ones(10), (3, 4))


def test_color_mode_adds_escapes_around_the_same_picture():
    probabilities = np.full((3, 4), 0.4)
    plain = viz.render_turn(PLAYING, mine_probabilities=probabilities, mark=(0, 0), width=200)
    coloured = viz.render_turn(PLAYING, mine_probabilities=probabilities, mark=(0, 0), width=200, color=True)
    assert "\x1b[" in coloured
    assert [line.rstrip() for line in viz.strip_ansi(coloured).splitlines()] == plain.splitlines()


def test_render_turn_puts_overlays_beside_the_board_or_below_when_too_narrow():
    probabilities = np.full((3, 4), 0.4)
    wide = viz.render_turn(PLAYING, mine_probabilities=probabilities, width=200)
    assert wide.splitlines()[0].split() == ["board", "mine", "probability"]
    narrow = viz.render_turn(PLAYING, mine_probabilities=probabilities, width=20)
    assert narrow.split("\n\n")[1].startswith("mine probability")


def test_beside_pads_by_visible_width():
    joined = viz.beside([viz.paint("ab", "31", True) + "\nc", "x\ny"], gap=1)
    assert viz.strip_ansi(joined).splitlines() == ["ab x", "c  y"]


def test_use_color_only_for_terminals(monkeypatch):
    class Tty:
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert viz.use_color(Tty())
    assert not viz.use_color(object())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not viz.use_color(Tty())


# ----------------------------------------------------------------------------- figures


def _assert_png(path):
    data = path.read_bytes()
    assert len(data) > 1000 and data[:8] == b"\x89PNG\r\n\x1a\n"


def test_mine_probability_heatmap_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    probabilities = np.linspace(0, 1, 12).reshape(3, 4)
    path = viz.plot_mine_probabilities(PLAYING, probabilities, tmp_path / "heat.png", title="hand-built", mark=(1, 0))
    _assert_png(path)


def _metrics_rows():
    """Rows as msjax.run.loop writes them: an imitation stage, then PPO with evaluations."""
    rows = []
    for update in range(1, 4):
        rows.append({"kind": "train", "stage": "imitation", "step": update, "update": update,
                     "env_steps": 100 * update, "time": 0.0, "loss": 1.0 / update, "policy_ce": 0.9 / update,
                     "guess_ce": 0.5, "mine_bce": 0.6, "solver_win_rate": -1.0 if update == 1 else 0.8})  # fmt: skip
    for update in range(1, 5):
        rows.append({"kind": "train", "stage": "ppo", "step": 3 + update, "update": update,
                     "env_steps": 300 + 50 * update, "time": 0.0, "loss": 0.5, "policy_loss": -0.01,
                     "value_loss": 0.4, "entropy": 2.0, "mine_bce": 0.5, "mean_reward": 0.01 * update,
                     "win_rate_train": 0.1 * update, "approx_kl": None})  # fmt: skip
        if update % 2 == 0:
            rows.append({"kind": "eval", "stage": "ppo", "step": 3 + update, "update": update,
                         "env_steps": 300 + 50 * update, "time": 0.0, "episodes": 32, "win_rate": 0.2 * update,
                         "mean_return": 0.1, "win_rate_low": 0.05, "win_rate_high": 0.9})  # fmt: skip
    return rows


def test_training_curves_are_written_from_a_run_directory(tmp_path):
    pytest.importorskip("matplotlib")
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in _metrics_rows()))
    path = viz.plot_training_curves(tmp_path)
    assert path == tmp_path / "training_curves.png"
    _assert_png(path)


def test_curves_command_writes_the_png_into_the_run(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in _metrics_rows()))
    assert viz_cli.main(["curves", str(tmp_path)]) == 0
    written = [tmp_path / "training_curves.png", tmp_path / "win_rate_vs_compute.png"]
    assert capsys.readouterr().out.split() == [str(path) for path in written]
    for path in written:
        _assert_png(path)
    assert viz_cli.main(["curves", str(tmp_path / "missing")]) == 2


def test_win_rate_vs_compute_reads_wall_seconds_and_falls_back_to_the_clock():
    rows = [{"time": 100.0, "wall_s": 7.0}, {"time": 160.0, "wall_s": 50.0}, {"time": 130.0}]
    np.testing.assert_allclose(figures.wall_seconds(rows), [7.0, 50.0, 30.0])
    np.testing.assert_allclose(figures.wall_seconds([{"time": 5.0}, {"time": 9.0}]), [0.0, 4.0])


def test_win_rate_vs_compute_needs_evaluations(tmp_path):
    train_only = [row for row in _metrics_rows() if row["kind"] == "train"]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in train_only))
    with pytest.raises(ValueError, match="no evaluation rows"):
        viz.plot_win_rate_vs_compute(tmp_path)


def test_a_compute_curve_draws_one_line_per_series_and_needs_a_series_per_point(tmp_path):
    pytest.importorskip("matplotlib")
    points = {"steps": [1e3, 2e3, 1.5e3], "wall": [10, 20, 15], "win": [0.5, 0.6, 0.55], "low": [0.4, 0.5, 0.45],
              "high": [0.6, 0.7, 0.65], "title": "two recipes", "log_steps": True}
    _assert_png(viz.plot_compute_curve(**points, path=tmp_path / "curve.png", series=["plain", "plain", "search"]))
    with pytest.raises(ValueError, match="series names 2 points, but there are 3 win rates"):
        viz.plot_compute_curve(**points, path=tmp_path / "bad.png", series=["plain", "search"])


def test_training_curves_need_a_metrics_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="metrics.jsonl"):
        viz.plot_training_curves(tmp_path)


def test_reliability_diagram_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    predicted = rng.uniform(size=500)
    labels = rng.uniform(size=500) < predicted
    _assert_png(viz.plot_reliability(predicted, labels, tmp_path / "reliability.png"))


def test_curves_of_a_binary_file_is_one_error_naming_it(tmp_path, capsys):
    (tmp_path / "metrics.jsonl").write_bytes(bytes(range(256)))
    assert viz_cli.main(["curves", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ") and str(tmp_path / "metrics.jsonl") in error and error.count("\n") == 1


@pytest.mark.parametrize("games", ["0", "-5"])
def test_calibration_refuses_a_count_of_games_below_one(games, capsys):
    with pytest.raises(SystemExit) as exit_info:
        viz_cli.main(["calibration", "--solver", "--games", games])
    assert exit_info.value.code == 2 and "--games" in capsys.readouterr().err


def test_calibration_shows_games_done_as_it_plays(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "reliability.png"
    argv = ["calibration", "--solver", "--board", "4x4x2", "--games", "3", "-o", str(out)]
    assert viz_cli.main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(out)  # the path alone on stdout
    assert captured.err.splitlines()[-1].startswith("solver on 4x4x2: 3/3 games,")


@pytest.mark.parametrize("figure", ["curves", "heatmap", "calibration"])
def test_each_figures_help_is_its_own_usage_then_its_options(figure, capsys):
    with pytest.raises(SystemExit) as exit_info:
        viz_cli.main([figure, "--help"])
    printed = capsys.readouterr().out
    assert exit_info.value.code == 0
    usage = printed.split("\n\n")[0]
    assert usage.startswith(f"usage: python -m msjax viz {figure} [-h]")
    others = {"curves", "heatmap", "calibration"} - {figure}
    assert not any(other in usage for other in others), usage

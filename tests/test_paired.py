"""msjax.evaluate.paired and ``msjax paired``: players on the same boards, saved rows as
baselines, and the checks that a saved file holds this run's boards."""

import json

import numpy as np
import pytest
from tiny_runs import TINY, saved_run

from msjax.cli import paired as paired_cli
from msjax.env import EnvConfig
from msjax.evaluate.paired import (
    boards_played, check_same_boards, load_saved, paired_row, save_rows, saved_games, saved_outcomes,
    unrecorded_warning,
)

WINS = np.array([[True, False, True, True], [False, False, True, False]])
RUN = {"board": "4x4x2", "seed": 7, "rule": "opening"}  # this run's boards


def saved_file(tmp_path, **fields):
    path = tmp_path / "pairs.npz"
    np.savez(path, **{"wins": WINS, "rows": np.array(["runs/a", "runs/b"]), **RUN, **fields})
    return str(path)


def test_a_saved_row_by_name_or_index_cut_to_the_games(tmp_path):
    path = saved_file(tmp_path)
    name, wins, unrecorded = saved_outcomes(f"{path}:runs/b", games=3, this_run=RUN)
    assert name == "runs/b (saved)" and wins.tolist() == [False, False, True] and unrecorded == []
    assert saved_outcomes(f"{path}:0", games=4, this_run=RUN)[1].tolist() == WINS[0].tolist()


def test_a_saved_file_s_rows_are_read_whole_cut_to_the_games(tmp_path):
    saved, unrecorded = saved_games(saved_file(tmp_path), games=3, this_run=RUN)
    assert saved["wins"].tolist() == WINS[:, :3].tolist() and saved["rows"].tolist() == ["runs/a", "runs/b"]
    assert unrecorded == []
    with pytest.raises(ValueError, match=r"^the file holds 4 games per row, fewer than --games 5$"):
        saved_games(saved_file(tmp_path), games=5, this_run=RUN)


@pytest.mark.parametrize(
    ("row", "games", "this_run", "message"),
    [
        ("runs/c", 4, RUN, "no row 'runs/c'"),
        ("2", 4, RUN, "no row '2'"),
        ("runs/a", 4, {**RUN, "seed": 8}, "its seed 7, this run's 8"),
        ("runs/a", 4, {**RUN, "board": "8x8x10"}, "its board 4x4x2, this run's 8x8x10"),
        ("runs/a", 4, {**RUN, "rule": "safe"}, "its rule opening, this run's safe"),
        ("runs/a", 5, RUN, "fewer than --games 5"),
    ],
)
def test_a_saved_row_that_does_not_fit_is_refused(tmp_path, row, games, this_run, message):
    with pytest.raises(ValueError, match=message):
        saved_outcomes(f"{saved_file(tmp_path)}:{row}", games=games, this_run=this_run)


def test_a_spec_without_a_row_is_refused(tmp_path):
    with pytest.raises(ValueError, match="FILE.npz:ROW"):
        saved_outcomes(saved_file(tmp_path), games=4, this_run=RUN)


def test_an_older_file_without_its_board_and_rule_is_taken_at_its_word_with_those_named(tmp_path):
    path = tmp_path / "old.npz"
    np.savez(path, wins=WINS, rows=np.array(["runs/a", "runs/b"]), seed=7)
    _, wins, unrecorded = saved_outcomes(f"{path}:runs/a", games=4, this_run={**RUN, "board": "9x9x10"})
    assert wins.tolist() == WINS[0].tolist() and unrecorded == ["board", "rule"]


def test_saved_rows_record_the_board_seed_and_first_click_rule(tmp_path):
    path = tmp_path / "rows.npz"
    safe_start = EnvConfig(H=4, W=4, mine_count=2, guarantee_safe_neighborhood=False)
    save_rows(str(path), ["a"], [WINS[0]], boards_played(safe_start, 7))
    with np.load(path) as kept:
        assert (str(kept["board"]), int(kept["seed"]), str(kept["rule"])) == ("4x4x2", 7, "safe")
        assert kept["rows"].tolist() == ["a"] and kept["wins"].tolist() == [WINS[0].tolist()]


def test_a_row_saved_with_another_first_click_rule_is_refused_before_playing(tmp_path, capsys):
    path = saved_file(tmp_path, rule="safe")
    with pytest.raises(SystemExit):
        paired_cli.main(["--against", f"{path}:0", "--solver", "rules", "--games", "4", "--seed", "7"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == f"python -m msjax paired: error: --against {path}:0: its rule safe, this run's opening (other boards)"


@pytest.mark.parametrize("content", ["truncated", "garbage", "npy"])
def test_against_a_file_that_is_not_a_saved_npz_is_one_line(tmp_path, capsys, content):
    path = tmp_path / "rows.npz"
    if content == "truncated":
        path.write_bytes(open(saved_file(tmp_path), "rb").read()[:100])
    elif content == "garbage":
        path.write_bytes(b"\x80\x04 not saved by --save")
    else:
        np.save(open(path, "wb"), WINS)
    with pytest.raises(SystemExit):
        paired_cli.main(["--against", f"{path}:0", "--solver", "rules", "--games", "4"])
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"python -m msjax paired: error: --against {path}:0: "
                       "not a .npz file that --save wrote (truncated, or another kind of file)")
    assert "Traceback" not in err and not any("pickled" in line for line in err)


@pytest.mark.parametrize(
    ("flag", "value", "allowed"),
    [("--games", "1", "1 must be >= 2"), ("--seed", "-1", "-1 must be in [0, 4294967295]"), ("--batch", "0", "0 must be >= 1")],
)
def test_bad_numbers_are_one_argparse_line_naming_the_flag_and_range(capsys, flag, value, allowed):
    with pytest.raises(SystemExit) as exit_info:
        paired_cli.main(["--solver", "rules", flag, value])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"python -m msjax paired: error: argument {flag}: {allowed}"


def test_an_agent_paired_with_its_own_saved_row_differs_by_nothing(tmp_path, capsys):
    run = str(saved_run(tmp_path / "run"))
    saved = str(tmp_path / "first.npz")
    paired_cli.main([run, "--games", "8", "--batch", "4", "--seed", "3", "--save", saved])
    capsys.readouterr()
    again = str(tmp_path / "again.npz")
    paired_cli.main([run, "--games", "6", "--batch", "4", "--seed", "3", "--against", f"{saved}:{run}", "--save", again])
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [row["agent"] for row in rows] == [f"{run} (saved)", run]
    assert f"{run} on 4x4x2" in err and "6/6 games" in err  # the player's progress; the saved row plays nothing
    assert "(saved) on" not in err
    assert rows[1]["vs_first"] == 0.0 and rows[1]["won_by_first_only"] == rows[1]["won_by_this_only"] == 0
    with np.load(again) as kept:
        assert str(kept["board"]) == "4x4x2" and kept["wins"].shape == (2, 6)
    with pytest.raises(SystemExit):
        paired_cli.main([run, "--games", "6", "--seed", "4", "--against", f"{saved}:{run}"])


def test_against_a_saved_row_plays_the_file_s_board_and_an_older_file_needs_board(tmp_path, capsys):
    run = str(saved_run(tmp_path / "run"))  # a 4x4x2 agent
    saved = str(tmp_path / "five.npz")
    paired_cli.main([run, "--games", "4", "--batch", "4", "--seed", "3", "--board", "5x5x3", "--save", saved])
    capsys.readouterr()
    paired_cli.main([run, "--games", "4", "--batch", "4", "--seed", "3", "--against", f"{saved}:0"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [row["board"] for row in rows] == ["5x5x3", "5x5x3"] and rows[1]["vs_first"] == 0.0
    old = tmp_path / "old.npz"
    np.savez(old, wins=WINS, rows=np.array(["runs/a", "runs/b"]), seed=3)
    with pytest.raises(SystemExit):
        paired_cli.main([run, "--games", "4", "--seed", "3", "--against", f"{old}:0"])
    assert "name it with --board" in capsys.readouterr().err


def test_the_solver_plays_the_same_boards_as_when_it_plays_alone(tmp_path, capsys):
    from msjax.agent import SolverAgent
    from msjax.evaluate import play_games

    run = str(saved_run(tmp_path / "run"))  # a 4x4x2 agent
    saved = str(tmp_path / "rows.npz")
    paired_cli.main([run, "--solver", "rules", "--solver", "exact", "--games", "6", "--batch", "3", "--seed", "5",
                        "--save", saved])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [row["agent"] for row in rows] == [run, "solver rules", "solver exact"]
    alone = np.asarray(play_games(SolverAgent(TINY.env), TINY.env, 6, 5, 3)["won"])
    with np.load(saved) as kept:
        assert kept["rows"].tolist() == [run, "solver rules", "solver exact"]
        assert kept["wins"][1].tolist() == alone.tolist()


def test_solver_search_is_the_search_player_at_its_board_s_published_settings():
    from msjax import search

    bounds = {shape: search.published_search(*shape).endgame_layouts for shape in ((8, 8), (16, 16), (16, 30), (9, 9))}
    assert bounds == {(8, 8): 128, (16, 16): 32, (16, 30): 64, (9, 9): 32}
    player = paired_cli.solver_player("search", EnvConfig(H=16, W=16, mine_count=40))
    assert player.solver_cfg.probabilities == "exact" and player.guess.config == search.published_search(16, 16)
    assert player.guess.config.lookahead_score == "survival" and player.guess.config.lookahead_candidates == 6
    assert paired_cli.solver_player("rules", TINY.env).guess is None


def test_a_saved_row_alone_is_a_baseline_for_the_solver_and_no_row_at_all_is_refused(tmp_path, capsys):
    run = str(saved_run(tmp_path / "run"))
    saved = str(tmp_path / "rows.npz")
    # batches of 3, as the other tests here play the solvers: their compiled games are shared
    paired_cli.main([run, "--games", "6", "--batch", "3", "--seed", "3", "--save", saved])
    capsys.readouterr()
    paired_cli.main(["--against", f"{saved}:0", "--solver", "rules", "--games", "6", "--batch", "3", "--seed", "3"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [row["agent"] for row in rows] == [f"{run} (saved)", "solver rules"] and rows[1]["board"] == "4x4x2"
    with pytest.raises(SystemExit):
        paired_cli.main(["--solver", "rules", "--games", "4"])
    assert "as the baseline" in capsys.readouterr().err


def test_rows_of_several_saved_files_are_paired_with_the_first_without_playing(tmp_path, capsys):
    run = str(saved_run(tmp_path / "run"))  # a 4x4x2 agent
    first, second = str(tmp_path / "a.npz"), str(tmp_path / "b.npz")
    paired_cli.main([run, "--games", "9", "--batch", "3", "--seed", "3", "--save", first])
    paired_cli.main(["--against", f"{first}:0", "--solver", "exact", "--games", "9", "--batch", "3", "--seed", "3",
                     "--save", second])
    capsys.readouterr()
    paired_cli.main(["--against", f"{first}:0", "--against", f"{second}:1", "--games", "6", "--seed", "3"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    with np.load(first) as kept_a, np.load(second) as kept_b:
        baseline, exact = kept_a["wins"][0, :6], kept_b["wins"][1, :6]  # both files cut to --games
    assert [row["agent"] for row in rows] == [f"{run} (saved)", "solver exact (saved)"]
    assert [row["board"] for row in rows] == ["4x4x2", "4x4x2"] and all(row["games"] == 6 for row in rows)
    assert [row["win_rate"] for row in rows] == pytest.approx([baseline.mean(), exact.mean()])
    assert rows[1]["vs_first"] == pytest.approx(exact.mean() - baseline.mean())
    assert rows[1]["won_by_first_only"] == int(np.sum(baseline & ~exact))
    assert rows[1]["won_by_this_only"] == int(np.sum(~baseline & exact))


def test_a_later_against_saved_on_another_seed_is_refused_naming_its_file(tmp_path, capsys):
    other = tmp_path / "other_seed.npz"
    np.savez(other, wins=WINS, rows=np.array(["runs/a", "runs/b"]), **{**RUN, "seed": 8})
    with pytest.raises(SystemExit):
        paired_cli.main(["--against", f"{saved_file(tmp_path)}:0", "--against", f"{other}:1", "--games", "4",
                         "--seed", "7"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == f"python -m msjax paired: error: --against {other}:1: its seed 8, this run's 7 (other boards)"


def test_the_same_boards_check_names_every_key_that_differs_and_the_ones_not_recorded(tmp_path):
    path = tmp_path / "run.npz"
    np.savez(path, wins=np.array([True, False, True]), board="16x16x40", seed=4)
    saved = load_saved(str(path), ("wins", "seed"))
    with pytest.raises(ValueError, match=r"^its board 16x16x40, this run's 8x8x10; its seed 4, this run's 3 \(other"):
        check_same_boards(saved, {"board": "8x8x10", "seed": 3})
    assert check_same_boards(saved, {"board": "16x16x40", "seed": 4, "rule": "opening"}) == ["rule"]
    assert "records no rule" in unrecorded_warning("--against x", ["rule"], {"rule": "opening"})
    with pytest.raises(ValueError, match="it holds no 'sizes'"):
        load_saved(str(path), ("wins", "sizes"))
    with pytest.raises(ValueError, match="no such file"):
        load_saved(str(tmp_path / "missing.npz"), ("wins",))


def test_the_paired_row_counts_the_discordant_boards_and_their_difference():
    baseline, other = np.array([True, True, False, False, True]), np.array([True, False, True, True, True])
    row = paired_row(baseline, other)
    assert (row["both"], row["baseline_only"], row["device_only"], row["neither"]) == (2, 1, 2, 0)
    assert row["difference"] == pytest.approx(0.2) and row["difference_ci"][0] < 0.2 < row["difference_ci"][1]


def test_look_ahead_and_search_rows_follow_their_agent_on_the_same_boards(tmp_path, capsys):
    run = str(saved_run(tmp_path / "run"))
    paired_cli.main([run, "--lookahead", "2,2,safe", "--search", "2,2,safe", "--games", "4", "--batch", "4", "--seed", "3"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [row["agent"] for row in rows] == [run, f"{run} +lookahead 2,2,safe", f"{run} +search 2,2,safe"]
    assert all(row["games"] == 4 for row in rows)


@pytest.mark.parametrize(
    ("spec", "message"),
    [("33,16,safe", "SIMS=33 must be in [1, 32]"), ("4,0,value", "N=0 must be >= 1"),
     ("4,16", "must be SIMS,N,LEAF,L,T"), ("4,16,survival,999", "L=999 must be in [0, 128]"),
     ("4,16,survival,32,0", "T=0.0 must be in (0, 1]"), ("4,16,survival,32,x", "must be SIMS,N,LEAF,L,T")],
)
def test_a_bad_search_spec_is_one_argparse_line(capsys, spec, message):
    with pytest.raises(SystemExit) as exit_info:
        paired_cli.main(["--solver", "rules", "--search", spec])
    assert exit_info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("python -m msjax paired: error: argument --search: ") and message in last

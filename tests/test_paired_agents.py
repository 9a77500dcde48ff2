"""benchmarks/paired_agents.py: agents on the same boards, and saved rows as baselines."""

import json

import numpy as np
import pytest
from tiny_runs import TINY, saved_run

from benchmarks import paired_agents
from benchmarks.paired_agents import saved_outcomes

WINS = np.array([[True, False, True, True], [False, False, True, False]])


def saved_file(tmp_path, **fields):
    path = tmp_path / "pairs.npz"
    np.savez(path, **{"wins": WINS, "rows": np.array(["runs/a", "runs/b"]), "seed": 7, "board": "4x4x2", **fields})
    return str(path)


def test_a_saved_row_by_name_or_index_cut_to_the_games(tmp_path):
    path = saved_file(tmp_path)
    name, wins = saved_outcomes(f"{path}:runs/b", seed=7, games=3, board="4x4x2")
    assert name == "runs/b (saved)" and wins.tolist() == [False, False, True]
    assert saved_outcomes(f"{path}:0", seed=7, games=4, board="4x4x2")[1].tolist() == WINS[0].tolist()


@pytest.mark.parametrize(
    ("row", "seed", "games", "board", "message"),
    [
        ("runs/c", 7, 4, "4x4x2", "no row 'runs/c'"),
        ("2", 7, 4, "4x4x2", "no row '2'"),
        ("runs/a", 8, 4, "4x4x2", "seed 7"),
        ("runs/a", 7, 4, "8x8x10", "board is 4x4x2"),
        ("runs/a", 7, 5, "4x4x2", "fewer than --games 5"),
    ],
)
def test_a_saved_row_that_does_not_fit_is_refused(tmp_path, row, seed, games, board, message):
    with pytest.raises(ValueError, match=message):
        saved_outcomes(f"{saved_file(tmp_path)}:{row}", seed=seed, games=games, board=board)


def test_a_spec_without_a_row_is_refused(tmp_path):
    with pytest.raises(ValueError, match="FILE.npz:ROW"):
        saved_outcomes(saved_file(tmp_path), seed=7, games=4, board="4x4x2")


def test_an_older_file_without_its_board_is_taken_at_its_word(tmp_path):
    path = tmp_path / "old.npz"
    np.savez(path, wins=WINS, rows=np.array(["runs/a", "runs/b"]), seed=7)
    assert saved_outcomes(f"{path}:runs/a", seed=7, games=4, board="9x9x10")[1].tolist() == WINS[0].tolist()


def test_an_agent_paired_with_its_own_saved_row_differs_by_nothing(tmp_path, capsys):
    run = str(saved_run(tmp_path / "run"))
    saved = str(tmp_path / "first.npz")
    paired_agents.main([run, "--games", "8", "--batch", "4", "--seed", "3", "--save", saved])
    capsys.readouterr()
    again = str(tmp_path / "again.npz")
    paired_agents.main([run, "--games", "6", "--batch", "4", "--seed", "3", "--against", f"{saved}:{run}", "--save", again])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [row["agent"] for row in rows] == [f"{run} (saved)", run]
    assert rows[1]["vs_first"] == 0.0 and rows[1]["won_by_first_only"] == rows[1]["won_by_this_only"] == 0
    with np.load(again) as kept:
        assert str(kept["board"]) == "4x4x2" and kept["wins"].shape == (2, 6)
    with pytest.raises(SystemExit):
        paired_agents.main([run, "--games", "6", "--seed", "4", "--against", f"{saved}:{run}"])


def test_against_a_saved_row_plays_the_file_s_board_and_an_older_file_needs_board(tmp_path, capsys):
    run = str(saved_run(tmp_path / "run"))  # a 4x4x2 agent
    saved = str(tmp_path / "five.npz")
    paired_agents.main([run, "--games", "4", "--batch", "4", "--seed", "3", "--board", "5x5x3", "--save", saved])
    capsys.readouterr()
    paired_agents.main([run, "--games", "4", "--batch", "4", "--seed", "3", "--against", f"{saved}:0"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [row["board"] for row in rows] == ["5x5x3", "5x5x3"] and rows[1]["vs_first"] == 0.0
    old = tmp_path / "old.npz"
    np.savez(old, wins=WINS, rows=np.array(["runs/a", "runs/b"]), seed=3)
    with pytest.raises(SystemExit):
        paired_agents.main([run, "--games", "4", "--seed", "3", "--against", f"{old}:0"])
    assert "name it with --board" in capsys.readouterr().err


def test_the_solver_plays_the_same_boards_as_when_it_plays_alone(tmp_path, capsys):
    from msjax.agent import SolverAgent
    from msjax.evaluate import play_games

    run = str(saved_run(tmp_path / "run"))  # a 4x4x2 agent
    saved = str(tmp_path / "rows.npz")
    paired_agents.main([run, "--solver", "rules", "--solver", "exact", "--games", "6", "--batch", "3", "--seed", "5",
                        "--save", saved])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [row["agent"] for row in rows] == [run, "solver rules", "solver exact"]
    alone = np.asarray(play_games(SolverAgent(TINY.env), TINY.env, 6, 5, 3)["won"])
    with np.load(saved) as kept:
        assert kept["rows"].tolist() == [run, "solver rules", "solver exact"]
        assert kept["wins"][1].tolist() == alone.tolist()


def test_a_saved_row_alone_is_a_baseline_for_the_solver_and_no_row_at_all_is_refused(tmp_path, capsys):
    run = str(saved_run(tmp_path / "run"))
    saved = str(tmp_path / "rows.npz")
    paired_agents.main([run, "--games", "4", "--batch", "4", "--seed", "3", "--save", saved])
    capsys.readouterr()
    paired_agents.main(["--against", f"{saved}:0", "--solver", "rules", "--games", "4", "--seed", "3"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [row["agent"] for row in rows] == [f"{run} (saved)", "solver rules"] and rows[1]["board"] == "4x4x2"
    with pytest.raises(SystemExit):
        paired_agents.main(["--solver", "rules", "--games", "4"])
    assert "as the baseline" in capsys.readouterr().err

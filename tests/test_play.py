"""The play command line driven through stdin: a person's win, loss, bad input and quit;
the solver's and an agent's games stepped to the end."""

import dataclasses
import io
import re
import subprocess
import sys

import jax
import numpy as np
import pytest

from msjax import agent as agent_lib
from msjax import env as ms_env
from msjax import evaluate as evaluate_lib
from msjax import models, viz
from msjax.cli import play
from tiny_runs import TINY

BOARD = "5x5x3"
SEED = 7
FIRST = (2, 2)
CFG = ms_env.board_config(BOARD, safe_first_click=False)


def run_cli(args, lines):
    """``(exit status, output)`` of ``main(args)`` fed ``lines`` on stdin."""
    stdout = io.StringIO()
    status = play.main(list(args) + ["--color", "never"], stdin=io.StringIO("".join(lines)), stdout=stdout)
    return status, stdout.getvalue()


@pytest.fixture(scope="module")
def layout():
    """The mines of game ``SEED`` once the first click lands on ``FIRST``."""
    state = evaluate_lib.apply_move(evaluate_lib.new_game(SEED, CFG), FIRST[0] * CFG.W + FIRST[1], CFG)
    return state, np.asarray(state.mine_mask)


def winning_moves(state, mine_mask):
    """Reveals of hidden safe cells, in row-major order, until the game is won."""
    moves = []
    while not bool(state.done):
        hidden_safe = ~np.asarray(state.revealed) & ~mine_mask
        row, col = (int(x[0]) for x in np.nonzero(hidden_safe))
        moves.append(f"r {row} {col}\n")
        state = evaluate_lib.apply_move(state, row * CFG.W + col, CFG)
    return moves, state


def test_board_names_and_sizes_parse():
    assert ms_env.parse_board("expert") == (16, 30, 99)
    assert ms_env.parse_board("9x9x10") == (9, 9, 10)
    with pytest.raises(ValueError, match="HxWxM"):
        ms_env.parse_board("huge")
    assert not ms_env.board_config("beginner", safe_first_click=True).guarantee_safe_neighborhood


def test_a_person_wins_by_revealing_every_safe_cell(layout):
    opened, mine_mask = layout
    moves, final = winning_moves(opened, mine_mask)
    status, out = run_cli(["--board", BOARD, "--seed", str(SEED)], [f"r {FIRST[0]} {FIRST[1]}\n"] + moves)
    assert status == 0
    assert f"You won in {1 + len(moves)} moves." in out
    assert out.rstrip().endswith(viz.render_board(final))  # the full board, every mine shown
    assert viz.render_board(final).count("*") == CFG.mine_count


def test_a_person_who_reveals_a_mine_loses_and_sees_the_board(layout):
    _, mine_mask = layout
    row, col = (int(x[0]) for x in np.nonzero(mine_mask))
    status, out = run_cli(["--board", BOARD, "--seed", str(SEED)], [f"r {FIRST[0]} {FIRST[1]}\n", f"r {row} {col}\n"])
    assert status == 0
    assert f"BOOM: ({row}, {col}) was a mine. You lost after 2 moves." in out
    final_board = out.split("You lost after 2 moves.\n")[1].splitlines()
    assert final_board[1 + row].split()[1 + col] == "X"
    assert final_board[-1] == "[lost] mines 3, flags 0"


def test_bad_input_gets_one_line_each_and_the_prompt_again():
    bad = ["\n", "dig 1 1\n", "r 1\n", "r a 1\n", "r 1 9\n", "q now\n"]
    status, out = run_cli(["--board", BOARD, "--seed", str(SEED)], bad + ["f 0 0\n", "r 0 0\n", "q\n"])
    assert status == 0 and "Traceback" not in out
    for message in [
        "type r ROW COL to reveal",
        "unknown command 'dig'",
        "'r' needs a row and a column",
        "row must be a whole number, got 'a'",
        "column 9 is off the board: columns run from 0 to 4",
        "'q' takes no row or column",
        "(0, 0) is flagged; unflag it first with f 0 0",
    ]:
        assert message in out
    assert out.count("move> ") == len(bad) + 3
    assert "Quit after 1 moves." in out  # only the flag was played


def test_a_revealed_cell_cannot_be_played_again(layout):
    status, out = run_cli(["--board", BOARD, "--seed", str(SEED)], [f"r {FIRST[0]} {FIRST[1]}\n"] * 2 + ["q\n"])
    assert f"({FIRST[0]}, {FIRST[1]}) is already revealed" in out


def test_end_of_input_quits_cleanly():
    status, out = run_cli(["--board", BOARD, "--seed", str(SEED)], ["f 1 1\n"])
    assert status == 0
    assert out.rstrip().endswith("Quit after 1 moves.")


def test_an_impossible_board_is_an_error_message_not_a_traceback():
    status, out = run_cli(["--board", "3x3x20"], [])
    assert status == 2
    assert out.startswith("error: EnvConfig.mine_count=20")


def test_the_solver_steps_through_a_game_to_its_end():
    status, out = run_cli(["--solver", "--board", BOARD, "--seed", str(SEED)], ["\n", "x\n", "c\n"])
    assert status == 0
    assert "move 1: reveal (3, 3)  layer 0: opening click  P(mine) 0.00" in out  # the rules make it safe
    assert "press Enter for the next move" in out  # the "x"
    assert "The solver won in" in out or "The solver lost after" in out
    moves = out.count("\nmove ")
    summary = out.split("Action Summary by Layer:\n")[1].splitlines()
    per_layer = [int(re.search(r"(\d+) total", line).group(1)) for line in summary if line.startswith("  Layer")]
    assert sum(per_layer) == moves


def test_quitting_the_solver_before_its_first_move():
    status, out = run_cli(["--solver", "--board", BOARD, "--seed", str(SEED)], ["q\n"])
    assert status == 0 and out.rstrip().endswith("Quit after 0 moves.")


def random_params(cfg, scale=0.3):
    """Random network weights of the right shapes (drawn with NumPy: compiling the
    network's own initialiser would cost this CPU seconds)."""
    shapes = jax.eval_shape(lambda key: models.init_params(key, cfg.model, cfg.env), jax.random.key(0))
    rng = np.random.default_rng(0)
    return jax.tree.map(lambda leaf: (scale * rng.standard_normal(leaf.shape)).astype(leaf.dtype), shapes)


def test_an_agent_steps_through_a_game_with_its_policy_shown():
    cfg = dataclasses.replace(TINY, model=dataclasses.replace(TINY.model, flag_actions=False))  # reveals only
    agent = agent_lib.from_params(random_params(cfg), cfg)
    stdout = io.StringIO()
    term = play.Terminal(io.StringIO("\n" + "c\n"), stdout, color=False)
    assert play.watch(evaluate_lib.agent_turns(agent, seed=0), TINY.env, 0, term, "The agent") == 0
    out = stdout.getvalue()
    assert "policy top 3" in out and "mine probability" in out
    assert "a reveal" in out  # the most likely move, lettered on the board and listed
    assert re.search(r"move 1: reveal \(\d, \d\)  P\(mine\) 0\.00", out)  # the rules make the first click safe
    assert "The agent won in" in out or "The agent lost after" in out


def test_a_missing_agent_run_is_an_error_message(tmp_path):
    status, out = run_cli(["--agent", str(tmp_path / "no_such_run")], [])
    assert status == 2 and out.startswith("error: ")


def test_python_dash_m_msjax_play_runs_from_the_command_line():
    result = subprocess.run(
        [sys.executable, "-m", "msjax", "play", "--board", BOARD, "--seed", "1", "--color", "never"],
        input="r 1\nq\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "'r' needs a row and a column" in result.stdout
    assert result.stdout.rstrip().endswith("Quit after 0 moves.")

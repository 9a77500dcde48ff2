"""Diagnostics: avoidability on hand-built positions, the exact judge, the CLI, baselines."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from drawings import position

from msjax.evaluate import diagnostics
from msjax import env as ms_env
from msjax import evaluate as evaluate_lib
from msjax.agent import RandomAgent, SolverAgent
from msjax.cli import evaluate as evaluate_cli

CFG4 = ms_env.EnvConfig(H=4, W=4, mine_count=3)  # the mines of a position come from its drawing

# every position drawn here is 4x4: one compiled judge
classify_moves = jax.jit(diagnostics.classify_moves, static_argnums=2)


def board(text: str) -> ms_env.EnvState:
    """The position drawn (conftest's board text) as a game of ``CFG4``'s size."""
    return position(text, CFG4)


def judge(state: ms_env.EnvState, row: int, col: int, cfg: ms_env.EnvConfig = CFG4):
    """The MoveKinds (as Python bools) of revealing (row, col) in ``state``."""
    states = jax.tree.map(lambda x: x[None], state)
    action = ms_env.encode_action(row * cfg.W + col, False, cfg)
    kinds = classify_moves(states, jnp.array([action], jnp.int32), cfg)
    return {name: bool(value[0]) for name, value in kinds._asdict().items()}


# The 0s at (0, 2) and (2, 0) prove (0, 1) and (1, 0) safe; (0, 0) is then a proved mine.
SAFE_CELL_EXISTS = """
    * # . .
    # . . .
    . . . .
    . . . .
"""

# One number (the 1 at (1, 1)) with eight hidden neighbours and three mines on the board:
# nothing is proved.
NOTHING_PROVED = """
    * # # #
    # 1 # #
    # # # *
    * # # #
"""


def test_revealing_a_proved_safe_cell_is_not_a_guess():
    kinds = judge(board(SAFE_CELL_EXISTS), 0, 1)
    assert kinds["reveal"] and not kinds["guess"] and not kinds["hit"]
    assert kinds["safe_available"]


def test_revealing_an_unproved_cell_while_a_safe_one_exists_is_an_avoidable_guess():
    kinds = judge(board(SAFE_CELL_EXISTS), 0, 0)
    assert kinds["guess"] and kinds["avoidable"] and not kinds["forced"]
    assert kinds["hit"]  # an avoidable mistake


def test_a_reveal_with_no_proved_safe_cell_is_a_forced_guess():
    position = board(NOTHING_PROVED)
    survived = judge(position, 2, 2)
    assert survived["forced"] and not survived["avoidable"] and not survived["hit"]
    hit = judge(position, 0, 0)
    assert hit["forced"] and hit["hit"]


def test_flags_and_repeated_reveals_are_not_reveals():
    state = board(SAFE_CELL_EXISTS)
    assert not judge(state, 2, 2)["reveal"]  # already revealed
    states = jax.tree.map(lambda x: x[None], state)
    flag_on_mine = jnp.array([ms_env.encode_action(0, True, CFG4)], jnp.int32)
    assert not bool(classify_moves(states, flag_on_mine, CFG4).reveal[0])


def test_avoidability_figures_from_counters():
    games = {
        "guesses": np.array([3, 1]),
        "forced_guesses": np.array([2, 0]),
        "forced_guesses_survived": np.array([1, 0]),
        "avoidable_guesses": np.array([1, 1]),
        "avoidable_mistakes": np.array([0, 1]),
        "reveals_with_safe_available": np.array([5, 3]),
    }
    figures = diagnostics.avoidability(games)
    assert figures["guesses_per_game"] == 2.0
    assert figures["forced_guesses_per_game"] == 1.0
    assert figures["forced_guess_success_rate"] == 0.5
    assert figures["avoidable_mistakes"] == 0.5
    assert figures["avoidable_guess_rate"] == 2 / 8


# ----------------------------------------------------------------------------- exact judgement

judge_exactly = jax.jit(diagnostics.judge_exactly, static_argnums=(2, 3))
ONE_PASS = diagnostics.solver_lib.ExactLimits(first_states=32, middle_states=0, max_states=32)


def judge_exact(state: ms_env.EnvState, cells: list[tuple[int, int]]):
    """ExactMoveKinds (numpy) of revealing each of ``cells`` in ``state``, one game each."""
    states = jax.tree.map(lambda x: jnp.stack([x] * len(cells)), state)
    actions = jnp.array([ms_env.encode_action(r * CFG4.W + c, False, CFG4) for r, c in cells], jnp.int32)
    return jax.tree.map(np.asarray, judge_exactly(states, actions, CFG4, ONE_PASS))


def test_the_exact_judge_names_proven_mines_and_guesses_worse_than_the_minimum():
    # NOTHING_PROVED: the 1's eight neighbours hold one mine (1/8 each), the other seven
    # cells two (2/7 each): (2, 2) is a best guess, (0, 3) a worse one by 2/7 - 1/8.
    kinds = judge_exact(board(NOTHING_PROVED), [(2, 2), (0, 3), (0, 0)])
    assert kinds.judged.all() and not kinds.missed_proof.any() and not kinds.proven_mine.any()
    assert kinds.best_guess.tolist() == [True, False, True]  # (0, 0): a best guess, and a mine
    assert kinds.worse_guess.tolist() == [False, True, False]
    assert kinds.excess_risk[1] == pytest.approx(2 / 7 - 1 / 8, abs=1e-5)
    kinds = judge_exact(board(SAFE_CELL_EXISTS), [(0, 0), (0, 1)])
    assert kinds.proven_mine.tolist() == [True, False]
    assert not kinds.missed_proof.any() and not kinds.worse_guess.any() and not kinds.best_guess.any()


def test_loss_cause_figures_from_counters():
    causes = ("missed_proof", "proven_mine", "worse_guess", "best_guess")
    games = {"exact_judged": np.array([4, 2]), "excess_risk_ppm": np.array([150_000, 50_000])}
    games.update({f"exact_{cause}": np.array(count) for cause, count in zip(causes, ([1, 0], [0, 1], [1, 1], [2, 0]))})
    games.update({f"lost_on_{cause}": np.array(lost) for cause, lost in zip(
        diagnostics.LOSS_CAUSES, ([1, 0], [0, 1], [0, 0], [0, 0], [0, 0]))})
    figures = diagnostics.loss_causes(games)
    assert figures["exact_missed_proof_per_game"] == 0.5 and figures["exact_best_guess_per_game"] == 1.0
    assert figures["mean_excess_risk"] == pytest.approx(0.1)  # 0.2 over two worse guesses
    assert figures["lost_on_missed_proof"] == figures["lost_on_proven_mine"] == 0.5
    assert np.isnan(diagnostics.loss_causes({**games, "exact_worse_guess": np.array([0, 0])})["mean_excess_risk"])


# ----------------------------------------------------------------------------- games and CLI

CFG5 = ms_env.EnvConfig(H=5, W=5, mine_count=4)


@pytest.fixture(scope="module")
def solver_figures():
    return diagnostics.diagnose(SolverAgent(CFG5), CFG5, episodes=64, seed=1, batch_size=16)  # the CLI's batches


@pytest.fixture(scope="module")
def random_figures():
    return diagnostics.diagnose(RandomAgent(CFG5), CFG5, episodes=64, seed=1)


def test_the_solver_beats_random_and_never_guesses_while_a_safe_cell_exists(solver_figures, random_figures):
    solver, rand = solver_figures, random_figures
    assert solver["win_rate"] > rand["win_rate"] + 0.3
    assert solver["avoidable_guesses_per_game"] == 0.0 and solver["avoidable_mistakes"] == 0.0
    assert solver["guesses_per_game"] == solver["forced_guesses_per_game"] > 0
    assert 0.0 < solver["forced_guess_success_rate"] < 1.0
    # a random player mostly reveals unproved cells, many while a safe one exists
    assert rand["avoidable_mistakes"] > 0.3 and rand["avoidable_guess_rate"] > 0.3


def test_diagnose_plays_the_same_games_as_evaluate(random_figures):
    plain = evaluate_lib.evaluate(RandomAgent(CFG5), CFG5, episodes=64, seed=1)
    for name, value in plain.items():
        np.testing.assert_equal(random_figures[name], value, err_msg=name)


def test_cli_prints_a_table_and_a_json_line(capsys):
    # the solver test's games in its batches of 16: the compiled loop is reused
    status = evaluate_cli.main(
        ["--solver", "--board", "5x5x4", "--episodes", "64", "--seed", "1", "--calibration-games", "0"]
    )
    out = capsys.readouterr().out.strip().splitlines()
    assert status == 0
    assert out[0] == "solver on 5x5x4 (opening start), 64 games"
    assert any(line.strip().startswith("win rate") and "95% CI" in line for line in out)
    record = json.loads(out[-1])
    assert record["episodes"] == 64 and record["board"] == "5x5x4" and record["rule"] == "opening"
    for name in ("win_rate", "win_rate_ci95", "guesses_per_game", "forced_guess_success_rate", "avoidable_mistakes"):
        assert name in record


def test_cli_shows_games_done_rate_and_time_left_on_stderr_as_it_plays(capsys):
    # no calibration games: their exact judge is 17 s of compile on 5x5 (the calibration's own
    # progress line: test_viz; the CLI's calibration step: test_run_faults)
    status = evaluate_cli.main(["--solver", "--board", "5x5x4", "--episodes", "64", "--seed", "1", "--calibration-games", "0"])
    captured = capsys.readouterr()
    assert status == 0
    lines = captured.err.splitlines()  # off a terminal: plain lines (at most one per 10 s, and the last)
    assert lines[0] == "solver on 5x5x4: 64 games in batches of 16 (the first batch also compiles the game loop)"
    assert lines[-1].startswith("solver on 5x5x4: 64/64 games,") and "games/s" in lines[-1]
    json.loads(captured.out.strip().splitlines()[-1])  # stdout keeps the table and the JSON line alone


def test_cli_first_click_must_be_a_cell_of_the_board(capsys):
    status = evaluate_cli.main(["--solver", "--board", "5x5x4", "--first-click", "5,0"])
    assert status == 2
    assert "--first-click 5,0: off the 5x5 board" in capsys.readouterr().err


def test_cli_symmetric_proofs_and_lookahead_need_an_agent(capsys):
    status = evaluate_cli.main(["--solver", "--board", "5x5x4", "--symmetric"])
    assert status == 2
    assert "--symmetric averages an agent's network: the solver has none" in capsys.readouterr().err
    assert evaluate_cli.main(["--solver", "--board", "5x5x4", "--proofs", "layers"]) == 2
    assert "--proofs guides an agent's network: the solver has none" in capsys.readouterr().err
    assert evaluate_cli.main(["--solver", "--board", "5x5x4", "--lookahead", "4,16,value"]) == 2
    assert "--lookahead guides an agent's network: the solver has none" in capsys.readouterr().err
    assert evaluate_cli.main(["--solver", "--board", "5x5x4", "--lookahead", "4,16,mines"]) == 2
    assert "must be K,N,LEAF" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--solver", "--board", "huge"],
        ["--solver", "--episodes", "0"],
        ["--solver", "--board", "3x3x9"],
        ["--agent", "no/such/run"],
        ["--solver", "--agent", "runs/x"],
    ],
)
def test_cli_rejects_bad_arguments_in_one_line_with_status_2(argv, capsys):
    assert evaluate_cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1
    assert captured.err.startswith("python -m msjax evaluate: error:")

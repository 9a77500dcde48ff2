"""Diagnostics: avoidability on hand-built positions, calibration metrics, the CLI, baselines."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from msjax import diagnostics
from msjax import env as ms_env
from msjax import exact
from msjax.evaluate import evaluate, random_agent

CFG4 = ms_env.EnvConfig(H=4, W=4, mine_count=3)  # the mines of a position come from its drawing


def board(text: str, cfg: ms_env.EnvConfig = CFG4) -> ms_env.EnvState:
    """A position drawn as rows of ``*`` (hidden mine), ``#`` (hidden safe cell) and ``.``
    (revealed safe cell, showing its true count)."""
    rows = [list(row) for row in text.split()]
    mines = np.array([[c == "*" for c in row] for row in rows])
    revealed = np.array([[c == "." for c in row] for row in rows])
    state = ms_env.from_mines(jnp.asarray(mines), cfg)
    return state.replace(revealed=jnp.asarray(revealed))


def judge(state: ms_env.EnvState, row: int, col: int, cfg: ms_env.EnvConfig = CFG4):
    """The MoveKinds (as Python bools) of revealing (row, col) in ``state``."""
    states = jax.tree.map(lambda x: x[None], state)
    kinds = diagnostics.classify_moves(states, jnp.array([row * cfg.W + col], jnp.int32), cfg)
    return {name: bool(value[0]) for name, value in kinds._asdict().items()}


# The 0s at (0, 2) and (2, 0) prove (0, 1) and (1, 0) safe; (0, 0) is then a proved mine.
SAFE_CELL_EXISTS = """
*#..
#...
....
....
"""

# One number (the 1 at (1, 1)) with eight hidden neighbours and three mines on the board:
# nothing is proved.
NOTHING_PROVED = """
*###
#.##
###*
*###
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
    flag_on_mine = jnp.array([CFG4.num_cells + 0], jnp.int32)
    assert not bool(diagnostics.classify_moves(states, flag_on_mine, CFG4).reveal[0])


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


# ----------------------------------------------------------------------------- calibration


def test_auroc_of_a_perfect_a_reversed_and_a_constant_ranking():
    labels = np.array([0, 0, 1, 0, 1, 1], bool)
    scores = np.array([0.1, 0.2, 0.7, 0.3, 0.8, 0.9])
    assert diagnostics.auroc(scores, labels) == 1.0
    assert diagnostics.auroc(1.0 - scores, labels) == 0.0
    assert diagnostics.auroc(np.full(6, 0.4), labels) == 0.5


def test_auroc_counts_ties_between_classes_as_half():
    # positive 0.5 ties one negative and beats the other: (1 + 0.5) / 2
    assert diagnostics.auroc([0.5, 0.5, 0.1], [True, False, False]) == 0.75


def test_calibrated_predictions_have_near_zero_ece_and_the_expected_brier():
    rng = np.random.default_rng(0)
    probs = rng.choice([0.05, 0.25, 0.55, 0.85], size=200_000)
    labels = rng.random(probs.size) < probs
    metrics = diagnostics.calibration_metrics(probs, labels)
    assert metrics["ece"] < 0.01
    assert metrics["brier"] == pytest.approx(np.mean(probs * (1 - probs)), abs=2e-3)
    assert 0.5 < metrics["auroc"] < 1.0


def test_calibration_metrics_score_only_the_masked_cells():
    probs = np.array([[0.9, 0.1], [0.0, 1.0]])
    labels = np.array([[True, False], [True, False]])  # the unmasked row is all wrong
    mask = np.array([[True, True], [False, False]])
    metrics = diagnostics.calibration_metrics(probs, labels, mask)
    assert metrics["cells"] == 2 and metrics["auroc"] == 1.0
    assert metrics["brier"] == pytest.approx(0.01)


# ----------------------------------------------------------------------------- games and CLI

CFG5 = ms_env.EnvConfig(H=5, W=5, mine_count=4)


def test_the_solver_beats_random_and_never_guesses_while_a_safe_cell_exists():
    solver = diagnostics.diagnose(diagnostics.SolverAgent(CFG5), CFG5, episodes=64, seed=1)
    rand = diagnostics.diagnose(random_agent(CFG5), CFG5, episodes=64, seed=1)
    assert solver["win_rate"] > rand["win_rate"] + 0.3
    assert solver["avoidable_guesses_per_game"] == 0.0 and solver["avoidable_mistakes"] == 0.0
    assert solver["guesses_per_game"] == solver["forced_guesses_per_game"] > 0
    assert 0.0 < solver["forced_guess_success_rate"] < 1.0
    # a random player mostly reveals unproved cells, many while a safe one exists
    assert rand["avoidable_mistakes"] > 0.3 and rand["avoidable_guess_rate"] > 0.3


def test_diagnose_plays_the_same_games_as_evaluate():
    figures = diagnostics.diagnose(random_agent(CFG5), CFG5, episodes=64, seed=1)
    plain = evaluate(random_agent(CFG5), CFG5, episodes=64, seed=1)
    for name, value in plain.items():
        np.testing.assert_equal(figures[name], value, err_msg=name)


def test_cli_prints_a_table_and_a_json_line(capsys):
    # the solver test's games: the compiled loop is reused
    status = diagnostics.main(
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


@dataclasses.dataclass(frozen=True)
class DensityGuesser:
    """Reveals a random hidden cell and believes every hidden cell holds the mean density."""

    def act(self, state, key):
        hidden = ~state.revealed.reshape(-1)
        return jax.random.categorical(key, jnp.where(hidden, 0.0, -jnp.inf)).astype(jnp.int32)

    def mine_probabilities(self, state):
        hidden = ~state.revealed
        return jnp.where(hidden, state.mine_count / jnp.sum(hidden), 0.0).astype(jnp.float32)


def test_positions_carry_the_beliefs_and_exact_probabilities_close_the_gap():
    positions = diagnostics.collect_positions(DensityGuesser(), CFG4, games=16, seed=0)
    states = positions.states
    assert bool(states.first_click_done.all()) and not bool(states.done.any())
    figures = diagnostics.positions_calibration(positions)
    assert figures["cells"] == int((~states.revealed).sum())
    gap = diagnostics.exact_gap(DensityGuesser(), CFG4, positions)
    assert gap["exact_positions"] > 0 and 0.0 < gap["exact_gap"] < 1.0
    exact_probs = np.stack([
        exact.analyse(r, np.where(r, c, 0), int(m)).mine_prob
        for r, c, m in zip(np.asarray(states.revealed), np.asarray(states.counts), np.asarray(states.mine_count))
    ])
    perfect = positions._replace(mine_probabilities=jnp.asarray(exact_probs, jnp.float32))
    assert diagnostics.exact_gap(DensityGuesser(), CFG4, perfect)["exact_gap"] < 1e-6


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
    assert diagnostics.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1
    assert captured.err.startswith("python -m msjax.evaluate: error:")

"""Calibration of mine beliefs: positions met in games, their scores, the gap to exact."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from msjax.evaluate import calibration
from msjax import env as ms_env
from msjax import evaluate as evaluate_lib
from msjax import reference

CFG4 = ms_env.EnvConfig(H=4, W=4, mine_count=3)


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
    positions = calibration.collect_positions(DensityGuesser(), CFG4, games=16, seed=0)
    states = positions.states
    assert bool(states.first_click_done.all()) and not bool(states.done.any())
    figures = calibration.positions_calibration(positions)
    assert figures["cells"] == int((~states.revealed).sum())
    gap = calibration.exact_gap(DensityGuesser(), CFG4, positions)
    assert gap["exact_positions"] > 0 and 0.0 < gap["exact_gap"] < 1.0
    exact_probs = np.stack([
        reference.analyse(r, np.where(r, c, 0), int(m)).mine_prob
        for r, c, m in zip(np.asarray(states.revealed), np.asarray(states.counts), np.asarray(states.mine_count))
    ])
    perfect = positions._replace(mine_probabilities=jnp.asarray(exact_probs, jnp.float32))
    assert calibration.exact_gap(DensityGuesser(), CFG4, perfect)["exact_gap"] < 1e-6


def test_calibration_data_takes_hidden_cells_after_the_first_click():
    cfg = ms_env.EnvConfig(H=5, W=5, mine_count=3)

    def row_major_turn(state, move):  # reveals the first hidden cell, believes 0.3 everywhere
        hidden = np.flatnonzero(~np.asarray(state.revealed))
        return evaluate_lib.Turn(int(hidden[0]) if move else 12, np.full((5, 5), 0.3), None, None)

    predicted, labels = calibration.calibration_data(row_major_turn, cfg, games=2, seed=0)
    expected_predictions, expected_mines = 0, 0
    for seed in (0, 1):
        turns, _ = evaluate_lib.record_turns(row_major_turn, cfg, seed)
        placed = [state for state, _ in turns if bool(state.first_click_done)]
        expected_predictions += sum(int((~np.asarray(s.revealed)).sum()) for s in placed)
        expected_mines += sum(int((np.asarray(s.mine_mask) & ~np.asarray(s.revealed)).sum()) for s in placed)
    assert len(predicted) == len(labels) == expected_predictions > 0
    assert np.all(predicted == 0.3) and int(labels.sum()) == expected_mines


@dataclasses.dataclass(frozen=True)
class RowMajorPlayer(DensityGuesser):
    """Reveals the first hidden cell in row-major order (no randomness, so its games are the
    same whoever plays them out); values a view by the share of its safe cells revealed."""

    def act(self, state, key):
        return jnp.argmax(~state.revealed.reshape(-1)).astype(jnp.int32)

    def value(self, state):
        return (jnp.sum(state.revealed) / (state.revealed.size - state.mine_count)).astype(jnp.float32)


def test_the_value_of_every_position_is_scored_against_its_own_game_s_outcome():
    player, games, seed = RowMajorPlayer(), 48, 2
    values, won, game = calibration.value_positions(player, CFG4, games, seed)
    states = calibration.collect_positions(player, CFG4, games, seed).states  # the same positions, in order
    revealed = np.asarray(states.revealed).reshape(len(values), -1).sum(axis=1)
    np.testing.assert_allclose(values, revealed / (16 - 3), rtol=1e-6)
    played = evaluate_lib.play_games(player, CFG4, games, seed, games)  # the same boards, the same moves
    outcome, steps = np.asarray(played["won"]), np.asarray(played["steps"])
    assert 0 < outcome.sum() < games  # both outcomes met, so the test can tell them apart
    assert np.array_equal(won, outcome[game])
    assert np.array_equal(np.bincount(game, minlength=games), steps - 1)  # every move after the opening click
    figures = calibration.value_calibration(player, CFG4, games, seed, num_bins=4)
    assert figures["value_positions"] == len(values) and figures["value_outside"] == 0.0
    assert figures["won_mean"] == won.mean() and sum(row["positions"] for row in figures["value_bins"]) == len(values)
    assert abs(figures["value_brier"] - np.mean((values - won) ** 2)) < 1e-6

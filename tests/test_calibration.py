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

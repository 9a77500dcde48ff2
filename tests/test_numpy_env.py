"""The NumPy baseline of the benchmark: what it does beyond the rules that
``tests/test_conformance.py`` checks it against (density bands, auto-reset) and the
random policies the throughput benchmark drives it with."""

import jax
import jax.numpy as jnp
import numpy as np

from msjax.reference import NumpyMinesweeper, random_hidden_cells
from msjax.env import EnvConfig, batch_random_reveals


def test_density_band_draws_mine_counts_in_range():
    cfg = EnvConfig(H=8, W=8, density_band=(0.1, 0.2))
    numpy_env = NumpyMinesweeper(cfg, 200, seed=5, auto_reset=False)
    numpy_env.step(np.full(200, 27))
    fewest, most = cfg.mine_count_range
    per_board = numpy_env.mine_mask.sum(axis=(1, 2))
    np.testing.assert_array_equal(per_board, numpy_env.mine_count)
    assert per_board.min() >= fewest and per_board.max() <= most and per_board.min() < per_board.max()


def test_finished_boards_restart_as_fresh_games():
    cfg = EnvConfig(H=6, W=6, mine_count=8)
    numpy_env = NumpyMinesweeper(cfg, 64, seed=6)
    rng = np.random.default_rng(7)
    finished = np.zeros(64, bool)
    for _ in range(20):
        cells = random_hidden_cells(numpy_env.action_mask()[:, : cfg.num_cells], rng)
        _, done, _ = numpy_env.step(cells)
        finished |= done
        assert not numpy_env.revealed[done].any() and not numpy_env.first_click_done[done].any()
        assert (numpy_env.step_count[done] == 0).all() and not numpy_env.done.any()
    assert finished.any()


def test_random_hidden_cells_picks_only_allowed_cells():
    rng = np.random.default_rng(8)
    allowed = rng.random((500, 30)) < 0.1
    allowed[:, 29] = True
    picks = random_hidden_cells(allowed, rng)
    assert allowed[np.arange(500), picks].all()
    assert len(np.unique(picks)) > 20


def test_benchmark_policy_reveals_only_allowed_cells_and_reaches_all_of_them():
    height, width = 5, 7
    allowed = np.random.default_rng(9).random((400, height * width)) < 0.2
    allowed[:, 3] = True
    picks = np.asarray(batch_random_reveals(jax.random.key(0), jnp.asarray(allowed), height, width))
    assert allowed[np.arange(400), picks].all()
    same_mask = jnp.broadcast_to(jnp.asarray(allowed[0]), allowed.shape)
    picks = np.asarray(batch_random_reveals(jax.random.key(1), same_mask, height, width))
    assert set(picks.tolist()) == set(np.flatnonzero(allowed[0]).tolist())

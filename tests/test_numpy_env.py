"""The NumPy baseline of the benchmark plays the same game as msjax.env."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from msjax import env
from msjax.env import EnvConfig

from benchmarks.env_throughput import random_valid_reveals
from benchmarks.numpy_env import NumpyMinesweeper, neighbour_sum, random_hidden_cells

INFO_FIELDS = ("invalid", "new_revealed", "won", "lost", "steps", "revealed_fraction")


def random_layouts(rng: np.random.Generator, num_boards: int, cfg: EnvConfig) -> np.ndarray:
    """bool[N, H, W]: ``cfg.mine_count`` mines per board at uniformly random cells."""
    keys = rng.random((num_boards, cfg.num_cells))
    order = np.argsort(keys, axis=1)[:, : cfg.mine_count]
    layouts = np.zeros((num_boards, cfg.num_cells), bool)
    np.put_along_axis(layouts, order, True, axis=1)
    return layouts.reshape(num_boards, cfg.H, cfg.W)


def random_actions(rng: np.random.Generator, revealed: np.ndarray, flags: np.ndarray, cfg: EnvConfig) -> np.ndarray:
    """int32[N]: mostly reveals of hidden cells, then flag toggles (half of them on an
    existing flag when there is one, to remove it), then arbitrary (maybe invalid) actions."""
    num_boards = revealed.shape[0]
    hidden_cells = random_hidden_cells(~revealed.reshape(num_boards, -1), rng)
    flagged = flags.reshape(num_boards, -1)
    flagged_cells = random_hidden_cells(flagged | ~flagged.any(axis=1, keepdims=True), rng)
    flagged_cells = np.where(flagged.any(axis=1), flagged_cells, hidden_cells)
    kind = rng.random(num_boards)
    actions = np.select(
        [kind < 0.15, kind < 0.3, kind < 0.85],
        [hidden_cells + cfg.num_cells, flagged_cells + cfg.num_cells, hidden_cells],
        rng.integers(0, cfg.num_actions, num_boards),
    )
    return actions.astype(np.int32)


@pytest.mark.parametrize(
    "cfg",
    [
        EnvConfig(H=8, W=8, mine_count=10),
        EnvConfig(H=6, W=9, mine_count=5, use_flag_shaping=True, max_steps=10),
    ],
    ids=["beginner", "sparse-flag-shaping-max-steps"],
)
def test_plays_identical_games_to_msjax_env(cfg):
    rng = np.random.default_rng(cfg.num_cells)
    layouts = random_layouts(rng, 12, cfg)
    jax_states = jax.vmap(env.from_mines, in_axes=(0, None))(jnp.asarray(layouts), cfg)
    numpy_env = NumpyMinesweeper.from_mines(layouts, cfg, seed=1)
    playing = np.ones(len(layouts), bool)
    for t in range(60):
        actions = random_actions(rng, numpy_env.revealed, numpy_env.flags, cfg)
        jax_states, jax_reward, jax_done, jax_info = env.batch_step(jax_states, jnp.asarray(actions), cfg)
        np_reward, np_done, np_info = numpy_env.step(actions)
        where = f"step {t}, boards {np.flatnonzero(playing)}"
        np.testing.assert_allclose(np.asarray(jax_reward)[playing], np_reward[playing], atol=1e-6, err_msg=where)
        np.testing.assert_array_equal(np.asarray(jax_done)[playing], np_done[playing], err_msg=where)
        for field in INFO_FIELDS:
            np.testing.assert_allclose(
                np.asarray(jax_info[field])[playing], np_info[field][playing], atol=1e-6, err_msg=f"{field}, {where}"
            )
        still = playing & ~np_done  # finished boards restart with different random layouts
        for field in ("revealed", "flags"):
            np.testing.assert_array_equal(
                np.asarray(getattr(jax_states, field))[still], getattr(numpy_env, field)[still], err_msg=f"{field}, {where}"
            )
        playing = still
    assert not playing.all(), "no game finished: the test did not reach win/loss"


@pytest.mark.parametrize("safe_neighbourhood", [True, False])
def test_first_click_places_exact_mines_away_from_the_click(safe_neighbourhood):
    cfg = EnvConfig(H=6, W=7, mine_count=20, guarantee_safe_neighborhood=safe_neighbourhood)
    numpy_env = NumpyMinesweeper(cfg, 300, seed=3, auto_reset=False)
    clicks = np.random.default_rng(4).integers(0, cfg.num_cells, 300)
    _, done, info = numpy_env.step(clicks)
    mines = numpy_env.mine_mask
    assert (mines.sum(axis=(1, 2)) == cfg.mine_count).all()
    np.testing.assert_array_equal(numpy_env.counts, neighbour_sum(mines))
    for board, (r, c) in enumerate(zip(*np.divmod(clicks, cfg.W))):
        if safe_neighbourhood:
            assert not mines[board, max(r - 1, 0) : r + 2, max(c - 1, 0) : c + 2].any()
        else:
            assert not mines[board, r, c]
    assert not info["lost"].any()


def test_density_band_draws_mine_counts_in_range():
    cfg = EnvConfig(H=8, W=8, density_band=(0.1, 0.2))
    numpy_env = NumpyMinesweeper(cfg, 200, seed=5, auto_reset=False)
    numpy_env.step(np.full(200, 27))
    fewest, most = cfg.mine_count_range
    per_board = numpy_env.mine_mask.sum(axis=(1, 2))
    np.testing.assert_array_equal(per_board, numpy_env.mine_count)
    assert per_board.min() >= fewest and per_board.max() <= most and per_board.min() < per_board.max()


def test_finished_boards_restart_as_fresh_games():
    cfg = EnvConfig(H=8, W=8, mine_count=10)
    numpy_env = NumpyMinesweeper(cfg, 64, seed=6)
    rng = np.random.default_rng(7)
    finished = np.zeros(64, bool)
    for _ in range(30):
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
    picks = np.asarray(random_valid_reveals(jax.random.key(0), jnp.asarray(allowed), height, width))
    assert allowed[np.arange(400), picks].all()
    same_mask = jnp.broadcast_to(jnp.asarray(allowed[0]), allowed.shape)
    picks = np.asarray(random_valid_reveals(jax.random.key(1), same_mask, height, width))
    assert set(picks.tolist()) == set(np.flatnonzero(allowed[0]).tolist())

"""The game's rules (``msjax.env``), on drawn boards (``tests/conftest.py``'s format) and on
many random ones. ``tests/test_conformance.py`` plays whole random games against a plain
Python reference of the rules; the tests here pin single rules and the JAX specifics."""

from collections import deque

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from drawings import config_for, mine_layout, position, stack
from hypothesis import given, settings
from hypothesis import strategies as st

from msjax import env
from msjax.env import EnvConfig
from msjax.reference import NumpyMinesweeper

# Shared compiled functions: each compiles once per config and shape.
step = jax.jit(env.step, static_argnums=2)
step_each = jax.jit(jax.vmap(env.step, in_axes=(0, 0, None)), static_argnums=2)
every_action = jax.jit(jax.vmap(env.step, in_axes=(None, 0, None)), static_argnums=2)
mask_of = jax.jit(env.action_mask, static_argnums=1)
masks_of = jax.jit(jax.vmap(env.action_mask, in_axes=(0, None)), static_argnums=1)
observe = jax.jit(env.observe, static_argnums=1)
from_mines = jax.jit(env.from_mines, static_argnums=1)
reset = jax.jit(env.reset, static_argnums=1)

CORNER_MINE = """
    * # #
    # # #
    # # #
"""
CORNER = config_for(CORNER_MINE)  # most single-rule tests play this board: one compile


def reveal(state, row, col, cfg):
    return step(state, env.encode_action(row * cfg.W + col, False, cfg), cfg)


def toggle_flag(state, row, col, cfg):
    return step(state, env.encode_action(row * cfg.W + col, True, cfg), cfg)


def reference_opened(mines: np.ndarray, cell: tuple[int, int]) -> np.ndarray:
    """Plain-Python BFS: the cells a reveal of safe ``cell`` opens."""
    height, width = mines.shape
    counts = np.zeros_like(mines, dtype=int)
    for r in range(height):
        for c in range(width):
            counts[r, c] = mines[max(r - 1, 0) : r + 2, max(c - 1, 0) : c + 2].sum() - mines[r, c]
    opened = np.zeros_like(mines)
    queue = deque([cell])
    opened[cell] = True
    while queue:
        r, c = queue.popleft()
        if counts[r, c] != 0:
            continue
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                nr, nc = r + dr, c + dc
                if 0 <= nr < height and 0 <= nc < width and not opened[nr, nc]:
                    opened[nr, nc] = True
                    queue.append((nr, nc))
    return opened


# ----------------------------------------------------------------------------- mines

PLACEMENT_CONFIGS = [
    EnvConfig(H=16, W=30, mine_count=99),
    EnvConfig(H=7, W=9, mine_count=50, guarantee_safe_neighborhood=False),
    EnvConfig(H=4, W=4, mine_count=7),  # the densest 4x4 with a cleared 3x3
    EnvConfig(H=3, W=3, mine_count=8, guarantee_safe_neighborhood=False),
    EnvConfig(H=8, W=8, density_band=(0.12, 0.20)),
]


@pytest.mark.parametrize(
    "cfg",
    PLACEMENT_CONFIGS,
    ids=lambda cfg: f"{cfg.H}x{cfg.W}x{cfg.mine_count}-{cfg.guarantee_safe_neighborhood}-{cfg.density_band}",
)
def test_exact_mine_count_and_counts_agree_with_mines(cfg):
    states = env.batch_reset(jax.random.key(3), cfg, 64)
    clicks = jax.random.randint(jax.random.key(4), (64,), 0, cfg.num_cells)
    after, *_ = step_each(states, clicks, cfg)
    mines = np.asarray(after.mine_mask)
    counts_wanted = np.asarray(states.mine_count)
    np.testing.assert_array_equal(mines.sum(axis=(1, 2)), counts_wanted)
    low, high = cfg.mine_count_range
    assert counts_wanted.min() >= low and counts_wanted.max() <= high
    if cfg.density_band is not None:
        assert counts_wanted.min() < counts_wanted.max(), "the band should vary the count"
    padded = np.pad(mines, ((0, 0), (1, 1), (1, 1))).astype(int)
    expected = sum(
        padded[:, 1 + dr : 1 + dr + cfg.H, 1 + dc : 1 + dc + cfg.W]
        for dr in (-1, 0, 1)
        for dc in (-1, 0, 1)
        if (dr, dc) != (0, 0)
    )
    np.testing.assert_array_equal(np.asarray(after.counts), expected)


def test_mines_are_uniform_over_the_allowed_cells():
    # 4x4, 3 mines, first click in a corner with its neighbourhood cleared: the other
    # 12 cells each hold a mine with probability 3/12 and every pair with 3*2/(12*11).
    cfg = EnvConfig(H=4, W=4, mine_count=3)
    games = 6000
    states = env.batch_reset(jax.random.key(7), cfg, games)
    after, *_ = step_each(states, jnp.zeros(games, jnp.int32), cfg)
    mines = np.asarray(after.mine_mask).reshape(games, -1)
    allowed = np.ones(16, bool)
    allowed[[0, 1, 4, 5]] = False
    assert not mines[:, ~allowed].any()
    frequency = mines[:, allowed].mean(axis=0)
    # binomial std at p=0.25, n=6000 is 0.0056: 5 sigma bounds, fixed seed
    np.testing.assert_allclose(frequency, 0.25, atol=0.028)
    pair = (mines[:, 2] & mines[:, 15]).mean()
    assert abs(pair - 6 / 132) < 0.014


def test_from_mines_keeps_the_layout_at_the_first_click():
    state, reward, done, _ = reveal(position(CORNER_MINE), 0, 0, CORNER)
    assert bool(done) and not bool(state.won)
    np.testing.assert_array_equal(np.asarray(state.mine_mask), mine_layout(CORNER_MINE))


def test_same_key_same_game():
    games = []
    for _ in range(2):
        state, *_ = reveal(reset(jax.random.key(42), CORNER), 1, 1, CORNER)
        games.append(np.asarray(state.mine_mask))
    np.testing.assert_array_equal(games[0], games[1])
    others = [reveal(reset(jax.random.key(seed), CORNER), 1, 1, CORNER)[0].mine_mask for seed in range(43, 47)]
    assert any(not np.array_equal(games[0], np.asarray(other)) for other in others)


# ----------------------------------------------------------------------------- reveals


def test_flood_fill_counts_new_cells_once():
    drawing = """
        # # # # #
        # # # # #
        # # # * *
        # # # * #
    """
    cfg = config_for(drawing)
    state, reward, done, info = reveal(position(drawing), 0, 0, cfg)
    expected = reference_opened(mine_layout(drawing), (0, 0))
    np.testing.assert_array_equal(np.asarray(state.revealed), expected, err_msg=env.render(state, cfg))
    assert int(info["new_revealed"]) == expected.sum() == 16
    assert not bool(done)
    assert float(reward) == pytest.approx(16 * cfg.progress_reward - cfg.step_penalty)
    # Opening the last safe cell counts only that cell, and wins.
    state, reward, done, info = reveal(state, 3, 4, cfg)
    assert int(info["new_revealed"]) == 1
    assert bool(done) and bool(state.won)
    assert float(reward) == pytest.approx(cfg.progress_reward + cfg.win_reward - cfg.step_penalty)


def test_revealing_a_number_opens_only_that_cell():
    state, _, _, info = reveal(position(CORNER_MINE), 1, 1, CORNER)
    assert int(info["new_revealed"]) == 1
    assert np.asarray(state.revealed).sum() == 1


# Two fixed board shapes (each compiles once); the layout and the click vary freely.
# The config's mine_count only matters for placement, which from_mines skips.
CASCADE_CONFIGS = {
    (9, 12): EnvConfig(H=9, W=12, mine_count=1, guarantee_safe_neighborhood=False),
    (4, 32): EnvConfig(H=4, W=32, mine_count=1, guarantee_safe_neighborhood=False),
}


@settings(max_examples=60, deadline=None)
@given(
    shape=st.sampled_from(sorted(CASCADE_CONFIGS)),
    density=st.floats(0.0, 0.35),
    seed=st.integers(0, 2**31 - 1),
)
def test_cascade_matches_a_plain_python_reference(shape, density, seed):
    cfg = CASCADE_CONFIGS[shape]
    rng = np.random.default_rng(seed)
    mines = rng.random(shape) < density
    mines[rng.integers(shape[0]), rng.integers(shape[1])] = False  # at least one safe cell
    safe = np.argwhere(~mines)
    cell = tuple(safe[rng.integers(len(safe))])
    state, _, _, info = reveal(from_mines(mines, cfg), *cell, cfg)
    expected = reference_opened(mines, cell)
    np.testing.assert_array_equal(np.asarray(state.revealed), expected, err_msg=env.render(state, cfg))
    assert int(info["new_revealed"]) == expected.sum()


# ----------------------------------------------------------------------------- endings


def test_win_and_loss_detection():
    start = position(CORNER_MINE)
    lost, reward, done, info = reveal(start, 0, 0, CORNER)
    assert bool(done) and bool(info["lost"]) and not bool(lost.won)
    assert float(reward) == pytest.approx(CORNER.loss_reward - CORNER.step_penalty)
    assert "X" in env.render(lost, CORNER)

    state = start
    for r, c in [(0, 1), (1, 0), (1, 1)]:  # the three 1s
        state, _, done, _ = reveal(state, r, c, CORNER)
        assert not bool(done)
    state, reward, done, info = reveal(state, 2, 2, CORNER)  # a zero: opens the other five
    assert bool(done) and bool(state.won) and bool(info["won"])
    assert float(reward) == pytest.approx(CORNER.win_reward + 5 * CORNER.progress_reward - CORNER.step_penalty)


def test_a_finished_game_ignores_further_actions():
    state, *_ = reveal(position(CORNER_MINE), 0, 0, CORNER)
    after, reward, done, info = reveal(state, 0, 2, CORNER)
    assert float(reward) == 0.0 and bool(done) and not bool(info["invalid"])
    chex.assert_trees_all_equal(after, state)
    assert not np.asarray(mask_of(state, CORNER)).any()


def test_max_steps_ends_the_game_as_a_loss():
    cfg = config_for(CORNER_MINE, max_steps=3)
    state = position(CORNER_MINE, cfg)
    for _ in range(3):
        state, reward, done, info = toggle_flag(state, 2, 2, cfg)
    assert bool(done) and bool(info["lost"]) and not bool(state.won)
    assert float(reward) == pytest.approx(cfg.loss_reward - cfg.step_penalty)


# ----------------------------------------------------------------------------- flags and invalid actions


def test_flag_toggles_and_shaping_nets_zero():
    cfg = config_for(CORNER_MINE, use_flag_shaping=True)
    state = position(CORNER_MINE, cfg)
    state, reward_on, _, _ = toggle_flag(state, 0, 0, cfg)
    assert bool(state.flags[0, 0])
    assert float(reward_on) == pytest.approx(cfg.flag_correct_reward - cfg.step_penalty)
    state, reward_off, _, _ = toggle_flag(state, 0, 0, cfg)
    assert not bool(state.flags[0, 0])
    assert float(reward_on + reward_off) == pytest.approx(-2 * cfg.step_penalty)
    state, reward_wrong, _, _ = toggle_flag(state, 1, 2, cfg)
    assert float(reward_wrong) == pytest.approx(cfg.flag_incorrect_reward - cfg.step_penalty)


def test_revealing_a_flagged_cell_reveals_it_and_clears_the_flag():
    state = position(
        """
        * # #
        # # #
        # # f
        """
    )
    state, _, _, info = reveal(state, 2, 2, CORNER)
    assert bool(state.revealed[2, 2]) and not np.asarray(state.flags).any()
    assert not bool(info["invalid"])


def test_invalid_action_costs_the_penalty_and_changes_nothing():
    state = position(
        """
        * # #
        # 1 #
        # # #
        """
    )
    for flag in (False, True):  # reveal / flag a revealed cell
        after, reward, done, info = step(state, env.encode_action(4, flag, CORNER), CORNER)
        assert bool(info["invalid"]) and not bool(done)
        assert float(reward) == pytest.approx(-CORNER.invalid_penalty)
        chex.assert_trees_all_equal(after.replace(step_count=state.step_count), state)


def out_of_range_actions(cfg):
    """Actions outside ``[0, 2*H*W)``: each would name a cell if read modulo ``H*W``."""
    return jnp.array([-1, -cfg.num_cells, cfg.num_actions, cfg.num_actions + 4, 2**31 - 1, -(2**31)], jnp.int32)


def assert_invalid_moves(states, after, reward, done, info, cfg):
    """Every game of a batch took an invalid move: the penalty, a step counted, nothing else moved."""
    assert np.asarray(info["invalid"]).all() and not np.asarray(done).any()
    np.testing.assert_array_equal(reward, np.full(reward.shape, -cfg.invalid_penalty, np.float32))
    np.testing.assert_array_equal(after.step_count, states.step_count + 1)
    unkey = lambda x: jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x  # noqa: E731
    chex.assert_trees_all_equal(*(jax.tree.map(unkey, s.replace(step_count=states.step_count)) for s in (after, states)))


def test_an_out_of_range_action_is_invalid_in_step_and_batch_step():
    """Issue 92: action 2*H*W flagged cell 0 and -1 revealed the last cell (placing the mines)."""
    fresh = reset(jax.random.key(0), CORNER)
    playing = position(
        """
        * # #
        # 1 #
        # # #
        """
    )
    actions = out_of_range_actions(CORNER)
    for state in (fresh, playing):
        states = stack([state] * actions.shape[0])
        assert_invalid_moves(states, *step_each(states, actions, CORNER), CORNER)
        assert_invalid_moves(states, *env.batch_step(states, actions, CORNER), CORNER)  # the adapters' batch: test_adapters.py


def test_an_out_of_range_action_is_invalid_on_a_padded_board():
    cfg = EnvConfig(H=4, W=5, boards=((3, 4, 2, 2), (4, 5, 3, 3)))  # -1 reads as cell 19: padding, then playable
    actions = jnp.tile(out_of_range_actions(cfg), 2)
    states = stack([env.reset_on_board(jax.random.key(3), cfg, board) for board in (0, 1) for _ in range(6)])
    assert_invalid_moves(states, *env.batch_step(states, actions, cfg), cfg)


def test_action_mask_is_exactly_the_valid_actions():
    state = position(
        """
        * # f
        1 1 #
        # # #
        """
    )
    mask = np.asarray(mask_of(state, CORNER))
    _, _, _, info = every_action(state, jnp.arange(CORNER.num_actions), CORNER)
    np.testing.assert_array_equal(mask, ~np.asarray(info["invalid"]), err_msg=env.render(state, CORNER))


def test_frontier_only_mask_limits_reveals_to_the_frontier():
    start = """
        # # # # #
        # # # # #
        # # # # *
        # # # * *
    """
    after_a_one = """
        # # # # #
        # # # 1 #
        # # # # *
        # # # * *
    """
    cfg = config_for(start, frontier_only_reveals=True)
    assert np.asarray(mask_of(position(start, cfg), cfg)).all(), "nothing revealed yet: every cell allowed"
    state = position(after_a_one, cfg)
    mask = np.asarray(mask_of(state, cfg))
    near = np.asarray(env.frontier(state))
    assert near.sum() == 8
    np.testing.assert_array_equal(mask[: cfg.num_cells].reshape(cfg.H, cfg.W), near)
    np.testing.assert_array_equal(mask[cfg.num_cells :], ~np.asarray(state.revealed).reshape(-1))
    relaxed = np.asarray(env.action_mask(state, cfg, frontier_only=jnp.bool_(False)))
    np.testing.assert_array_equal(relaxed[: cfg.num_cells], ~np.asarray(state.revealed).reshape(-1))


# ----------------------------------------------------------------------------- invariants under random play


def random_valid_action(key, mask):
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf))


@pytest.mark.parametrize(
    "cfg", [EnvConfig(H=5, W=6, mine_count=6), EnvConfig(H=6, W=6, mine_count=6, guarantee_safe_neighborhood=False)]
)
def test_random_play_invariants(cfg):
    """Revealed cells stay revealed, flags stay off revealed cells, counts never change
    after placement, and the mask matches the step's validity."""
    num_envs, steps = 32, 40
    states = env.batch_reset(jax.random.key(11), cfg, num_envs)
    key = jax.random.key(12)
    for _ in range(steps):
        key, sub = jax.random.split(key)
        mask = masks_of(states, cfg)
        live = ~np.asarray(states.done)
        actions = jax.vmap(random_valid_action)(jax.random.split(sub, num_envs), mask | ~live[:, None])
        after, reward, done, info = step_each(states, actions, cfg)
        before_revealed, after_revealed = np.asarray(states.revealed), np.asarray(after.revealed)
        assert (after_revealed >= before_revealed).all()
        assert not (np.asarray(after.flags) & after_revealed).any()
        placed = np.asarray(states.first_click_done)
        np.testing.assert_array_equal(np.asarray(after.counts)[placed], np.asarray(states.counts)[placed])
        assert not np.asarray(info["invalid"])[live].any()
        states = after
    assert np.asarray(states.done).any()


def test_batch_step_restarts_finished_boards():
    drawing = """
        * # #
        # # #
    """
    cfg = config_for(drawing)
    states = stack([position(drawing, cfg)] * 2)
    actions = jnp.array([0, 5], jnp.int32)  # board 0 hits the mine; board 1 opens a zero region
    after, reward, done, info = env.batch_step(states, actions, cfg)
    np.testing.assert_array_equal(np.asarray(done), [True, False])
    assert bool(info["lost"][0]) and not bool(info["lost"][1])
    assert not bool(after.first_click_done[0]) and not np.asarray(after.revealed[0]).any()
    assert bool(after.revealed[1, 1, 2]) and int(after.step_count[1]) == 1
    assert not np.asarray(after.done).any()


def test_batch_step_equals_vmapped_step_before_reset():
    cfg = EnvConfig(H=5, W=6, mine_count=6)  # as in test_random_play_invariants: compiled
    states = env.batch_reset(jax.random.key(21), cfg, 32)
    actions = jax.random.randint(jax.random.key(22), (32,), 0, cfg.num_actions)
    batched = env.batch_step(states, actions, cfg)
    vmapped = step_each(states, actions, cfg)
    assert not np.asarray(vmapped[2]).any(), "a game finished: the reset would differ"
    chex.assert_trees_all_equal(batched, vmapped)


def test_random_first_clicks_open_every_new_game_at_a_uniformly_random_cell():
    cfg = EnvConfig(H=5, W=5, mine_count=10)  # dense: no first click wins at once
    states = env.batch_reset(jax.random.key(3), cfg, 512)
    keys = jax.random.split(jax.random.key(4), 512)
    opened = env.batch_random_first_clicks(states, keys, 1.0, cfg)
    assert bool(opened.first_click_done.all()) and not bool(opened.done.any())
    # every cell is some game's first click (a random cell, not one fixed opening)
    first_click = np.asarray(opened.revealed).reshape(512, -1).sum(axis=0)
    assert (first_click > 0).all()


def test_random_first_clicks_leave_started_games_and_the_other_share_untouched():
    cfg = EnvConfig(H=5, W=5, mine_count=10)  # dense: no first click wins at once
    states = env.batch_reset(jax.random.key(5), cfg, 512)
    started = env.batch_step(states, jnp.full(512, 5, jnp.int32), cfg)[0]
    keys = jax.random.split(jax.random.key(6), 512)
    chex.assert_trees_all_equal(env.batch_random_first_clicks(started, keys, 1.0, cfg), started)
    chex.assert_trees_all_equal(env.batch_random_first_clicks(states, keys, 0.0, cfg), states)
    half = float(env.batch_random_first_clicks(states, keys, 0.5, cfg).first_click_done.mean())
    assert 0.4 < half < 0.6


def test_step_compiles_once_per_config():
    cfg = EnvConfig(H=4, W=4, mine_count=2)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(states, actions):
        return env.batch_step(states, actions, EnvConfig(H=4, W=4, mine_count=2))

    states = env.batch_reset(jax.random.key(0), cfg, 8)
    for i in range(3):
        actions = jax.random.randint(jax.random.key(i), (8,), 0, cfg.num_actions)
        states, *_ = run(states, actions)
    chex.clear_trace_counter()


# ----------------------------------------------------------------------------- views


def test_observation_channels():
    drawing = """
        F # # *
        1 1 1 1
        . . . .
    """
    cfg = config_for(drawing, obs_frontier=True, obs_scalars=True)
    state = position(drawing, cfg)
    obs = np.asarray(observe(state, cfg))
    chex.assert_shape(obs, (env.num_channels(cfg), cfg.H, cfg.W))
    assert env.num_channels(cfg) == 14
    revealed = np.asarray(state.revealed)
    np.testing.assert_array_equal(obs[0], revealed)
    np.testing.assert_array_equal(obs[1], np.asarray(state.flags))
    np.testing.assert_array_equal(obs[2:11].sum(axis=0), revealed)  # one-hot where revealed
    np.testing.assert_array_equal(obs[2:11].argmax(axis=0)[revealed], np.asarray(state.counts)[revealed])
    np.testing.assert_array_equal(obs[11], np.asarray(env.frontier(state)))
    np.testing.assert_allclose(obs[12], 0.5)  # two mines, one flag
    np.testing.assert_allclose(obs[13], 8 / 10)  # 8 of 10 safe cells revealed
    assert env.num_channels(EnvConfig()) == 11


def test_count_channels():
    drawing = """
        F # # *
        1 1 1 1
        . . . .
    """
    cfg = config_for(drawing, obs_counts=True)
    state = position(drawing, cfg)
    obs = np.asarray(observe(state, cfg))
    assert env.num_channels(cfg) == 13
    chex.assert_shape(obs, (13, 3, 4))
    number = np.array([[0, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]]) / 8
    hidden_neighbours = np.array([[1, 2, 2, 1], [2, 3, 3, 2], [0, 0, 0, 0]]) / 8
    np.testing.assert_allclose(obs[11], number)
    np.testing.assert_allclose(obs[12], hidden_neighbours)
    numpy_env = NumpyMinesweeper.from_mines(np.asarray(state.mine_mask)[None], cfg, auto_reset=False)
    numpy_env.revealed[:], numpy_env.flags[:] = np.asarray(state.revealed), np.asarray(state.flags)
    np.testing.assert_allclose(numpy_env.observe()[0], obs)  # the NumPy env's planes are the same


def test_count_channels_leave_the_padding_out():
    cfg = EnvConfig(H=4, W=5, boards=((3, 4, 2, 2),), obs_counts=True)
    state = env.reset(jax.random.key(0), cfg)
    hidden_neighbours = np.asarray(observe(state, cfg))[12] * 8
    expected = np.zeros((4, 5))
    expected[:3, :4] = [[3, 5, 5, 3], [5, 8, 8, 5], [3, 5, 5, 3]]  # a fresh 3x4 board
    np.testing.assert_allclose(hidden_neighbours, expected)


def test_with_observation_of_takes_the_channels_only():
    board = EnvConfig(H=16, W=16, mine_count=40)
    seen = env.with_observation_of(board, EnvConfig(obs_counts=True, obs_frontier=True))
    assert (seen.H, seen.W, seen.mine_count) == (16, 16, 40)
    assert env.num_channels(seen) == 14
    assert env.with_observation_of(seen, EnvConfig()) == board


def test_render_shows_numbers_flags_and_mines_after_the_end():
    drawing = """
        * 1 .
        f 1 .
    """
    cfg = config_for(drawing)
    state = position(drawing, cfg)
    assert env.render(state, cfg).splitlines()[:2] == ["# 1 .", "F 1 ."]
    state, *_ = reveal(state, 0, 0, cfg)
    assert env.render(state, cfg).splitlines()[:2] == ["X 1 .", "x 1 ."]


# ----------------------------------------------------------------------------- actions and boards


def test_actions_encode_and_decode_both_ways():
    cfg = EnvConfig(H=3, W=4, mine_count=1)
    assert env.decode_action(5, cfg) == (5, False) and env.decode_action(12 + 5, cfg) == (5, True)
    assert env.encode_action(5, False, cfg) == 5 and env.encode_action(5, True, cfg) == 17
    actions = jnp.arange(cfg.num_actions)
    cells, is_flag = env.decode_action(actions, cfg)
    np.testing.assert_array_equal(env.encode_action(cells, is_flag, cfg), actions)
    assert env.move_limit(cfg) == env.MOVES_PER_CELL * 12
    assert env.move_limit(EnvConfig(H=3, W=4, mine_count=1, max_steps=7)) == 7


@pytest.mark.parametrize(
    "text, board",
    [("expert", (16, 30, 99)), (" Beginner ", (8, 8, 10)), ("9x9x10", (9, 9, 10))],
)
def test_parse_board_reads_names_and_sizes(text, board):
    assert env.parse_board(text) == board


def test_parse_board_names_the_choices_on_a_bad_board():
    with pytest.raises(ValueError, match="beginner, intermediate, expert or HxWxM"):
        env.parse_board("huge")


# ----------------------------------------------------------------------------- configs


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(H=8, W=8, mine_count=60), "mine_count"),
        (dict(H=8, W=8, mine_count=0), "mine_count"),
        (dict(H=0), "H"),
        (dict(W=33), "W"),
        (dict(max_steps=-1), "max_steps"),
        (dict(density_band=(0.3, 0.1)), "density_band"),
        (dict(H=4, W=4, density_band=(0.1, 0.9)), "density_band"),
        (dict(H=8.0), "H"),
    ],
)
def test_invalid_configs_raise_clear_errors(kwargs, field):
    with pytest.raises(ValueError, match=field):
        EnvConfig(**kwargs)


def test_mine_count_error_names_the_allowed_range():
    with pytest.raises(ValueError, match=r"allowed range is \[1, 55\]"):
        EnvConfig(H=8, W=8, mine_count=56)
    assert EnvConfig(H=8, W=8, mine_count=63, guarantee_safe_neighborhood=False).mine_count == 63


@pytest.mark.parametrize("opening", [True, False])
def test_before_the_first_click_the_rules_make_every_cell_safe_to_reveal(opening):
    cfg = EnvConfig(H=5, W=5, mine_count=4, guarantee_safe_neighborhood=opening)
    state = env.reset(jax.random.key(0), cfg)
    assert bool(env.known_safe(state).all())
    estimate = jnp.full((5, 5), 0.16)
    np.testing.assert_array_equal(env.with_rule_certainties(estimate, state), np.zeros((5, 5)))
    state, *_ = env.step(state, 12, cfg)  # after it, only the revealed cells are
    np.testing.assert_array_equal(env.known_safe(state), state.revealed)
    after = env.with_rule_certainties(estimate, state)
    assert float(after[~state.revealed].min()) == pytest.approx(0.16)

"""The game's rules, on hand-drawn boards and on many random ones."""

from collections import deque

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msjax import env
from msjax.env import EnvConfig

BEGINNER = EnvConfig()
step_jit = jax.jit(env.step, static_argnums=2)
reset_jit = jax.jit(env.reset, static_argnums=1)


def board(text: str) -> np.ndarray:
    """A mine layout drawn as text: ``*`` a mine, ``.`` a safe cell."""
    rows = [line.split() for line in text.strip().splitlines()]
    return np.array([[cell == "*" for cell in row] for row in rows])


def config_for(mines: np.ndarray, **kwargs) -> EnvConfig:
    height, width = mines.shape
    kwargs.setdefault("guarantee_safe_neighborhood", False)  # the layout is fixed anyway
    return EnvConfig(H=height, W=width, mine_count=max(int(mines.sum()), 1), **kwargs)


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


def reveal(state, row, col, cfg):
    return step_jit(state, jnp.int32(row * cfg.W + col), cfg)


def toggle_flag(state, row, col, cfg):
    return step_jit(state, jnp.int32(cfg.num_cells + row * cfg.W + col), cfg)


# ----------------------------------------------------------------------------- mines


@pytest.mark.parametrize("safe_neighbourhood", [True, False])
def test_first_click_never_hits_a_mine(safe_neighbourhood):
    cfg = EnvConfig(H=6, W=7, mine_count=20, guarantee_safe_neighborhood=safe_neighbourhood)
    keys = jax.random.split(jax.random.key(0), 300)
    clicks = jax.random.randint(jax.random.key(1), (300,), 0, cfg.num_cells)
    states = jax.vmap(env.reset, in_axes=(0, None))(keys, cfg)
    after, _, _, info = jax.vmap(env.step, in_axes=(0, 0, None))(states, clicks, cfg)
    rows, cols = np.divmod(np.asarray(clicks), cfg.W)
    mines = np.asarray(after.mine_mask)
    for i, (r, c) in enumerate(zip(rows, cols)):
        if safe_neighbourhood:
            assert not mines[i, max(r - 1, 0) : r + 2, max(c - 1, 0) : c + 2].any()
        else:
            assert not mines[i, r, c]
    assert not np.asarray(info["lost"]).any()


@pytest.mark.parametrize(
    "cfg",
    [
        EnvConfig(),
        EnvConfig(H=16, W=16, mine_count=40),
        EnvConfig(H=16, W=30, mine_count=99),
        EnvConfig(H=16, W=30, mine_count=99, guarantee_safe_neighborhood=False),
        EnvConfig(H=4, W=4, mine_count=7),  # the densest 4x4 with a cleared 3x3
        EnvConfig(H=3, W=3, mine_count=8, guarantee_safe_neighborhood=False),
        EnvConfig(H=8, W=8, density_band=(0.12, 0.20)),
    ],
    ids=lambda cfg: f"{cfg.H}x{cfg.W}x{cfg.mine_count}-{cfg.guarantee_safe_neighborhood}-{cfg.density_band}",
)
def test_exact_mine_count_and_counts_agree_with_mines(cfg):
    states = env.batch_reset(jax.random.key(3), cfg, 64)
    clicks = jax.random.randint(jax.random.key(4), (64,), 0, cfg.num_cells)
    after, *_ = jax.vmap(env.step, in_axes=(0, 0, None))(states, clicks, cfg)
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
    after, *_ = jax.vmap(env.step, in_axes=(0, None, None))(states, jnp.int32(0), cfg)
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
    mines = board(
        """
        * . . .
        . . . .
        . . . *
        """
    )
    cfg = config_for(mines)
    state, reward, done, _ = reveal(env.from_mines(mines, cfg), 0, 0, cfg)
    assert bool(done) and not bool(state.won)
    np.testing.assert_array_equal(np.asarray(state.mine_mask), mines)


def test_same_key_same_game():
    cfg = EnvConfig(H=9, W=9, mine_count=10)
    games = []
    for _ in range(2):
        state = reset_jit(jax.random.key(42), cfg)
        state, *_ = reveal(state, 4, 4, cfg)
        games.append(np.asarray(state.mine_mask))
    np.testing.assert_array_equal(games[0], games[1])
    other, *_ = reveal(reset_jit(jax.random.key(43), cfg), 4, 4, cfg)
    assert not np.array_equal(games[0], np.asarray(other.mine_mask))


# ----------------------------------------------------------------------------- reveals


def test_flood_fill_counts_new_cells_once():
    mines = board(
        """
        . . . . .
        . . . . .
        . . . * *
        . . . * .
        """
    )
    cfg = config_for(mines, progress_reward=1.0, step_penalty=0.0, win_reward=100.0)
    state = env.from_mines(mines, cfg)
    state, reward, done, info = reveal(state, 0, 0, cfg)
    expected = reference_opened(mines, (0, 0))
    np.testing.assert_array_equal(np.asarray(state.revealed), expected, err_msg=env.render(state, cfg))
    assert int(info["new_revealed"]) == expected.sum() == 16
    assert not bool(done)
    # Opening the last safe cell counts only that cell, and wins.
    state, reward, done, info = reveal(state, 3, 4, cfg)
    assert int(info["new_revealed"]) == 1
    assert bool(done) and bool(state.won)
    assert float(reward) == pytest.approx(1.0 + 100.0)


def test_revealing_a_number_opens_only_that_cell():
    mines = board(
        """
        * . .
        . . .
        . . *
        """
    )
    cfg = config_for(mines)
    state, _, _, info = reveal(env.from_mines(mines, cfg), 1, 1, cfg)
    assert int(info["new_revealed"]) == 1
    assert np.asarray(state.revealed).sum() == 1


# Two fixed board shapes (each compiles once); the layout and the click vary freely.
# The config's mine_count only matters for placement, which from_mines skips.
CASCADE_CONFIGS = {
    (9, 12): EnvConfig(H=9, W=12, mine_count=1, guarantee_safe_neighborhood=False),
    (4, 32): EnvConfig(H=4, W=32, mine_count=1, guarantee_safe_neighborhood=False),
}


@settings(max_examples=80, deadline=None)
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
    state, _, _, info = reveal(env.from_mines(mines, cfg), *cell, cfg)
    expected = reference_opened(mines, cell)
    np.testing.assert_array_equal(np.asarray(state.revealed), expected, err_msg=env.render(state, cfg))
    assert int(info["new_revealed"]) == expected.sum()


# ----------------------------------------------------------------------------- endings


def test_win_and_loss_detection():
    mines = board(
        """
        * . .
        . . .
        . . .
        """
    )
    cfg = config_for(mines, win_reward=1.0, loss_reward=-1.0)
    start = env.from_mines(mines, cfg)
    lost, reward, done, info = reveal(start, 0, 0, cfg)
    assert bool(done) and bool(info["lost"]) and not bool(lost.won)
    assert float(reward) == pytest.approx(-1.0 - cfg.step_penalty)
    assert "X" in env.render(lost, cfg)

    state = start
    for r, c in [(0, 1), (1, 0), (1, 1)]:  # the three 1s
        state, _, done, _ = reveal(state, r, c, cfg)
        assert not bool(done)
    state, reward, done, info = reveal(state, 2, 2, cfg)  # a zero: opens the other five
    assert bool(done) and bool(state.won) and bool(info["won"])
    assert float(reward) == pytest.approx(1.0 + 5 * cfg.progress_reward - cfg.step_penalty)


def test_a_finished_game_ignores_further_actions():
    mines = board("* . .")
    cfg = config_for(mines)
    state, *_ = reveal(env.from_mines(mines, cfg), 0, 0, cfg)
    after, reward, done, info = reveal(state, 0, 2, cfg)
    assert float(reward) == 0.0 and bool(done) and not bool(info["invalid"])
    chex.assert_trees_all_equal(after, state)
    assert not np.asarray(env.action_mask(state, cfg)).any()


def test_max_steps_ends_the_game_as_a_loss():
    mines = board("* . . .")
    cfg = config_for(mines, max_steps=3, step_penalty=0.0)
    state = env.from_mines(mines, cfg)
    for i in range(3):
        state, reward, done, info = toggle_flag(state, 0, 3, cfg)
    assert bool(done) and bool(info["lost"]) and not bool(state.won)
    assert float(reward) == pytest.approx(cfg.loss_reward)


# ----------------------------------------------------------------------------- flags and invalid actions


def test_flag_toggles_and_shaping_nets_zero():
    mines = board(
        """
        * . .
        . . .
        """
    )
    cfg = config_for(mines, use_flag_shaping=True, step_penalty=0.0)
    state = env.from_mines(mines, cfg)
    state, reward_on, _, _ = toggle_flag(state, 0, 0, cfg)
    assert bool(state.flags[0, 0]) and float(reward_on) == pytest.approx(cfg.flag_correct_reward)
    state, reward_off, _, _ = toggle_flag(state, 0, 0, cfg)
    assert not bool(state.flags[0, 0]) and float(reward_on + reward_off) == pytest.approx(0.0)
    state, reward_wrong, _, _ = toggle_flag(state, 1, 2, cfg)
    assert float(reward_wrong) == pytest.approx(cfg.flag_incorrect_reward)


def test_revealing_a_flagged_cell_reveals_it_and_clears_the_flag():
    mines = board(
        """
        * . .
        . . .
        . . .
        """
    )
    cfg = config_for(mines)
    state, *_ = toggle_flag(env.from_mines(mines, cfg), 2, 2, cfg)
    state, _, _, info = reveal(state, 2, 2, cfg)
    assert bool(state.revealed[2, 2]) and not np.asarray(state.flags).any()
    assert not bool(info["invalid"])


def test_invalid_action_costs_the_penalty_and_changes_nothing():
    mines = board(
        """
        * . . .
        . . . .
        """
    )
    cfg = config_for(mines)
    state, *_ = reveal(env.from_mines(mines, cfg), 1, 1, cfg)
    for action in (1 * cfg.W + 1, cfg.num_cells + 1 * cfg.W + 1):  # reveal / flag a revealed cell
        after, reward, done, info = step_jit(state, jnp.int32(action), cfg)
        assert bool(info["invalid"]) and not bool(done)
        assert float(reward) == pytest.approx(-cfg.invalid_penalty)
        chex.assert_trees_all_equal(after.replace(step_count=state.step_count), state)


def test_action_mask_is_exactly_the_valid_actions():
    cfg = EnvConfig(H=5, W=5, mine_count=4)
    state = env.reset(jax.random.key(5), cfg)
    state, *_ = reveal(state, 2, 2, cfg)
    state, *_ = toggle_flag(state, 0, 4, cfg) if not bool(state.revealed[0, 4]) else (state,)
    mask = np.asarray(env.action_mask(state, cfg))
    actions = jnp.arange(cfg.num_actions)
    _, _, _, info = jax.vmap(env.step, in_axes=(None, 0, None))(state, actions, cfg)
    np.testing.assert_array_equal(mask, ~np.asarray(info["invalid"]), err_msg=env.render(state, cfg))


def test_frontier_only_mask_limits_reveals_to_the_frontier():
    mines = board(
        """
        . . . . .
        . . . . .
        . . . . *
        . . . * *
        """
    )
    cfg = config_for(mines, frontier_only_reveals=True)
    start = env.from_mines(mines, cfg)
    assert np.asarray(env.action_mask(start, cfg)).all(), "nothing revealed yet: every cell allowed"
    state, *_ = reveal(start, 1, 3, cfg)  # a 1: opens only itself
    mask = np.asarray(env.action_mask(state, cfg))
    assert np.asarray(env.frontier(state)).sum() == 8
    reveals = mask[: cfg.num_cells].reshape(cfg.H, cfg.W)
    np.testing.assert_array_equal(reveals, np.asarray(env.frontier(state)))
    np.testing.assert_array_equal(mask[cfg.num_cells :], ~np.asarray(state.revealed).reshape(-1))
    relaxed = np.asarray(env.action_mask(state, cfg, frontier_only=jnp.bool_(False)))
    np.testing.assert_array_equal(relaxed[: cfg.num_cells], ~np.asarray(state.revealed).reshape(-1))


# ----------------------------------------------------------------------------- invariants under random play


def random_valid_action(key, mask):
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf))


@pytest.mark.parametrize("cfg", [EnvConfig(H=5, W=6, mine_count=6), EnvConfig(H=8, W=8, mine_count=10, guarantee_safe_neighborhood=False)])
def test_random_play_invariants(cfg):
    """Revealed cells stay revealed, flags stay off revealed cells, counts never change
    after placement, and the mask matches the step's validity."""
    num_envs, steps = 32, 40
    states = env.batch_reset(jax.random.key(11), cfg, num_envs)
    vmapped_step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, None)), static_argnums=2)
    mask_fn = jax.jit(jax.vmap(env.action_mask, in_axes=(0, None)), static_argnums=1)
    key = jax.random.key(12)
    for _ in range(steps):
        key, sub = jax.random.split(key)
        mask = mask_fn(states, cfg)
        live = ~np.asarray(states.done)
        actions = jax.vmap(random_valid_action)(jax.random.split(sub, num_envs), mask | ~live[:, None])
        after, reward, done, info = vmapped_step(states, actions, cfg)
        before_revealed, after_revealed = np.asarray(states.revealed), np.asarray(after.revealed)
        assert (after_revealed >= before_revealed).all()
        assert not (np.asarray(after.flags) & after_revealed).any()
        placed = np.asarray(states.first_click_done)
        np.testing.assert_array_equal(np.asarray(after.counts)[placed], np.asarray(states.counts)[placed])
        assert not np.asarray(info["invalid"])[live].any()
        states = after
    assert np.asarray(states.done).any()


def test_batch_step_restarts_finished_boards():
    mines = board(
        """
        * . .
        . . .
        """
    )
    cfg = config_for(mines)
    states = jax.tree.map(lambda x: jnp.stack([x, x]), env.from_mines(mines, cfg))
    actions = jnp.array([0, 5], jnp.int32)  # board 0 hits the mine; board 1 opens a number
    after, reward, done, info = env.batch_step(states, actions, cfg)
    np.testing.assert_array_equal(np.asarray(done), [True, False])
    assert bool(info["lost"][0]) and not bool(info["lost"][1])
    assert not bool(after.first_click_done[0]) and not np.asarray(after.revealed[0]).any()
    assert bool(after.revealed[1, 1, 2]) and int(after.step_count[1]) == 1
    assert not np.asarray(after.done).any()


def test_batch_step_equals_vmapped_step_before_reset():
    cfg = EnvConfig(H=6, W=6, mine_count=5)
    states = env.batch_reset(jax.random.key(21), cfg, 16)
    actions = jax.random.randint(jax.random.key(22), (16,), 0, cfg.num_actions)
    batched = env.batch_step(states, actions, cfg)
    vmapped = jax.vmap(env.step, in_axes=(0, 0, None))(states, actions, cfg)
    chex.assert_trees_all_equal(batched[1:], vmapped[1:])
    # nobody finished on a first click with a cleared neighbourhood, so no reset happened
    chex.assert_trees_all_equal(batched[0], vmapped[0])


def test_step_compiles_once_per_config():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(states, actions):
        return env.batch_step(states, actions, EnvConfig(H=4, W=4, mine_count=2))

    cfg = EnvConfig(H=4, W=4, mine_count=2)
    states = env.batch_reset(jax.random.key(0), cfg, 8)
    for i in range(3):
        actions = jax.random.randint(jax.random.key(i), (8,), 0, cfg.num_actions)
        states, *_ = run(states, actions)
    chex.clear_trace_counter()


# ----------------------------------------------------------------------------- views


def test_observation_channels():
    mines = board(
        """
        * . . *
        . . . .
        . . . .
        """
    )
    cfg = config_for(mines, obs_frontier=True, obs_scalars=True)
    state, *_ = reveal(env.from_mines(mines, cfg), 2, 1, cfg)  # opens rows 1 and 2
    state, *_ = toggle_flag(state, 0, 0, cfg)
    obs = np.asarray(env.observe(state, cfg))
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


def test_render_shows_numbers_flags_and_mines_after_the_end():
    mines = board(
        """
        * . .
        . . .
        """
    )
    cfg = config_for(mines)
    state, *_ = reveal(env.from_mines(mines, cfg), 1, 2, cfg)
    state, *_ = toggle_flag(state, 1, 0, cfg)
    assert env.render(state, cfg).splitlines()[:2] == ["# 1 .", "F 1 ."]
    state, *_ = reveal(state, 0, 0, cfg)
    assert env.render(state, cfg).splitlines()[:2] == ["X 1 .", "x 1 ."]


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

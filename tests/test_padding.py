"""Board mixes: boards of several sizes padded to one ``H x W`` array (``EnvConfig.boards``).

The specification: a game on a padded board is the game on the unpadded board (same mines,
same moves, same rewards and outcome), padded cells are never revealed and never legal, and
the board of each new game follows the traced board weights.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from drawings import mine_layout
from hypothesis import given, settings
from hypothesis import strategies as st

from msjax import env
from msjax.env import EnvConfig

H, W = 6, 7
BOARDS = ((4, 5, 3, 3), (6, 7, 8, 8), (3, 7, 4, 4))  # padded on both sides, not at all, below
PADDED = EnvConfig(H=H, W=W, boards=BOARDS)


def unpadded(board: int) -> EnvConfig:
    rows, cols, fewest, _ = BOARDS[board]
    return EnvConfig(H=rows, W=cols, mine_count=fewest)


def padded_action(row: int, col: int, flag: bool) -> int:
    return int(flag) * H * W + row * W + col


def unpadded_action(row: int, col: int, flag: bool, board: int) -> int:
    rows, cols = BOARDS[board][:2]
    return int(flag) * rows * cols + row * cols + col


MOVES = 12
from_mines = jax.jit(env.from_mines, static_argnums=1)


@functools.partial(jax.jit, static_argnums=2)
def play(state, actions, cfg):
    """Steps one board through ``actions`` (int32[T]); returns the per-step outputs."""

    def one(state, action):
        state, reward, done, info = env.step(state, action, cfg)
        return state, (reward, done, info, state.revealed, state.flags)

    return jax.lax.scan(one, state, actions)


def assert_same_game(padded_out, plain_out, rows, cols):
    reward_p, done_p, info_p, revealed_p, flags_p = padded_out
    reward_u, done_u, info_u, revealed_u, flags_u = plain_out
    np.testing.assert_array_equal(reward_p, reward_u)
    np.testing.assert_array_equal(done_p, done_u)
    for name in info_u:
        np.testing.assert_array_equal(info_p[name], info_u[name], err_msg=name)
    np.testing.assert_array_equal(revealed_p[:, :rows, :cols], revealed_u)
    np.testing.assert_array_equal(flags_p[:, :rows, :cols], flags_u)
    outside = np.ones((H, W), bool)
    outside[:rows, :cols] = False
    assert not np.asarray(revealed_p)[:, outside].any(), "a padded cell was revealed"
    assert not np.asarray(flags_p)[:, outside].any(), "a padded cell was flagged"


@st.composite
def games(draw):
    board = draw(st.integers(0, len(BOARDS) - 1))
    rows, cols = BOARDS[board][:2]
    mines = draw(st.lists(st.booleans(), min_size=rows * cols, max_size=rows * cols))
    mines = np.array(mines).reshape(rows, cols)
    # Sparse boards too, so that cascades run to the playable edge.
    if draw(st.booleans()):
        mines &= np.arange(rows * cols).reshape(rows, cols) % draw(st.integers(3, 9)) == 0
    moves = draw(
        st.lists(
            st.tuples(st.integers(0, rows - 1), st.integers(0, cols - 1), st.booleans()),
            min_size=MOVES,
            max_size=MOVES,
        )
    )
    return board, mines, moves


@settings(max_examples=25, deadline=None)
@given(games())
def test_padded_game_equals_the_unpadded_game(game):
    board, mines, moves = game
    rows, cols = mines.shape
    padded_mines = np.zeros((H, W), bool)
    padded_mines[:rows, :cols] = mines
    state_p = from_mines(padded_mines, PADDED, board=jnp.int32(board))
    state_u = from_mines(mines, unpadded(board))
    actions_p = jnp.array([padded_action(r, c, f) for r, c, f in moves], jnp.int32)
    actions_u = jnp.array([unpadded_action(r, c, f, board) for r, c, f in moves], jnp.int32)
    _, out_p = play(state_p, actions_p, PADDED)
    _, out_u = play(state_u, actions_u, unpadded(board))
    assert_same_game(out_p, out_u, rows, cols)


def moves(*actions: int) -> jnp.ndarray:
    """int32[MOVES]: ``actions`` then repeats of the last one, so that every call of
    ``play`` has one shape (one compile per config)."""
    return jnp.array(list(actions) + [actions[-1]] * (MOVES - len(actions)), jnp.int32)


def test_cascade_stops_at_the_playable_edge():
    # One mine on the 4x5 board: the first click opens every other playable cell and wins.
    mines = mine_layout(
        """
        # # # # # # #
        # # # # # # #
        # # # # # # #
        # # # # * # #
        # # # # # # #
        # # # # # # #
        """
    )
    state = from_mines(mines, PADDED, board=jnp.int32(0))
    _, (reward, done, info, revealed, _) = play(state, moves(padded_action(0, 0, False)), PADDED)
    expected = np.zeros((H, W), bool)
    expected[:4, :5] = True
    expected[3, 4] = False  # the only mine
    np.testing.assert_array_equal(revealed[0], expected)
    assert bool(done[0]) and bool(info["won"][0])
    assert int(info["new_revealed"][0]) == 19


@pytest.mark.parametrize("board", range(len(BOARDS)))
def test_random_games_equal_with_the_same_key(board):
    """Same key: same mine count and, at the same first click, the same mines."""
    rows, cols = BOARDS[board][:2]
    cfg = unpadded(board)
    for seed in range(3):
        key = jax.random.key(seed)
        first = (seed % rows, (2 * seed) % cols)
        state_p, out_p = play(env.reset_on_board(key, PADDED, board), moves(padded_action(*first, False)), PADDED)
        state_u, out_u = play(env.reset(key, cfg), moves(unpadded_action(*first, False, board)), cfg)
        np.testing.assert_array_equal(state_p.mine_mask[:rows, :cols], state_u.mine_mask)
        assert not np.asarray(state_p.mine_mask)[rows:].any()
        assert not np.asarray(state_p.mine_mask)[:, cols:].any()
        revealed_p, revealed_u = out_p[3], out_u[3]  # per step; the first click is step 0
        np.testing.assert_array_equal(revealed_p[0, :rows, :cols], revealed_u[0])


def test_density_bands_draw_the_unpadded_mine_counts():
    boards = (env.board_spec(4, 5, density_band=(0.1, 0.3)), env.board_spec(6, 7, density_band=(0.1, 0.2)))
    cfg = EnvConfig(H=H, W=W, boards=boards)
    plain = EnvConfig(H=4, W=5, density_band=(0.1, 0.3))
    keys = jax.random.split(jax.random.key(1), 64)
    counts_p = jax.vmap(lambda k: env.reset_on_board(k, cfg, 0).mine_count)(keys)
    counts_u = jax.vmap(lambda k: env.reset(k, plain).mine_count)(keys)
    np.testing.assert_array_equal(counts_p, counts_u)
    assert set(np.asarray(counts_p).tolist()) <= set(range(2, 7))


@jax.jit
def random_legal_play(states, key):
    """30 steps of random legal actions (auto-reset on); per step, whether any legal
    action or any revealed cell lay on a padded cell."""

    def one(states, key):
        legal = jax.vmap(env.action_mask, in_axes=(0, None))(states, PADDED)
        outside = ~jax.vmap(env.playable, in_axes=(0, None))(states, PADDED)
        legal_outside = jnp.any(legal.reshape(-1, 2, H, W) & outside[:, None])
        actions = jax.random.categorical(key, jnp.where(legal, 0.0, -jnp.inf)).astype(jnp.int32)
        states, _, _, _ = env.batch_step(states, actions, PADDED)
        outside = ~jax.vmap(env.playable, in_axes=(0, None))(states, PADDED)
        return states, (legal_outside, jnp.any(states.revealed & outside))

    return jax.lax.scan(one, states, jax.random.split(key, 30))[1]


UNIFORM = jnp.full(len(BOARDS), 1.0 / len(BOARDS))


def test_no_action_on_a_padded_cell_is_ever_legal():
    states = env.batch_reset(jax.random.key(0), PADDED, 64, UNIFORM)
    legal_outside, revealed_outside = random_legal_play(states, jax.random.key(1))
    assert not np.asarray(legal_outside).any()
    assert not np.asarray(revealed_outside).any()


def test_an_action_on_a_padded_cell_is_invalid_and_changes_nothing():
    mines = mine_layout(
        """
        * # # # # # #
        # * # # # # #
        # # * # # # #
        # # # * # # #
        # # # # # # #
        # # # # # # #
        """
    )
    state = from_mines(mines, PADDED, board=jnp.int32(0))
    actions = (padded_action(5, 6, False), padded_action(0, 6, True), padded_action(4, 0, False))
    _, (reward, done, info, revealed, flags) = play(state, moves(*actions), PADDED)
    assert np.asarray(info["invalid"]).all() and not np.asarray(done).any()
    np.testing.assert_allclose(reward, -PADDED.invalid_penalty)
    assert not np.asarray(revealed).any() and not np.asarray(flags).any()


def test_board_weights_choose_the_boards_of_new_games():
    one_hot = jnp.array([0.0, 0.0, 1.0])
    states = env.batch_reset(jax.random.key(0), PADDED, 64, one_hot)
    assert (np.asarray(states.board) == 2).all()
    states = env.batch_reset(jax.random.key(1), PADDED, 64, jnp.array([0.75, 0.0, 0.25]))
    share = np.bincount(np.asarray(states.board), minlength=3) / 64
    np.testing.assert_allclose(share, [0.75, 0, 0.25], atol=0.15)
    # Auto-reset: every board reveals its mine and loses; each new game is dealt by the
    # weights given to batch_step.
    mines = np.zeros((H, W), bool)
    mines[0, 0] = True
    lost_next = from_mines(mines, PADDED, board=jnp.int32(0))
    placed = jax.tree.map(lambda x: jnp.broadcast_to(x, (64,) + x.shape), lost_next)
    placed = placed.replace(key=jax.random.split(jax.random.key(2), 64))
    fresh, _, done, info = env.batch_step(placed, jnp.zeros(64, jnp.int32), PADDED, one_hot)
    assert np.asarray(done).all() and np.asarray(info["lost"]).all()
    assert (np.asarray(fresh.board) == 2).all() and not np.asarray(fresh.first_click_done).any()


def test_observation_marks_the_playable_cells():
    state = env.reset_on_board(jax.random.key(0), PADDED, 0)
    obs = env.observe(state, PADDED)
    assert obs.shape == (env.num_channels(PADDED), H, W)
    expected = np.zeros((H, W), np.float32)
    expected[:4, :5] = 1.0
    np.testing.assert_array_equal(obs[-1], expected)
    assert env.num_channels(PADDED) == env.num_channels(EnvConfig()) + 1


def test_unpadded_configs_are_unchanged():
    cfg = EnvConfig()
    state = env.reset(jax.random.key(0), cfg)
    assert state.board is None
    assert env.num_channels(cfg) == env.NUM_BASE_CHANNELS
    assert not cfg.padded and PADDED.padded


@pytest.mark.parametrize(
    "boards, match",
    [
        (((7, 5, 2, 2),), r"boards\[0\].*rows must be in \[1, H=6\]"),
        (((4, 8, 2, 2),), r"cols in \[1, W=7\]"),
        (((4, 5, 0, 2),), r"1 <= fewest <= most <= 11"),
        (((4, 5, 3, 12),), r"most <= 11 on a 4x5 board"),
        (((4, 5, 3),), r"four ints"),
    ],
)
def test_bad_boards_raise_naming_the_field(boards, match):
    with pytest.raises(ValueError, match=match):
        EnvConfig(H=H, W=W, boards=boards)


def test_boards_and_a_density_band_exclude_each_other():
    with pytest.raises(ValueError, match="density_band.*must be None when boards is set"):
        EnvConfig(H=H, W=W, boards=BOARDS, density_band=(0.1, 0.2))
    with pytest.raises(ValueError, match="board="):
        env.from_mines(np.zeros((H, W), bool), PADDED)


@functools.partial(jax.jit, static_argnums=(2, 3))
def random_batch_games(states, key, cfg, board):
    """20 batch_steps of random legal reveals drawn in board coordinates; rewards and dones."""
    rows, cols = BOARDS[board][:2]

    def one(states, key):
        legal = jax.vmap(env.action_mask, in_axes=(0, None))(states, cfg)[:, : cfg.num_cells]
        legal = legal.reshape(-1, cfg.H, cfg.W)[:, :rows, :cols].reshape(-1, rows * cols)
        cell = jax.random.categorical(key, jnp.where(legal, 0.0, -jnp.inf))
        actions = ((cell // cols) * cfg.W + cell % cols).astype(jnp.int32)
        states, reward, done, _ = env.batch_step(states, actions, cfg)
        return states, (reward, done)

    return jax.lax.scan(one, states, jax.random.split(key, 20))[1]


def test_batch_step_plays_padded_boards_like_unpadded_ones():
    """The batched path (placement and cascades on pending boards only) agrees too, up to
    each board's first finished game (the next game's key is drawn differently)."""
    board = 0
    keys = jax.random.split(jax.random.key(7), 32)
    states_p = jax.vmap(env.reset_on_board, in_axes=(0, None, None))(keys, PADDED, board)
    states_u = jax.vmap(env.reset, in_axes=(0, None))(keys, unpadded(board))
    reward_p, done_p = random_batch_games(states_p, jax.random.key(8), PADDED, board)
    reward_u, done_u = random_batch_games(states_u, jax.random.key(8), unpadded(board), board)
    first_game = np.cumsum(np.asarray(done_u), axis=0) - np.asarray(done_u) == 0
    assert np.asarray(done_u).any(axis=0).mean() > 0.5, "too few games finished to compare"
    np.testing.assert_array_equal(np.asarray(reward_p)[first_game], np.asarray(reward_u)[first_game])
    np.testing.assert_array_equal(np.asarray(done_p)[first_game], np.asarray(done_u)[first_game])

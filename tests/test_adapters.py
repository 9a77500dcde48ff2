"""The adapters' shared core (no gymnax or Jumanji needed): the one-board step that runs as
the batch step under ``vmap``, how an episode ends, the restart of ended games, and
``make``'s arguments."""

import functools
import re

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from drawings import config_for, position, stack

from msjax import adapters, env
from msjax.env import EnvConfig


step = jax.jit(env.step, static_argnums=2)


@functools.partial(jax.jit, static_argnums=2)
def step_each(states, actions, cfg):
    return jax.vmap(env.step, in_axes=(0, 0, None))(states, actions, cfg)


def assert_same_games(actual, expected):
    """Equal pytrees of games (keys compared by their data, rewards up to rounding)."""
    unkey = lambda x: jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x  # noqa: E731
    chex.assert_trees_all_close(jax.tree.map(unkey, actual), jax.tree.map(unkey, expected))


def test_game_step_under_vmap_is_the_vmapped_env_step():
    cfg = EnvConfig(H=5, W=6, mine_count=6)
    states = env.batch_reset(jax.random.key(21), cfg, 32)
    for seed in range(3):  # first clicks place mines, later ones open regions or hit mines
        actions = jax.random.randint(jax.random.key(seed), (32,), 0, cfg.num_actions)
        stepped = jax.jit(jax.vmap(adapters.game_step(cfg)))(states, actions)
        expected = step_each(states, actions, cfg)
        assert_same_games(stepped, expected)
        states = stepped[0]
    assert np.asarray(states.done).any(), "some game should have ended, as the check covers"


def test_game_step_broadcasts_an_unbatched_state():
    cfg = EnvConfig(H=4, W=4, mine_count=3)
    state = env.reset(jax.random.key(5), cfg)
    actions = jnp.arange(16, dtype=jnp.int32)  # every first click on one game
    stepped = jax.jit(jax.vmap(adapters.game_step(cfg), in_axes=(None, 0)))(state, actions)
    assert_same_games(stepped, step_each(stack([state] * 16), actions, cfg))


def test_game_step_on_one_board_is_env_step():
    cfg = EnvConfig(H=4, W=4, mine_count=3)
    state = env.reset(jax.random.key(5), cfg)
    assert_same_games(jax.jit(adapters.game_step(cfg))(state, jnp.int32(6)), step(state, jnp.int32(6), cfg))


def test_a_mine_terminates_and_a_win_terminates():
    drawing = """
        * 1 .
        # 1 .
    """
    cfg = config_for(drawing)
    lost = step(position(drawing, cfg), jnp.int32(0), cfg)[0]
    won = step(position(drawing, cfg), jnp.int32(3), cfg)[0]
    assert bool(won.won) and bool(lost.done) and not bool(lost.won), env.render(won, cfg)
    assert tuple(map(bool, adapters.episode_end(lost, cfg))) == (True, False)
    assert tuple(map(bool, adapters.episode_end(won, cfg))) == (True, False)


def test_the_move_cap_truncates_a_game_that_goes_on():
    drawing = """
        * # #
        # # #
    """
    flag = env.encode_action(4, True, config_for(drawing))
    for cfg in (config_for(drawing), config_for(drawing, max_steps=3)):  # adapter's cap, env's cap
        state = position(drawing, cfg)
        for move in range(env.move_limit(cfg)):
            assert tuple(map(bool, adapters.episode_end(state, cfg))) == (False, False), move
            state = step(state, jnp.int32(flag), cfg)[0]
        assert tuple(map(bool, adapters.episode_end(state, cfg))) == (False, True)


def test_a_mine_on_the_last_allowed_move_terminates_rather_than_truncates():
    drawing = """
        * # #
        # # #
    """
    cfg = config_for(drawing, max_steps=2)
    state = step(position(drawing, cfg), jnp.int32(env.encode_action(4, True, cfg)), cfg)[0]
    state = step(state, jnp.int32(0), cfg)[0]
    assert tuple(map(bool, adapters.episode_end(state, cfg))) == (True, False)


def test_restart_ended_restarts_only_ended_games_from_their_own_key_as_batch_step_does():
    drawing = """
        * # #
        # # #
    """
    cfg = config_for(drawing)
    states = stack([position(drawing, cfg)] * 3)
    actions = jnp.array([0, 5, 0], jnp.int32)  # boards 0 and 2 hit the mine
    stepped, _, done, _ = step_each(states, actions, cfg)
    restarted = jax.jit(jax.vmap(lambda s, e: adapters.restart_ended(s, e, cfg)))(stepped, done)
    assert_same_games(restarted, env.batch_step(states, actions, cfg)[0])
    untouched = jax.jit(jax.vmap(lambda s, e: adapters.restart_ended(s, e, cfg)))(stepped, jnp.zeros(3, bool))
    assert_same_games(untouched, stepped)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"board": "9x9", "api": "gymnax"}, "HxWxM"),
        ({"board": "beginner", "api": "gym"}, "api='gym'"),
        ({"board": "beginner", "api": "gymnax", "mines": 3}, "unknown EnvConfig field"),
        ({"board": EnvConfig(), "api": "gymnax", "max_steps": 3}, "already an EnvConfig"),
        ({"board": "beginner", "api": "jumanji", "mask_in_observation": True}, "for gymnax"),
    ],
)
def test_make_names_what_is_wrong(kwargs, message):
    with pytest.raises(ValueError, match=message):
        adapters.make(**kwargs)


@pytest.mark.parametrize("board", [None, 8])
def test_make_names_a_board_that_is_neither_text_nor_a_config(board):
    with pytest.raises(TypeError, match=rf"board={board!r}: .*beginner.*HxWxM.*EnvConfig"):
        adapters.make(board)


@pytest.mark.parametrize("api", ["gymnax", "jumanji"])
@pytest.mark.parametrize("value", ["no", 1])
def test_make_refuses_a_mask_in_observation_that_is_not_a_bool(api, value):
    with pytest.raises(TypeError, match=re.escape(f"mask_in_observation={value!r}") + ".*bool"):
        adapters.make("beginner", api, mask_in_observation=value)


@pytest.mark.parametrize(
    "key",
    [0, jnp.int32(0), jnp.zeros(2, jnp.int32), jax.random.split(jax.random.key(0), 2)],
    ids=["int", "int32[]", "int32[2]", "two keys"],
)
def test_check_key_refuses_what_is_not_one_prng_key(key):
    with pytest.raises(TypeError, match=r"^key=.*jax\.random\.key.*jax\.random\.PRNGKey"):
        adapters.check_key(key)
    with pytest.raises(TypeError, match=r"^key="):  # traced, as inside a jitted reset
        jax.jit(adapters.check_key)(key)


def test_check_key_takes_typed_and_legacy_keys():
    for key in (jax.random.key(0), jax.random.PRNGKey(0)):
        adapters.check_key(key)
        jax.jit(adapters.check_key)(key)


def test_check_board_shape_names_both_shapes():
    game = env.reset(jax.random.key(0), EnvConfig())
    adapters.check_board_shape(game, EnvConfig(), "params.cfg")
    with pytest.raises(ValueError, match=r"state's board is 8x8 but params\.cfg is 16x16"):
        adapters.check_board_shape(game, EnvConfig(H=16, W=16, mine_count=40), "params.cfg")


def test_game_step_plays_an_out_of_range_action_as_invalid():
    """Issue 92: -1 revealed the last cell and 2*H*W flagged cell 0, through the adapters too."""
    cfg = EnvConfig(H=4, W=4, mine_count=3)
    state = env.reset(jax.random.key(5), cfg)
    actions = jnp.array([-1, cfg.num_actions, 2 * cfg.num_actions + 5], jnp.int32)
    stepped, reward, _, info = jax.jit(jax.vmap(adapters.game_step(cfg), in_axes=(None, 0)))(state, actions)
    one = jax.jit(adapters.game_step(cfg))(state, actions[0])
    for out_state, out_reward, out_info in ((stepped, reward, info), (one[0], one[1], one[3])):
        assert np.asarray(out_info["invalid"]).all()
        np.testing.assert_array_equal(out_reward, np.full(np.shape(out_reward), -cfg.invalid_penalty, np.float32))
        assert not np.asarray(out_state.revealed).any() and not np.asarray(out_state.flags).any()
        assert not np.asarray(out_state.first_click_done).any(), "no mines placed"


def test_make_reads_board_names_and_text_with_rules():
    pytest.importorskip("jumanji")
    assert adapters.make("16x16x40", "jumanji", max_steps=50).cfg == EnvConfig(H=16, W=16, mine_count=40, max_steps=50)
    assert adapters.make("expert", "jumanji").cfg == EnvConfig(H=16, W=30, mine_count=99)


def test_importing_the_adapters_imports_neither_library():
    import subprocess
    import sys

    code = "import sys, msjax.adapters; print('gymnax' in sys.modules, 'jumanji' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]

"""msjax's gymnax adapter: a vmapped batch stepped through ``jit`` with auto-reset is msjax's
own batch on the same keys; terminated, truncated and the final observation as gymnax 1.0
defines them; the legacy five-value step; spaces; the mask in the state and observation.

Skipped without gymnax: ``pip install -e '.[gymnax]'``."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("gymnax", reason="msjax's gymnax adapter needs gymnax: pip install -e '.[gymnax]'")

from msjax import adapters, env  # noqa: E402

BATCH = 64


def random_legal_actions(key, legal):
    """int32[B]: one action per board, uniform among its legal ones (reveals and flags)."""
    return jax.random.categorical(key, jnp.where(legal, 0.0, -jnp.inf)).astype(jnp.int32)


@functools.partial(jax.jit, static_argnums=3)
def msjax_reference(games, actions, legal, cfg):
    """What msjax itself says of one move of a batch: the games as they ended (plain
    ``vmap(env.step)``), the observations, and ``env.batch_step``'s restarted games."""
    ended = jax.vmap(env.step, in_axes=(0, 0, None))(games, actions, cfg)[0]
    next_games, reward, done, info = env.batch_step(games, actions, cfg)
    observe = jax.vmap(env.observe, in_axes=(0, None))
    return {
        "final_observation": observe(ended, cfg),
        "hit_mine": jnp.any(ended.revealed & ended.mine_mask, axis=(1, 2)),
        "next_games": next_games,
        "next_observation": observe(next_games, cfg),
        "next_legal": jax.vmap(env.action_mask, in_axes=(0, None))(next_games, cfg),
        "reward": reward,
        "done": done,
        "won": info["won"],
        "steps": info["steps"],
    }


def test_a_vmapped_jitted_batch_is_msjax_batch_on_the_same_keys():
    gymnax_env, params = adapters.make("5x5x4", "gymnax", max_steps=6)  # short games: some truncated
    cfg = params.cfg
    keys = jax.random.split(jax.random.key(0), BATCH)
    obs, state = jax.jit(jax.vmap(gymnax_env.reset, in_axes=(0, None)))(keys, params)
    games = env.batch_reset(jax.random.key(0), cfg, BATCH)
    np.testing.assert_array_equal(obs, jax.vmap(env.observe, in_axes=(0, None))(games, cfg))
    legal = jax.vmap(env.action_mask, in_axes=(0, None))(games, cfg)
    step = jax.jit(jax.vmap(gymnax_env.step, in_axes=(0, 0, 0, None)))
    seen_terminated = seen_truncated = 0
    for move in range(16):
        np.testing.assert_array_equal(state.legal_action_mask, legal)
        actions = random_legal_actions(jax.random.key(100 + move), legal)
        obs, state, reward, terminated, truncated, info = step(keys, state, actions, params)
        msjax = msjax_reference(games, actions, legal, cfg)
        np.testing.assert_array_equal(terminated | truncated, msjax["done"])
        np.testing.assert_array_equal(truncated, msjax["done"] & ~msjax["won"] & ~msjax["hit_mine"])
        np.testing.assert_array_equal(truncated, msjax["done"] & (msjax["steps"] == cfg.max_steps) & ~terminated)
        np.testing.assert_allclose(reward, msjax["reward"], rtol=1e-6)
        np.testing.assert_array_equal(info["final_observation"], msjax["final_observation"])
        np.testing.assert_array_equal(obs, msjax["next_observation"])  # the next game after an auto-reset
        np.testing.assert_array_equal(info["terminated"], terminated)
        np.testing.assert_array_equal(info["won"], msjax["won"])
        games, legal = msjax["next_games"], msjax["next_legal"]
        seen_terminated += int(terminated.sum())
        seen_truncated += int(truncated.sum())
    assert seen_terminated and seen_truncated, (seen_terminated, seen_truncated)


def test_the_step_key_does_not_change_the_game():
    gymnax_env, params = adapters.make("5x5x4", "gymnax")
    _, state = gymnax_env.reset(jax.random.key(1), params)
    first = gymnax_env.step(jax.random.key(2), state, 12, params)
    second = gymnax_env.step(jax.random.key(3), state, 12, params)
    np.testing.assert_array_equal(first[0], second[0])
    assert float(first[2]) == float(second[2])


def test_the_legacy_step_returns_five_values_with_done_and_the_final_observation():
    legacy_env, params = adapters.make("5x5x4", "gymnax-legacy")
    _, state = legacy_env.reset(jax.random.key(1), params)
    for cell in range(25):  # reveal every cell: the game ends within them
        obs, state, reward, done, info = legacy_env.step(jax.random.key(0), state, cell, params)
        if bool(done):
            break
    assert bool(done) and bool(info["terminated"]) and not bool(info["truncated"])
    assert not np.asarray(obs)[0].any(), "after an auto-reset the observation is the new game's"
    assert np.asarray(info["final_observation"])[0].any()


def test_spaces_describe_what_reset_returns():
    gymnax_env, params = adapters.make("expert", "gymnax")
    obs, state = gymnax_env.reset(jax.random.key(0), params)
    space = gymnax_env.observation_space(params)
    assert space.shape == obs.shape == (env.num_channels(params.cfg), 16, 30)
    assert bool(space.contains(obs)) and space.dtype == obs.dtype
    assert gymnax_env.action_space(params).n == 2 * 16 * 30 == state.legal_action_mask.shape[0]
    assert params.max_steps_in_episode == env.move_limit(params.cfg)


def test_the_mask_in_the_observation_is_the_states_mask():
    gymnax_env, params = adapters.make("beginner", "gymnax", mask_in_observation=True)
    _, state = gymnax_env.reset(jax.random.key(0), params)
    obs, state, *_ = gymnax_env.step(jax.random.key(0), state, 27, params)
    assert obs.shape == gymnax_env.observation_space(params).shape == (13, 8, 8)
    legal = adapters.legal_actions_in_observation(obs)
    np.testing.assert_array_equal(legal, state.legal_action_mask)
    hidden = ~np.asarray(state.game.revealed).reshape(-1)
    assert not hidden.all(), "the first click opened cells"
    np.testing.assert_array_equal(legal, np.concatenate([hidden, hidden]))


def test_the_legacy_env_survives_a_deep_copy_as_rejax_makes():
    import copy

    legacy_env, _ = adapters.make("beginner", "gymnax-legacy")
    assert copy.deepcopy(legacy_env) == legacy_env


def test_equal_envs_share_compiled_code():
    first, params = adapters.make("beginner", "gymnax")
    second, _ = adapters.make("beginner", "gymnax")
    assert first == second and hash(first) == hash(second)
    assert first != adapters.make("intermediate", "gymnax")[0]


def test_reset_refuses_a_key_that_is_not_a_prng_key_and_takes_legacy_keys():
    """Issue 92: ``reset(0, params)`` succeeded and the first step failed on "invalid PRNG key data"."""
    gymnax_env, params = adapters.make("beginner", "gymnax")
    with pytest.raises(TypeError, match=r"^key=int32\[\]: expected one PRNG key"):
        gymnax_env.reset(0, params)
    for key in (jax.random.key(0), jax.random.PRNGKey(0)):
        _, state = gymnax_env.reset(key, params)
        _, state, *_ = gymnax_env.step(key, state, 27, params)
        assert bool(state.game.first_click_done)


def test_a_step_with_params_of_another_board_names_both_shapes():
    gymnax_env, params = adapters.make("beginner", "gymnax")
    _, other_params = adapters.make("intermediate", "gymnax")
    _, state = gymnax_env.reset(jax.random.key(0), params)
    for step in (gymnax_env.step, gymnax_env.step_env):
        with pytest.raises(ValueError, match=r"state's board is 8x8 but params\.cfg is 16x16"):
            step(jax.random.key(0), state, 0, other_params)


def test_a_mask_in_observation_that_is_not_a_bool_is_refused():
    with pytest.raises(TypeError, match=r"mask_in_observation='no' must be a bool"):
        adapters.GymnaxMinesweeper(env.EnvConfig(), mask_in_observation="no")


@pytest.mark.parametrize("action", [-1, 128, 200])
def test_an_out_of_range_action_is_an_invalid_move(action):
    """Issue 92: on 8x8, 128 flagged cell 0 and -1 revealed cell 63, with ``invalid`` False."""
    gymnax_env, params = adapters.make("beginner", "gymnax")
    _, state = gymnax_env.reset(jax.random.key(0), params)
    _, after, reward, terminated, truncated, info = gymnax_env.step(jax.random.key(0), state, action, params)
    assert bool(info["invalid"]) and not bool(terminated | truncated)
    assert float(reward) == pytest.approx(-params.cfg.invalid_penalty)
    assert int(after.time) == 1 and not bool(after.game.first_click_done)
    assert not np.asarray(after.game.revealed).any() and not np.asarray(after.game.flags).any()
    np.testing.assert_array_equal(after.legal_action_mask, state.legal_action_mask)

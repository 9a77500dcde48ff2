"""msjax's Jumanji adapter: Jumanji's own smoke checks on the standard boards, step types
(termination on a win or a mine, truncation at the move cap), the mask inside the
observation, auto-reset through Jumanji's wrapper, render.

Skipped without Jumanji: ``pip install -e '.[jumanji]'``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from drawings import config_for, position

pytest.importorskip("jumanji", reason="msjax's Jumanji adapter needs jumanji: pip install -e '.[jumanji]'")

from jumanji.testing.env_not_smoke import check_env_does_not_smoke, check_env_specs_does_not_smoke  # noqa: E402
from jumanji.types import StepType  # noqa: E402
from jumanji.wrappers import VmapAutoResetWrapper  # noqa: E402

from msjax import adapters, env  # noqa: E402

DRAWING = """
    * 1 .
    # 1 .
"""


@pytest.mark.parametrize("board", sorted(env.STANDARD_BOARDS))
def test_jumanjis_smoke_checks_pass(board):
    jumanji_env = adapters.make(board, "jumanji")
    check_env_does_not_smoke(jumanji_env)
    check_env_specs_does_not_smoke(jumanji_env)


def step_from(drawing_cfg_state, action):
    cfg, state = drawing_cfg_state
    return jax.jit(adapters.JumanjiMinesweeper(cfg).step)(state, jnp.int32(action))[1]


def test_a_mine_and_a_win_are_terminations():
    cfg = config_for(DRAWING)
    for action in (0, 3):  # the mine, the last safe cell
        timestep = step_from((cfg, position(DRAWING, cfg)), action)
        assert int(timestep.step_type) == int(StepType.LAST) and float(timestep.discount) == 0.0
    assert bool(step_from((cfg, position(DRAWING, cfg)), 3).extras["won"])


def test_the_move_cap_is_a_truncation():
    cfg = config_for(DRAWING, max_steps=2)
    jumanji_env = adapters.JumanjiMinesweeper(cfg)
    state = position(DRAWING, cfg)
    flag = jnp.int32(env.encode_action(3, True, cfg))
    state, first = jumanji_env.step(state, flag)
    state, second = jumanji_env.step(state, flag)
    assert int(first.step_type) == int(StepType.MID) and float(first.discount) == 1.0
    assert int(second.step_type) == int(StepType.LAST) and float(second.discount) == 1.0


def test_the_observation_holds_the_action_mask_and_matches_the_spec():
    jumanji_env = adapters.make("beginner", "jumanji")
    state, timestep = jumanji_env.reset(jax.random.PRNGKey(0))
    assert int(timestep.step_type) == int(StepType.FIRST)
    state, timestep = jumanji_env.step(state, jnp.int32(27))
    jumanji_env.observation_spec.validate(timestep.observation)
    np.testing.assert_array_equal(timestep.observation.action_mask, env.action_mask(state, jumanji_env.cfg))
    np.testing.assert_array_equal(timestep.observation.board, env.observe(state, jumanji_env.cfg))
    assert "[playing, step 1, 10 mines]" in jumanji_env.render(state)


def test_jumanjis_auto_reset_wrapper_restarts_ended_games():
    cfg = config_for(DRAWING)
    vmapped = VmapAutoResetWrapper(adapters.JumanjiMinesweeper(cfg))
    states, timestep = vmapped.reset(jax.random.split(jax.random.PRNGKey(0), 2))
    states = jax.tree.map(lambda *x: jnp.stack(x), position(DRAWING, cfg), position(DRAWING, cfg))
    states, timestep = jax.jit(vmapped.step)(states, jnp.array([0, 1], jnp.int32))  # board 0 hits the mine
    np.testing.assert_array_equal(timestep.last(), [True, False])
    assert not np.asarray(timestep.observation.board[0, 0]).any(), "board 0 shows its new game"
    assert not np.asarray(states.revealed[0]).any() and np.asarray(states.revealed[1]).any()


def test_reset_refuses_a_key_that_is_not_a_prng_key_and_takes_legacy_keys():
    jumanji_env = adapters.make("beginner", "jumanji")
    with pytest.raises(TypeError, match=r"^key=int32\[\]: expected one PRNG key"):
        jax.jit(jumanji_env.reset)(0)
    for key in (jax.random.key(0), jax.random.PRNGKey(0)):
        state, _ = jumanji_env.reset(key)
        state, _ = jumanji_env.step(state, jnp.int32(27))
        assert bool(state.first_click_done)


def test_a_step_on_a_board_of_another_size_names_both_shapes():
    state, _ = adapters.make("beginner", "jumanji").reset(jax.random.key(0))
    with pytest.raises(ValueError, match=r"state's board is 8x8 but env\.cfg is 16x16"):
        adapters.make("intermediate", "jumanji").step(state, jnp.int32(0))


def test_an_out_of_range_action_is_an_invalid_move():
    cfg = config_for(DRAWING)
    jumanji_env = adapters.JumanjiMinesweeper(cfg)
    state = position(DRAWING, cfg)
    for action in (-3, cfg.num_actions):  # read modulo H*W they would reveal cell 3, flag cell 0
        after, timestep = jax.jit(jumanji_env.step)(state, jnp.int32(action))
        assert bool(timestep.extras["invalid"]) and int(timestep.step_type) == int(StepType.MID)
        assert float(timestep.reward) == pytest.approx(-cfg.invalid_penalty)
        np.testing.assert_array_equal(after.revealed, state.revealed)
        np.testing.assert_array_equal(after.flags, state.flags)

"""load_agent: loads from any of a run's paths and plays legal moves on batches of boards."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from msjax import env as ms_env
from msjax import models
from msjax import solver as solver_lib
from msjax.agent import Agent
from msjax.run.agents import load_agent
from msjax.run.checkpoint import CheckpointError
from tiny_runs import TINY, fresh_ppo_state, saved_run

NUM_GAMES = 12


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return saved_run(tmp_path_factory.mktemp("run"), steps=(1, 2, 3), metrics=[0.2, 0.7, 0.1])


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def games_in_play(cfg, num_games=NUM_GAMES, moves=3):
    """``num_games`` games after a few random reveals (some may be over)."""
    states = ms_env.batch_reset(jax.random.key(0), cfg, num_games)
    step = jax.vmap(ms_env.step, in_axes=(0, 0, None))
    for i in range(moves):
        keys = jax.random.split(jax.random.key(100 + i), num_games)
        hidden = ~states.revealed.reshape(num_games, -1)
        actions = jax.vmap(lambda k, h: jax.random.categorical(k, jnp.where(h, 0.0, -jnp.inf)))(keys, hidden)
        states, *_ = step(states, actions.astype(jnp.int32), cfg)
    return states


def assert_legal(agent, states, cfg):
    keys = jax.random.split(jax.random.key(1), NUM_GAMES)
    actions = jax.jit(jax.vmap(agent.act))(states, keys)
    assert actions.shape == (NUM_GAMES,) and actions.dtype == jnp.int32
    legal = jax.vmap(ms_env.action_mask, in_axes=(0, None))(states, cfg)
    playing = ~np.asarray(states.done)
    chosen_legal = np.asarray(jnp.take_along_axis(legal, actions[:, None], axis=1)[:, 0])
    assert chosen_legal[playing].all()


def test_the_loaded_agent_plays_legal_moves_vmapped_over_boards(run_dir):
    agent = load_agent(run_dir)
    states = games_in_play(TINY.env)
    assert_legal(agent, states, TINY.env)
    assert_legal(agent.sampling(), states, TINY.env)


def test_the_agent_loads_from_a_run_its_checkpoints_or_one_checkpoint(run_dir):
    expected = fresh_ppo_state(seed=3).params  # the latest checkpoint holds step 3's state
    for path in (run_dir, run_dir / "checkpoints", run_dir / "checkpoints" / "3"):
        agent = load_agent(path)
        for got, want in zip(jax.tree.leaves(agent.params), jax.tree.leaves(expected)):
            np.testing.assert_array_equal(got, want)
    assert agent.config == TINY and agent.env_cfg == TINY.env and agent.model_cfg == TINY.model


def test_best_picks_the_checkpoint_with_the_highest_evaluation(run_dir):
    best = load_agent(run_dir, step="best")
    expected = fresh_ppo_state(seed=2).params
    for got, want in zip(jax.tree.leaves(best.params), jax.tree.leaves(expected)):
        np.testing.assert_array_equal(got, want)


def test_mine_probabilities_are_a_board_of_probabilities(run_dir):
    agent = load_agent(run_dir)
    states = games_in_play(TINY.env)
    probabilities = jax.vmap(agent.mine_probabilities)(states)
    assert probabilities.shape == (NUM_GAMES, TINY.env.H, TINY.env.W)
    assert bool(jnp.all((probabilities >= 0) & (probabilities <= 1)))
    policy = jax.vmap(agent.action_probabilities)(states)
    np.testing.assert_allclose(policy.sum(axis=1)[~np.asarray(states.done)], 1.0, rtol=1e-5)


def test_the_same_weights_play_another_board_size(run_dir):
    larger = ms_env.EnvConfig(H=6, W=7, mine_count=5)
    agent = load_agent(run_dir).for_board(larger)
    assert_legal(agent, games_in_play(larger), larger)
    assert agent.mine_probabilities(ms_env.reset(jax.random.key(0), larger)).shape == (6, 7)


def transformed(states, steps):
    """The games with every board array taken through ``steps`` (``models.transform_board``)."""
    boards = {name: models.transform_board(getattr(states, name), steps) for name in ("mine_mask", "counts", "revealed", "flags")}
    return states.replace(**boards)


@pytest.mark.parametrize("board", [(5, 5, 3), (4, 6, 3)], ids=["square", "rectangle"])
def test_a_symmetrised_agent_turns_with_the_board(run_dir, board):
    cfg = ms_env.EnvConfig(H=board[0], W=board[1], mine_count=board[2])
    agent = load_agent(run_dir).for_board(cfg)
    symmetric = agent.symmetrised()
    group = models.board_symmetries(cfg.H, cfg.W)
    assert len(group) == (8 if cfg.H == cfg.W else 4)
    states = games_in_play(cfg)
    maps = jax.jit(jax.vmap(lambda a, s: (a.action_probabilities(s), a.mine_probabilities(s)), in_axes=(None, 0)))
    policy, mines = maps(symmetric, states)
    plain_policy, _ = maps(agent, states)
    assert not np.allclose(policy, plain_policy, atol=1e-3)  # the averaging changes something
    as_board = lambda p: p.reshape(p.shape[0], 2, cfg.H, cfg.W)
    for steps in group[1:]:
        turned_policy, turned_mines = maps(symmetric, transformed(states, steps))
        # what the agent believes of a turned board is its belief of the board, turned
        np.testing.assert_allclose(as_board(turned_policy), models.transform_board(as_board(policy), steps), atol=1e-5)
        np.testing.assert_allclose(turned_mines, models.transform_board(mines, steps), atol=1e-5)
    assert_legal(symmetric, states, cfg)


def test_another_observation_layout_is_refused(run_dir):
    with pytest.raises(ValueError, match="observation channels"):
        load_agent(run_dir).for_board(ms_env.EnvConfig(H=4, W=4, mine_count=2, obs_frontier=True))


def test_the_agent_is_a_pytree_of_its_parameters(run_dir):
    agent = load_agent(run_dir)
    assert isinstance(agent, Agent)
    assert len(jax.tree.leaves(agent)) == len(jax.tree.leaves(agent.params))


def test_loading_from_a_directory_without_checkpoints_fails_clearly(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    with pytest.raises(CheckpointError, match="no checkpoints"):
        load_agent(tmp_path)
    with pytest.raises(CheckpointError, match="does not exist"):
        load_agent(tmp_path / "missing")


def test_an_unknown_step_choice_is_rejected(run_dir):
    with pytest.raises(ValueError, match="step='first'"):
        load_agent(run_dir, step="first")


def test_first_click_at_opens_at_the_cell_then_leaves_the_moves_to_the_player():
    from drawings import position

    from msjax.agent import FirstClickAt, RandomAgent

    cfg = ms_env.EnvConfig(H=4, W=4, mine_count=2)
    player = FirstClickAt(RandomAgent(cfg), (1, 2), cfg)
    fresh = ms_env.reset(jax.random.key(0), cfg)
    assert int(player.act(fresh, jax.random.key(1))) == 1 * 4 + 2
    started = position(
        """
        . . . .
        . . . .
        # * . .
        # * . .
        """,
        cfg,
    ).replace(first_click_done=jnp.bool_(True))
    for seed in range(3):
        key = jax.random.key(seed)
        assert int(player.act(started, key)) == int(RandomAgent(cfg).act(started, key))
    with pytest.raises(ValueError, match="off the 4x4 board"):
        FirstClickAt(RandomAgent(cfg), (4, 0), cfg).act(fresh, jax.random.key(1))


def test_first_click_at_hands_a_batch_to_the_player_s_own_act_batch():
    from msjax.agent import FirstClickAt, RandomAgent
    from msjax.evaluate import play_games

    cfg = ms_env.EnvConfig(H=4, W=4, mine_count=2)

    @dataclasses.dataclass(frozen=True)
    class BatchOnly:  # a player whose moves exist only as a batch, as a search's do
        def act(self, state, key):
            raise AssertionError("played board by board")

        def act_batch(self, states, keys):
            return jax.vmap(RandomAgent(cfg).act)(states, keys)

    games = play_games(FirstClickAt(BatchOnly(), (1, 2), cfg), cfg, 8, 0, 8)
    alone = play_games(FirstClickAt(RandomAgent(cfg), (1, 2), cfg), cfg, 8, 0, 8)
    for name in ("won", "steps", "revealed_cells"):
        np.testing.assert_array_equal(games[name], alone[name], err_msg=name)
    with pytest.raises(ValueError, match="off the 4x4 board"):
        FirstClickAt(BatchOnly(), (0, 4), cfg).act_batch(ms_env.batch_reset(jax.random.key(0), cfg, 2), None)


def test_an_agent_with_proofs_plays_a_proved_safe_cell_and_never_a_proved_mine(run_dir):
    cfg = ms_env.EnvConfig(H=5, W=5, mine_count=3)
    agent = load_agent(run_dir).for_board(cfg)
    states = games_in_play(cfg)  # the square board of the symmetry test: compiled once
    forced = jax.vmap(lambda s: solver_lib.forced_moves(s, cfg))(states)
    actions = np.asarray(jax.jit(jax.vmap(agent.with_proofs().act))(states, jax.random.split(jax.random.key(1), NUM_GAMES)))
    safe = np.asarray(forced.safe & ~states.revealed).reshape(NUM_GAMES, -1)
    mines = np.asarray(forced.mines).reshape(NUM_GAMES, -1)
    playing = ~np.asarray(states.done) & np.asarray(states.first_click_done)
    checked = 0
    for game in np.flatnonzero(playing):
        cell = actions[game] % cfg.num_cells
        assert actions[game] < cfg.num_cells or not safe[game].any()  # a reveal while a proof waits
        assert not mines[game, cell] or actions[game] >= cfg.num_cells
        if safe[game].any():
            assert safe[game, cell]
            checked += 1
    assert checked >= 3
    assert_legal(agent.with_proofs(), states, cfg)


def test_proofs_must_be_layers_or_exact(run_dir):
    with pytest.raises(ValueError, match=r"proofs='bp' must be one of \('layers', 'exact'\)"):
        load_agent(run_dir).with_proofs("bp")

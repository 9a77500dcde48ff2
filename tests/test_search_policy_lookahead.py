"""``search.policy_lookahead``: the policy's candidates scored by their exact safety and the
value of the views they lead to; reads only the view. One compiled program per leaf kind."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from msjax import env as ms_env
from msjax import search
from msjax import solver as solver_lib
from msjax.run.agents import load_agent
from test_reference import consistent_layouts
from tiny_runs import saved_run

ENV = ms_env.EnvConfig(H=5, W=5, mine_count=7)
NUM_GAMES = 48
LIMITS = solver_lib.ExactLimits(max_states=64, first_states=64, middle_states=0)  # one pass: a quicker compile


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    return load_agent(saved_run(tmp_path_factory.mktemp("run"), steps=(1,), metrics=[0.5])).for_board(ENV)


@pytest.fixture(scope="module")
def views():
    """48 5x5x7 games after a random first reveal (about a fifth of them guesses), one key
    per game, each view's consistent layouts, and the same views over other layouts (where
    a view has more than one)."""
    states = ms_env.batch_reset(jax.random.key(0), ENV, NUM_GAMES)
    keys = jax.random.split(jax.random.key(100), NUM_GAMES)
    first = jax.vmap(lambda key: jax.random.categorical(key, jnp.zeros(ENV.num_cells)))(keys).astype(jnp.int32)
    states, *_ = jax.jit(jax.vmap(ms_env.step, in_axes=(0, 0, None)), static_argnums=2)(states, first, ENV)
    revealed, counts, mine_mask = (np.asarray(x) for x in (states.revealed, states.counts, states.mine_mask))
    playing = np.asarray(states.first_click_done & ~states.done)
    layouts = [consistent_layouts(revealed[g], counts[g], ENV.mine_count).reshape(-1, ENV.H, ENV.W) if playing[g] else None
               for g in range(NUM_GAMES)]
    other = mine_mask.copy()
    for game, fits in enumerate(layouts):
        if fits is not None:
            other[game] = next((layout for layout in fits if (layout != mine_mask[game]).any()), mine_mask[game])
    placed = jax.vmap(lambda m: ms_env.from_mines(m, ENV))(jnp.asarray(other))
    twins = states.replace(mine_mask=placed.mine_mask, counts=jnp.where(states.revealed, states.counts, placed.counts))
    return states, twins, jax.random.split(jax.random.key(1), NUM_GAMES), layouts


@functools.partial(jax.jit, static_argnums=3)
def moves(agent, states, keys, leaf):
    """Every cell a candidate, 8 layouts, leaves valued by ``leaf``."""
    return search.policy_lookahead(agent, ENV.num_cells, 8, leaf, LIMITS).act_batch(states, keys)


@pytest.fixture(scope="module")
def played(agent, views):
    states, twins, keys, layouts = views
    both = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), states, twins)
    both_keys = jnp.concatenate([keys, keys])
    constant_head = jax.tree_util.tree_map_with_path(
        lambda path, x: (jnp.ones_like(x) if "bias" in jax.tree_util.keystr(path) else jnp.zeros_like(x))
        if "value_out" in jax.tree_util.keystr(path) else x,
        agent.params,
    )
    return {
        "states": states, "twins": twins, "layouts": layouts,
        "safe": np.asarray(moves(agent, states, keys, "safe")),
        "value": np.asarray(moves(agent, both, both_keys, "value")),
        "constant": np.asarray(moves(agent.replace(params=constant_head), both, both_keys, "value")),
    }


def test_it_plays_a_proved_cell_else_the_safest_of_its_candidates(played):
    states, actions = played["states"], played["safe"]
    hidden = ~np.asarray(states.revealed).reshape(NUM_GAMES, -1)
    playing = [game for game, fits in enumerate(played["layouts"]) if fits is not None]
    guesses = 0
    for game in playing:
        mine_prob = played["layouts"][game].reshape(len(played["layouts"][game]), -1).mean(axis=0)
        assert actions[game] < ENV.num_cells and hidden[game, actions[game]]
        least = mine_prob[hidden[game]].min()
        assert mine_prob[actions[game]] == pytest.approx(least, abs=1e-6)  # a proved cell where there is one
        guesses += least > 0
    assert len(playing) >= 40 and guesses >= 5


def test_a_constant_value_head_gives_the_safest_choice(played):
    """Leaves all worth 1: the score is the chance to be safe, as with ``leaf="safe"``."""
    np.testing.assert_array_equal(played["constant"][:NUM_GAMES], played["safe"])


def test_the_value_lookahead_reads_only_the_view(played):
    """The same views over other layouts that fit them get the same moves; the network's
    value head does change some guesses (else this would test nothing)."""
    assert int(jnp.sum(jnp.any(played["twins"].mine_mask != played["states"].mine_mask, axis=(1, 2)))) >= 10
    np.testing.assert_array_equal(played["value"][:NUM_GAMES], played["value"][NUM_GAMES:])
    assert (played["value"][:NUM_GAMES] != played["safe"]).any()


def test_one_board_plays_as_in_the_batch(agent, played):
    game = int(np.flatnonzero(np.asarray(played["states"].first_click_done & ~played["states"].done))[0])
    one = jax.tree.map(lambda x: x[game], played["states"])
    safe_agent = search.policy_lookahead(agent, ENV.num_cells, 8, "safe", LIMITS)
    assert int(jax.jit(safe_agent.act)(one, jax.random.split(jax.random.key(1), NUM_GAMES)[game])) == played["safe"][game]


@pytest.mark.parametrize(
    "kwargs, message",
    [({"candidates": 0}, "candidates=0"), ({"samples": 0}, "samples=0"), ({"leaf": "mines"}, "leaf='mines'")],
)
def test_bad_settings_name_the_argument(agent, kwargs, message):
    with pytest.raises(ValueError, match=message):
        search.policy_lookahead(agent, **kwargs)
    with pytest.raises(ValueError, match="greedy agent without proofs"):
        search.policy_lookahead(agent.with_proofs())

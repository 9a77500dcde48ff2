"""``search.network_search``: Gumbel AlphaZero's root over the policy's reveals, each click
valued by its exact chance to be safe times the mean leaf value of the views it leads to.
On 4x4x6 views; one compiled program per leaf kind and budget."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from drawings import position
from test_reference import consistent_layouts
from tiny_runs import saved_run

from msjax import env as ms_env
from msjax import models, search
from msjax import solver as solver_lib
from msjax.reference import neighbour_lists
from msjax.run.agents import load_agent

ENV = ms_env.EnvConfig(H=4, W=4, mine_count=6, guarantee_safe_neighborhood=False)
LIMITS = solver_lib.ExactLimits(max_states=64, first_states=64, middle_states=0)  # one pass: a quicker compile
NUM_GAMES = 64
FRESH = 8  # the first games of the batch have no click yet

# Guesses whose best click (exact win probability under optimal play afterwards) leads the
# next by at least 0.1 and is not the safest cell: the leaf values decide them.
GUESSES = (
    """
    # # 1 0
    * * 2 0
    * * 3 1
    * # # *
    """,
    """
    2 * # *
    * # * *
    1 2 3 #
    0 0 1 *
    """,
    """
    * # # *
    1 3 * *
    0 2 * *
    0 1 # 2
    """,
)


class Expectimax:
    """Exact win probabilities of a tiny view's clicks under optimal play afterwards, by
    brute force over the layouts that fit it (memoised on the revealed cells and the
    layouts still possible); independent of msjax's search."""

    def __init__(self, revealed: np.ndarray, counts: np.ndarray, mine_count: int):
        self.shape = revealed.shape
        self.layouts = consistent_layouts(revealed, counts, mine_count)  # bool[L, HW]
        neighbours = neighbour_lists(*self.shape)
        self.numbers = np.array([[layout[list(n)].sum() for n in neighbours] for layout in self.layouts])
        self.neighbours = neighbours
        self.mine_count = mine_count
        self.root = (frozenset(np.flatnonzero(revealed.reshape(-1)).tolist()), tuple(range(len(self.layouts))))

    def opened(self, revealed: frozenset, cell: int, layout: int) -> frozenset:
        """The cells revealed after clicking the safe ``cell`` on ``layout`` (cascades)."""
        seen, todo = set(revealed), [cell]
        while todo:
            here = todo.pop()
            if here not in seen:
                seen.add(here)
                if self.numbers[layout, here] == 0:
                    todo.extend(self.neighbours[here])
        return frozenset(seen)

    def outcomes(self, revealed: frozenset, fits: tuple, cell: int) -> dict:
        """``{(revealed after, numbers shown): layouts}`` of clicking ``cell`` where safe."""
        groups = {}
        for layout in fits:
            if not self.layouts[layout, cell]:
                after = self.opened(revealed, cell, layout)
                shown = tuple(int(self.numbers[layout, c]) for c in sorted(after))
                groups.setdefault((after, shown), []).append(layout)
        return {key: tuple(group) for key, group in groups.items()}

    @functools.lru_cache(maxsize=None)
    def value(self, revealed: frozenset, fits: tuple) -> float:
        if self.layouts.shape[1] - len(revealed) == self.mine_count:
            return 1.0
        return max(self.click(revealed, fits, cell) for cell in self.hidden(revealed))

    @functools.lru_cache(maxsize=None)
    def click(self, revealed: frozenset, fits: tuple, cell: int) -> float:
        outcomes = self.outcomes(revealed, fits, cell)
        return sum(len(group) * self.value(after, group) for (after, _), group in outcomes.items()) / len(fits)

    def hidden(self, revealed: frozenset) -> list[int]:
        return [cell for cell in range(self.layouts.shape[1]) if cell not in revealed]

    def views_and_values(self) -> list[tuple[np.ndarray, np.ndarray, float]]:
        """``(revealed, counts, value)`` of the root and of every view one click leads to."""
        rows = []
        for revealed, fits in [self.root] + [
            (after, group) for cell in self.hidden(self.root[0])
            for (after, _), group in self.outcomes(*self.root, cell).items()
        ]:
            seen = np.zeros(self.layouts.shape[1], bool)
            seen[list(revealed)] = True
            counts = np.where(seen, self.numbers[fits[0]], 0)
            rows.append((seen.reshape(self.shape), counts.reshape(self.shape), self.value(revealed, fits)))
        return rows


def table_leaf(rows):
    """A leaf value that looks each view up in ``rows`` (``(revealed, counts, value)``): the
    expectimax's values as the search's leaves (0 for a view not in the table)."""
    revealed = jnp.asarray(np.stack([r for r, _, _ in rows]))
    counts = jnp.asarray(np.stack([c for _, c, _ in rows]))
    values = jnp.asarray([v for _, _, v in rows], jnp.float32)

    def leaf(states):
        same_cells = states.revealed[:, None] == revealed[None]
        same_numbers = ~states.revealed[:, None] | (states.counts[:, None] == counts[None])
        match = jnp.all(same_cells & same_numbers, axis=(2, 3))
        return jnp.where(jnp.any(match, axis=1), values[jnp.argmax(match, axis=1)], 0.0)

    return leaf


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    return load_agent(saved_run(tmp_path_factory.mktemp("run"), steps=(1,), metrics=[0.5])).for_board(ENV)


@pytest.fixture(scope="module")
def flat_agent(agent):
    """The agent with a uniform prior (its policy head's weights zeroed): the root's
    choice is then the values' alone."""
    zero_policy = lambda path, x: jnp.zeros_like(x) if "policy_head" in jax.tree_util.keystr(path) else x
    return agent.replace(params=jax.tree_util.tree_map_with_path(zero_policy, agent.params))


@pytest.fixture(scope="module")
def views():
    """64 4x4x6 games: 8 before any click, 24 after a random first reveal, 32 after a
    random safe reveal more; one key per game; each view's consistent layouts (None
    before the first click or after the game's end)."""
    keys = jax.random.split(jax.random.key(7), NUM_GAMES)
    states = ms_env.batch_reset(jax.random.key(0), ENV, NUM_GAMES)
    step = jax.jit(jax.vmap(ms_env.step, in_axes=(0, 0, None)), static_argnums=2)
    first = jax.vmap(lambda key: jax.random.categorical(key, jnp.zeros(ENV.num_cells)))(keys).astype(jnp.int32)
    once, *_ = step(states, first, ENV)
    safe_hidden = (~once.revealed & ~once.mine_mask).reshape(NUM_GAMES, -1)
    second = jax.random.categorical(jax.random.key(8), jnp.where(safe_hidden, 0.0, -jnp.inf)).astype(jnp.int32)
    twice, *_ = step(once, second, ENV)
    parts = (slice(0, FRESH), slice(FRESH, 32), slice(32, NUM_GAMES))
    states = jax.tree.map(lambda *x: jnp.concatenate([part[rows] for part, rows in zip(x, parts)]), states, once, twice)
    revealed, counts = np.asarray(states.revealed), np.asarray(states.counts)
    playing = np.asarray(states.first_click_done & ~states.done)
    layouts = [consistent_layouts(revealed[g], counts[g], ENV.mine_count) if playing[g] else None
               for g in range(NUM_GAMES)]
    return states, keys, layouts


@functools.partial(jax.jit, static_argnums=(3, 4, 5))
def policy(agent, states, keys, simulations, leaf, endgame=0):
    player = search.network_search(agent, simulations, 64, leaf, endgame, limits=LIMITS)
    return search.search_policy(player, states, keys)[:3]  # the moves, improved policy and searched


def mine_chances(fits: np.ndarray) -> np.ndarray:
    """f64[HW]: each cell's chance to hold a mine, over the layouts ``fits``."""
    return fits.mean(axis=0)


def policy_logits(agent, obs):
    return models.apply_network(agent.params, agent.model_cfg, obs, agent.symmetric)[0]


def test_with_a_perfect_leaf_value_it_finds_the_optimal_click(flat_agent):
    states = [position(text, ENV) for text in GUESSES]
    solvers = [Expectimax(np.asarray(s.revealed), np.asarray(s.counts), ENV.mine_count) for s in states]
    best, safest = [], []
    for solver in solvers:
        clicks = {cell: solver.click(*solver.root, cell) for cell in solver.hidden(solver.root[0])}
        ranked = sorted(clicks, key=clicks.get, reverse=True)
        assert clicks[ranked[0]] - clicks[ranked[1]] > 0.099  # a clear best click
        chances = mine_chances(solver.layouts)
        assert not np.isclose(chances[ranked[0]], chances[ranked[1:]].min())  # ... and not the safest
        best.append(ranked[0])
        safest.append(chances[ranked[1:]].min())
    batch = jax.tree.map(lambda *x: jnp.stack(x), *states)
    keys = jax.random.split(jax.random.key(3), len(states))
    leaf = table_leaf([row for solver in solvers for row in solver.views_and_values()])
    actions, _, searched = policy(flat_agent, batch, keys, 16, leaf)
    assert np.asarray(searched).all()
    assert np.asarray(actions).tolist() == best
    # the control in a batch of the views' size: the program of the tests below
    tiled = jax.tree.map(lambda x: jnp.resize(x, (NUM_GAMES, *x.shape[1:])), batch)
    control, _, _ = policy(flat_agent, tiled, jax.random.split(jax.random.key(3), NUM_GAMES), 16, "safe")
    for action, solver, least in zip(np.asarray(control), solvers, safest):
        assert mine_chances(solver.layouts)[action] == pytest.approx(least)  # the control takes the safest


def test_safe_leaves_with_every_reveal_considered_take_the_safest(flat_agent, views):
    states, keys, layouts = views
    actions, weights, searched = (np.asarray(x) for x in policy(flat_agent, states, keys, 16, "safe"))
    guesses = 0
    for game, fits in enumerate(layouts):
        if fits is None:
            continue
        chances = mine_chances(fits)
        hidden = ~np.asarray(states.revealed[game]).reshape(-1)
        assert hidden[actions[game]]
        assert chances[actions[game]] == pytest.approx(chances[hidden].min())
        assert searched[game] == (chances[hidden].min() > 0)
        guesses += searched[game]
    assert guesses >= 5
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-5)


def survival(fits: np.ndarray, revealed: np.ndarray, cell: int, neighbours) -> float:
    """The chance, over the layouts ``fits`` (bool[L, HW]), that ``cell`` is safe and that
    the view after it shows its number has a cell at least as safe as its safest (1 where
    one is certainly safe or the game is won), by brute force."""
    score = 0.0
    for number in range(9):
        after = fits[~fits[:, cell] & (fits[:, neighbours[cell]].sum(axis=1) == number)]
        if len(after):
            hidden = ~revealed & (np.arange(fits.shape[1]) != cell)
            best = 1.0 if not hidden.any() else 1.0 - after[:, hidden].mean(axis=0).min()
            score += len(after) / len(fits) * best
    return score


def test_survival_leaves_with_every_reveal_considered_take_the_best_survival(flat_agent, views):
    """Each click worth its chance to survive it and the next guess (brute force over the
    view's layouts): with every reveal considered the search takes the best."""
    states, keys, layouts = views
    actions, _, searched = (np.asarray(x) for x in policy(flat_agent, states, keys, 16, "survival"))
    neighbours = [list(n) for n in neighbour_lists(ENV.H, ENV.W)]
    decided = 0
    for game, fits in enumerate(layouts):
        if fits is None or not searched[game]:
            continue
        revealed = np.asarray(states.revealed[game]).reshape(-1)
        scores = {cell: survival(fits, revealed, cell, neighbours) for cell in np.flatnonzero(~revealed)}
        assert scores[actions[game]] == pytest.approx(max(scores.values()), abs=1e-5)
        safest = np.flatnonzero(~revealed)[np.argmin(mine_chances(fits)[~revealed])]
        decided += not np.isclose(scores[safest], max(scores.values()))
    assert searched.sum() >= 5 and decided >= 1  # on some view the safest cell is not the best


def test_the_endgame_plays_the_optimal_click_where_few_layouts_fit(agent):
    """With ``endgame=L`` a guess view that at most ``L`` layouts fit plays the click of
    highest win chance under optimal play afterwards (the brute-force expectimax; on each
    view it is neither the safest cell nor, with one simulation, the search's), unsearched."""
    states = [position(text, ENV) for text in GUESSES]
    solvers = [Expectimax(np.asarray(s.revealed), np.asarray(s.counts), ENV.mine_count) for s in states]
    bound = max(len(solver.layouts) for solver in solvers)
    batch = jax.tree.map(lambda *x: jnp.stack(x), *states)
    keys = jax.random.split(jax.random.key(3), len(states))
    actions, weights, searched = (np.asarray(x) for x in policy(agent, batch, keys, 1, "safe", bound))
    for solver, action in zip(solvers, actions):
        clicks = {cell: solver.click(*solver.root, cell) for cell in solver.hidden(solver.root[0])}
        assert clicks[action] == pytest.approx(max(clicks.values()), abs=1e-6)
    assert not searched.any()
    np.testing.assert_array_equal(weights, np.eye(2 * ENV.num_cells)[actions])
    fewer = np.asarray(policy(agent, batch, keys, 1, "safe", min(len(solver.layouts) for solver in solvers) - 1)[2])
    assert fewer.all()  # below every view's layout count the search plays them


def test_a_proved_safe_cell_is_played_without_search(agent, views):
    states, keys, layouts = views
    actions, weights, searched = (np.asarray(x) for x in policy(agent, states, keys, 1, "safe"))
    obs = jax.vmap(ms_env.observe, in_axes=(0, None))(states, ENV)
    logits = np.asarray(policy_logits(agent, obs))[:, :ENV.num_cells]
    proved_games = 0
    for game, fits in enumerate(layouts):
        if fits is None:
            continue
        hidden = ~np.asarray(states.revealed[game]).reshape(-1)
        proved = hidden & ~fits.any(axis=0)
        if proved.any():
            proved_games += 1
            assert proved[actions[game]] and not searched[game]
            assert actions[game] == np.flatnonzero(proved)[np.argmax(logits[game][proved])]  # the policy's favourite
            np.testing.assert_array_equal(weights[game], np.eye(2 * ENV.num_cells)[actions[game]])
    assert proved_games >= 5


def test_before_the_first_click_the_policy_plays(agent, views):
    states, keys, _ = views
    actions, _, searched = (np.asarray(x) for x in policy(agent, states, keys, 1, "safe"))
    alone = jax.vmap(agent.act)(states, keys)
    np.testing.assert_array_equal(actions[:FRESH], np.asarray(alone)[:FRESH])
    assert not searched[:FRESH].any()


def test_one_simulation_plays_the_policy_favourite_reveal(agent, views):
    """The prior reaches the root: with one simulation and no noise the only click
    considered is the policy's favourite legal reveal."""
    states, keys, _ = views
    actions, weights, searched = (np.asarray(x) for x in policy(agent, states, keys, 1, "safe"))
    obs = jax.vmap(ms_env.observe, in_axes=(0, None))(states, ENV)
    logits = np.asarray(policy_logits(agent, obs))[:, :ENV.num_cells]
    hidden = ~np.asarray(states.revealed).reshape(NUM_GAMES, -1)
    favourite = np.argmax(np.where(hidden, logits, -np.inf), axis=1)
    assert searched.sum() >= 5
    np.testing.assert_array_equal(actions[searched], favourite[searched])
    assert (weights[searched][:, :ENV.num_cells][~hidden[searched]] == 0).all()


def test_a_tolerance_keeps_the_root_to_the_nearly_safest_cells(agent, views):
    """With ``tolerance=0.2`` and one simulation the guess is the policy's favourite among
    the cells at least 0.8 times as safe as the safest (by brute force over the layouts),
    and the improved policy is 0 on every other cell."""
    states, keys, layouts = views
    player = search.network_search(agent, 1, 4, "safe", tolerance=0.2, limits=LIMITS)
    actions, weights, searched, network_action = (np.asarray(x) for x in jax.jit(search.search_policy)(player, states, keys))
    obs = jax.vmap(ms_env.observe, in_axes=(0, None))(states, ENV)
    legal = np.asarray(jax.vmap(ms_env.action_mask, in_axes=(0, None))(states, ENV))
    np.testing.assert_array_equal(network_action, np.argmax(np.where(legal, policy_logits(agent, obs), -np.inf), axis=1))
    logits = np.asarray(policy_logits(agent, obs))[:, :ENV.num_cells]
    narrowed = 0
    for game, fits in enumerate(layouts):
        if fits is None or not searched[game]:
            continue
        hidden = ~np.asarray(states.revealed[game]).reshape(-1)
        safety = 1.0 - mine_chances(fits)
        near = hidden & (safety >= 0.8 * safety[hidden].max() - 1e-6)
        assert actions[game] == np.flatnonzero(near)[np.argmax(logits[game][near])]
        assert (weights[game][:ENV.num_cells][~near] == 0).all()
        narrowed += np.argmax(np.where(hidden, logits[game], -np.inf)) != actions[game]
    assert searched.sum() >= 5 and narrowed >= 1  # the policy's favourite was left out somewhere


def test_gumbel_noise_is_drawn_from_each_board_key(agent, views):
    states, keys, _ = views
    play = jax.jit(lambda s, k: search.network_search(agent, 1, 4, "safe", gumbel_scale=1.0, limits=LIMITS).act_batch(s, k))
    again = np.asarray(play(states, keys))
    searched = np.asarray(policy(agent, states, keys, 1, "safe")[2])
    np.testing.assert_array_equal(again, np.asarray(play(states, keys)))
    other = np.asarray(play(states, jax.random.split(jax.random.key(99), NUM_GAMES)))
    assert (again[searched] != other[searched]).any()


def test_one_board_plays_as_in_the_batch(flat_agent, views):
    states, keys, _ = views
    actions, _, searched = (np.asarray(x) for x in policy(flat_agent, states, keys, 16, "safe"))
    game = int(np.flatnonzero(searched)[0])
    player = search.network_search(flat_agent, 16, 64, "safe", limits=LIMITS)
    one = jax.tree.map(lambda x: x[game], states)
    assert int(jax.jit(player.act)(one, keys[game])) == actions[game]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"simulations": 0}, r"simulations=0 must be an int in \[1, 32\]"),
        ({"simulations": 33}, "simulations=33"),
        ({"samples": 0}, "samples=0"),
        ({"leaf": "mines"}, "leaf='mines'"),
        ({"endgame": 129}, "endgame=129"),
        ({"tolerance": 0.0}, r"tolerance=0.0 must be a number in \(0, 1\]"),
        ({"gumbel_scale": -1.0}, "gumbel_scale=-1.0"),
        ({"value_scale": 0.0}, "value_scale=0.0"),
    ],
)
def test_bad_arguments_name_the_argument(agent, kwargs, message):
    with pytest.raises(ValueError, match=message):
        search.network_search(agent, **kwargs)


def test_an_agent_with_proofs_is_refused(agent):
    with pytest.raises(ValueError, match="greedy agent without proofs"):
        search.network_search(agent.with_proofs())

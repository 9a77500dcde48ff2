"""The exhaustive endgame (msjax.search.endgame) against a brute-force minimax written here:
the game played out click by click, cascades and all, over every layout that fits the view.

One compiled ``solve_endgame`` (5x5 boards, 4 mines, 16 views, up to 16 layouts: the
reachable sets' table; one pass of the analysis) serves the endgame's checks, and one compiled ``batch_solver_play`` (the exact
solver with the endgame, a batch of 8 5x5 games) serves the solver's: the games below that
check it plays legally and wins, and those that check it plays the endgame's clicks.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_reference import consistent_layouts
from drawings import position, view
from test_solver_exact import BATCH as GAMES
from test_solver_exact import EXACT_SOLVER

from msjax import env, reference, search, solver
from msjax.search.endgame import distinct_layouts, solve_endgame
from msjax.search.layout_sets import MINE, click_values, dense_click_values, reachable_sets


ENDGAME = search.SearchGuess(search.SearchConfig(endgame_layouts=8))
HEIGHT, WIDTH, MINES, MAX_LAYOUTS = 5, 5, 4, ENDGAME.config.endgame_layouts
SOLVED_LAYOUTS = 16  # the bound of the views solved below: above DENSE_LAYOUTS, so by the reachable sets
SOLVED_SETS = 128  # their table of sets (these views reach fewer)
LIMITS = EXACT_SOLVER.exact_limits


def neighbour_cells(cell: int) -> list[int]:
    row, col = divmod(cell, WIDTH)
    return [r * WIDTH + c for r in range(row - 1, row + 2) for c in range(col - 1, col + 2)
            if (r, c) != (row, col) and 0 <= r < HEIGHT and 0 <= c < WIDTH]


def click(layout: tuple[bool, ...], revealed: frozenset, cell: int) -> frozenset:
    """The revealed cells after clicking safe ``cell`` of ``layout``, the cascade opened."""
    opened, todo = set(revealed), [cell]
    while todo:
        here = todo.pop()
        if here in opened:
            continue
        opened.add(here)
        if not any(layout[n] for n in neighbour_cells(here)):
            todo += neighbour_cells(here)
    return frozenset(opened)


def minimax(layouts: list[tuple[bool, ...]], revealed: frozenset) -> tuple[float, dict[int, float]]:
    """(the best chance to win, the chance after clicking each hidden cell first): every
    click played on every layout, the layouts grouped by what the player then sees."""

    @functools.lru_cache(maxsize=None)
    def value(group: frozenset, seen: frozenset) -> float:
        if len(group) == 1:  # the layout is known: every safe cell is then proved
            return 1.0
        return max(after(group, seen, cell) for cell in range(HEIGHT * WIDTH) if cell not in seen)

    @functools.lru_cache(maxsize=None)
    def after(group: frozenset, seen: frozenset, cell: int) -> float:
        views: dict[tuple, list] = {}
        for layout in group:
            if layout[cell]:
                continue
            opened = click(layout, seen, cell)
            shown = tuple(sorted((c, sum(layout[n] for n in neighbour_cells(c))) for c in opened))
            views.setdefault(shown, []).append(layout)
        return sum(len(g) * value(frozenset(g), frozenset(c for c, _ in shown)) for shown, g in views.items()) / len(group)

    group = frozenset(layouts)
    return value(group, revealed), {c: after(group, revealed, c) for c in range(HEIGHT * WIDTH) if c not in revealed}


def endgame_views() -> list[tuple[np.ndarray, np.ndarray, int]]:
    """16 views of 5x5 games with 4 mines: 14 with 2..12 layouts (the first ``GAMES`` with
    at most 8 layouts and nothing proved safe, the last three more than 8), one with more
    than 16 layouts, one inconsistent."""
    rng = np.random.default_rng(3)
    views = []
    while len(views) < 14:
        board = reference.Board(HEIGHT, WIDTH, MINES, False, rng)
        board.reveal(int(rng.integers(HEIGHT * WIDTH)))
        for _ in range(int(rng.integers(0, 4))):
            safe_hidden = np.flatnonzero(~board.revealed.reshape(-1) & ~board.mine_mask.reshape(-1))
            if board.lost or len(safe_hidden) == 0:
                break
            board.reveal(int(rng.choice(safe_hidden)))
        if board.lost or board.won or np.count_nonzero(~board.revealed) > 12:
            continue
        counts = np.where(board.revealed, board.counts, 0)
        layouts = consistent_layouts(board.revealed, counts, MINES)
        unproved = (layouts.any(axis=0) | board.revealed.reshape(-1)).all()  # no cell safe in all
        if len(views) < GAMES:
            fits = 2 <= len(layouts) <= MAX_LAYOUTS and unproved
        else:  # the last three with more layouts than the solver's bound
            fits = (MAX_LAYOUTS < len(layouts) <= 12) if len(views) >= 11 else 2 <= len(layouts) <= MAX_LAYOUTS
        if fits:
            views.append((board.revealed.copy(), counts, MINES))
    many = np.zeros((HEIGHT, WIDTH), bool)
    many[0, 0] = True  # a corner 0: the 4 mines on the other 21 cells, 5,985 layouts
    broken = many.copy()
    views.append((many, np.zeros((HEIGHT, WIDTH), np.int32), MINES))
    broken_counts = np.zeros((HEIGHT, WIDTH), np.int32)
    broken_counts[0, 0] = 4  # a corner cannot see 4 mines
    views.append((broken, broken_counts, MINES))
    return views


def solve(views, key: int = 0):
    result = solve_endgame(
        jax.random.key(key), jnp.asarray(np.stack([v[0] for v in views])),
        jnp.asarray(np.stack([v[1] for v in views])), jnp.asarray([v[2] for v in views], jnp.int32),
        max_layouts=SOLVED_LAYOUTS, limits=LIMITS, max_sets=SOLVED_SETS,
    )
    return jax.tree.map(np.asarray, result)


@pytest.fixture(scope="module")
def solved():
    views = endgame_views()
    return views, solve(views), solve(views, key=1)


def test_endgame_equals_brute_force_minimax(solved):
    views, result, _ = solved
    for i, (revealed, counts, mines) in enumerate(views[:14]):
        layouts = [tuple(layout) for layout in consistent_layouts(revealed, counts, mines)]
        best, by_cell = minimax(layouts, frozenset(np.flatnonzero(revealed.reshape(-1)).tolist()))
        assert result.solved[i] and result.num_layouts[i] == len(layouts)
        np.testing.assert_allclose(result.win[i], best, atol=1e-6)
        np.testing.assert_allclose(by_cell[int(result.cell[i])], best, atol=1e-6)  # an optimal click
        cell_win = result.cell_win[i].reshape(-1)
        for cell, chance in by_cell.items():  # every click that tells something, valued exactly
            if cell_win[cell] >= 0:
                np.testing.assert_allclose(cell_win[cell], chance, atol=1e-6)
    assert min(result.win[:14]) < 1.0  # some views are lost with some chance even when played best


def test_endgame_flags_views_it_cannot_solve(solved):
    _, result, _ = solved
    many, broken = 14, 15
    assert not result.solved[many] and result.num_layouts[many] > SOLVED_LAYOUTS
    assert not result.solved[broken] and result.cell[broken] == -1 and np.isfinite(result.win).all()
    assert (result.cell_win[[many, broken]] == -1).all()


# Four mines, 14 layouts, 16 cells whose click tells something, 124 sets to know: they fit
# the table of 128 sets, but the third round of finding them met 554 splits, more than its
# 512 slots, and the view was flagged.
MANY_SPLITS = """
    # # # # #
    # # # # #
    # 2 1 1 #
    # 1 0 1 #
    # 1 0 1 #
"""


def test_endgame_solves_a_view_whose_sets_fit_its_table_however_they_arrive():
    revealed, counts = view(MANY_SPLITS)
    result = solve([(revealed, counts, MINES)] * 16)  # the batch of ``endgame_views``, compiled for ``solved``
    layouts = [tuple(layout) for layout in consistent_layouts(revealed, counts, MINES)]
    best, by_cell = minimax(layouts, frozenset(np.flatnonzero(revealed.reshape(-1)).tolist()))
    assert len(layouts) == 14 and result.solved[0] and result.num_layouts[0] == 14
    np.testing.assert_allclose(result.win[0], best, atol=1e-6)
    np.testing.assert_allclose(by_cell[int(result.cell[0])], best, atol=1e-6)


def test_endgame_does_not_depend_on_the_draws(solved):
    _, first, second = solved
    np.testing.assert_array_equal(first.cell, second.cell)
    np.testing.assert_allclose(first.win, second.win, atol=1e-6)


def mask_of(layouts, num_layouts: int) -> np.ndarray:
    """uint32[words]: the mask of the set ``layouts`` (ints) over ``num_layouts`` layouts,
    bit ``l % 32`` of word ``l // 32``, written out here."""
    value = sum(1 << int(layout) for layout in layouts)
    return np.asarray([(value >> (32 * w)) & 0xFFFFFFFF for w in range(-(-num_layouts // 32))], np.uint32)


def classes_of(outcomes: np.ndarray) -> np.ndarray:
    """uint32[C, 9, words]: the click classes of ``outcomes`` (int[L, C]: what each cell
    shows in each layout, ``MINE`` for a mine)."""
    num_layouts, num_cells = outcomes.shape
    return np.stack([np.stack([mask_of(np.flatnonzero(outcomes[:, c] == v), num_layouts) for v in range(MINE)])
                     for c in range(num_cells)])


def clicks_by_recursion(outcomes: np.ndarray) -> list[float]:
    """The win chance of clicking each cell first from all the layouts of ``outcomes``
    (int[L, C]) and playing best after, -1 where the click tells nothing: plain memoised
    recursion over the sets of layouts."""
    num_layouts, num_cells = outcomes.shape

    def tells(group, c):
        shown = {outcomes[layout, c] for layout in group}
        return MINE in shown or len(shown) > 1

    @functools.lru_cache(maxsize=None)
    def value(group: frozenset) -> float:
        if len(group) == 1:
            return 1.0
        return max((after(group, c) for c in range(num_cells) if tells(group, c)), default=0.0)

    def after(group, c):
        parts: dict[int, set] = {}
        for layout in group:
            if outcomes[layout, c] != MINE:
                parts.setdefault(int(outcomes[layout, c]), set()).add(layout)
        return sum(len(part) * value(frozenset(part)) for part in parts.values()) / len(group)

    everything = frozenset(range(num_layouts))
    return [after(everything, c) if tells(everything, c) else -1.0 for c in range(num_cells)]


# one compiled program per table size (op by op, the tables take some 200 compiles)
_click_values = jax.jit(click_values, static_argnames=("max_sets", "num_layouts"))
_reachable_sets = jax.jit(reachable_sets, static_argnames="max_sets")
SMALL_TABLE = (10, 5)  # layouts, cells of the random click tables below (one compile)
_small_clicks = functools.partial(_click_values, max_sets=1000, num_layouts=SMALL_TABLE[0])
_small_dense = jax.jit(functools.partial(dense_click_values, num_layouts=SMALL_TABLE[0]))
LARGE_TABLE = (70, 5)  # three words per mask
_large_clicks = functools.partial(_click_values, max_sets=1024, num_layouts=LARGE_TABLE[0])


def random_outcomes(seed: int, num_layouts: int, num_cells: int) -> np.ndarray:
    """int[L, C]: a mine in about one layout in three, else 0..2."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random((num_layouts, num_cells)) < 0.3, MINE, rng.integers(0, 3, (num_layouts, num_cells)))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1))
@example(1178256)  # two identical layouts: a set no click splits, worth 0 in both tables
def test_both_tables_equal_a_plain_recursion_over_the_sets_of_layouts(seed):
    num_layouts, _ = SMALL_TABLE
    outcomes = random_outcomes(seed, *SMALL_TABLE)
    everything, classes = mask_of(range(num_layouts), num_layouts), classes_of(outcomes)
    chances, fits = _small_clicks(everything, classes)
    want = clicks_by_recursion(outcomes)
    assert bool(fits)
    np.testing.assert_allclose(np.asarray(chances), want, atol=1e-6)  # the reachable sets
    np.testing.assert_allclose(np.asarray(_small_dense(everything, classes)), want, atol=1e-6)  # all 2^10 sets


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_masks_of_several_words_equal_a_plain_recursion(seed):
    # 70 layouts: the sets are masks of three words, sorted and searched word by word
    num_layouts, _ = LARGE_TABLE
    outcomes = random_outcomes(seed, *LARGE_TABLE)
    chances, fits = _large_clicks(mask_of(range(num_layouts), num_layouts), classes_of(outcomes))
    assert bool(fits)
    np.testing.assert_allclose(np.asarray(chances), clicks_by_recursion(outcomes), atol=1e-5)


def test_click_values_of_a_fifty_fifty_a_free_click_and_a_table_too_small():
    # two layouts, one cell each a mine in one of them: clicking either wins half the time
    fifty = np.array([[MINE, 0], [0, MINE]])
    chances, fits = _click_values(mask_of([0, 1], 2), classes_of(fifty), max_sets=4, num_layouts=2)
    assert bool(fits) and np.asarray(chances).tolist() == [0.5, 0.5]
    # a safe cell showing 1 in layout 0 and 2 in layout 1 tells them apart for free
    free = np.array([[1, MINE], [2, 0]])
    chances, _ = _click_values(mask_of([0, 1], 2), classes_of(free), max_sets=4, num_layouts=2)
    assert np.asarray(chances).tolist() == [1.0, 0.5]
    # 32 and 128 layouts (every bit of the mask: one word, four) that safe cells tell apart for free, a bit
    # each (3^7 - 2^7 - 1 = 2,058 sets to know for 7 cells)
    for num_bits in (5, 7):
        bits = np.array([[(layout >> bit) & 1 for bit in range(num_bits)] for layout in range(2**num_bits)])
        chances, fits = _click_values(mask_of(range(2**num_bits), 2**num_bits), classes_of(bits), max_sets=4096,
                                      num_layouts=2**num_bits)
        assert bool(fits) and np.asarray(chances).tolist() == [1.0] * num_bits
    # four layouts a cell tells apart one by one: sets {1,2,3}, {2,3} and more to know
    chain = np.array([[MINE, 0, 0, 0], [0, MINE, 0, 0], [0, 0, MINE, 0], [0, 0, 0, MINE]])
    sets, fits = _reachable_sets(mask_of(range(4), 4), classes_of(chain), max_sets=2)
    assert not bool(fits)
    sets, fits = _reachable_sets(mask_of(range(4), 4), classes_of(chain), max_sets=16)
    assert bool(fits) and sorted(int(x) for x in np.asarray(sets)[:, 0] if x != 0xFFFFFFFF) == sorted(
        m for m in range(16) if bin(m).count("1") in (2, 3)
    )


def test_the_reachable_sets_fit_however_many_splits_a_round_meets():
    # Six layouts that each of 30 cells tells apart one by one (a chain like the one above,
    # every column five times): 56 sets to know, each split the same way by five clicks, so
    # the third round of the search meets 300 splits (15 sets of four, 20 clicks each), more
    # than the 256 slots a table of 64 sets had for them: such views were flagged, though
    # their sets fit the table.
    chain = np.tile(np.where(np.eye(6, dtype=bool), MINE, 0), (1, 5))
    sets, fits = _reachable_sets(mask_of(range(6), 6), classes_of(chain), max_sets=64)
    assert bool(fits) and sorted(int(x) for x in np.asarray(sets)[:, 0] if x != 0xFFFFFFFF) == sorted(
        m for m in range(64) if 2 <= bin(m).count("1") <= 5
    )
    chances, fits = _click_values(mask_of(range(6), 6), classes_of(chain), max_sets=64, num_layouts=6)
    assert bool(fits) and np.asarray(chances) == pytest.approx(clicks_by_recursion(chain), abs=1e-6)


def test_distinct_layouts_keeps_each_layout_once():
    mines = jnp.asarray([[1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0]], bool)
    layouts, count = distinct_layouts(mines, 4)
    assert int(count) == 3
    kept = {tuple(row) for row in np.asarray(layouts)[:3].astype(int).tolist()}
    assert kept == {(1, 0, 0), (0, 1, 0), (0, 0, 1)} and not np.asarray(layouts)[3].any()


def test_endgame_layouts_is_checked():
    with pytest.raises(ValueError, match=r"endgame_layouts=129 must be 0 \(off\) or an int in \[2, 128\]"):
        search.SearchConfig(endgame_layouts=129)
    with pytest.raises(ValueError, match="endgame_layouts=8 has no effect unless SolverConfig.probabilities='exact'"):
        search.search_guess(search.SearchConfig(endgame_layouts=8), solver.SolverConfig())
    with pytest.raises(ValueError, match=r"solve_endgame\.max_layouts=1 must be an int in \[2, 128\]"):
        solve_endgame(jax.random.key(0), jnp.zeros((1, 2, 2), bool), jnp.zeros((1, 2, 2), jnp.int32),
                      jnp.ones(1, jnp.int32), max_layouts=1)


DOOR_VIEW = {"revealed": np.array([[[False] * 3, [True] * 3]]), "counts": np.array([[[0, 0, 0], [1, 2, 1]]]),
             "mine_count": np.array([2])}


@pytest.mark.parametrize("changed, message", [
    ({"max_layouts": 16, "max_sets": -5}, r"solve_endgame\.max_sets=-5 must be None or an int >= 1"),
    ({"max_layouts": 8, "max_sets": 64},  # up to 12 layouts the table of every set is filled instead
     r"solve_endgame\.max_sets=64 has no effect unless max_layouts > 12 \(max_layouts=8\)"),
    ({"max_layouts": "8"}, r"solve_endgame\.max_layouts='8' must be an int in \[2, 128\]"),
    ({"max_cells": 0}, r"solve_endgame\.max_cells=0 must be None or an int >= 1"),
    ({"revealed": DOOR_VIEW["revealed"][0]}, r"solve_endgame\.revealed has shape \(2, 3\); it must be bool\[B, H, W\]"),
    ({"mine_count": np.array([2.5])}, r"solve_endgame\.mine_count has dtype float32"),
])
def test_solve_endgame_names_an_argument_it_cannot_take(changed, message):
    arguments = {**DOOR_VIEW, "max_layouts": 8, "limits": LIMITS, **changed}
    with pytest.raises(ValueError, match=message):
        solve_endgame(jax.random.key(0), **arguments)


# Four mines: the numbers leave two among the five hidden cells of the right column, one
# in each window of three; a mine at (2, 4) would fill all three windows alone. The rule
# layers miss it (checked against the default solver when this test was written).
ONLY_THE_COUNT = """
    0 0 1 * #
    0 0 1 2 *
    0 0 0 1 s
    0 0 1 2 #
    0 0 1 * *
"""


def test_the_exact_solver_plays_the_counts_proof_wins_more_than_random_and_moves_legally():
    # the exact solver, with the exhaustive endgame on (its choices: below)
    cfg = env.EnvConfig(H=5, W=5, mine_count=4)
    drawn = jax.tree.map(lambda x: x[None], position(ONLY_THE_COUNT, cfg))
    fresh = env.batch_reset(jax.random.key(3), cfg, GAMES - 1)
    states = jax.tree.map(lambda *xs: jnp.concatenate(xs), drawn, fresh)
    memory = solver.empty_memory(states)
    wins = games = 0
    for move in range(60):
        actions, layers, memory = solver.batch_solver_play(states, jax.random.split(jax.random.key(move), GAMES), memory, cfg, EXACT_SOLVER, guess=ENDGAME)
        if move == 0:  # the drawn game: the count's proof is remembered, and played first
            assert bool(memory.safe[0, 2, 4]) and int(memory.layer[0, 2, 4]) == 3
            assert int(actions[0]) == 2 * 5 + 4 and int(layers[0]) == 3
        legal = jax.vmap(lambda s: env.action_mask(s, cfg))(states)
        assert bool(jnp.all(legal[jnp.arange(GAMES), actions] | states.done))
        states, _, done, info = env.batch_step(states, actions, cfg)
        wins += int(jnp.sum(done & info["won"]))
        games += int(jnp.sum(done))
    assert games >= GAMES and wins / games > 0.6


def test_the_solver_plays_the_endgame(solved):
    # with endgame_layouts the solver's guess is the endgame's click: an optimal one of the
    # brute-force minimax (without it, the lookahead ranks equally safe cells by progress)
    views, result, _ = solved
    cfg = env.EnvConfig(H=HEIGHT, W=WIDTH, mine_count=MINES)
    games = views[:GAMES]  # nothing proved safe in them
    layouts = [consistent_layouts(r, c, m) for r, c, m in games]

    def state_of(mines, revealed):
        return env.from_mines(mines, cfg).replace(revealed=revealed)

    def states(which):  # the views of ``games`` over one of their layouts
        mines = np.stack([options[which].reshape(HEIGHT, WIDTH) for options in layouts])
        return jax.vmap(state_of)(jnp.asarray(mines), jnp.asarray(np.stack([r for r, _, _ in games])))

    def play(which):
        state = states(which)
        keys = jax.random.split(jax.random.key(0), GAMES)
        return solver.batch_solver_play(state, keys, solver.empty_memory(state), cfg, EXACT_SOLVER, guess=ENDGAME)[:2]

    actions, layer = play(0)
    assert (np.asarray(layer) == 4).all()
    np.testing.assert_array_equal(np.asarray(actions), result.cell[:GAMES])
    # it reads only the view: other mines under the same views, the same clicks
    np.testing.assert_array_equal(np.asarray(play(-1)[0]), np.asarray(actions))
    for (revealed, _, _), options, action in zip(games, layouts, np.asarray(actions)):
        best, by_cell = minimax([tuple(o) for o in options], frozenset(np.flatnonzero(revealed.reshape(-1)).tolist()))
        assert by_cell[int(action)] == pytest.approx(best, abs=1e-6)

"""Exact mine probabilities on the device (msjax.solver.exact) against the NumPy reference (msjax.reference), and the
solver that plays on them (``SolverConfig(probabilities="exact")``).

Every analysis here runs through a few shared shapes (a batch of 8 views), and only the
random 5x5 and real 8x8 positions use the default limits (three passes of growing tables):
hand-made views and the solver run one pass (``ONE_PASS``), which compiles a third as
long and gives the same answers on views that fit it.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from drawings import config_for, position, view
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_reference import random_positions, real_positions

from msjax import env, reference, search, solver
from msjax.solver import exact as device_exact
from msjax.solver.forward import two_sum
from msjax.search.lookahead import candidate_cells, lookahead_scores, nearly_safest
from msjax.solver.types import ExactLimits

BATCH = 8
ONE_PASS = ExactLimits(first_states=128, middle_states=0, max_states=128)


def analyse_batch(views, limits: ExactLimits = ExactLimits()):
    """``exact_analysis`` of up to ``BATCH`` views of one shape ``(revealed, counts, mines)``,
    padded with copies of the first to the batch size the suite compiles once."""
    padded = list(views) + [views[0]] * (BATCH - len(views))
    revealed = jnp.asarray(np.stack([v[0] for v in padded]))
    counts = jnp.asarray(np.stack([v[1] for v in padded]))
    mines = jnp.asarray([v[2] for v in padded], jnp.int32)
    result = device_exact.exact_analysis(revealed, counts, mines, limits)
    return jax.tree.map(lambda x: np.asarray(x)[: len(views)], result)


def assert_matches_reference(views, result, atol=1e-4):
    for (revealed, counts, mines), i in zip(views, range(len(views))):
        host = reference.analyse(revealed, counts, mines)
        if host.total == 0:
            assert result.inconsistent[i] and not result.exact[i]
            assert np.all(np.isfinite(result.mine_prob[i]))
            continue
        assert result.exact[i], f"view {i} flagged"
        np.testing.assert_allclose(result.mine_prob[i], np.where(revealed, 0.0, host.mine_prob), atol=atol)
        assert sorted(np.flatnonzero(result.safe[i])) == host.safe
        assert sorted(np.flatnonzero(result.mines[i])) == host.mines
        assert result.log_layouts[i] == pytest.approx(np.log(float(host.total)), abs=1e-3)


# ----------------------------------------------------------------------------- against the NumPy reference


def test_probabilities_and_proofs_equal_the_reference_on_random_5x5_positions():
    views = [(r, c, m) for r, c, m, _ in random_positions(seed=7, count=400, max_hidden=25) if r.shape == (5, 5)]
    assert len(views) >= 16
    for start in range(0, 32, BATCH):
        chunk = views[start : start + BATCH]
        assert_matches_reference(chunk, analyse_batch(chunk))


def test_probabilities_and_proofs_equal_the_reference_on_real_8x8_positions():
    views = [v for v in real_positions(seed=5, per_board=40) if v[0].shape == (8, 8)][:24]
    for start in range(0, len(views), BATCH):
        chunk = views[start : start + BATCH]
        assert_matches_reference(chunk, analyse_batch(chunk, ONE_PASS))


# ----------------------------------------------------------------------------- hand-made views

TWO_FIFTY_FIFTIES = "# 1 # # 1 # #"  # two independent 50/50s, and a cell that touches no number


def test_fifty_fifties_and_a_cell_only_the_mine_count_decides():
    revealed, counts = view(TWO_FIFTY_FIFTIES)
    results = analyse_batch([(revealed, counts, mines) for mines in (2, 3, 1)], ONE_PASS)
    np.testing.assert_allclose(results.mine_prob[0][0, [0, 2, 3, 5]], 0.5, atol=1e-6)
    assert np.flatnonzero(results.safe[0]).tolist() == [6] and not results.mines[0].any()
    np.testing.assert_allclose(results.mine_prob[1][0, [0, 2, 3, 5, 6]], [0.5, 0.5, 0.5, 0.5, 1.0], atol=1e-6)
    assert np.flatnonzero(results.mines[1]).tolist() == [6]
    assert results.inconsistent[2]  # one mine cannot fill two 50/50s


ONE_TWO_ONE = """
    # # #
    1 2 1
"""
INCONSISTENT = """
    # # #
    3 . .
"""


def test_one_two_one_proves_its_middle_safe_and_an_inconsistent_view_is_flagged_without_nan():
    results = analyse_batch([(*view(ONE_TWO_ONE), 2), (*view(INCONSISTENT), 3)], ONE_PASS)
    np.testing.assert_allclose(results.mine_prob[0][0], [1.0, 0.0, 1.0], atol=1e-6)
    assert np.flatnonzero(results.safe[0]).tolist() == [1]
    assert np.flatnonzero(results.mines[0]).tolist() == [0, 2]
    assert results.inconsistent[1] and not results.exact[1] and results.log_layouts[1] == -np.inf
    assert np.all(np.isfinite(results.mine_prob[1])) and not results.safe[1].any() and not results.mines[1].any()


def test_a_view_past_the_limits_is_flagged_and_proves_nothing():
    tiny = dataclasses.replace(ONE_PASS, max_open=1)  # the 1-2-1 opens two numbers at once
    result = analyse_batch([(*view(ONE_TWO_ONE), 2)], tiny)
    assert not result.exact[0] and not result.inconsistent[0]
    assert not result.safe[0].any() and not result.mines[0].any()


# The 1-2-1 as exact_analysis takes it, a batch of one view; each case changes one argument.
DOOR_VIEW = {"revealed": np.array([[[False] * 3, [True] * 3]]), "counts": np.array([[[0, 0, 0], [1, 2, 1]]]),
             "mine_count": np.array([2])}


@pytest.mark.parametrize("changed, message", [
    ({"revealed": DOOR_VIEW["revealed"].astype(int)},  # 0/1 ints once read as an inconsistent view
     r"exact_analysis\.revealed has dtype int32; it must be bool\[B, H, W\]: a batch of views"),
    ({"mine_count": np.array([2.7])}, r"exact_analysis\.mine_count has dtype float32; it must be int\[B\]"),
    ({"revealed": DOOR_VIEW["revealed"][0], "counts": DOOR_VIEW["counts"][0]},
     r"exact_analysis\.revealed has shape \(2, 3\); it must be bool\[B, H, W\]: a batch of views \(one view: "),
    ({"counts": np.zeros((1, 2, 4), int)}, r"exact_analysis\.counts has shape \(1, 2, 4\); it must be int\[B, H, W\] "
     r"of revealed's shape \(1, 2, 3\)"),
    ({"counts": DOOR_VIEW["counts"] * 1.0}, r"exact_analysis\.counts has dtype float32"),
    ({"mine_count": 2}, r"exact_analysis\.mine_count has shape \(\); it must be int\[B\] \(B=1: one per view\)"),
    ({"mine_count": np.array([2, 2])}, r"exact_analysis\.mine_count has shape \(2,\); it must be int\[B\] \(B=1"),
    ({"limits": None}, r"exact_analysis\.limits=None must be an ExactLimits"),
])
def test_exact_analysis_names_an_argument_it_cannot_take(changed, message):
    with pytest.raises(ValueError, match=message):
        device_exact.exact_analysis(**{**DOOR_VIEW, "limits": ONE_PASS, **changed})


def test_limits_reject_values_out_of_range():
    with pytest.raises(ValueError, match="max_states"):
        ExactLimits(max_states=1)
    with pytest.raises(ValueError, match="middle_states"):
        ExactLimits(middle_states=-1)
    assert ExactLimits().tiers() == (32, 256, 1024) and ONE_PASS.tiers() == (128,)
    with pytest.raises(ValueError, match="max_open"):
        ExactLimits(max_open=33)
    with pytest.raises(ValueError, match="probabilities"):
        solver.SolverConfig(probabilities="loopy")


@pytest.mark.parametrize("fields, message", [
    ({"max_states": "64"}, r"ExactLimits\.max_states='64' must be an int in \[2, 32767\]"),
    ({"max_open": 24.0}, r"ExactLimits\.max_open=24\.0 must be an int in \[1, 32\]"),
    ({"middle_states": None}, r"ExactLimits\.middle_states=None must be an int >= 0 \(0: no middle pass\)"),
    ({"max_frontier": True}, r"ExactLimits\.max_frontier=True must be an int >= 0 \(0: from the board\)"),
])
def test_limits_name_a_field_of_the_wrong_type(fields, message):
    with pytest.raises(ValueError, match=message):
        ExactLimits(**fields)


# ----------------------------------------------------------------------------- properties


@st.composite
def small_games(draw):
    """A 5x5 game with a few mines and a few safe cells revealed: (revealed, counts, mines)."""
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    mines = draw(st.integers(1, 8))
    board = reference.Board(5, 5, mines, False, rng)
    board.reveal(int(rng.integers(25)))  # the first click is safe; the mines are placed now
    safe = np.flatnonzero(~board.mine_mask.reshape(-1) & ~board.revealed.reshape(-1))
    for cell in rng.choice(safe, size=min(len(safe), draw(st.integers(0, 3))), replace=False):
        if not board.won and not board.revealed.reshape(-1)[cell]:  # a cascade may have opened it
            board.reveal(int(cell))
    return board.revealed.copy(), np.where(board.revealed, board.counts, 0), mines


@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(small_games(), min_size=BATCH, max_size=BATCH))
def test_probabilities_are_in_range_sum_to_the_mines_and_prove_what_the_reference_proves(games):
    result = analyse_batch(games)
    for i, (revealed, counts, mines) in enumerate(games):
        assert result.exact[i]  # a real game's view is consistent
        hidden = ~revealed
        assert np.all((result.mine_prob[i] >= 0) & (result.mine_prob[i] <= 1))
        assert result.mine_prob[i][hidden].sum() == pytest.approx(mines, abs=1e-3)
        host = reference.analyse(revealed, counts, mines)
        assert sorted(np.flatnonzero(result.safe[i])) == host.safe
        assert sorted(np.flatnonzero(result.mines[i])) == host.mines


# ----------------------------------------------------------------------------- the solver on them

EXACT_SOLVER = solver.SolverConfig(probabilities="exact", exact_limits=ONE_PASS)


def test_the_exact_solver_proves_and_rates_what_only_the_mine_count_settles():
    state = position("* 1 # * 1 # #")  # two mines: the last cell is safe
    cfg = env.EnvConfig(H=1, W=7, mine_count=2, guarantee_safe_neighborhood=False)
    proofs = solver.forced_moves(state, cfg, EXACT_SOLVER)
    assert np.flatnonzero(np.asarray(proofs.safe)).tolist() == [6] and not np.asarray(proofs.mines).any()
    probabilities = solver.mine_probabilities(state, cfg, EXACT_SOLVER)
    np.testing.assert_allclose(np.asarray(probabilities)[0], [0.5, 0, 0.5, 0.5, 0, 0.5, 0], atol=1e-6)


def test_the_lookahead_gives_msjax_exacts_progress_and_zero_chances():
    views = [(r, c, m) for r, c, m, _ in random_positions(seed=11, count=400, max_hidden=25) if r.shape == (5, 5)][:BATCH]
    analysis = analyse_batch(views)
    lowest = np.where(np.stack([~v[0] for v in views]), analysis.mine_prob, np.inf).min(axis=(1, 2))
    good = np.stack([~v[0] for v in views]) & (analysis.mine_prob <= lowest[:, None, None] + 1e-6)
    cell, progress, zero = search.lookahead_choice(
        jnp.asarray(np.stack([v[0] for v in views])), jnp.asarray(np.stack([v[1] for v in views])),
        jnp.asarray([v[2] for v in views]), jnp.asarray(analysis.log_layouts), jnp.asarray(good), 3, ONE_PASS,
    )
    _, valid = candidate_cells(jnp.asarray(np.stack([v[0] for v in views])), jnp.asarray(good), 3)
    several = 0
    for i, (revealed, counts, mines) in enumerate(views):
        assert good[i].reshape(-1)[int(cell[i])]
        if np.sum(valid[i]) < 2:  # one candidate: chosen without an analysis
            continue
        several += 1
        host = reference.analyse(revealed, counts, mines)
        want_zero, want_progress = reference.lookahead(revealed, int(cell[i]), host, mines, reference.ExactConfig(), {})
        assert float(progress[i]) == pytest.approx(want_progress, abs=1e-4)
        assert float(zero[i]) == pytest.approx(want_zero, abs=1e-4)
    assert several >= BATCH // 2


def test_the_lookahead_breaks_an_exact_progress_tie_by_the_zero_chance_on_an_expert_board():
    # An expert view from the reference player's games: the corner (0, 0) and the edge cell
    # (3, 0) are equally safe and give progress with the same probability (every safe
    # outcome proves a neighbour), but only (3, 0) can show a 0 (P = 0.45). The layout
    # counts are ~e^221, so float32 logs put ~1e-5 of noise on the two equal progress
    # chances: a tie tolerance below that broke the tie by noise and took the corner.
    rows = (".1001.11", ".1002221", "11012.222", ".112.4")
    revealed, counts = np.zeros((16, 30), bool), np.zeros((16, 30), np.int32)
    for r, row in enumerate(rows):
        for c, symbol in enumerate(row):
            revealed[r, c] = symbol != "."
            counts[r, c] = int(symbol) if symbol != "." else 0
    host = reference.analyse(revealed, counts, 99)
    want = reference.choose_guess(revealed, host, 99)
    assert want == 3 * 30
    good = np.zeros((1, 16, 30), bool)
    good[0, 0, 0] = good[0, 3, 0] = True
    analysis = device_exact.exact_analysis(jnp.asarray(revealed[None]), jnp.asarray(counts[None]), jnp.full(1, 99), ONE_PASS)
    assert bool(analysis.exact[0])
    cell, progress, zero = search.lookahead_choice(
        jnp.asarray(revealed[None]), jnp.asarray(counts[None]), jnp.full(1, 99), analysis.log_layouts,
        jnp.asarray(good), 2, ONE_PASS,
    )
    assert int(cell[0]) == want
    want_zero, want_progress = reference.lookahead(revealed, want, host, 99, reference.ExactConfig(), {})
    assert float(zero[0]) == pytest.approx(want_zero, abs=1e-4) and want_zero > 0.4
    assert float(progress[0]) == pytest.approx(want_progress, abs=1e-4)



def survival_by_host_search(revealed: np.ndarray, counts: np.ndarray, mines: int, cell: int, depth: int,
                            tolerance: float) -> float:
    """The survival score of ``cell`` at ``depth``, by ``msjax.reference.analyse`` of every view
    the game can reach: a view after is worth 1 when won or with a certainly safe cell,
    else at depth 0 its best safety, deeper the best score among its cells at least
    ``1 - tolerance`` times as safe as its safest."""
    total = reference.analyse(revealed, counts, mines).total
    score = 0.0
    for shown in range(9):
        after, after_counts = revealed.copy(), counts.copy()
        after.reshape(-1)[cell], after_counts.reshape(-1)[cell] = True, shown
        analysis = reference.analyse(after, after_counts, mines)
        if not analysis.total:
            continue
        risk = np.where(after, 1.0, analysis.mine_prob)
        if np.count_nonzero(~after) == mines or risk.min() < 1e-9:
            value = 1.0
        elif depth == 1:
            value = 1.0 - risk.min()
        else:
            near = ~after & (risk < 1.0) & (1.0 - risk >= (1.0 - tolerance) * (1.0 - risk.min()) - 1e-6)
            value = max(survival_by_host_search(after, after_counts, mines, c, depth - 1, tolerance)
                        for c in np.flatnonzero(near))
        score += analysis.total / total * value
    return score


SURVIVAL_BEATS_SAFETY = """
    # # * # # # # *
    # 2 1 1 1 # # #
    * 1 0 0 1 * # #
    # 2 1 1 1 # # #
    # # * 2 # # # #
    # # # * # # # *
    # # # # # # * #
    * # # # # # # *
"""


def test_the_survival_lookahead_gives_up_a_little_safety_to_survive_the_next_guess():
    # A guess view of the reference player's 8x8 games: (0, 3) is the safest cell (0.916), and
    # the reference player takes it, but a safe (0, 3) leaves a guess of 0.90 at best in one
    # outcome in ten; (0, 4) and (4, 4) are a little less safe (0.906) and whatever they
    # show, something is then certainly safe: 0.906 against 0.823 to survive two guesses.
    state = position(SURVIVAL_BEATS_SAFETY)
    revealed, counts = np.asarray(state.revealed), np.where(state.revealed, np.asarray(state.counts), 0)
    host = reference.analyse(revealed, counts, 10)
    assert reference.choose_guess(revealed, host, 10) == 3
    survival = search.SearchGuess(search.SearchConfig(
        lookahead_candidates=6, lookahead_score="survival", lookahead_tolerance=0.05))
    action, layer = solver.solver_action(state, jax.random.key(0), config_for(SURVIVAL_BEATS_SAFETY), EXACT_SOLVER,
                                         survival)
    assert int(layer) == 4
    scores = {c: survival_by_host_search(revealed, counts, 10, c, depth=1, tolerance=0.0) for c in (3, 4, 36)}
    assert int(action) in (4, 36)
    assert scores[int(action)] == pytest.approx(0.90605, abs=1e-4) and scores[3] == pytest.approx(0.82255, abs=1e-4)


def test_the_survival_lookahead_at_depth_two_equals_a_search_over_every_view():
    # Small views whose candidates all fit K, so the device's choice of candidates is the
    # host search's: each candidate's chance to survive three guesses. The views' own
    # analysis comes from the host (one compile fewer); the device analyses what follows.
    # With expand=2 only the two candidates of highest depth-1 score are scored at depth 2
    # (the others -1): views with more candidates check that cut, the rest the full search.
    views = [(r, c, m) for r, c, m, _ in random_positions(11, 300, max_hidden=12) if r.shape == (5, 3)]
    views = [v for v in views if not reference.analyse(*v).safe and np.count_nonzero(~v[0]) > v[2]][:3]
    assert len(views) == 3
    views += [views[0]] * (BATCH - len(views))
    references = [reference.analyse(*v) for v in views]
    revealed, counts = (jnp.asarray(np.stack([v[i] for v in views])) for i in (0, 1))
    mine_prob = jnp.asarray(np.stack([np.where(v[0], 0.0, a.mine_prob) for v, a in zip(views, references)]),
                            jnp.float32)
    log_layouts = jnp.asarray([np.log(float(a.total)) for a in references], jnp.float32)
    tolerance, expand = 0.5, 2
    scores = jax.jit(functools.partial(lookahead_scores, count=12, limits=ONE_PASS, depth=2, tolerance=tolerance,
                                       expand=expand))(
        revealed, counts, jnp.asarray([v[2] for v in views], jnp.int32), log_layouts,
        nearly_safest(revealed, mine_prob, tolerance), mine_prob=mine_prob,
    )
    checked = cut = 0
    for b, (r, c, m) in enumerate(views[:3]):
        kept, left_out = [], []
        for cell, valid, score in zip(*(np.asarray(x[b]) for x in (scores.cells, scores.valid, scores.survival))):
            if not valid:
                continue
            first = survival_by_host_search(r, c, m, int(cell), 1, tolerance)
            if score == -1.0:
                left_out.append(first)
            else:
                assert score == pytest.approx(survival_by_host_search(r, c, m, int(cell), 2, tolerance), abs=1e-4)
                kept.append(first)
        assert len(kept) == min(expand, len(kept) + len(left_out))
        assert min(kept) >= max(left_out, default=0.0) - 1e-4  # the cut keeps the best at depth 1
        checked, cut = checked + len(kept), cut + len(left_out)
    assert checked >= 5 and cut >= 1


def expert_openings():
    """Two 16x30x99 views after one click at (3, 3): the click alone, showing a 1 (no safe
    first-click neighbourhood), and the opening a safe neighbourhood cascades (seed 0)."""
    revealed, counts = np.zeros((16, 30), bool), np.zeros((16, 30), np.int32)
    revealed[3, 3], counts[3, 3] = True, 1
    board = reference.Board(16, 30, 99, True, rng=np.random.default_rng(0))
    board.reveal(3 * 30 + 3)
    return [(revealed, counts), (board.revealed.copy(), np.where(board.revealed, board.counts, 0).astype(np.int32))]


def test_two_sum_keeps_the_rounding_error_of_a_compiled_float32_sum():
    # the layout counts' logs rely on it: XLA must not reassociate (a + b) - a into b
    total, error = jax.jit(two_sum)(jnp.float32(2.0**24), jnp.float32(1.0))
    assert float(total) == 2.0**24 and float(error) == 1.0


def test_the_survival_scores_of_open_expert_boards_agree_with_msjax_exact_in_float64():
    # One click on an expert board leaves ~e^240 layouts: float32 lgamma put ~3e-4 of
    # error on their logs, and the chances to survive two guesses, ratios of those counts,
    # were off by as much and came out above the chance to survive the first.
    for revealed, counts in expert_openings():
        host = reference.analyse(revealed, counts, 99)
        view = (jnp.asarray(revealed[None]), jnp.asarray(counts[None]), jnp.full(1, 99))
        analysis = device_exact.exact_analysis(*view, ONE_PASS)
        assert bool(analysis.exact[0])
        np.testing.assert_allclose(np.asarray(analysis.mine_prob[0]), host.mine_prob, atol=1e-6)
        assert float(analysis.log_layouts[0]) == pytest.approx(np.log(float(host.total)), abs=2e-5)
        good = nearly_safest(view[0], analysis.mine_prob, 0.1)
        scores = lookahead_scores(*view, analysis.log_layouts, good, 6, ONE_PASS, analysis.mine_prob)
        assert np.sum(scores.valid[0]) == 6
        for cell, survival in zip(np.asarray(scores.cells[0]), np.asarray(scores.survival[0])):
            assert survival <= 1.0 - float(analysis.mine_prob[0].reshape(-1)[cell]) + 1e-6
            assert survival == pytest.approx(survival_by_host_search(revealed, counts, 99, int(cell), 1, 0.1), abs=2e-5)

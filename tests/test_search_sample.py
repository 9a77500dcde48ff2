"""Exact uniform layout sampling (msjax.search.sample) and click outcomes (msjax.search.outcome)
against brute force and the NumPy reference (msjax.reference).

Every check shares one compiled sampler (8 views of 5x5, 12,500 samples each: 10^5 in
all) and fixed keys, so they are deterministic; the statistical thresholds are set so that
a correct sampler fails them with a chance below 1e-4 per test, while a sampler off by a few
percent on any cell or layout fails them. ``LIMITS`` is one pass of 128 states (a third of
the default's compile). Views past the limits are flagged by the analysis' own code
(``forward_pass``'s flags, tested in ``test_solver_exact.py``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats
from test_reference import consistent_layouts, random_positions

from msjax import reference
from msjax.search.outcome import click_outcomes
from msjax.search.sample import state_parents, sample_layouts
from msjax.solver.types import ExactLimits

BATCH, SAMPLES = 8, 12_500
LIMITS = ExactLimits(first_states=128, middle_states=0, max_states=128)


def draw(views, key=0, limits: ExactLimits = LIMITS, samples: int = SAMPLES):
    """``sample_layouts`` of up to ``BATCH`` views, padded with copies of the first."""
    padded = list(views) + [views[0]] * (BATCH - len(views))
    result = sample_layouts(
        jax.random.key(key), jnp.asarray(np.stack([v[0] for v in padded])),
        jnp.asarray(np.stack([v[1] for v in padded])), jnp.asarray([v[2] for v in padded], jnp.int32),
        samples, limits,
    )
    return jax.tree.map(lambda x: np.asarray(x)[: len(views)], result)


def shows(mines: np.ndarray) -> np.ndarray:
    """int[..., H, W]: the number each cell would show under each layout."""
    padded = np.pad(mines.astype(np.int32), [(0, 0)] * (mines.ndim - 2) + [(1, 1), (1, 1)])
    height, width = mines.shape[-2:]
    return sum(padded[..., 1 + dr : 1 + dr + height, 1 + dc : 1 + dc + width]
               for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0))


@pytest.fixture(scope="module")
def five_by_five():
    # seed 7's first eight 5x5 views: 9 to 21 hidden cells, merging DP branches of unequal
    # counts and cells off the frontier (a sampler that picks parents uniformly fails here)
    views = [(r, c, m) for r, c, m, _ in random_positions(seed=7, count=400, max_hidden=25) if r.shape == (5, 5)]
    return views[:BATCH], draw(views[:BATCH])


def test_every_sample_fits_its_view(five_by_five):
    views, samples = five_by_five
    assert samples.exact.all() and not samples.inconsistent.any()
    for (revealed, counts, mines), drawn in zip(views, samples.mines):
        assert (drawn.sum(axis=(1, 2)) == mines).all()
        assert not (drawn & revealed).any()
        assert (shows(drawn)[:, revealed] == counts[revealed]).all()


def test_each_cell_is_a_mine_as_often_as_its_exact_probability(five_by_five):
    views, samples = five_by_five
    tested = 0
    for (revealed, counts, mines), drawn in zip(views, samples.mines):
        probability = reference.analyse(revealed, counts, mines).mine_prob
        frequency = drawn.mean(axis=0)
        uncertain = ~revealed & (probability > 0) & (probability < 1)
        z = (frequency - probability)[uncertain] / np.sqrt(probability * (1 - probability) / SAMPLES)[uncertain]
        assert np.all(np.abs(z) < 4.5), (z, revealed, counts)
        certain = ~revealed & ~uncertain
        assert (frequency[certain] == probability[certain]).all()  # proofs hold in every sample
        tested += uncertain.sum()
    assert tested >= 20


def test_every_consistent_layout_is_equally_likely(five_by_five):
    views, samples = five_by_five
    checked = 0
    for (revealed, counts, mines), drawn, log_layouts in zip(views, samples.mines, samples.log_layouts):
        if np.count_nonzero(~revealed) > 16:  # brute force stays quick
            continue
        layouts = consistent_layouts(revealed, counts, mines)
        assert float(log_layouts) == pytest.approx(np.log(len(layouts)), abs=1e-4)  # the sampler counts them too
        if not 2 <= len(layouts) <= 2_000:
            continue
        index = {layout.tobytes(): i for i, layout in enumerate(layouts)}
        seen = np.bincount([index[d.reshape(-1).tobytes()] for d in drawn], minlength=len(layouts))
        statistic, p_value = stats.chisquare(seen)
        assert p_value > 1e-5, (len(layouts), statistic)
        checked += 1
    assert checked >= 3


def test_a_view_without_layouts_is_flagged(five_by_five):
    views, _ = five_by_five
    impossible = (views[0][0], views[0][1], 0)  # numbers, and no mine on the board: no layout fits
    result = draw([impossible, views[0]])
    assert not result.exact[0] and result.inconsistent[0] and not result.mines[0].any()
    assert result.exact[1]


# ----------------------------------------------------------------------------- click outcomes

CLICK_SAMPLES = 4_000


def test_a_click_outcome_has_exact_chances_and_views_sampled_by_the_rules(five_by_five):
    views, _ = five_by_five
    views = views[:4]
    probability = [reference.analyse(r, c, m).mine_prob for r, c, m in views]
    cells = [int(np.argmin(np.where(r, 2.0, p))) for (r, _, _), p in zip(views, probability)]  # the safest cell
    padded = views + [views[0]] * (BATCH - len(views))
    result = click_outcomes(
        jax.random.key(1), jnp.asarray(np.stack([v[0] for v in padded])), jnp.asarray(np.stack([v[1] for v in padded])),
        jnp.asarray([v[2] for v in padded], jnp.int32), jnp.asarray(cells + cells[:1] * (BATCH - len(views))),
        CLICK_SAMPLES, LIMITS,
    )
    result = jax.tree.map(np.asarray, result)
    for i, ((revealed, counts, mines), cell) in enumerate(zip(views, cells)):
        assert result.exact[i]
        safe = 1.0 - probability[i].reshape(-1)[cell]
        assert result.safe[i] == pytest.approx(safe, abs=1e-5)
        # the number shown, exactly: the share of the brute-force layouts that show it
        layouts = consistent_layouts(revealed, counts, mines) if np.count_nonzero(~revealed) <= 16 else None
        if layouts is not None:
            kept = layouts[~layouts[:, cell]]
            shown = shows(kept.reshape(-1, *revealed.shape)).reshape(len(kept), -1)[:, cell]
            want = np.bincount(shown, minlength=9) / len(layouts)
            np.testing.assert_allclose(result.chance[i], want, atol=1e-5)
        # the samples: lost exactly when the cell was a mine, as often as it is one
        hit = result.hit_mine[i]
        assert abs(hit.mean() - (1 - safe)) < 4.5 * np.sqrt(safe * (1 - safe) / CLICK_SAMPLES) + 1e-9
        opened = result.next_revealed[i]
        assert (opened[:, revealed]).all() and (opened[~hit].reshape(-1, revealed.size)[:, cell]).all()
        assert not (opened[hit] & ~revealed).any()  # a mine opens nothing
        # a safe click shows the number the chances give, and a 0 opens its neighbours
        numbers = result.next_counts[i][~hit].reshape(-1, revealed.size)[:, cell]
        frequency = np.bincount(numbers, minlength=9) / CLICK_SAMPLES
        assert np.abs(frequency - result.chance[i]).max() < 4.5 * np.sqrt(0.25 / CLICK_SAMPLES)
        around = np.zeros(revealed.size, bool)
        around[list(reference.neighbour_lists(*revealed.shape)[cell])] = True
        zeros = opened[~hit][numbers == 0].reshape(-1, revealed.size)
        assert zeros[:, around].all()
        single = opened[~hit][numbers > 0].reshape(-1, revealed.size)
        assert (single.sum(axis=1) == revealed.sum() + 1).all()  # a number opens itself alone


def test_each_state_knows_its_parents_and_a_crowded_one_is_flagged():
    # children 0..7 of a table of 4 states (0-3: safe branches, 4-7: mine branches)
    dest = jnp.asarray([0, 1, 0, -1, 0, 2, 0, 0], jnp.int32)
    parents, is_parent, too_many = (np.asarray(x) for x in state_parents(dest, 4))
    assert sorted(parents[1][is_parent[1]]) == [1] and sorted(parents[2][is_parent[2]]) == [5]
    assert not is_parent[3].any()
    assert is_parent[0].all() and set(parents[0]) <= {0, 2, 4, 6, 7}  # five parents: four kept ...
    assert too_many.tolist() == [True, False, False, False]  # ... and the state flagged


# ----------------------------------------------------------------------------- arguments

DOOR_VIEW = {"revealed": np.array([[[False] * 3, [True] * 3]]), "counts": np.array([[[0, 0, 0], [1, 2, 1]]]),
             "mine_count": np.array([2])}


@pytest.mark.parametrize("changed, message", [
    ({"num_samples": 0}, r"sample_layouts\.num_samples=0 must be an int >= 1"),
    ({"num_samples": 2.0}, r"sample_layouts\.num_samples=2\.0 must be an int >= 1"),
    ({"revealed": DOOR_VIEW["revealed"][0]}, r"sample_layouts\.revealed has shape \(2, 3\); it must be bool\[B, H, W\]"),
    ({"mine_count": np.array([2.7])}, r"sample_layouts\.mine_count has dtype float32"),
    ({"limits": "small"}, r"sample_layouts\.limits='small' must be an ExactLimits"),
])
def test_sample_layouts_names_an_argument_it_cannot_take(changed, message):
    arguments = {**DOOR_VIEW, "num_samples": 4, "limits": LIMITS, **changed}
    with pytest.raises(ValueError, match=message):
        sample_layouts(jax.random.key(0), **arguments)


@pytest.mark.parametrize("changed, message", [
    ({"cell": np.array([[1]])}, r"click_outcomes\.cell has shape \(1, 1\); it must be int\[B\] \(B=1: one per view\)"),
    ({"cell": np.array([1.0])}, r"click_outcomes\.cell has dtype float32"),
    ({"revealed": DOOR_VIEW["revealed"].astype(np.int8)}, r"click_outcomes\.revealed has dtype int8"),
    ({"num_samples": -1}, r"click_outcomes\.num_samples=-1 must be an int >= 1"),
])
def test_click_outcomes_names_an_argument_it_cannot_take(changed, message):
    arguments = {**DOOR_VIEW, "cell": np.array([1]), "num_samples": 4, "limits": LIMITS, **changed}
    with pytest.raises(ValueError, match=message):
        click_outcomes(jax.random.key(0), **arguments)

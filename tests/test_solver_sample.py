"""Exact uniform layout sampling (msjax.solver.sample) against brute force and msjax.exact.

Every check shares one compiled sampler (8 views of 5x5, 12,500 samples each: 10^5 in
all) and fixed keys, so they are deterministic; the statistical thresholds are set so that
a correct sampler fails them with a chance below 1e-4 per test, while a sampler off by a few
percent on any cell or layout fails them. ``LIMITS`` has a first table of 2 states, so most
views are drawn again with the larger one (the path of an overflowing view).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats
from drawings import view
from test_exact import consistent_layouts, random_positions

from msjax import exact
from msjax.solver.sample import sample_layouts
from msjax.solver.types import ExactLimits

BATCH, SAMPLES = 8, 12_500
LIMITS = ExactLimits(first_states=2, middle_states=0, max_states=128)


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
        probability = exact.analyse(revealed, counts, mines).mine_prob
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
    for (revealed, counts, mines), drawn in zip(views, samples.mines):
        if np.count_nonzero(~revealed) > 16:  # brute force stays quick
            continue
        layouts = consistent_layouts(revealed, counts, mines)
        if not 2 <= len(layouts) <= 2_000:
            continue
        index = {layout.tobytes(): i for i, layout in enumerate(layouts)}
        seen = np.bincount([index[d.reshape(-1).tobytes()] for d in drawn], minlength=len(layouts))
        statistic, p_value = stats.chisquare(seen)
        assert p_value > 1e-5, (len(layouts), statistic)
        checked += 1
    assert checked >= 3


LONG_FRONTIER = """
    * # # # #
    # 1 # 0 #
    # # # # #
    # 0 # 1 #
    # # # # *
"""  # 21 frontier cells


def test_views_past_the_limits_or_without_layouts_are_flagged(five_by_five):
    views, _ = five_by_five
    long_frontier = (*view(LONG_FRONTIER), 2)
    impossible = (views[0][0], views[0][1], 0)  # numbers, and no mine on the board: no layout fits
    result = draw([impossible, views[0]])
    assert not result.exact[0] and result.inconsistent[0] and not result.mines[0].any()
    assert result.exact[1]
    short = ExactLimits(max_frontier=16, first_states=32, middle_states=0, max_states=32)
    result = draw([long_frontier, views[0]], limits=short, samples=4)
    assert not result.exact[0] and not result.inconsistent[0] and not result.mines[0].any()  # nothing known
    assert result.exact[1]

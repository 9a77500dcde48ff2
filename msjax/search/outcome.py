"""The outcome of a click, for one cell of each view of a batch: exact chances, sampled views.

``click_outcomes`` answers, for a hidden ``cell`` of a view: how likely is it safe, what
number will it show, and what will the board look like after it. The chances are exact:
the view is analysed with the cell revealed as each number ``v`` it could show
(``msjax.search.lookahead.number_outcomes``), so ``P(safe and shows v)`` is a ratio of
layout counts. The view after the click is exact too when the cell shows ``v > 0`` (the
cell alone opens); a ``0`` opens its neighbours and cascades, and that view depends on
numbers no one has seen, so the views after the click are *sampled*: ``N`` layouts drawn
uniformly among those that fit the view (``msjax.search.sample``), and the click played on
each by the env's own rules (``msjax.env.step``, cascade included). The result says which
part is which: ``chance`` is exact where ``exact``; the ``next_*`` fields are samples.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from msjax import env
from msjax.checks import check_array, check_value, ints
from msjax.search.lookahead import number_outcomes
from msjax.search.sample import sample_layouts
from msjax.solver.types import ExactLimits, check_views


class ClickOutcomes(NamedTuple):
    """What clicking one cell of each view of a batch leads to.

    Attributes:
      safe: float32[B], P(the cell is safe), exact (0 where not ``exact``).
      chance: float32[B, 9], P(the cell is safe and shows v), exact; sums to ``safe``.
      exact: bool[B], the view and every view the click leads to fit the analysis'
        limits (else the chances are incomplete and the samples empty).
      next_revealed: bool[B, N, H, W], sampled: the revealed cells after the click, on
        ``N`` layouts drawn uniformly among those that fit the view (cascades included).
      next_counts: int8[B, N, H, W], sampled: the numbers shown after the click (0 where hidden).
      hit_mine: bool[B, N], sampled: the layout has a mine under the cell (the game is lost).
      won: bool[B, N], sampled: the click opens the last safe cell.
    """

    safe: jax.Array
    chance: jax.Array
    exact: jax.Array
    next_revealed: jax.Array
    next_counts: jax.Array
    hit_mine: jax.Array
    won: jax.Array


@functools.partial(jax.jit, static_argnames=("num_samples", "limits"))
def click_outcomes(
    key: jax.Array, revealed: jax.Array, counts: jax.Array, mine_count: jax.Array, cell: jax.Array,
    num_samples: int, limits: ExactLimits = ExactLimits(),
) -> ClickOutcomes:
    """The outcome of clicking ``cell`` in each view (module docstring).

    Args:
      key: a PRNG key; revealed: bool[B, H, W]; counts: int[B, H, W] (read where revealed);
      mine_count: int[B]; cell: int32[B], a hidden cell of each view (row-major).
      num_samples: N, static: the views after the click sampled per view.
      limits: the exact analysis' static sizes.

    Returns:
      ``ClickOutcomes``.

    Raises:
      ValueError: an argument of another shape, dtype or range (``check_views``).
    """
    check_views("click_outcomes", revealed, counts, mine_count, limits)
    check_array("click_outcomes", "cell", cell, f"int[B] (B={revealed.shape[0]}: one per view)", 1, "iu",
                revealed.shape[:1])
    check_value("click_outcomes", "num_samples", num_samples, ints(1))
    num_boards, height, width = revealed.shape
    counts = counts.astype(jnp.int32)
    mine_count = jnp.asarray(mine_count, jnp.int32)
    cell = jnp.asarray(cell, jnp.int32)
    layouts = sample_layouts(key, revealed, counts, mine_count, num_samples, limits)  # counts the layouts too
    outcomes = number_outcomes(revealed, counts, mine_count, layouts.log_layouts, cell[:, None],
                               layouts.exact[:, None], limits)
    exact = layouts.exact & outcomes.known[:, 0]
    chance = jnp.where(exact[:, None], outcomes.chance[:, 0], 0.0)
    cfg = env.EnvConfig(H=height, W=width, mine_count=1, guarantee_safe_neighborhood=False)

    def play(mines, seen, target):
        state = env.from_mines(mines, cfg)
        state = state.replace(revealed=seen)
        state, _, _, info = env.step(state, target, cfg)
        return state.revealed, jnp.where(state.revealed, state.counts, 0).astype(jnp.int8), info["lost"], info["won"]

    over_samples = jax.vmap(play, in_axes=(0, None, None))
    next_revealed, next_counts, hit_mine, won = jax.vmap(over_samples)(layouts.mines, revealed, cell)
    sampled = exact[:, None, None, None]
    return ClickOutcomes(
        safe=jnp.sum(chance, axis=1),
        chance=chance,
        exact=exact,
        next_revealed=next_revealed & sampled,
        next_counts=jnp.where(sampled, next_counts, jnp.int8(0)),
        hit_mine=hit_mine & exact[:, None],
        won=won & exact[:, None],
    )



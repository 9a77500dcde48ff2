"""The leaves of a network's search: what a click leads to on layouts drawn for the view, and
the mean value of those views where the click is safe.

Shared by the players that put a network's values under the exact analysis
(``PolicyLookahead``, ``NetworkSearch``): layouts drawn uniformly for each view
(``sample_layouts``), each candidate click played on each layout by the env's own rules
(cascades included), the views reached valued (the network's value head, 1 where the
click wins) and averaged over the draws where the click is safe. Reads only the views: the
drawn layouts stand in for the hidden mines.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from msjax import env as ms_env
from msjax import models
from msjax.search.sample import LayoutSamples, sample_layouts
from msjax.solver import ExactLimits


def check_search_agent(agent: Any, player: str) -> None:
    """Raises ``ValueError`` unless ``agent`` is a greedy network agent without proofs on
    one board size that carries no beliefs over moves (a searched leaf has no previous
    move); ``player`` names the player built on it in the message."""
    if agent.proofs != "off" or not agent.greedy or agent.env_cfg.boards:
        raise ValueError(f"{player} plays a greedy agent without proofs on one board size")
    if agent.carries_beliefs:
        raise ValueError(f"{player} does not carry beliefs over moves (model.carry_beliefs)")


def draw_layouts(keys: jax.Array, states: ms_env.EnvState, samples: int, limits: ExactLimits) -> LayoutSamples:
    """``samples`` layouts drawn uniformly for each of ``C`` views (``states`` with a leading
    ``[C]``), each view with its own key (``keys``: ``[C]``), so a view's draws do not depend on
    the other views: ``LayoutSamples`` with ``mines`` bool[C, N, H, W], ``exact`` bool[C]."""
    draw = lambda key, *view: sample_layouts(key, *(x[None] for x in view), samples, limits)
    drawn = jax.vmap(draw)(keys, states.revealed, states.counts, states.mine_count)
    return jax.tree.map(lambda x: x[:, 0], drawn)


def clicked_views(
    states: ms_env.EnvState, mines: jax.Array, cells: jax.Array, env_cfg: ms_env.EnvConfig,
) -> tuple[ms_env.EnvState, jax.Array, jax.Array]:
    """Each of ``K`` cells clicked on each of ``N`` layouts of each of ``C`` views.

    Args:
      states: ``C`` views (leading ``[C]``); mines: bool[C, N, H, W], layouts that fit them;
      cells: int32[C, K], a cell of each view per candidate (row-major).

    Returns:
      ``(children, lost, won)``: the games after the click, leading ``[C, K, N]`` (the
      layout's mines in place of the view's hidden ones, cascades included), and
      bool[C, K, N] each: the click hit a mine, the click won the game.
    """

    def click(state, mine_mask, cell):
        placed = ms_env.from_mines(mine_mask, env_cfg)
        child = state.replace(mine_mask=placed.mine_mask, counts=placed.counts)
        child, _, _, info = ms_env.step(child, ms_env.encode_action(cell, False, env_cfg), env_cfg)
        return child, info["lost"], info["won"]

    on_layouts = jax.vmap(click, in_axes=(None, 0, None))  # [N]
    on_cells = jax.vmap(on_layouts, in_axes=(None, None, 0))  # [K, N]
    return jax.vmap(on_cells)(states, mines, cells)


def network_values(agent: Any, params: Any, states: ms_env.EnvState) -> jax.Array:
    """f32[*b]: ``agent``'s value head (with ``params``) on the views of ``states`` (any
    leading shape ``[*b]``), evaluated as one batch."""
    batch = states.revealed.shape[:-2]
    flat = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[len(batch):]), states)
    obs = jax.vmap(ms_env.observe, in_axes=(0, None))(flat, agent.env_cfg)
    _, values, _ = models.apply_network(params, agent.model_cfg, obs, agent.symmetric)
    return values.reshape(batch)


def mean_over_safe_draws(values: jax.Array, lost: jax.Array, won: jax.Array, exact: jax.Array) -> jax.Array:
    """f32[C, K]: each candidate's mean leaf value over the draws where it is safe.

    Args:
      values: f32[C, K, N], the value of each view reached; lost, won: bool[C, K, N] (a won
        view is worth 1); exact: bool[C], the view's draws are exact.

    Returns:
      The mean over the safe draws; 1 where no draw has the candidate safe or the draws
      are not exact (so a score that multiplies it by the exact chance to be safe falls
      back to that chance).
    """
    leaf = jnp.where(won, 1.0, values)
    safe_draws = jnp.sum(~lost, axis=2)
    mean = jnp.sum(jnp.where(lost, 0.0, leaf), axis=2) / jnp.maximum(safe_draws, 1)
    return jnp.where((safe_draws > 0) & exact[:, None], mean, 1.0)

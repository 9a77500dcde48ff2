"""A policy network looking past its move (``PolicyLookahead``): of the reveals its policy
likes best, a proved-safe one, else the one of best exact chance to be safe times the mean
value (the network's value head) of the views it leads to on drawn layouts.

A search player built on the solver's exact analysis (``solver.exact_analysis``), the
sampler (``sample_layouts``) and a network's values: ``policy_lookahead(agent, ...)`` makes
one of an ``msjax.agent.Agent`` (it reads the agent's ``params``, ``model_cfg``, ``env_cfg``
and ``symmetric``). It is a ``msjax.agent.Player`` and a pytree whose leaves are the agent's
parameters, so compiled games take new parameters without recompiling.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from msjax import env as ms_env
from msjax import models
from msjax.search.leaves import check_search_agent, clicked_views, draw_layouts, mean_over_safe_draws, network_values
from msjax.solver import ExactLimits, exact_analysis
from msjax.solver.grid import in_chunks

LEAVES = ("value", "safe")
"""What ``PolicyLookahead.leaf`` may value a view by."""


@struct.dataclass
class PolicyLookahead:
    """An agent playing with a look past its move (``lookahead_actions``).

    Attributes:
      agent: the ``msjax.agent.Agent`` (greedy, without proofs, on one board size).
      candidates: ``K``, the reveals the policy likes best that are looked at (static).
      samples: the layouts drawn per view to play each candidate on (the same layouts for
        every candidate; static).
      leaf: the value of a view a candidate leads to: ``"value"``, the network's value head
        (1 where the click wins the game); ``"safe"``, 1 (so the score is the exact chance
        to be safe alone: the look-ahead's control; static).
      limits: the static sizes of the look-ahead's exact analysis and draws.
    """

    agent: Any
    candidates: int = struct.field(pytree_node=False)
    samples: int = struct.field(pytree_node=False, default=16)
    leaf: str = struct.field(pytree_node=False, default="value")
    limits: ExactLimits = struct.field(pytree_node=False, default=ExactLimits())

    @property
    def env_cfg(self) -> ms_env.EnvConfig:
        """The game it plays (its agent's)."""
        return self.agent.env_cfg

    def for_board(self, env_cfg: ms_env.EnvConfig) -> PolicyLookahead:
        """The same player on ``env_cfg`` (its agent's ``for_board``: the same observation
        channels)."""
        return self.replace(agent=self.agent.for_board(env_cfg))

    def act(self, state: ms_env.EnvState, key: jax.Array | None = None) -> jax.Array:
        """int32[]: the move on one board."""
        key = jax.random.key(0) if key is None else key
        return lookahead_actions(self, jax.tree.map(lambda x: x[None], state), key[None])[0]

    def act_batch(self, states: ms_env.EnvState, keys: jax.Array) -> jax.Array:
        """int32[B]: the moves on a batch of boards (``states`` and ``keys`` with a leading
        ``[B]``), searching only the views that need it (``lookahead_actions``)."""
        return lookahead_actions(self, states, keys)


def policy_lookahead(
    agent: Any, candidates: int = 4, samples: int = 16, leaf: str = "value", limits: ExactLimits = ExactLimits(),
) -> PolicyLookahead:
    """``agent`` looking past its move: ``candidates`` of the policy's reveals scored on
    ``samples`` drawn layouts, leaves valued by ``leaf`` (``"value"`` or ``"safe"``), the
    views analysed within ``limits``.

    Raises:
      ValueError: ``candidates`` or ``samples`` below 1 (or ``candidates`` above the
        cells), another ``leaf``, or an agent with proofs, sampling, a board mix or carried
        beliefs (its searched leaves have no previous move).
    """
    num_cells = agent.env_cfg.num_cells
    if not isinstance(candidates, int) or not 1 <= candidates <= num_cells:
        raise ValueError(f"candidates={candidates!r} must be an int in [1, {num_cells}]")
    if not isinstance(samples, int) or samples < 1:
        raise ValueError(f"samples={samples!r} must be an int >= 1")
    if leaf not in LEAVES:
        raise ValueError(f"leaf={leaf!r} must be one of {LEAVES}")
    check_search_agent(agent, "the look-ahead")
    return PolicyLookahead(agent, candidates, samples, leaf, limits)


def lookahead_actions(player: PolicyLookahead, states: ms_env.EnvState, keys: jax.Array) -> jax.Array:
    """int32[B]: ``player``'s moves (its agent looking ahead), on a batch of boards.

    The policy's ``K = player.candidates`` most likely legal reveals of each view are its
    candidates, and the view is analysed exactly (``solver.exact_analysis``). Where a
    candidate is proved safe, the first such in the policy's order is played. Elsewhere (a
    guess) each candidate's score is its exact chance to be safe times, with
    ``leaf="value"``, the mean value of the views it leads to: ``N =
    player.samples`` layouts that fit the view are drawn uniformly
    (``sample_layouts``), each candidate is clicked on each of them by the env's own
    rules (cascades included), and a view reached is worth the network's value head there
    (1 where the click wins; the mean over the layouts where the candidate is safe, 1 where
    no draw has it safe). The best score is played, ties to the policy's order. Before the
    first click and beyond the exact analysis' limits, the policy plays alone.

    Only the guess views are searched, gathered in chunks of a sixteenth of the batch
    (``solver.grid.in_chunks``): ``K * N`` network evaluations each. Reads only the views
    (the drawn layouts stand in for the hidden mines); each board's key draws its layouts,
    so a board's move does not depend on the rest of the batch.
    """
    agent = player.agent
    env_cfg, num_cells, num_boards = agent.env_cfg, agent.env_cfg.num_cells, keys.shape[0]
    obs = jax.vmap(ms_env.observe, in_axes=(0, None))(states, env_cfg)
    logits, _, _ = models.apply_network(agent.params, agent.model_cfg, obs, agent.symmetric)
    legal = jax.vmap(ms_env.action_mask, in_axes=(0, None))(states, env_cfg)
    _, cells = jax.lax.top_k(models.masked_logits(logits[:, :num_cells], legal[:, :num_cells]), player.candidates)
    at_candidates = lambda x: jnp.take_along_axis(x.reshape(num_boards, -1), cells, axis=1)  # [B, K]
    analysis = exact_analysis(states.revealed, states.counts, states.mine_count, player.limits)
    candidate = at_candidates(legal[:, :num_cells])
    proved = candidate & at_candidates(analysis.safe)
    score = 1.0 - at_candidates(analysis.mine_prob)
    searched = analysis.exact & states.first_click_done
    if player.leaf == "value":
        guess = searched & ~jnp.any(proved, axis=1)
        leaves = functools.partial(_mean_leaf_values, player)
        chunk = max(1, num_boards // 16)
        score = score * in_chunks(guess, chunk, leaves, (states, cells, keys), jnp.ones(cells.shape), axis=0)
    best = jnp.where(jnp.any(proved, axis=1), jnp.argmax(proved, axis=1), jnp.argmax(jnp.where(candidate, score, -jnp.inf), axis=1))
    chosen = jnp.take_along_axis(cells, best[:, None], axis=1)[:, 0]
    policy = jax.vmap(models.choose_action, in_axes=(0, 0, 0, None))(logits, legal, keys, True)
    return jnp.where(searched, chosen, policy).astype(jnp.int32)


def _mean_leaf_values(player: PolicyLookahead, inputs) -> jax.Array:
    """f32[C, K]: each candidate's mean leaf value over drawn layouts where it is safe
    (``lookahead_actions``), for a chunk of ``C`` views."""
    states, cells, keys = inputs
    agent = player.agent
    layouts = draw_layouts(keys, states, player.samples, player.limits)
    children, lost, won = clicked_views(states, layouts.mines, cells, agent.env_cfg)  # [C, K, N]
    return mean_over_safe_draws(network_values(agent, agent.params, children), lost, won, layouts.exact)

"""A search player that asks the network (``NetworkSearch``): Gumbel AlphaZero's root
(Danihelka et al. 2022, "Policy improvement by planning with Gumbel") over the policy's
reveals, each click's value its chance node folded in exactly.

On each view of a batch (``search_policy``):

1. The view is analysed exactly (``solver.exact_analysis``). Where a legal reveal is proved
   safe, the policy's favourite proved-safe reveal is played, without search.
2. Before the first click, and where the view is beyond the analysis' limits, the policy
   plays alone (greedy).
3. Elsewhere (a guess) ``mctx.gumbel_muzero_policy`` searches the root: the prior is the
   policy's logits over the legal reveals (with ``tolerance=t`` below 1, over those at
   least ``1 - t`` times as safe as the safest, ``search.nearly_safest``: the search
   player's candidates), and a click ``c`` is worth
   ``Q(c) = P(c safe | view) * mean_n leaf(view after c on layout n)``: the exact chance
   from the analysis times the mean, over ``N = samples`` layouts drawn uniformly for the
   view (``sample_layouts``; the same draws for every click), of the leaf value of the view
   the click leads to on the draws where it is safe (1 where the click wins; the network's
   value head, or 1 everywhere with ``leaf="safe"``, the control). With
   ``leaf="survival"`` a click is worth its exact chance to survive this guess and the next
   one (the search player's survival score at depth 1, ``search.lookahead.survival_scores``:
   every number the cell can show analysed exactly, no draws).
4. With ``endgame=L``, a guess view that at most ``L`` layouts fit is solved over its whole
   game tree (``search.solve_endgame``, the search player's endgame) and its best click is
   played without search, as a proof is.

The tree stops at the root's children (``max_depth=1``): a click is a chance node whose
outcomes (the number the cell shows and the cascade it opens) are many views, one per
draw, so a child is no single state from which a decision could be searched further; its
value is the exact expectation above, and the leaf value stands for the game after it.
(Stochastic MuZero's chance nodes need an enumerable set of outcomes with a learned model
per node; here the outcomes come from the exact analysis and the env's own rules.) So the
recurrent function returns the value with reward 0 and discount 1, and the embedding mctx
keeps per node is a placeholder: the root's view and draws are the recurrent function's
own, built per view, since no node below the root is ever expanded.

A click's value is a deterministic function of the view and its draws, so a second visit
would return the same number: the search considers ``simulations`` clicks
(``max_num_considered_actions``), and Sequential Halving's first round visits each of the
``simulations`` clicks best by Gumbel noise plus logits once; the move is the one of
highest noise + logits + sigma(completed Q) (mctx's ``qtransform_completed_by_mix_value``,
``value_scale``), and the improved policy, softmax(logits + sigma(completed Q)) over the
legal reveals, is mctx's ``action_weights``. The Gumbel noise is off by default
(``gumbel_scale=0``: the move depends on the view and the draws alone); with a scale it is
drawn from each board's key, as the layouts are, so a board's move never depends on the
rest of the batch.

Only the guess views are searched, gathered in chunks of a sixteenth of the batch
(``solver.grid.in_chunks``): ``simulations * samples`` network evaluations each.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from msjax import env as ms_env
from msjax import models
from msjax.checks import Allowed, check_value, ints, numbers
from msjax.search.endgame import MAX_ENDGAME_LAYOUTS, within_bound
from msjax.search.guess import endgame_cell
from msjax.search.leaves import check_search_agent, clicked_views, draw_layouts, mean_over_safe_draws, network_values
from msjax.search.lookahead import NUMBERS, nearly_safest, survival_scores
from msjax.solver import ExactLimits, exact_analysis
from msjax.solver.grid import in_chunks, player_view

LEAVES = ("value", "safe", "survival")
"""What ``NetworkSearch.leaf`` may value a view by, besides a function of the views."""
MAX_SIMULATIONS = 32
"""The most simulations (clicks considered) a root may have."""

LeafValue = Callable[[ms_env.EnvState], jax.Array]
"""A leaf value as a function: the games after a click (leading ``[M]``) -> f32[M], their
worth; it must read only the views (``revealed``, ``counts``, ``flags``)."""


@struct.dataclass
class NetworkSearch:
    """An agent whose guesses are searched (module docstring; ``search_policy``).

    Attributes:
      agent: the ``msjax.agent.Agent`` (greedy, without proofs, on one board size).
      simulations: the root's budget, the clicks considered and valued (static, 1..32).
      samples: ``N``, the layouts drawn per view that every click is played on (static).
      leaf: the worth of a view a click leads to: ``"value"``, the network's value head;
        ``"safe"``, 1 (so a click is worth its exact chance to be safe: the control);
        ``"survival"``, its best chance of a safe cell (so a click is worth its exact
        chance to survive this guess and the next, no draws); or a ``LeafValue`` function
        (an oracle in tests). A winning click is worth 1 (static).
      gumbel_scale: the Gumbel noise on the root's logits (static): 0 plays
        deterministically (evaluation), 1 is Gumbel AlphaZero's sampling (self-play).
      value_scale: ``c_scale`` of sigma(completed Q), the weight of the values against
        the prior's logits (static; mctx's default 0.1).
      endgame: ``L``, the guess views that at most ``L`` layouts fit play the exhaustive
        endgame's best click, unsearched; 0: none (static, 0..``MAX_ENDGAME_LAYOUTS``).
      tolerance: ``t``, the root's clicks are the legal reveals at least ``1 - t`` times as
        safe as the safest; 1: every legal reveal (static, in (0, 1]).
      limits: the static sizes of the exact analysis and draws.
    """

    agent: Any
    simulations: int = struct.field(pytree_node=False)
    samples: int = struct.field(pytree_node=False, default=16)
    leaf: str | LeafValue = struct.field(pytree_node=False, default="value")
    endgame: int = struct.field(pytree_node=False, default=0)
    tolerance: float = struct.field(pytree_node=False, default=1.0)
    gumbel_scale: float = struct.field(pytree_node=False, default=0.0)
    value_scale: float = struct.field(pytree_node=False, default=0.1)
    limits: ExactLimits = struct.field(pytree_node=False, default=ExactLimits())

    @property
    def env_cfg(self) -> ms_env.EnvConfig:
        """The game it plays (its agent's)."""
        return self.agent.env_cfg

    def for_board(self, env_cfg: ms_env.EnvConfig) -> NetworkSearch:
        """The same player on ``env_cfg`` (its agent's ``for_board``: the same observation
        channels)."""
        return self.replace(agent=self.agent.for_board(env_cfg))

    def act(self, state: ms_env.EnvState, key: jax.Array | None = None) -> jax.Array:
        """int32[]: the move on one board."""
        key = jax.random.key(0) if key is None else key
        return self.act_batch(jax.tree.map(lambda x: x[None], state), key[None])[0]

    def act_batch(self, states: ms_env.EnvState, keys: jax.Array) -> jax.Array:
        """int32[B]: the moves on a batch of boards (``states`` and ``keys`` with a leading
        ``[B]``), searching only the guess views (``search_policy``)."""
        return search_policy(self, states, keys).action


LEAF = Allowed(f"one of {', '.join(map(repr, LEAVES))} or a function of the views",
               lambda v: (isinstance(v, str) and v in LEAVES) or (callable(v) and not isinstance(v, str)))


def network_search(
    agent: Any, simulations: int = 8, samples: int = 16, leaf: str | LeafValue = "value", endgame: int = 0,
    tolerance: float = 1.0, gumbel_scale: float = 0.0, value_scale: float = 0.1, limits: ExactLimits = ExactLimits(),
) -> NetworkSearch:
    """``agent`` with its guesses searched (``NetworkSearch``'s fields).

    Raises:
      ValueError: an argument out of its range, named with its value (``simulations`` not
        in 1..32, ``samples`` below 1, another ``leaf``, ``endgame`` not in
        0..``MAX_ENDGAME_LAYOUTS``, ``tolerance`` not in (0, 1], a negative
        ``gumbel_scale``, a ``value_scale`` not above 0), or an agent with proofs,
        sampling, a board mix or carried beliefs.
    """
    check_value("network_search", "simulations", simulations, ints(1, MAX_SIMULATIONS))
    check_value("network_search", "samples", samples, ints(1))
    check_value("network_search", "leaf", leaf, LEAF)
    check_value("network_search", "endgame", endgame, ints(0, MAX_ENDGAME_LAYOUTS))
    check_value("network_search", "tolerance", tolerance, numbers(0, 1, low_open=True))
    check_value("network_search", "gumbel_scale", gumbel_scale, numbers(0))
    check_value("network_search", "value_scale", value_scale, numbers(0, low_open=True))
    check_search_agent(agent, "the network search")
    return NetworkSearch(agent, simulations, samples, leaf, endgame, float(tolerance), float(gumbel_scale),
                         float(value_scale), limits)


class SearchMoves(NamedTuple):
    """``search_policy``'s answer for a batch of ``B`` boards (``A = 2 * H * W`` actions).

    Attributes:
      action: int32[B], the moves.
      action_weights: f32[B, A], the improved policy (mctx's ``action_weights``,
        softmax(logits + sigma(completed Q)) over the legal reveals, 0 on flags) where
        ``searched``, else the one-hot of the move (a proof, the endgame's click or the
        policy alone).
      searched: bool[B], the view was a guess and searched.
      network_action: int32[B], the network's own favourite legal move (its greedy policy,
        what it plays alone): where it differs from ``action`` the search corrected it.
    """

    action: jax.Array
    action_weights: jax.Array
    searched: jax.Array
    network_action: jax.Array


def search_policy(player: NetworkSearch, states: ms_env.EnvState, keys: jax.Array) -> SearchMoves:
    """``player``'s moves on a batch of boards and the search's improved policy (module
    docstring).

    Args:
      states: ``B`` games (leading ``[B]``); keys: ``[B]`` PRNG keys, one per board (its
        layouts and Gumbel noise).
    """
    agent = player.agent
    env_cfg, num_cells, num_boards = agent.env_cfg, agent.env_cfg.num_cells, keys.shape[0]
    obs = jax.vmap(ms_env.observe, in_axes=(0, None))(states, env_cfg)
    logits, root_values, _ = models.apply_network(agent.params, agent.model_cfg, obs, agent.symmetric)
    legal = jax.vmap(ms_env.action_mask, in_axes=(0, None))(states, env_cfg)
    reveal_logits, legal_reveals = logits[:, :num_cells], legal[:, :num_cells]
    analysis = exact_analysis(states.revealed, states.counts, states.mine_count, player.limits)
    analysed = analysis.exact & states.first_click_done & jnp.any(legal_reveals, axis=1)
    proved = legal_reveals & analysis.safe.reshape(num_boards, -1)
    has_proof = jnp.any(proved, axis=1)
    guess = analysed & ~has_proof
    ended = jnp.full(num_boards, -1, jnp.int32)
    if player.endgame:
        near_end = guess & within_bound(analysis.log_layouts, player.endgame)
        ended = endgame_cell(player_view(states, batched=True), near_end, analysis.log_layouts, ended, keys,
                             player.endgame, player.limits)
    guess = guess & (ended < 0)
    candidates = legal_reveals
    if player.tolerance < 1.0:
        near = nearly_safest(states.revealed, analysis.mine_prob, player.tolerance).reshape(num_boards, -1)
        candidates = legal_reveals & near
    inputs = (states, keys, reveal_logits, candidates, analysis.mine_prob, analysis.log_layouts, root_values)
    empty = (jnp.zeros(num_boards, jnp.int32), jnp.zeros((num_boards, num_cells)))
    chunk = max(1, num_boards // 16)
    searched_actions, weights = in_chunks(guess, chunk, functools.partial(_search_views, player), inputs, empty, axis=0)
    favourite_proved = jnp.argmax(models.masked_logits(reveal_logits, proved), axis=1)
    policy = jax.vmap(models.choose_action, in_axes=(0, 0, 0, None))(logits, legal, keys, True)
    unsearched = jnp.where(ended >= 0, ended, jnp.where(analysed & has_proof, favourite_proved, policy))
    actions = jnp.where(guess, searched_actions, unsearched)
    actions = actions.astype(jnp.int32)
    num_actions = legal.shape[1]
    padded = jnp.pad(weights, ((0, 0), (0, num_actions - num_cells)))
    action_weights = jnp.where(guess[:, None], padded, jax.nn.one_hot(actions, num_actions))
    return SearchMoves(actions, action_weights, guess, policy.astype(jnp.int32))


def _search_views(player: NetworkSearch, inputs) -> tuple[jax.Array, jax.Array]:
    """``(int32[C], f32[C, HW])``: the searched move and improved policy of ``C`` guess
    views (``search_policy``'s inputs for them), each view searched alone."""
    return jax.vmap(functools.partial(_search_view, player))(*inputs)


def _search_view(player: NetworkSearch, state, key, reveal_logits, legal_reveals, mine_prob, log_layouts, root_value):
    """One view's Gumbel root (a batch of one for mctx): ``(int32[], f32[HW])``. The root's
    value (the mixed value that completes the unvisited clicks' Q) is its own leaf value:
    the value head's (``root_value``), 1 for ``"safe"`` and ``"survival"``, or the leaf
    function's."""
    import mctx  # here, not at the top: the rest of msjax.search (which training imports) loads without it

    draw_key, search_key = jax.random.split(key)
    click_values = _click_values(player, state, draw_key, mine_prob, log_layouts)
    if player.leaf in ("safe", "survival"):
        root_value = jnp.ones_like(root_value)
    elif callable(player.leaf):
        root_value = player.leaf(jax.tree.map(lambda x: x[None], state))[0]
    num_cells = reveal_logits.shape[0]

    def recurrent_fn(params, _, action, embedding):
        value = click_values(params, action)
        step = mctx.RecurrentFnOutput(reward=jnp.zeros(1), discount=jnp.ones(1),
                                      prior_logits=jnp.zeros((1, num_cells)), value=value)
        return step, embedding

    root = mctx.RootFnOutput(prior_logits=reveal_logits[None], value=root_value[None],
                             embedding=jnp.zeros(1, jnp.int32))
    output = mctx.gumbel_muzero_policy(
        player.agent.params, search_key, root, recurrent_fn, player.simulations,
        invalid_actions=~legal_reveals[None], max_depth=1,
        qtransform=functools.partial(mctx.qtransform_completed_by_mix_value, value_scale=player.value_scale),
        max_num_considered_actions=player.simulations, gumbel_scale=player.gumbel_scale,
    )
    return output.action[0], output.action_weights[0]


def _click_values(player: NetworkSearch, state, key, mine_prob, log_layouts) -> Callable[[Any, jax.Array], jax.Array]:
    """``(params, cells int32[1]) -> f32[1]``: a click's value on one view (the module
    docstring's ``Q``; ``mine_prob`` f32[H, W] and ``log_layouts`` f32[] from its exact
    analysis), its layouts drawn once with ``key`` for every click."""
    safe_chance = 1.0 - mine_prob.reshape(-1)
    if player.leaf == "safe":  # every view worth 1: the exact chance alone, no draws
        return lambda params, cells: safe_chance[cells]
    if player.leaf == "survival":  # each number the cell can show analysed exactly, no draws

        def survival(params, cells):
            score, _ = survival_scores(
                state.revealed[None], state.counts[None], state.mine_count[None], log_layouts[None], mine_prob[None],
                cells[None], jnp.ones((1, 1), bool), 1, 0.0, player.limits, chunk=NUMBERS,
            )
            return score[0]

        return survival
    one = jax.tree.map(lambda x: x[None], state)
    layouts = draw_layouts(key[None], one, player.samples, player.limits)
    agent = player.agent

    def values(params, cells):
        children, lost, won = clicked_views(one, layouts.mines, cells[:, None], agent.env_cfg)  # [1, 1, N]
        if callable(player.leaf):
            leaf = player.leaf(jax.tree.map(lambda x: x.reshape((-1,) + x.shape[3:]), children)).reshape(lost.shape)
        else:
            leaf = network_values(agent, params, children)
        return safe_chance[cells] * mean_over_safe_draws(leaf, lost, won, layouts.exact)[:, 0]

    return values

"""Layer 4's estimate: the mine probability of every unknown cell, by loopy belief
propagation over the number constraints (each factor's messages computed exactly from its
<= 8 unknown neighbours) with a global mine-density prior whose odds are re-solved so
that the expected mines match the mines left.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from msjax.env import EnvConfig, EnvState
from msjax.solver.deduce import deduce, with_exact_proofs
from msjax.solver.grid import (
    BOX_OFFSETS,
    NEIGHBOUR_OFFSETS,
    materialize,
    on_cells,
    pad,
    player_view,
    sum_over_cells,
    take,
)
from msjax.solver.layers import constraints_of, reduce_by_subsets
from msjax.solver.types import Constraints, Forced, SolverConfig, View

MAX_LOG_PRIOR = 15.0
MESSAGE_FLOOR = 1e-4  # messages stay in [floor, 1 - floor]: odds within 1e+-4
EVIDENCE_CAP = 1e30  # keeps prior * evidence odds inside float32


def _times_linear(poly: list[jax.Array], safe_p: jax.Array, mine_p: jax.Array) -> list[jax.Array]:
    """Coefficients of ``poly(z) * (safe_p + mine_p z)``, lowest degree first."""
    out = [poly[0] * safe_p]
    for k in range(1, len(poly)):
        out.append(poly[k] * safe_p + poly[k - 1] * mine_p)
    out.append(poly[-1] * mine_p)
    return out


def _factor_messages(to_factor: list[jax.Array], need_is: list[jax.Array]) -> list[jax.Array]:
    """Exact messages of each number to each of its 8 neighbours.

    Args:
      to_factor: 8 x float32[H, W, *b], the mine probability each neighbour (by
        direction) sends to the number; 0 for neighbours that are not unknown.
      need_is: 9 x bool[H, W, *b], ``need == k``.

    Returns:
      8 x float32[H, W, *b]: P(neighbour is a mine) given the number and the other
      neighbours' messages: the leave-one-out generating polynomial's coefficient at
      ``need - 1`` over the sum of those at ``need - 1`` and ``need``.
    """
    n = len(to_factor)
    one = jnp.ones_like(to_factor[0])
    prefix = [[one]]
    for q in to_factor:
        prefix.append(_times_linear(prefix[-1], 1.0 - q, q))
    suffix = [[one]]
    for q in reversed(to_factor):
        suffix.append(_times_linear(suffix[-1], 1.0 - q, q))
    suffix = suffix[::-1]  # suffix[d] covers directions d..n-1
    prefix, suffix = materialize((prefix, suffix))
    messages = []
    for d in range(n):
        others = [None] * n
        for i, a in enumerate(prefix[d]):
            for j, b in enumerate(suffix[d + 1]):
                others[i + j] = a * b if others[i + j] is None else others[i + j] + a * b
        at_need = sum(jnp.where(need_is[k], others[k], 0.0) for k in range(n))
        at_need_minus_one = sum(jnp.where(need_is[k + 1], others[k], 0.0) for k in range(n))
        total = at_need + at_need_minus_one
        messages.append(jnp.where(total > 0, at_need_minus_one / jnp.where(total > 0, total, 1.0), 0.5))
    return messages


def _solve_prior(evidence, unknown, remaining, log_prior, steps: int = 3):
    """Newton steps on the log prior odds ``log_prior`` [*b] so that the expected mines,
    ``sum(p)`` with ``p = t*E / (1 + t*E)`` and ``t = exp(log_prior)`` over the unknown
    cells (evidence odds ``E``), equal the mines left."""
    target = remaining.astype(jnp.float32)
    for _ in range(steps):
        odds = on_cells(jnp.exp(log_prior)) * evidence
        p = jnp.where(unknown, odds / (1.0 + odds), 0.0)
        excess = sum_over_cells(p) - target
        slope = sum_over_cells(p * (1.0 - p))
        step = jnp.clip(excess / jnp.maximum(slope, 1e-6), -2.0, 2.0)
        log_prior = jnp.clip(log_prior - step, -MAX_LOG_PRIOR, MAX_LOG_PRIOR)
    return log_prior


def belief_propagation(c: Constraints, solver_cfg: SolverConfig) -> jax.Array:
    """float32[H, W, *b]: estimated mine probability of each unknown cell (0 elsewhere).

    Loopy belief propagation in the odds domain (no per-cell transcendentals): the
    variables are the unknown cells, the factors the numbers, each factor's message exact
    over its neighbours. The prior odds of a mine, shared by the cells of a game, are
    re-solved after every sweep so that the expected number of mines equals the mines
    left (the global count in its grand-canonical form).
    """
    kept, need = reduce_by_subsets(c)
    edges = [(kept & (1 << BOX_OFFSETS.index(d))) != 0 for d in NEIGHBOUR_OFFSETS]
    need_is = [need == k for k in range(len(NEIGHBOUR_OFFSETS) + 1)]
    n_unknown = jnp.maximum(sum_over_cells(c.unknown), 1)
    density = jnp.clip(c.remaining / n_unknown, 1e-6, 1 - 1e-6).astype(jnp.float32)
    damping = solver_cfg.bp_damping

    def odds_of(messages):  # at the number's position, 1 on non-edges
        return [jnp.where(e, m / (1.0 - m), 1.0) for e, m in zip(edges, messages)]

    def evidence_of(message_odds):  # the variable at u hears the number at u - d
        total = functools.reduce(
            jnp.multiply,
            [take(pad(o, 1.0), -d[0], -d[1]) for o, d in zip(message_odds, NEIGHBOUR_OFFSETS)],
        )
        return jnp.clip(total, 1.0 / EVIDENCE_CAP, EVIDENCE_CAP)

    def sweep(_, carry):
        messages, evidence, log_prior = carry
        message_odds = materialize(odds_of(messages))
        belief = pad(materialize(on_cells(jnp.exp(log_prior)) * evidence), 1.0)
        to_factor = []
        for edge, d, o in zip(edges, NEIGHBOUR_OFFSETS, message_odds):
            cavity = take(belief, *d) / o  # the neighbour's odds without this number
            to_factor.append(jnp.where(edge, cavity / (1.0 + cavity), 0.0))
        fresh = _factor_messages(materialize(to_factor), need_is)
        messages = [
            jnp.clip((1 - damping) * m + damping * f, MESSAGE_FLOOR, 1 - MESSAGE_FLOOR)
            for m, f in zip(messages, fresh)
        ]
        evidence = materialize(evidence_of(odds_of(messages)))
        log_prior = _solve_prior(evidence, c.unknown, c.remaining, log_prior)
        return messages, evidence, log_prior

    halves = [jnp.full(c.unknown.shape, 0.5, jnp.float32) for _ in NEIGHBOUR_OFFSETS]
    start = (halves, jnp.ones(c.unknown.shape, jnp.float32), jnp.log(density) - jnp.log1p(-density))
    _, evidence, log_prior = jax.lax.fori_loop(0, solver_cfg.bp_iterations, sweep, start)
    odds = on_cells(jnp.exp(log_prior)) * evidence
    return jnp.where(c.unknown, odds / (1.0 + odds), 0.0)


def _probabilities(view: View, forced: Forced, solver_cfg: SolverConfig) -> jax.Array:
    c = constraints_of(view, forced.safe, forced.mines)
    return jnp.where(forced.mines, 1.0, belief_propagation(c, solver_cfg)).astype(jnp.float32)


def mine_probabilities(
    state: EnvState, cfg: EnvConfig, solver_cfg: SolverConfig = SolverConfig()
) -> jax.Array:
    """float32[H, W]: the solver's estimate that each hidden cell holds a mine.

    Deduction runs with layers 1-3 (whatever ``max_layer`` says); proved mines are 1,
    proved-safe and revealed cells 0, the other hidden cells get the layer-4 estimate.
    With ``probabilities="exact"`` the exact probabilities replace all of it wherever the
    view is within the exact analysis' limits.
    """
    del cfg
    view = player_view(state)
    deduction_cfg = solver_cfg.deduction(max_layer=3)
    forced = deduce(view, deduction_cfg, stop_at_safe=False)
    estimate = _probabilities(view, forced, solver_cfg)
    if solver_cfg.probabilities != "exact":
        return estimate
    _, exact_probability, exact, _ = with_exact_proofs(view, forced, solver_cfg)
    return jnp.where(exact, exact_probability, estimate)


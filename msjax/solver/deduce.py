"""Seed 001's orchestration of the deduction layers: layer 1 to its fixpoint, then layer 2,
else layer 3, and back to layer 1 after any progress, in ``lax.while_loop`` s that run to
a fixpoint (``forced_moves``) or, for a move, stop at the first proved-safe cell. A
cell's ``layer`` is the layer whose pass proved it (a cell proved by layer 1 from a mine
that layer 2 found counts as layer 1, as in the seed).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from msjax.env import EnvConfig, EnvState
from msjax.solver.exact import exact_on_cells
from msjax.solver.grid import any_cell, on_cells, player_view
from msjax.solver.layers import constraints_of, contradiction, layer1, layer2, layer3
from msjax.solver.types import Constraints, Forced, SolverConfig, View


def _add_proofs(forced: Forced, new_safe, new_mines, level) -> Forced:
    """``forced`` with the cells of ``new_safe``/``new_mines`` proved by ``level``."""
    new = new_safe | new_mines
    return Forced(forced.safe | new_safe, forced.mines | new_mines, jnp.where(new, level, forced.layer))


def with_exact_proofs(view: View, forced: Forced, solver_cfg: SolverConfig):
    """``(forced, mine_prob, exact, log_layouts)``: ``forced`` plus what the exact
    analysis proves that it does not (layer 3), and the rest of
    ``msjax.solver.exact.exact_on_cells``'s results."""
    proofs, mine_prob, exact, log_layouts = exact_on_cells(view, solver_cfg.exact_limits)
    new_safe, new_mines = proofs.safe & ~forced.safe, proofs.mines & ~forced.mines
    return _add_proofs(forced, new_safe, new_mines, jnp.int8(3)), mine_prob, exact, log_layouts


def _proofs_of(view: View, solver_cfg: SolverConfig, stop_at_safe: bool) -> Forced:
    """The layers' proofs, plus the exact analysis' where ``solver_cfg`` asks for them."""
    forced = deduce(view, solver_cfg, stop_at_safe)
    if solver_cfg.probabilities == "exact" and solver_cfg.max_layer >= 3:
        forced = with_exact_proofs(view, forced, solver_cfg)[0]
    return forced


def _empty_forced(view: View) -> Forced:
    """Nothing proved, shaped like ``view``'s cells."""
    empty = jnp.zeros_like(view.revealed)
    return Forced(empty, empty, jnp.zeros(view.revealed.shape, jnp.int8))


def layer1_fixpoint(view: View, forced: Forced, running: jax.Array, stop_at_safe: bool) -> Forced:
    """Layer 1 repeated on the games in ``running`` (bool[*b]) until it stalls (or a
    proved-safe cell exists, with ``stop_at_safe``)."""

    def pending(forced, running):
        return running & ~any_cell(forced.safe) if stop_at_safe else running

    def one_pass(carry):
        forced, running = carry
        new_safe, new_mines = layer1(constraints_of(view, forced.safe, forced.mines))
        new_safe, new_mines = new_safe & on_cells(running), new_mines & on_cells(running)
        forced = _add_proofs(forced, new_safe, new_mines, jnp.int8(1))
        return forced, pending(forced, running & any_cell(new_safe | new_mines))

    forced, _ = jax.lax.while_loop(
        lambda carry: jnp.any(carry[1]), one_pass, (forced, pending(forced, running))
    )
    return forced


def _higher_layer_pass(view: View, c: Constraints, forced: Forced, running: jax.Array, solver_cfg: SolverConfig):
    """One pass of the layers above 1: layer 2, and where it proves nothing layer 3 (the
    count rules, then the proof by contradiction on the games still stuck).

    Returns:
      ``(new_safe, new_mines, level)``: bool[H, W, *b] twice and int8[*b], the layer
      whose verdicts each game took.
    """
    new_safe, new_mines = layer2(c)
    level = jnp.full(running.shape, 2, jnp.int8)
    if solver_cfg.max_layer >= 3:
        by_pairs = any_cell(new_safe | new_mines)
        global_safe, global_mines = layer3(c)
        new_safe = jnp.where(on_cells(by_pairs), new_safe, global_safe)
        new_mines = jnp.where(on_cells(by_pairs), new_mines, global_mines)
        level = jnp.where(by_pairs, level, jnp.int8(3))
        if solver_cfg.contradiction_cells:
            stuck = running & ~any_cell(new_safe | new_mines)

            def by_contradiction():
                proved_safe, proved_mines = contradiction(view, c, forced.safe, forced.mines, solver_cfg)
                return (
                    jnp.where(on_cells(stuck), proved_safe, new_safe),
                    jnp.where(on_cells(stuck), proved_mines, new_mines),
                )

            new_safe, new_mines = jax.lax.cond(
                jnp.any(stuck), by_contradiction, lambda: (new_safe, new_mines)
            )
    return new_safe, new_mines, level


def deduce_from(
    view: View,
    forced: Forced,
    running: jax.Array,
    solver_cfg: SolverConfig,
    stop_at_safe: bool,
    max_rounds: int = 0,
) -> tuple[Forced, jax.Array]:
    """Seed 001's orchestration on the games in ``running``: layer 1 to a fixpoint, then
    layer 2, else layer 3, and back to layer 1 after any progress; ends when no layer
    makes progress (or, with ``stop_at_safe``, once a proved-safe cell exists).

    With ``max_rounds`` > 0 it stops after that many rounds (layer-1 fixpoint + one
    higher layer); the returned ``running`` (bool[*b]) marks the games not finished.
    """
    if solver_cfg.max_layer == 1:
        return layer1_fixpoint(view, forced, running, stop_at_safe), jnp.zeros_like(running)

    def one_round(carry):
        forced, running, rounds = carry
        forced = layer1_fixpoint(view, forced, running, stop_at_safe)
        if stop_at_safe:
            running = running & ~any_cell(forced.safe)
        c = constraints_of(view, forced.safe, forced.mines)
        new_safe, new_mines, level = _higher_layer_pass(view, c, forced, running, solver_cfg)
        new_safe, new_mines = new_safe & on_cells(running), new_mines & on_cells(running)
        forced = _add_proofs(forced, new_safe, new_mines, on_cells(level))
        return forced, running & any_cell(new_safe | new_mines), rounds + 1

    def more(carry):
        _, running, rounds = carry
        return jnp.any(running) & ((rounds < max_rounds) if max_rounds else True)

    forced, running, _ = jax.lax.while_loop(more, one_round, (forced, running, jnp.int32(0)))
    return forced, running


def deduce(view: View, solver_cfg: SolverConfig, stop_at_safe: bool) -> Forced:
    """``deduce_from`` nothing proved, on every game of ``view``."""
    running = jnp.ones(view.mine_count.shape, bool)
    return deduce_from(view, _empty_forced(view), running, solver_cfg, stop_at_safe)[0]


def forced_moves(state: EnvState, cfg: EnvConfig, solver_cfg: SolverConfig = SolverConfig()) -> Forced:
    """Every hidden cell that layers ``1..min(max_layer, 3)`` prove safe or a mine (with
    ``probabilities="exact"`` and ``max_layer >= 3``, every cell that is safe or a mine in
    all consistent layouts: the exact analysis' proofs count as layer 3).

    Args:
      state: one game (no batch axis; ``jax.vmap`` it, or use ``batch_forced_moves``).
      cfg: the static env config.
      solver_cfg: the static solver config.

    Returns:
      ``Forced(safe, mines, layer)``, each ``[H, W]``.
    """
    del cfg  # shapes come from the state
    return _proofs_of(player_view(state), solver_cfg, stop_at_safe=False)


@functools.partial(jax.jit, static_argnums=(1, 2))
def batch_forced_moves(
    states: EnvState, cfg: EnvConfig, solver_cfg: SolverConfig = SolverConfig()
) -> Forced:
    """``jax.vmap(forced_moves)`` computed in the faster cell-major layout: ``[B, H, W]`` fields."""
    del cfg
    forced = _proofs_of(player_view(states, batched=True), solver_cfg, stop_at_safe=False)
    return jax.tree.map(lambda x: jnp.moveaxis(x, -1, 0), forced)



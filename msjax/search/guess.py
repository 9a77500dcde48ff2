"""The search player's guess: the rule solver's move with its guess searched
(``SearchGuess``, a ``msjax.solver.Guess``), by the exact lookahead (``lookahead``) and,
where few layouts fit the view, the exhaustive endgame (``endgame``).

The rule solver asks it only for a guess on exact probabilities (``solver.GuessSituation``);
proofs, flags and the opening click stay the solver's. Pass it as the ``guess`` of
``solver.solver_action``, ``solver.batch_solver_action`` or ``solver.batch_solver_play``
(``search_guess`` builds it from a ``SearchConfig`` and checks it against the solver's).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from msjax.search.config import SearchConfig, check_solver, from_solver_fields
from msjax.search.endgame import SIZES, endgame_chunk, solve_endgame, within_bound
from msjax.search.layout_sets import DENSE_LAYOUTS
from msjax.search.lookahead import LookaheadScores, lookahead_choice, lookahead_scores, nearly_safest
from msjax.solver import ExactAnalysis, ExactLimits, GuessSituation, SolverConfig, exact_analysis
from msjax.solver.types import View
from msjax.solver.grid import in_chunks, on_cells, to_boards


@struct.dataclass
class SearchGuess:
    """The guess of ``config`` (a ``solver.Guess``; no arrays: one compilation per config).

    Attributes:
      config: the search's static options.
    """

    config: SearchConfig = struct.field(pytree_node=False)

    def __call__(self, situation: GuessSituation, solver_cfg: SolverConfig) -> jax.Array:
        """int32[*b]: the lookahead's cell among the near-safest where it looks ahead, the
        endgame's where it solves the view, else the rule solver's (``situation.cell``).

        Raises:
          ValueError: ``solver_cfg`` does not guess on exact probabilities (``check_solver``).
        """
        check_solver(self.config, solver_cfg)
        cfg, cell = self.config, situation.cell
        if cfg.lookahead_candidates:
            survival = cfg.lookahead_score == "survival"
            good = situation.good
            if survival:  # every cell nearly as safe as the safest
                near = (1.0 - situation.probability) >= (1.0 - cfg.lookahead_tolerance) * (
                    1.0 - on_cells(situation.lowest))
                good = (good | (situation.candidates & near)) & situation.unknown
            guessing = good & on_cells(situation.guessing)  # the lookahead runs only where it chooses
            looked = lookahead_cell(situation.view, guessing, situation.log_layouts, cfg, solver_cfg.exact_limits,
                                    situation.probability if survival else None)
            cell = jnp.where(situation.exact, looked, cell)
        if cfg.endgame_layouts:
            near_end = situation.guessing & within_bound(situation.log_layouts, cfg.endgame_layouts)
            cell = endgame_cell(situation.view, near_end, situation.log_layouts, cell, situation.keys,
                                cfg.endgame_layouts, solver_cfg.exact_limits)
        return cell


def search_guess(search_cfg: SearchConfig, solver_cfg: SolverConfig) -> SearchGuess | None:
    """The ``guess`` to play ``search_cfg`` with the rule solver ``solver_cfg``: a
    ``SearchGuess``, or None where ``search_cfg`` searches nothing (the rule solver's own
    guess, its own compiled program).

    Raises:
      ValueError: ``search_cfg`` searches and ``solver_cfg`` does not guess on exact
        probabilities (``check_solver``).
    """
    check_solver(search_cfg, solver_cfg)
    return SearchGuess(search_cfg) if search_cfg.searches else None


def lookahead_cell(view: View, good, log_layouts, cfg: SearchConfig, limits: ExactLimits, mine_prob=None) -> jax.Array:
    """int32[*b]: the guess among ``good`` (bool[H, W, *b]) by the exact lookahead
    (``msjax.search.lookahead``; its survival score where ``mine_prob``, float32[H, W, *b],
    is given)."""
    batch_shape = view.mine_count.shape
    cell, _, _ = lookahead_choice(
        to_boards(view.revealed), to_boards(view.counts), view.mine_count.reshape(-1), log_layouts.reshape(-1),
        to_boards(good), cfg.lookahead_candidates, limits,
        None if mine_prob is None else to_boards(mine_prob), cfg.lookahead_depth,
        cfg.lookahead_tolerance, cfg.lookahead_expand,
    )
    return cell.reshape(batch_shape)


def endgame_cell(view: View, near_end, log_layouts, cell, keys, bound: int, limits: ExactLimits) -> jax.Array:
    """int32[*b]: the exhaustive endgame's click (``msjax.search.endgame``) in the games
    where ``near_end`` (bool[*b]) and the endgame solves the view; ``cell`` elsewhere.
    Views are solved in tiers by their layout count (``log_layouts``: float32[*b]): up to
    ``DENSE_LAYOUTS``, then up to each of the endgame's ``SIZES`` below ``bound``, then up
    to ``bound``, each tier with its own static sizes."""
    batch_shape = view.mine_count.shape
    key = jax.random.fold_in(keys.reshape(-1)[0], 1)  # the result does not depend on it
    board_view = (to_boards(view.revealed), to_boards(view.counts), view.mine_count.reshape(-1))
    tops = [top for top in (DENSE_LAYOUTS, *(size[0] for size in SIZES)) if top < bound] + [bound]
    tiers = [(top, near_end & within_bound(log_layouts, top) & ~within_bound(log_layouts, below))
             for below, top in zip([0] + tops[:-1], tops)]
    for layouts, views in tiers:

        def solve(board_view, layouts=layouts):
            endgame = solve_endgame(key, *board_view, max_layouts=layouts, limits=limits)
            return jnp.where(endgame.solved, endgame.cell, -1)

        chosen = in_chunks(views.reshape(-1), endgame_chunk(views.size, layouts), solve, board_view,
                           jnp.full(views.size, -1, jnp.int32), axis=0)
        cell = jnp.where(chosen.reshape(batch_shape) >= 0, chosen.reshape(batch_shape), cell)
    return cell


def candidate_scores(revealed: jax.Array, counts: jax.Array, mine_count: jax.Array, cfg: SearchConfig,
                     limits: ExactLimits) -> tuple[ExactAnalysis, LookaheadScores]:
    """``(ExactAnalysis, LookaheadScores)`` of a batch of views (``revealed`` bool[B, H, W],
    ``counts`` int[B, H, W], ``mine_count`` int[B]): their exact probabilities, and the
    lookahead's candidates of ``cfg`` (its survival score: the cells at least ``1 -
    lookahead_tolerance`` as safe as the safest) with their scores, as the search player
    weighs its guess (the inspector's search overlay shows them)."""
    analysis = exact_analysis(revealed, counts, mine_count, limits)
    survival = cfg.lookahead_score == "survival"
    good = nearly_safest(revealed, analysis.mine_prob, cfg.lookahead_tolerance)
    scores = lookahead_scores(revealed, counts, mine_count, analysis.log_layouts, good, cfg.lookahead_candidates,
                              limits, analysis.mine_prob if survival else None, cfg.lookahead_depth,
                              cfg.lookahead_tolerance, cfg.lookahead_expand)
    return analysis, scores


def solver_and_guess(fields: dict[str, Any]) -> tuple[SolverConfig, SearchGuess | None]:
    """``(SolverConfig, guess)`` of a player given as one dict of ``SolverConfig`` and
    ``SearchConfig`` fields (the search's former ``SolverConfig`` names too:
    ``from_solver_fields``), e.g. a benchmark's ``--solver lookahead_candidates=6``; the
    guess is ``search_guess``'s (None: the rule solver's own).

    Raises:
      ValueError, TypeError: the configs' own errors, naming the field.
    """
    rest, search_cfg = from_solver_fields(fields)
    solver_cfg = SolverConfig(**rest)
    return solver_cfg, search_guess(search_cfg, solver_cfg)

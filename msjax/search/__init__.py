"""Search: players built on the rule solver's exact analysis and, when given, a network's
values (layer 2).

The rule solver (``msjax.solver``) proves what it can and guesses the safest cell; a search
chooses that guess instead, through one seam: the solver's moves (``solver.solver_action``,
``solver.batch_solver_action``, ``solver.batch_solver_play``) take a ``guess`` function (a
``solver.Guess``, asked with a ``solver.GuessSituation``: the view, its exact probabilities,
the rule solver's own guess). The solver never imports this package; a new search method is
a new ``Guess`` here, with its options in a config of its own.

- ``SearchConfig``: the search player's options (the exact lookahead, its survival score and
  depth, the exhaustive endgame; ``published_search``: those of its published figures);
  ``SearchGuess`` (``search_guess``) plays them as the
  solver's guess; ``candidate_scores``, its candidates' scores on a view.
- ``lookahead``: the exact one-move lookahead of a guess (``lookahead_choice``,
  ``lookahead_scores``, ``nearly_safest``): each candidate's chance of progress, of a zero,
  or of surviving this guess and the next one or two.
- ``sample``: layouts drawn uniformly among those that fit a view, exactly
  (``sample_layouts``); ``outcome``: what clicking a cell leads to (``click_outcomes``).
- ``endgame`` (with ``layout_sets``, its sets of layouts as bitmasks): the exhaustive
  endgame of a view that few layouts fit (``solve_endgame``).
- ``policy_lookahead``: a policy network looking past its move, its leaves valued by its
  value head on drawn layouts (``PolicyLookahead``, ``policy_lookahead``).
- ``network_search``: a network whose guesses are searched by Gumbel AlphaZero's root, each
  click's chance node folded in exactly (``NetworkSearch``, ``network_search``,
  ``search_policy``: the moves and the improved policy, ``SearchMoves``); ``leaves``: the draws, clicks and
  mean leaf values both share.
"""

from msjax.search.config import OLD_SOLVER_FIELDS, SearchConfig, check_solver, from_solver_fields, published_search
from msjax.search.endgame import Endgame, solve_endgame, within_bound
from msjax.search.guess import SearchGuess, candidate_scores, search_guess, solver_and_guess
from msjax.search.layout_sets import MAX_ENDGAME_LAYOUTS
from msjax.search.lookahead import LookaheadScores, lookahead_choice, lookahead_scores, nearly_safest
from msjax.search.network_search import NetworkSearch, SearchMoves, network_search, search_policy
from msjax.search.outcome import ClickOutcomes, click_outcomes
from msjax.search.policy_lookahead import PolicyLookahead, lookahead_actions, policy_lookahead
from msjax.search.sample import LayoutSamples, sample_layouts

__all__ = [
    "ClickOutcomes",
    "Endgame",
    "LayoutSamples",
    "LookaheadScores",
    "MAX_ENDGAME_LAYOUTS",
    "NetworkSearch",
    "OLD_SOLVER_FIELDS",
    "PolicyLookahead",
    "SearchConfig",
    "SearchGuess",
    "candidate_scores",
    "check_solver",
    "click_outcomes",
    "from_solver_fields",
    "lookahead_actions",
    "lookahead_choice",
    "lookahead_scores",
    "nearly_safest",
    "network_search",
    "policy_lookahead",
    "published_search",
    "sample_layouts",
    "search_guess",
    "search_policy",
    "SearchMoves",
    "solve_endgame",
    "solver_and_guess",
    "within_bound",
]

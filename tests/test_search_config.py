"""``search.SearchConfig``: its fields' ranges, the options that need another, what it needs
from the rule solver, and the search's former ``SolverConfig`` names still read."""

import dataclasses

import numpy as np
import pytest

from msjax import search, solver

EXACT = solver.SolverConfig(probabilities="exact")


@pytest.mark.parametrize("fields, message", [
    ({"lookahead_candidates": 2.5}, r"SearchConfig\.lookahead_candidates=2\.5 must be an int >= 0"),
    ({"lookahead_score": "depth"}, r"SearchConfig\.lookahead_score='depth' must be one of 'progress', 'survival'"),
    ({"lookahead_candidates": 6, "lookahead_score": "survival", "lookahead_tolerance": 1.0},
     r"SearchConfig\.lookahead_tolerance=1\.0 must be a number in \[0, 1\)"),
    ({"lookahead_depth": 3}, r"SearchConfig\.lookahead_depth=3 must be an int in \{1, 2\}"),
    ({"endgame_layouts": 129}, r"SearchConfig\.endgame_layouts=129 must be 0 \(off\) or an int in \[2, 128\]"),
    ({"lookahead_candidates": 6, "lookahead_expand": 7},
     r"SearchConfig\.lookahead_expand=7 must be an int in \[0, 6\] \(at most lookahead_candidates\)"),
])
def test_a_field_out_of_its_range_is_named(fields, message):
    with pytest.raises(ValueError, match=message):
        search.SearchConfig(**fields)


@pytest.mark.parametrize("fields, message", [
    ({"lookahead_score": "survival"}, r"lookahead_score='survival' has no effect unless lookahead_candidates >= 1 \(lookahead_candidates=0\)"),
    ({"lookahead_tolerance": 0.1}, "lookahead_tolerance=0.1 has no effect unless lookahead_score='survival'"),
    ({"lookahead_depth": 2}, "lookahead_depth=2 has no effect unless lookahead_score='survival'"),
    ({"lookahead_candidates": 6, "lookahead_expand": 2}, "lookahead_expand=2 has no effect unless lookahead_depth=2"),
])
def test_an_option_another_switches_off_is_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        search.SearchConfig(**fields)


@pytest.mark.parametrize("solver_cfg, message", [
    (solver.SolverConfig(), r"SearchConfig\.endgame_layouts=8 has no effect unless SolverConfig\.probabilities='exact' \(probabilities='bp'\)"),
    (dataclasses.replace(EXACT, max_layer=3), r"SearchConfig\.endgame_layouts=8 has no effect unless SolverConfig\.max_layer=4 \(max_layer=3\)"),
])
def test_the_search_needs_the_solver_to_guess_on_exact_probabilities(solver_cfg, message):
    with pytest.raises(ValueError, match=message):
        search.search_guess(search.SearchConfig(endgame_layouts=8), solver_cfg)


def test_a_config_that_searches_nothing_leaves_the_rule_solvers_guess():
    assert search.search_guess(search.SearchConfig(), solver.SolverConfig()) is None
    searching = search.SearchConfig(lookahead_candidates=6)
    assert search.search_guess(searching, EXACT) == search.SearchGuess(searching)


def test_the_searchs_former_solver_fields_still_read():
    saved = {"probabilities": "exact", "exact_lookahead": 6, "lookahead_score": "survival",
             "lookahead_tolerance": 0.1, "lookahead_depth": 2, "lookahead_expand": 3, "endgame_layouts": 8}
    rest, search_cfg = search.from_solver_fields(saved)
    assert rest == {"probabilities": "exact"}
    assert search_cfg == search.SearchConfig(lookahead_candidates=6, lookahead_score="survival", lookahead_tolerance=0.1,
                                             lookahead_depth=2, lookahead_expand=3, endgame_layouts=8)
    assert search.from_solver_fields({"lookahead_candidates": 4})[1].lookahead_candidates == 4  # today's name too
    with pytest.raises(TypeError):  # the rule solver holds none of them now
        solver.SolverConfig(exact_lookahead=6)


def test_the_search_player_plays_as_a_solver_agent_through_the_seam():
    from msjax import env
    from msjax.agent import SolverAgent
    from msjax.evaluate import play_games

    cfg = env.EnvConfig(H=5, W=5, mine_count=4)
    limits = solver.ExactLimits(max_states=64, first_states=64, middle_states=0)
    solver_cfg = solver.SolverConfig(probabilities="exact", exact_limits=limits)
    # the endgame alone: the look-ahead's own tests play it, and here it cost 15 s more of compile
    guess = search.search_guess(search.SearchConfig(endgame_layouts=4), solver_cfg)
    player = SolverAgent(cfg, solver_cfg, guess)
    assert hash(player) == hash(SolverAgent(cfg, solver_cfg, guess))  # a static argument of compiled games
    batched = play_games(player, cfg, 16, 0, 16)
    one_by_one = play_games(player.act, cfg, 16, 0, 16)  # a plain act: vmapped board by board
    assert batched["won"].shape == (16,)
    for name in ("won", "steps", "revealed_cells"):  # act_batch's moves are act's, move for move
        np.testing.assert_array_equal(batched[name], one_by_one[name], err_msg=name)

"""benchmarks/solver_winrate.py's and paired_exact.py's command lines: a bad value is one
argparse line naming the flag, the value and what it allows (no games played)."""

import pytest

from benchmarks import paired_exact, solver_winrate
from benchmarks.solver_winrate import solver_fields


def test_solver_fields_are_python_literals():
    assert solver_fields("exact_lookahead=6,probabilities='exact'") == {"exact_lookahead": 6, "probabilities": "exact"}
    assert solver_fields("") == {}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--solver", "bogus=1"], "argument --solver: unknown field 'bogus' in 'bogus=1'; the fields: "),
        (["--solver", "max_layer"], "argument --solver: 'max_layer' must be FIELD=VALUE"),
        (["--solver", "probabilities=exact"], "argument --solver: probabilities=exact: exact is not a Python literal"),
        (["--solver", "max_layer=7"], "argument --solver: SolverConfig.max_layer=7 "),
        (["--games", "0"], "argument --games: 0 must be >= 1"),
        (["--batch", "0"], "argument --batch: 0 must be >= 1"),
        (["--seed", "-1"], "argument --seed: -1 must be in [0, 4294967295]"),
        (["--players", "jax,alien"], "argument --players: unknown ['alien']; allowed ('random', 'layer1', 'jax', "),
        (["--first-click", "2"], "argument --first-click: '2' must be R,C: two integers >= 0"),
    ],
)
def test_solver_winrate_bad_values_are_one_argparse_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        solver_winrate.main(["--players", "jax", "--boards", "beginner", *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"solver_winrate.py: error: {message}"), err[-1]


def test_the_unknown_field_line_lists_every_solver_field(capsys):
    with pytest.raises(SystemExit):
        solver_winrate.main(["--solver", "bogus=1"])
    err = capsys.readouterr().err
    assert "max_layer" in err and "lookahead_candidates" in err and "endgame_layouts" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--solver", "bogus=1"], "argument --solver: unknown field 'bogus'"),
        (["--baseline", "bogus=1"], "argument --baseline: unknown field 'bogus'"),
        (["--solver", "lookahead_tolerance=1.5"], "argument --solver: SearchConfig.lookahead_tolerance=1.5 "),
        (["--games", "1"], "argument --games: 1 must be >= 2"),
        (["--seed", "-1"], "argument --seed: -1 must be in [0, 4294967295]"),
    ],
)
def test_paired_exact_bad_values_are_one_argparse_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        paired_exact.main(["--board", "beginner", *argv])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(f"paired_exact.py: error: {message}")


def test_a_saved_solver_line_with_the_searchs_former_fields_plays_the_same_search():
    from benchmarks.solver_winrate import solver_player
    from msjax import search

    solver_cfg, guess = solver_player(solver_fields("probabilities='exact',exact_lookahead=6,endgame_layouts=8"))
    assert solver_cfg.probabilities == "exact"
    assert guess == search.SearchGuess(search.SearchConfig(lookahead_candidates=6, endgame_layouts=8))

"""``--solver FIELD=VALUE,...`` (``msjax.cli.args.solver_fields``) and the benchmarks that
take it (``python -m benchmarks.solver_winrate``, ``benchmarks.paired_exact``): a bad value is
one argparse line naming the flag, the value and what it allows (no games played)."""

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from msjax.cli.args import solver_fields

REPO = Path(__file__).resolve().parents[1]


def test_solver_fields_are_python_literals():
    assert solver_fields("lookahead_candidates=6,probabilities='exact'") == {"lookahead_candidates": 6, "probabilities": "exact"}
    assert solver_fields("") == {}
    assert solver_fields("exact_lookahead=6") == {"exact_lookahead": 6}  # the search's former name still reads


def test_a_saved_solver_line_with_the_searchs_former_fields_plays_the_same_search():
    from msjax import search

    solver_cfg, guess = search.solver_and_guess(solver_fields("probabilities='exact',exact_lookahead=6,endgame_layouts=8"))
    assert solver_cfg.probabilities == "exact"
    assert guess == search.SearchGuess(search.SearchConfig(lookahead_candidates=6, endgame_layouts=8))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bogus=1", "unknown field 'bogus' in 'bogus=1'; the fields: "),
        ("max_layer", "'max_layer' must be FIELD=VALUE"),
        ("probabilities=exact", "probabilities=exact: exact is not a Python literal"),
    ],
)
def test_a_bad_solver_field_is_one_line_naming_it(text, message):
    with pytest.raises(argparse.ArgumentTypeError) as error:
        solver_fields(text)
    assert str(error.value).startswith(message)
    if text == "bogus=1":  # the line lists every field
        assert all(name in str(error.value) for name in ("max_layer", "lookahead_candidates", "endgame_layouts"))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["solver_winrate", "--players", "jax", "--boards", "beginner", "--solver", "max_layer=7"],
         "python -m benchmarks.solver_winrate: error: argument --solver: SolverConfig.max_layer=7 "),
        (["paired_exact", "--board", "beginner", "--games", "1"],
         "python -m benchmarks.paired_exact: error: argument --games: 1 must be >= 2"),
    ],
)
def test_the_benchmarks_refuse_a_bad_value_in_one_argparse_line(argv, message):
    done = subprocess.run([sys.executable, "-m", f"benchmarks.{argv[0]}", *argv[1:]], cwd=REPO, capture_output=True,
                          text=True)
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1].startswith(message), done.stderr[-2000:]

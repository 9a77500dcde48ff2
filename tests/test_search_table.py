"""``python -m benchmarks.search_table``'s command line: a bad value is one argparse line
naming the flag and its range, before any game. (Its ``--paired-with`` file is read and
checked by ``msjax.evaluate.paired``: tests/test_paired.py.)"""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("flag", "value", "allowed"), [("--games", "1", "1 must be >= 2")])
def test_bad_numbers_are_one_argparse_line_naming_the_flag_and_range(flag, value, allowed):
    done = subprocess.run([sys.executable, "-m", "benchmarks.search_table", "--games", "4", "--rows", "depth 1", flag,
                           value], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == f"python -m benchmarks.search_table: error: argument {flag}: {allowed}"

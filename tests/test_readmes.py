"""Each package folder has a README.md whose names are the package's public ones (and
``exact``'s Python example runs; the others compile JAX programs, too slow for the suite).

A README names a package's things as ``PACKAGE.NAME`` (``env.reset``,
``msjax.solver.solver_action``) in its backticks and code blocks; each such ``NAME`` must
be in ``msjax.PACKAGE.__all__``, so a rename that forgets the README fails here.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "msjax"
DOCUMENTED = ("env", "solver", "exact", "evaluate", "viz", "cli", "adapters")
TOP_README = PACKAGE.parent / "README.md"
ADAPTERS_SECTION = "## Use msjax's env from your own training code"
QUOTED = re.compile(r"```[a-z]*\n(.*?)```|`([^`\n]+)`", re.S)
CODE = re.compile(r"```python\n(.*?)```", re.S)


def package_names(text: str) -> set[tuple[str, str]]:
    """``(package, name)`` of every ``[msjax.]PACKAGE.NAME`` inside backticks or code blocks."""
    quoted = " ".join(block or span for block, span in QUOTED.findall(text))
    packages = "|".join(DOCUMENTED)
    found = re.findall(rf"(?<![\w.])(?:msjax\.)?({packages})\.([A-Za-z_]\w*)", quoted)
    return {(owner, name) for owner, name in found if not name.startswith("__")}  # not ``env.__all__``


def readme(package: str) -> str:
    path = PACKAGE / package / "README.md"
    assert path.is_file(), f"{path} is missing"
    return path.read_text()


@pytest.mark.parametrize("package", DOCUMENTED)
def test_every_name_a_readme_uses_is_exported(package):
    text = readme(package)
    names = package_names(text)
    assert any(owner == package for owner, _ in names), f"{package}/README.md names none of its package's names"
    for owner, name in sorted(names):
        exported = importlib.import_module(f"msjax.{owner}").__all__
        assert name in exported, f"{package}/README.md uses {owner}.{name}, not in msjax.{owner}.__all__"


def test_the_name_check_catches_a_name_that_is_not_exported():
    names = package_names("Call `env.reset` or `msjax.solver.no_such_thing` (`env.__all__`); not env.step.")
    assert names == {("env", "reset"), ("solver", "no_such_thing")}


def readme_section(text: str, heading: str) -> str:
    """The text under ``heading`` up to the next ``## `` heading."""
    assert heading in text, f"README.md has no section {heading!r}"
    return text.split(heading, 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("api", ["gymnax", "jumanji"])
def test_the_top_readmes_adapter_examples_run(api):
    examples = [code for code in CODE.findall(readme_section(TOP_README.read_text(), ADAPTERS_SECTION)) if f'"{api}")' in code]
    assert len(examples) == 1, f"README.md's adapters section should have one {api} example"
    assert len(examples[0].strip().splitlines()) <= 5, "the examples are five lines"
    pytest.importorskip(api, reason=f"the {api} example needs {api}: pip install -e '.[{api}]'")
    namespace: dict = {}
    exec(compile(examples[0], f"README.md ({api})", "exec"), namespace)
    assert "state" in namespace


@pytest.mark.parametrize("package", ["exact"])  # NumPy: the others' examples compile the game (seconds)
def test_the_readme_example_runs(package, capsys):
    (example,) = CODE.findall(readme(package))
    exec(compile(example, f"msjax/{package}/README.md", "exec"), {})
    assert capsys.readouterr().out

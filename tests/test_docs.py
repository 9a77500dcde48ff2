"""The documentation site builds with warnings as errors (issue 90): the results pages, the
experiments, the guides and the API reference generated from the docstrings.

``python -m mkdocs build --strict`` fails on a broken link or anchor inside ``docs/``, a page
left out of the nav and a docstring mkdocstrings cannot read (a parameter documented that the
function does not have); a link to a repository file outside ``docs/`` points at the
repository (``docs/_hooks/repo_links.py``), unless that file does not exist.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[dev]')")
pytest.importorskip("mkdocstrings_handlers.python", reason="mkdocstrings[python] is not installed (the dev extra)")
yaml = pytest.importorskip("yaml", reason="PyYAML (a dependency of mkdocs) is not installed")

REPOSITORY = Path(__file__).resolve().parent.parent


def build(config: Path, site: Path) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` of ``config`` into ``site``, its output kept."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        cwd=config.parent, capture_output=True, text=True, timeout=300,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    built = build(REPOSITORY / "mkdocs.yml", site)
    assert built.returncode == 0, f"mkdocs build --strict failed:\n{built.stdout}\n{built.stderr}"
    return site


def test_the_site_builds_strict_with_the_api_reference_and_the_results(site):
    solver = (site / "api" / "solver" / "index.html").read_text()
    assert 'id="msjax.solver.exact_analysis"' in solver  # a function, from its docstring
    env = (site / "api" / "env" / "index.html").read_text()
    assert 'id="msjax.env.EnvConfig"' in env
    assert "The agents" in (site / "results" / "agents" / "index.html").read_text()
    experiments = sorted((REPOSITORY / "docs" / "experiments").glob("[0-9]*.md"))
    assert experiments and all((site / "experiments" / page.stem / "index.html").is_file() for page in experiments)
    for guide in ("training", "web-inspector"):
        assert (site / guide / "index.html").is_file()


def test_a_link_out_of_docs_points_at_the_repository_file(site):
    agents = (site / "results" / "agents" / "index.html").read_text()
    assert "<code>README.md#configs</code> in the repository" in agents  # ../../README.md#configs
    assert 'href="../../README.md' not in agents


def small_site(tmp_path: Path, page: str) -> Path:
    """A copy of the site's config (its checks and hooks, no nav or API) over one page."""
    config = yaml.safe_load((REPOSITORY / "mkdocs.yml").read_text())
    config.pop("nav")
    config["plugins"] = ["search"]
    config["hooks"] = [str(REPOSITORY / hook) for hook in config["hooks"]]
    docs = tmp_path / "docs"
    (docs / "notes").mkdir(parents=True)
    (docs / "notes" / "README.md").write_text("# Notes\n")
    (docs / "index.md").write_text(page)
    (tmp_path / "README.md").write_text("# The repository\n")
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    return tmp_path / "mkdocs.yml"


def test_the_strict_build_fails_on_a_broken_link_inside_docs_and_to_a_missing_repo_file(tmp_path):
    good = small_site(tmp_path / "good", "# Home\n\n[notes](notes/) and [the\nREADME](../README.md#top).\n")
    assert build(good, tmp_path / "good-site").returncode == 0
    cases = {
        "[gone](no-such-page.md)": "'no-such-page.md', but the target is not found",
        "[gone](../no-such-file.md)": "'../no-such-file.md', but the target",
        "[anchor](notes/README.md#no-such-anchor)": "'notes/README.md#no-such-anchor', but",
    }
    for number, (broken, warning) in enumerate(cases.items()):
        config = small_site(tmp_path / f"broken-{number}", f"# Home\n\n{broken}\n")
        built = build(config, tmp_path / f"broken-{number}-site")
        assert built.returncode != 0 and warning in built.stderr, f"{broken} built:\n{built.stderr}"

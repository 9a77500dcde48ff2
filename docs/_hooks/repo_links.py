"""MkDocs hooks for msjax's site (mkdocs.yml ``hooks:``): folder entries in the nav, links to
repository files outside ``docs/``.

A nav entry that names a folder (``experiments/``) stands for every page in it, its
``README.md`` (the folder's index) first, then the others by name, so a new experiment joins
the site without an edit here.

A link to a folder of ``docs/`` that holds a ``README.md`` (``../results/``, as GitHub shows
it) becomes a link to that README, the folder's page on the site.

A link from a page to a file of the repository outside ``docs/`` (``../../README.md#configs``)
is not a page of the site, so MkDocs would call it broken. When the file exists, the link
becomes one to the file in the repository (``repo_url``'s ``blob/main/PATH``) or, with no
``repo_url``, the link text followed by the file's path in the repository. Any other link is
left as written, and MkDocs's own check reports it when broken (an error with ``--strict``).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]+)\]\((?P<target>[^)\s#]+)(?P<anchor>#[^)\s]*)?\)")


def folder_pages(docs: Path, folder: str) -> list[str]:
    """The pages of ``docs/FOLDER`` as nav entries: its ``README.md`` first, then by name."""
    pages = sorted(path.relative_to(docs).as_posix() for path in (docs / folder).glob("*.md"))
    index = f"{folder.rstrip('/')}/README.md"
    return ([index] if index in pages else []) + [page for page in pages if page != index]


def expand_folders(nav: list, docs: Path) -> list:
    """``nav`` with each ``TITLE: FOLDER/`` entry replaced by ``TITLE: [its pages]``."""
    expanded = []
    for entry in nav:
        if isinstance(entry, dict):
            entry = {
                title: folder_pages(docs, value) if isinstance(value, str) and value.endswith("/")
                else expand_folders(value, docs) if isinstance(value, list) else value
                for title, value in entry.items()
            }
        expanded.append(entry)
    return expanded


def on_config(config):
    """Expands the nav's folder entries."""
    if config.nav:
        config.nav = expand_folders(config.nav, Path(config.docs_dir))
    return config


def rewritten_link(match: re.Match, page_dir: Path, docs: Path, repo_url: str | None) -> str:
    """The link ``match`` pointed at its folder's README, or at a repository file outside ``docs/``."""
    target, anchor = match["target"], match["anchor"] or ""
    if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
        return match[0]  # a URL, or a site-absolute link: MkDocs checks those
    path = (page_dir / target).resolve()
    repository = docs.parent
    if path.is_relative_to(docs):
        if path.is_dir() and (path / "README.md").is_file():
            return f"[{match['text']}]({posixpath.join(target, 'README.md')}{anchor})"
        return match[0]
    if not path.is_relative_to(repository) or not path.exists():
        return match[0]
    relative = path.relative_to(repository).as_posix()
    if repo_url:
        return f"[{match['text']}]({posixpath.join(repo_url, 'blob/main', relative)}{anchor})"
    return f"{match['text']} (`{relative}{anchor}` in the repository)"


def on_page_markdown(markdown, page, config, files):
    """The page with its folder links and its links to repository files rewritten."""
    docs = Path(config.docs_dir).resolve()
    page_dir = (docs / page.file.src_uri).parent
    return LINK.sub(lambda match: rewritten_link(match, page_dir, docs, config.repo_url), markdown)

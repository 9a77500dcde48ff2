"""Every command line's ``--help``: its own usage first, a description a person can read,
then its options; nothing cut mid-sentence, no reST markup, no runaway line."""

from __future__ import annotations

import pytest

from msjax.cli import play, serve, train
from msjax.cli import evaluate as evaluate_cli
from msjax.cli import memory as memory_cli
from msjax.cli import viz as viz_cli

MAINS = {
    "msjax.train": train.main,
    "msjax.evaluate": evaluate_cli.main,
    "msjax.play": play.main,
    "msjax.serve": serve.main,
    "msjax.memory": memory_cli.main,
    "msjax.viz": viz_cli.main,
}
COMMANDS = [(module, ()) for module in MAINS] + [("msjax.viz", (figure,)) for figure in ("curves", "heatmap", "calibration")]


def help_text(module: str, words: tuple[str, ...], capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        MAINS[module]([*words, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("module, words", COMMANDS, ids=lambda part: " ".join(part) if isinstance(part, tuple) else part)
def test_help_starts_with_the_commands_own_usage_and_reads_cleanly(module, words, capsys):
    text = help_text(module, words, capsys)
    command = " ".join(["python -m", module, *words])
    assert text.startswith(f"usage: {command} ")
    usage, description = text.split("\n\n")[:2]
    assert "usage:" not in usage[len("usage:") :], "one usage"
    assert description.strip() and "``" not in text
    assert description.rstrip().endswith((".", ":")), f"cut mid-sentence: {description!r}"
    assert max(len(line) for line in text.splitlines()) <= 120
    assert "options:" in text or "optional arguments:" in text

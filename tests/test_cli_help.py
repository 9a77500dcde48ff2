"""Every command line's ``--help``: its own usage first, a description a person can read,
then its options; nothing cut mid-sentence, no reST markup, no runaway line."""

from __future__ import annotations

import pytest

from msjax.cli import play, serve, ship, train
from msjax.cli import evaluate as evaluate_cli
from msjax.cli import memory as memory_cli
from msjax.cli import paired as paired_cli
from msjax.cli import viz as viz_cli

MAINS = {
    "msjax.train": train.main,
    "msjax evaluate": evaluate_cli.main,
    "msjax paired": paired_cli.main,
    "msjax play": play.main,
    "msjax serve": serve.main,
    "msjax memory": memory_cli.main,
    "msjax viz": viz_cli.main,
    "msjax ship": ship.main,
}
COMMANDS = [(module, ()) for module in MAINS] + [("msjax viz", (figure,)) for figure in ("curves", "heatmap", "calibration")]


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


def test_msjax_lists_its_commands_and_runs_each_one(capsys):
    from msjax.__main__ import COMMANDS, main

    assert main(["--help"]) == 0
    listing = capsys.readouterr().out
    assert all(f"  {name} " in listing for name in COMMANDS)
    assert {name.split()[-1].split(".")[-1] for name in MAINS} == set(COMMANDS), "every command has its --help test"
    with pytest.raises(SystemExit) as exit_info:
        main(["viz", "--help"])
    assert exit_info.value.code == 0 and capsys.readouterr().out.startswith("usage: python -m msjax viz ")


def test_msjax_refuses_an_unknown_command_naming_the_known_ones(capsys):
    from msjax.__main__ import main

    assert main(["trian"]) == 2
    assert "unknown command 'trian'; use one of train, evaluate" in capsys.readouterr().err
    assert main([]) == 2


def test_python_dash_m_msjax_runs_as_a_process():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "msjax", "memory", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("usage: python -m msjax memory ")

"""The READMEs say what is true: every example runs as written, every name is public.

Each package folder has a README.md whose names are the package's public ones: a README
names a package's things as ``PACKAGE.NAME`` (``env.reset``, ``msjax.solver.solver_action``)
in its backticks and code blocks; each such ``NAME`` must be in ``msjax.PACKAGE.__all__``,
so a rename that forgets the README fails here.

Every Python block of README.md and of the package READMEs runs as written, in a folder
holding a tiny ``runs/small``. A shell block runs too when all its commands are cheap
(``CHEAP``); any other carries ``<!-- not run by the tests: REASON -->`` on the line above
its fence, and its commands are still checked: each msjax command line parses with
that command's own parser (its config file and overrides load), each script and extra
named exists.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import shlex
import types
from pathlib import Path

import numpy as np
import pytest
from tiny_runs import saved_run

from msjax.run import log as runlog

PACKAGE = Path(__file__).resolve().parent.parent / "msjax"
DOCUMENTED = ("env", "solver", "search", "reference", "evaluate", "viz", "cli", "adapters", "stages", "run")
QUOTED = re.compile(r"```[a-z]*\n(.*?)```|`([^`\n]+)`", re.S)


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




# ----------------------------------------------------------------------------- examples

REPOSITORY = PACKAGE.parent
READMES = (REPOSITORY / "README.md", *sorted(PACKAGE.glob("*/README.md")))
FENCED = re.compile(
    r"(?:<!-- not run by the tests: (?P<reason>[^\n]*?) -->\n)?```(?P<language>python|bash)\n(?P<code>.*?)```", re.S
)
# Shell commands cheap enough to run as written (in a folder holding a tiny runs/small).
CHEAP = {"python -m msjax viz curves runs/small"}


@dataclasses.dataclass(frozen=True)
class Example:
    """A fenced block of a README: where it starts, its language and code, and the reason
    given when it is marked as not run."""

    path: Path
    line: int
    language: str
    code: str
    reason: str | None

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(REPOSITORY)}:{self.line}"


def examples(language: str) -> list[Example]:
    """Every ``language`` block of the READMEs, in order."""
    found = []
    for path in READMES:
        text = path.read_text()
        for match in FENCED.finditer(text):
            if match["language"] == language:
                line = text.count("\n", 0, match.start("code")) + 1
                found.append(Example(path, line, language, match["code"], match["reason"]))
    return found


def shell_commands(code: str) -> list[list[str]]:
    """A shell block's commands as argument lists: continued lines joined, comments and
    leading ``VAR=value`` settings dropped, ``&&`` chains split."""
    found = []
    for line in code.replace("\\\n", " ").splitlines():
        command: list[str] = []
        for word in shlex.split(line, comments=True) + ["&&"]:
            if word == "&&":
                if command:
                    found.append(command)
                command = []
            elif command or not re.fullmatch(r"[A-Z_]+=\S*", word):
                command.append(word)
    return found


def tiny_project(folder: Path) -> Path:
    """``folder`` holding ``runs/small``: a tiny saved run with a few metrics rows."""
    run_dir = saved_run(folder / "runs" / "small")
    stage = types.SimpleNamespace(name="ppo", num_updates=2, first_step=0, first_env_step=0, env_steps_per_update=8)
    writer = runlog.MetricsWriter(run_dir, tensorboard=False, resume_step=None)
    writer.write_updates(stage, 0, {"loss": np.array([1.0, 0.5]), "mean_reward": np.array([0.1, 0.2])})
    writer.write_eval(stage, 2, {"win_rate": 0.5, "win_rate_ci95": (0.3, 0.7), "episodes": 8, "revealed_fraction": 0.6})
    writer.close()
    return folder


def msjax_command(argv: list[str]) -> tuple[str, list[str]] | None:
    """``(command, its arguments)`` of ``msjax CMD ...``, ``python -m msjax CMD ...`` or
    ``python -m msjax.train ...`` (the one alias); None for any other command line."""
    if argv[:3] == ["python", "-m", "msjax.train"]:
        return "train", argv[3:]
    if argv[:3] == ["python", "-m", "msjax"] and len(argv) > 3:
        return argv[3], argv[4:]
    if argv[0] == "msjax" and len(argv) > 1:
        return argv[1], argv[2:]
    return None


def check_parses(argv: list[str]) -> None:
    """Checks a README command without running it: an msjax command parses with its own
    parser (its config and overrides load); a script, a benchmark module
    (``python -m benchmarks.X``) or an extra exists."""
    from msjax.run import config as config_lib
    from msjax.cli import play, serve, ship, train
    from msjax.cli import evaluate as evaluate_cli
    from msjax.cli import memory as memory_cli
    from msjax.cli import paired as paired_cli
    from msjax.cli import viz as viz_cli

    command = msjax_command(argv)
    if command is not None:
        name, rest = command
        if name == "train":
            args = train.parse_args(rest)
            if args.config is not None:
                train.resolve_config(args)
        elif name == "memory":
            args = memory_cli.parse_args(rest)
            config_lib.apply_overrides(config_lib.load_config(args.config), args.overrides)
        else:
            parsers = {"evaluate": evaluate_cli.build_parser().parse_args, "viz": viz_cli.build_parser().parse_args,
                       "play": play.parse_args, "serve": serve.parse_args, "ship": ship.parse_args,
                       "paired": paired_cli.build_parser().parse_args}
            assert name in parsers, f"{shlex.join(argv)}: msjax has no command {name!r}"
            parsers[name](rest)
    elif argv[:3] == ["python", "-m", "ruff"]:
        assert argv[3:] == ["check", "."] and "[tool.ruff" in (REPOSITORY / "pyproject.toml").read_text()
    elif argv[:3] == ["python", "-m", "mkdocs"]:
        assert argv[3:] in (["serve"], ["build", "--strict"]) and (REPOSITORY / "mkdocs.yml").is_file()
    elif argv[:3] == ["python", "-m", "pytest"]:
        assert (REPOSITORY / argv[-1]).is_dir()
    elif argv[:2] == ["python", "-m"] and argv[2].startswith("benchmarks."):
        module = argv[2].removeprefix("benchmarks.")
        assert (REPOSITORY / "benchmarks" / f"{module}.py").is_file(), f"{argv[2]}: no benchmarks/{module}.py"
    elif argv[0] == "python" and argv[1].endswith(".py"):
        assert (REPOSITORY / argv[1]).is_file(), f"{argv[1]} does not exist"
    elif argv[:3] == ["pip", "install", "-e"]:
        extra = re.fullmatch(r"\.(?:\[(\w+)\])?", argv[3])
        assert extra, f"pip install -e {argv[3]}: not this repository"
        if extra[1]:
            assert re.search(rf"^{extra[1]} = \[", (REPOSITORY / "pyproject.toml").read_text(), re.M), extra[1]
    else:
        raise AssertionError(f"{shlex.join(argv)}: the README test does not know this command; teach check_parses")


PYTHON_EXAMPLES = examples("python")
SHELL_EXAMPLES = examples("bash")


def test_the_readmes_have_examples_to_check():
    assert len(PYTHON_EXAMPLES) >= 7 and len(SHELL_EXAMPLES) >= 9


@pytest.mark.parametrize("example", PYTHON_EXAMPLES, ids=lambda example: example.name)
def test_every_python_example_runs_as_written(example, tmp_path, monkeypatch):
    if example.reason is not None:
        assert example.reason.strip(), f"{example.name}: a block not run says why"
        pytest.skip(f"{example.name}: {example.reason}")
    monkeypatch.chdir(tiny_project(tmp_path) if "runs/" in example.code else tmp_path)
    exec(compile(example.code, example.name, "exec"), {"__name__": "readme_example"})


@pytest.mark.parametrize("example", SHELL_EXAMPLES, ids=lambda example: example.name)
def test_every_shell_example_runs_or_says_why_not_and_its_commands_parse(example, tmp_path, monkeypatch):
    commands = shell_commands(example.code)
    costly = [shlex.join(argv) for argv in commands if shlex.join(argv) not in CHEAP]
    assert example.reason is not None or not costly, (
        f"{example.name} runs {costly}, not cheap: mark it '<!-- not run by the tests: REASON -->'"
    )
    assert example.reason is None or example.reason.strip(), f"{example.name}: a block not run says why"
    monkeypatch.chdir(REPOSITORY)  # config files are named from the repository
    for argv in commands:
        check_parses(argv)
    cheap = [argv for argv in commands if shlex.join(argv) in CHEAP]
    if cheap:
        monkeypatch.chdir(tiny_project(tmp_path))
        for argv in cheap:
            assert run_command(argv) == 0, shlex.join(argv)


def run_command(argv: list[str]) -> int:
    """Runs a cheap msjax command in this process; its exit status."""
    from msjax.__main__ import main

    name, rest = msjax_command(argv)
    return main([name, *rest])


def test_a_shell_block_splits_into_its_commands():
    code = "pip install -e . && python -m a --x 1  # note\nX=1 Y=2 python -m b \\\n    --y 2\n"
    assert shell_commands(code) == [["pip", "install", "-e", "."], ["python", "-m", "a", "--x", "1"],
                                    ["python", "-m", "b", "--y", "2"]]  # fmt: skip

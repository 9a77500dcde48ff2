"""The package's layering (DESIGN.md): imports run down the layers, never up, never in a
circle, and no private name crosses a module boundary.

Every ``import`` of the source is read, those inside functions too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "msjax"
TESTS = Path(__file__).resolve().parent

# A module's layer is that of the longest prefix listed.
LAYERS = {
    "msjax.checks": 0,
    "msjax.env": 0,
    "msjax.reference": 0,
    "msjax.stats": 0,
    "msjax.distributed": 0,
    "msjax.solver": 1,
    "msjax.models": 1,
    "msjax.adapters": 1,
    "msjax.agent": 2,
    "msjax.search": 2,
    "msjax.losses": 2,
    "msjax.optimizers": 2,
    "msjax.stages": 3,
    "msjax.evaluate": 3,
    "msjax.run": 4,
    "msjax.shipped": 4,
    "msjax.viz": 4,
    "msjax.web": 4,
    "msjax.cli": 5,
    "msjax.train": 5,
    "msjax.__main__": 5,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


MODULES = all_modules()


def layer_of(module: str) -> int:
    prefixes = [p for p in LAYERS if module == p or module.startswith(p + ".")]
    if not prefixes:
        raise AssertionError(f"{module} has no layer: add it to LAYERS in {Path(__file__).name}")
    return LAYERS[max(prefixes, key=len)]


def imported_names(path: Path, module: str) -> list[tuple[str, tuple[str, ...], int]]:
    """``(module imported, names taken from it, line)`` for every import of ``msjax``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, (), node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.append((base, tuple(alias.name for alias in node.names), node.lineno))
    return [(name, names, line) for name, names, line in found if name == "msjax" or name.startswith("msjax.")]


def edges(module: str, path: Path) -> list[tuple[str, int]]:
    """The msjax modules ``module`` imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    targets = []
    for name, names, line in imported_names(path, module):
        submodules = [f"{name}.{n}" for n in names if f"{name}.{n}" in MODULES]
        targets += [(t, line) for t in submodules] or [(name, line)]
        if submodules and len(submodules) < len(names):
            targets.append((name, line))
    return [(t, line) for t, line in targets if t != module and t != "msjax"]


GRAPH = {module: edges(module, path) for module, path in MODULES.items() if module != "msjax"}


def test_every_module_has_a_layer():
    for module in GRAPH:
        layer_of(module)


def test_no_module_imports_from_a_higher_layer():
    upward = [
        f"{module} (L{layer_of(module)}) imports {target} (L{layer_of(target)}) at line {line}"
        for module, targets in GRAPH.items()
        for target, line in targets
        if target in MODULES and layer_of(target) > layer_of(module)
    ]
    assert not upward, "\n".join(upward)


def test_no_import_cycles():
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target, _ in GRAPH.get(module, []):
            if state.get(target) == 1:
                cycles.append(" -> ".join(path[path.index(target) :] + [target]))
            elif target not in state:
                visit(target, path + [target])
        state[module] = 2

    for module in GRAPH:
        if module not in state:
            visit(module, [module])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


@pytest.mark.parametrize("folder", [PACKAGE, TESTS], ids=["msjax", "tests"])
def test_no_private_name_crosses_a_module_boundary(folder):
    crossings = []
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("msjax") or (
                isinstance(node, ast.ImportFrom) and node.level
            ):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        crossings.append(f"{path.name}:{node.lineno} imports {alias.name}")
                    aliases[alias.asname or alias.name] = True
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("msjax"):
                        aliases[(alias.asname or alias.name).split(".")[0]] = True
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
            ):
                crossings.append(f"{path.name}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert not crossings, "\n".join(crossings)


def test_packages_declare_their_public_names():
    missing = [
        module
        for module, path in MODULES.items()
        if path.name == "__init__.py" and module != "msjax" and "__all__" not in path.read_text()
    ]
    assert not missing, f"packages without __all__: {missing}"


def test_entry_points_are_shims_into_the_command_lines():
    """``python -m msjax.train``, the one alias of ``msjax train``, only hands over to
    ``msjax.cli.train`` (argument parsing and printing live there); ``msjax/__main__.py``
    imports the command it runs, and no package below the command lines has a ``__main__``."""
    imports = {name for name, _, _ in imported_names(MODULES["msjax.train"], "msjax.train")}
    assert imports == {"msjax.cli.train"}, f"msjax.train imports {sorted(imports)}"
    assert len(MODULES["msjax.train"].read_text().splitlines()) <= 10, "msjax.train is more than a shim"
    mains = [m for m in MODULES if m.endswith("__main__")]
    assert mains == ["msjax.__main__"], f"entry points inside packages: {mains}"


def test_no_test_imports_the_benchmarks():
    """benchmarks/ holds measurements run as commands (``python -m benchmarks.X``); what a
    test checks lives in msjax, or the test runs the benchmark as a command."""
    importers = []
    for path in sorted(TESTS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            if any(name == "benchmarks" or name.startswith("benchmarks.") for name in names):
                importers.append(f"{path.name}:{node.lineno}")
    assert not importers, f"tests import benchmarks: {', '.join(importers)}"

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

# A module's layer is that of the longest prefix listed. The ``python -m`` entry points of
# packages below the command lines are listed by name: each is a shim into ``msjax.cli``
# (``test_entry_points_are_shims_into_the_command_lines``).
LAYERS = {
    "msjax.checks": 0,
    "msjax.env": 0,
    "msjax.exact": 0,
    "msjax.stats": 0,
    "msjax.distributed": 0,
    "msjax.runfiles": 0,
    "msjax.runlock": 0,
    "msjax.solver": 1,
    "msjax.models": 1,
    "msjax.adapters": 1,
    "msjax.agent": 2,
    "msjax.search": 2,
    "msjax.losses": 2,
    "msjax.optimizers": 2,
    "msjax.stages": 3,
    "msjax.evaluate": 3,
    "msjax.diagnostics": 3,
    "msjax.calibration": 3,
    "msjax.config": 4,
    "msjax.checkpoint": 4,
    "msjax.checkpoint_integrity": 4,
    "msjax.shipped": 4,
    "msjax.runlog": 4,
    "msjax.divergence": 4,
    "msjax.outofspace": 4,
    "msjax.viz": 4,
    "msjax.web": 4,
    "msjax.memory": 4,
    "msjax.evaluate.__main__": 5,
    "msjax.viz.__main__": 5,
    "msjax.memory.__main__": 5,
    "msjax.train": 5,
    "msjax.runcontrol": 5,
    "msjax.play": 5,
    "msjax.serve": 5,
    "msjax.ship": 5,
    "msjax.cli": 5,
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
    """Every ``python -m msjax.X`` module only hands over to ``msjax.cli.X`` (argument
    parsing and printing live there): it imports ``sys`` and its command, nothing else."""
    entry_points = [m for m in MODULES if m.endswith("__main__")] + ["msjax.play", "msjax.serve", "msjax.ship"]
    for module in entry_points:
        imports = {name for name, _, _ in imported_names(MODULES[module], module)}
        command = module.removesuffix(".__main__").rpartition(".")[2]
        assert imports == {f"msjax.cli.{command}"}, f"{module} imports {sorted(imports)}"
        assert len(MODULES[module].read_text().splitlines()) <= 10, f"{module} is more than a shim"

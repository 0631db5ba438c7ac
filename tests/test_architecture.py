"""The layering rules of docs/architecture.md, checked on the source.

- ``spi`` imports nothing of ours; a provider imports only ``spi`` and itself;
  ``kvctl``, ``migrations`` and ``pyspark_kvctl`` never import a provider (they reach
  one through ``spi.connect``).
- No import cycle among our modules, counting module-level imports and those under
  ``TYPE_CHECKING`` (a type-level circle is a design smell too); lazy imports inside
  functions are allowed to point back.
- No module of ours over 600 lines.
- No private module of a dependency (``from typer._click import ...``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("spi", "providers", "kvctl", "migrations", "pyspark_kvctl")
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(module: str, *, module_level_only: bool) -> Iterator[tuple[str, int]]:
    """(imported module, line) of every import in ``module`` (relative ones resolved)."""
    tree = ast.parse(MODULES[module].read_text())
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]

    def visit(node: ast.AST) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                yield from ((alias.name, child.lineno) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                yield base, child.lineno
                for alias in child.names:  # "from pkg import module"
                    if f"{base}.{alias.name}" in MODULES:
                        yield f"{base}.{alias.name}", child.lineno
            elif not (module_level_only and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))):
                yield from visit(child)  # TYPE_CHECKING blocks count too

    yield from visit(tree)


def _ours(name: str) -> str | None:
    """The module of ours that importing ``name`` loads, if any."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


@pytest.mark.parametrize("module", sorted(MODULES))
def test_layers(module: str) -> None:
    layer = module.split(".")[0]
    for name, line in _imports(module, module_level_only=False):
        target = _ours(name)
        if target is None:
            continue
        target_layer = target.split(".")[0]
        where = f"{MODULES[module].relative_to(ROOT)}:{line} imports {target}"
        if layer == "spi":
            assert target_layer == "spi", where
        elif layer == "providers":
            own = ".".join(module.split(".")[:2])
            assert target_layer == "spi" or target == "providers" or target.startswith(own), where
        else:
            assert target_layer != "providers", where


def test_no_import_cycles() -> None:
    graph = {
        m: {t for n, _ in _imports(m, module_level_only=True) if (t := _ours(n)) is not None and t != m}
        for m in MODULES
    }
    # A package's __init__ importing its own submodules is how packages work, not a cycle.
    for m, targets in graph.items():
        graph[m] = {t for t in targets if not (m and t.startswith(m + ".") and MODULES[m].name == "__init__.py")}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycle = [*stack[stack.index(t) :], t]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_module_sizes() -> None:
    big = {str(p.relative_to(ROOT)): n for p in MODULES.values() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert big == {}, f"modules over {MAX_LINES} lines: {big}"


def test_no_private_modules_of_dependencies() -> None:
    private = []
    for module in MODULES:
        for name, line in _imports(module, module_level_only=False):
            if _ours(name) is None and any(part.startswith("_") and part != "__future__" for part in name.split(".")):
                private.append(f"{MODULES[module].relative_to(ROOT)}:{line} imports {name}")
    assert private == []

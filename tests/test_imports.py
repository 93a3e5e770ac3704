"""Imports go one way: no circle among memsim's modules (counting the imports inside
functions too), and the engine's modules in layers, each importing only the layers below.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "memsim"

# the engine, bottom up: a module may import only modules of earlier layers
ENGINE_LAYERS = [
    {"compiler"},
    {"jit"},
    {"layout"},
    {"device", "corecache"},
    {"cores", "ecc", "nda", "refresh", "step"},
    {"controller"},
    {"readyset", "subbank"},
    {"schedule"},
    {"dualbus"},
    {"loop"},
    {"channels"},
    {"build"},
    {"__init__"},
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    """memsim module -> the memsim modules it imports (anywhere in the file). ``from
    memsim.x import y`` counts as an import of ``memsim.x.y`` where that is a module,
    else of ``memsim.x``."""
    paths = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # (relative: from the package)
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                for a in node.names:
                    edges.add(f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base)
        graph[name] = {e for e in edges if e in paths and e != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A circle of imports, or None (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_circle():
    assert _cycle(_graph()) is None, " -> ".join(_cycle(_graph()))


def test_the_check_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_every_engine_module_has_a_layer():
    modules = {p.stem for p in (ROOT / "engine").glob("*.py")}
    assert modules == set().union(*ENGINE_LAYERS)


@pytest.mark.parametrize("layer", range(len(ENGINE_LAYERS)))
def test_engine_modules_import_only_lower_layers(layer):
    graph = _graph()
    below = set().union(*ENGINE_LAYERS[:layer])
    for stem in ENGINE_LAYERS[layer]:
        name = "memsim.engine" if stem == "__init__" else f"memsim.engine.{stem}"
        engine = {m.removeprefix("memsim.engine.") for m in graph[name]
                  if m.startswith("memsim.engine.")}
        assert engine <= below, f"{name} imports {sorted(engine - below)} (not below it)"

"""The layers of the project, checked by reading the source (no module is imported).

``common`` sits below everything; the compiler knows nothing of the bot or the reports; the
reports render plain data and know nothing of the bot; a command module of the CLI parses its
arguments and calls library functions, sharing only the options module with the others; and no
two modules of the bot and the reports import each other, directly or round a loop. Imports inside
functions count too: a loop through a deferred import is still a loop in the design.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("common", "compiler", "bot", "reports")
CLI_SHARED = {"bot.cli.options"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


SOURCES = _sources()


def _imported(name: str, path: Path) -> set[str]:
    """The project modules ``name`` imports: a ``from X import y`` names module X.y when there
    is one, else X itself."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in SOURCES else base
                         for alias in node.names)
    return {module for module in found if module.split(".")[0] in PACKAGES}


IMPORTS = {name: _imported(name, path) for name, path in SOURCES.items()}


def _under(name: str, *packages: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _crossings(source: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(f"{name} imports {target}" for name, targets in IMPORTS.items()
                  if _under(name, *source) for target in targets if _under(target, *forbidden))


def test_the_sources_are_found():
    assert {"bot.cli.options", "reports.markdown", "compiler.errors", "common.errors"} <= set(SOURCES)


@pytest.mark.parametrize("layer,above", [
    (("common",), ("compiler", "bot", "reports", "models")),
    (("compiler",), ("bot", "reports")),
    (("reports",), ("bot",)),
])
def test_a_layer_never_imports_a_layer_above_it(layer, above):
    assert _crossings(layer, above) == []


def test_command_modules_share_only_the_options_module():
    commands = [name for name in IMPORTS if _under(name, "bot.cli") and name.endswith("_cmd")]
    assert len(commands) > 10
    found = sorted(f"{name} imports {target}" for name in commands for target in IMPORTS[name]
                   if _under(target, "bot.cli") and target not in CLI_SHARED)
    assert found == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, or of one importing itself
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_loop():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_the_bot_and_reports_modules():
    inside = {name for name in IMPORTS if _under(name, "bot", "reports")}
    graph = {name: {t for t in IMPORTS[name] if t in inside and t != name} for name in inside}
    assert _cycles(graph) == []

"""Every test that needs a CUDA GPU carries the ``gpu`` marker: CI's GPU job runs exactly
``pytest -m gpu``, so an unmarked GPU test would only ever be skipped on the hosted runners."""
from __future__ import annotations

import ast

from tests.paths import TESTS


def _imports_cupy(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "cupy" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "cupy":
            return True
    return False


def _marks_module_gpu(tree: ast.Module) -> bool:
    """A module-level ``pytestmark`` that names ``pytest.mark.gpu``."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            return "pytest.mark.gpu" in ast.unparse(node.value)
    return False


def test_modules_that_use_cupy_are_marked_gpu():
    unmarked = []
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        if _imports_cupy(tree) and not _marks_module_gpu(tree):
            unmarked.append(str(path.relative_to(TESTS)))
    assert unmarked == []


def test_the_check_sees_an_unmarked_module():
    tree = ast.parse("import pytest\n\ndef test_x():\n    import cupy\n")
    assert _imports_cupy(tree) and not _marks_module_gpu(tree)
    marked = ast.parse("import pytest\npytestmark = [pytest.mark.gpu]\n")
    assert _marks_module_gpu(marked)

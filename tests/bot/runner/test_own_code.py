"""A worker's packages come from the revision's tree alone, even beside an editable install."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.fixtures.runner.helpers import CODE_ROOT

# A stand-in for setuptools' editable finder: it maps every ``compiler.*`` name to another tree.
SCRIPT = textwrap.dedent('''
    import importlib.machinery, importlib.util, sys
    from pathlib import Path

    class Editable:
        @classmethod
        def find_spec(cls, fullname, path=None, target=None):
            if fullname.startswith("compiler."):
                file = Path(sys.argv[1], *fullname.split(".")).with_suffix(".py")
                return importlib.util.spec_from_file_location(fullname, file) if file.exists() else None

    # right after the path finder, as an installed editable finder is (before any real one)
    sys.meta_path.insert(sys.meta_path.index(importlib.machinery.PathFinder) + 1, Editable)
    if sys.argv[2] == "confined":
        from pathlib import Path
        from bot.runner.own_code import confine_to_roots
        confine_to_roots([Path(sys.argv[3])])
    import compiler.present
    try:
        import compiler.tuning
    except ModuleNotFoundError as exc:
        print("missing", exc.name, compiler.present.WHERE)
    else:
        print("found", compiler.tuning.WHERE, compiler.present.WHERE)
''')


def _tree(root: Path, modules: dict) -> Path:
    (root / "compiler").mkdir(parents=True)
    (root / "compiler" / "__init__.py").write_text("")
    for name, text in modules.items():
        (root / "compiler" / f"{name}.py").write_text(text)
    return root


@pytest.mark.parametrize("mode, expected", [
    ("confined", "missing compiler.tuning revision"),
    ("plain", "found installed revision"),      # what an unconfined worker would have measured
])
def test_a_module_the_revision_lacks_is_not_taken_from_an_installed_tree(tmp_path, mode, expected):
    revision = _tree(tmp_path / "revision", {"present": "WHERE = 'revision'"})
    installed = _tree(tmp_path / "installed", {"present": "WHERE = 'installed'",
                                               "tuning": "WHERE = 'installed'"})
    env = {"PYTHONPATH": f"{revision}:{CODE_ROOT}", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-P", "-c", SCRIPT, str(installed), mode, str(revision)], env=env,
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == expected

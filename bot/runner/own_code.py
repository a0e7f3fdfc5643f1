"""A worker imports each package of the code it measures from that code alone.

A worker's ``PYTHONPATH`` starts with the revision's tree (and the folder holding this perfbot's
runner). A top-level package found there is that revision's, but a *module inside it* that the
revision lacks would still be found by a finder further along ``sys.meta_path``: an editable
install of perfbot (``pip install -e``) maps ``compiler.*`` to the installed checkout. An A/B's
base older than one of the compiler's modules would then run that module from the head's tree,
measuring a mix of both revisions. ``confine_to_roots`` makes such an import fail instead, as it
does without an editable install. The roots are the worker's command-line arguments
(``WorkerSession.launch``: the same folders it puts first on ``PYTHONPATH``).
"""
from __future__ import annotations

import importlib.machinery
import sys
from pathlib import Path


def packages_in(root: Path) -> set[str]:
    """The top-level packages a folder provides (regular or namespace directories)."""
    try:
        return {p.name for p in root.iterdir() if p.is_dir() and p.name.isidentifier()}
    except OSError:
        return set()


class ConfinedFinder:
    """First on ``sys.meta_path``: a submodule of a confined package is looked up on its parent's
    ``__path__`` only, and is missing if it is not there."""

    def __init__(self, packages: set[str]):
        self.packages = packages

    def find_spec(self, fullname: str, path=None, target=None):
        top = fullname.partition(".")[0]
        if "." not in fullname or top not in self.packages:
            return None     # a top-level name, or another package: the usual finders decide
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return spec


def confine_to_roots(roots: list[Path]) -> None:
    """Install the finder for every package the ``roots`` provide (once)."""
    packages = set().union(*(packages_in(root) for root in roots)) if roots else set()
    if packages and not any(isinstance(f, ConfinedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, ConfinedFinder(packages))


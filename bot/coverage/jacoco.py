"""JaCoCo XML (Java, Kotlin, Scala; the Maven and Gradle plugins, ``jacococli report --xml``):
``<package name="com/example">`` elements, possibly inside ``<group>`` elements (a multi-module
aggregate report), each holding ``<sourcefile name="Foo.java">`` with one
``<line nr mi ci mb cb>`` per line that has bytecode.

Every such line is coverable; it ran when any of its instructions did (``ci`` > 0; JaCoCo counts
instructions, not executions, so a line that ran is recorded as run once). ``mb``/``cb`` are its
missed and covered branch outcomes. Only the ``<sourcefile>`` lines are read: the ``<class>`` and
``<method>`` counters summarise the same lines and are recomputed, not trusted.

A file's path is its package directory and name (``com/example/Foo.java``), which the checkout
spells under a source root (``src/main/java/``, ``app/src/main/kotlin/``): the usual roots, under
each enclosing group's name too, are tried before the unique checkout file ending with that path.
"""
from __future__ import annotations

import posixpath

from .errors import CoverageInputError
from .model import CoverageReport
from .paths import RepoFiles

_ROOTS = ("src/main/java", "src/main/kotlin", "src/main/scala", "src/java", "src")


def is_jacoco(document) -> bool:
    # JaCoCo always names the report (its bundle); one with nothing measured has no packages.
    return document.tag == "report" and (document.get("name") is not None
                                         or document.find(".//package") is not None)


def _number(line, name: str) -> int:
    return int(line.get(name, "0"))


def _packages(node, groups: tuple[str, ...] = ()):
    """Each ``<package>`` with the names of the ``<group>`` elements it sits in."""
    for child in node:
        if child.tag == "package":
            yield child, groups
        elif child.tag == "group":
            yield from _packages(child, groups + (child.get("name", ""),))


def _source_roots(groups: tuple[str, ...]) -> list[str]:
    # An aggregate report names each module's group after the module, which is usually its folder.
    prefixes = [posixpath.join(*groups[k:]) for k in range(len(groups)) if all(groups[k:])]
    return [posixpath.join(p, r) for p in prefixes for r in _ROOTS] + list(_ROOTS)


def jacoco_report(document, path: str, root: str | None = None) -> CoverageReport:
    report = CoverageReport(format="jacoco", source=path)
    repo = RepoFiles(root)
    for package, groups in _packages(document):
        folder = package.get("name", "")
        for source in package.findall("sourcefile"):
            name = source.get("name")
            if not name:
                continue
            written = posixpath.join(folder, name) if folder else name
            entry = report.entry(repo.resolve(written, _source_roots(groups)), written)
            for line in source.findall("line"):
                try:
                    number, covered = _number(line, "nr"), _number(line, "ci")
                    branches = _number(line, "mb") + _number(line, "cb")
                    taken = _number(line, "cb")
                except ValueError:
                    raise CoverageInputError(f"{path}: JaCoCo XML: malformed <line nr={line.get('nr')!r} "
                                             f"ci={line.get('ci')!r}> in {written[:80]!r}") from None
                entry.add_line(number, 1 if covered > 0 else 0)
                if branches:
                    entry.add_branch(number, taken, branches)
                    report.has_branches = True
    return report

"""Cobertura XML (and, told apart by their content, Clover and JaCoCo XML), as written by coverage.py
(``coverage xml``), gcovr (``--xml``/``--cobertura``), c8/nyc (``--reporter=cobertura``) and others.

Parsed with defusedxml: reports come from CI artifacts and must not be able to expand entities
or reach the network. Only each class's own ``<lines>`` are read (``<methods>`` repeat them), and
of a line only ``hits`` and, for branches, the ``(covered/total)`` of ``condition-coverage``; the
``line-rate``/``branch-rate`` summaries are recomputed, not trusted. A file named by several
classes (gcovr before merging, Java inner classes) is one file whose lines add up.
"""
from __future__ import annotations

import re
from xml.etree.ElementTree import ParseError

import defusedxml.ElementTree as ET
from defusedxml import DefusedXmlException

from .clover import clover_report, is_clover
from .errors import CoverageInputError
from .jacoco import is_jacoco, jacoco_report
from .model import CoverageReport
from .paths import RepoFiles

# "50% (1/2)" -> covered 1 of 2 branch outcomes.
_CONDITION = re.compile(r"\((\d+)/(\d+)\)")
_JACOCO_ROOT = re.compile(rb"<(?:!DOCTYPE\s+)?report[\s>/]")
_CLOVER_HINT = re.compile(rb"<coverage[^>]*\sclover=|<project[\s>]")


def _xml_format(path: str) -> str:
    """The XML format a file that does not parse was meant to be, told by its first element:
    JaCoCo's root is <report>, Clover's a <coverage clover=...> (or PHPUnit's, with <project>)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return "Cobertura"
    if _JACOCO_ROOT.search(head):
        return "JaCoCo"
    if _CLOVER_HINT.search(head):
        return "Clover"
    return "Cobertura"


def read_cobertura(path: str, root: str | None = None) -> CoverageReport:
    try:
        document = ET.parse(path).getroot()
    except (ParseError, DefusedXmlException) as exc:
        raise CoverageInputError(f"{path}: not a readable {_xml_format(path)} XML report ({exc})") from None
    except OSError as exc:
        raise CoverageInputError(f"{path}: cannot read coverage report ({exc.strerror})") from None
    if document.tag == "coverage" and is_clover(document):
        return clover_report(document, path, root)
    if is_jacoco(document):
        return jacoco_report(document, path, root)
    if document.tag != "coverage":
        raise CoverageInputError(f"{path}: XML root is <{document.tag}>, not Cobertura's <coverage>")
    # Several <source> roots are normal (coverage.py with two source packages): each is tried.
    sources = [s.text for s in document.findall("sources/source") if s.text and s.text.strip()]
    flavour = "gcovr" if "gcovr" in document.get("version", "") else "coverage.py"
    report = CoverageReport(format=f"cobertura ({flavour})", source=path)
    repo = RepoFiles(root)
    for clazz in document.iter("class"):
        filename = clazz.get("filename")
        if not filename:
            continue
        entry = report.entry(repo.resolve(filename, sources), filename)
        for line in clazz.findall("./lines/line"):
            try:
                number = int(line.get("number", ""))
                hits = int(float(line.get("hits", "0")))
            except ValueError:
                raise CoverageInputError(
                    f"{path}: Cobertura XML: malformed <line number={line.get('number')!r} hits={line.get('hits')!r}> "
                    f"in {filename[:80]!r}") from None
            entry.add_line(number, max(hits, 0))
            if line.get("branch", "").lower() == "true":  # coverlet (.NET) writes "True"
                found = _CONDITION.search(line.get("condition-coverage", ""))
                if found:
                    entry.add_branch(number, int(found.group(1)), int(found.group(2)))
                    report.has_branches = True
    return report

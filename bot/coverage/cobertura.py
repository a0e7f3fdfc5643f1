"""Cobertura XML, as written by coverage.py (``coverage xml``) and gcovr (``--cobertura``).

Parsed with defusedxml: reports come from CI artifacts and must not be able to expand entities
or reach the network.
"""
from __future__ import annotations

import re
from xml.etree.ElementTree import ParseError

import defusedxml.ElementTree as ET
from defusedxml import DefusedXmlException

from .errors import CoverageInputError
from .model import CoverageReport
from .paths import repo_relative

# "50% (1/2)" -> covered 1 of 2 branch outcomes.
_CONDITION = re.compile(r"\((\d+)/(\d+)\)")


def read_cobertura(path: str, root: str | None = None) -> CoverageReport:
    try:
        document = ET.parse(path).getroot()
    except (ParseError, DefusedXmlException) as exc:
        raise CoverageInputError(f"{path}: not a readable Cobertura XML report ({exc})") from None
    if document.tag != "coverage":
        raise CoverageInputError(f"{path}: XML root is <{document.tag}>, not Cobertura's <coverage>")
    sources = [s.text for s in document.findall("sources/source") if s.text]
    flavour = "gcovr" if "gcovr" in (document.get("version", "") + document.findtext("sources/source", "")) else "coverage.py"
    report = CoverageReport(format=f"cobertura ({flavour})", source=path)
    for clazz in document.iter("class"):
        filename = clazz.get("filename")
        if not filename:
            continue
        entry = report.file(repo_relative(filename, root, sources))
        # Only the class's own <lines>: <methods> repeat the same lines and would count twice.
        for line in clazz.findall("./lines/line"):
            number = int(line.get("number", "0"))
            entry.add_line(number, int(float(line.get("hits", "0"))))
            if line.get("branch") == "true":
                found = _CONDITION.search(line.get("condition-coverage", ""))
                if found:
                    entry.add_branch(number, int(found.group(1)), int(found.group(2)))
                    report.has_branches = True
    return report

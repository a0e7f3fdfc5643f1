"""Pick the reader for a coverage report by looking at its first bytes, not trusting its name."""
from __future__ import annotations

import os

from .cobertura import read_cobertura
from .coveragepy_json import read_coveragepy_json
from .errors import CoverageInputError
from .lcov import read_lcov
from .model import CoverageReport


def read_report(path: str, root: str | None = None) -> CoverageReport:
    """Read a Cobertura XML, LCOV or coverage.py JSON report; paths made relative to ``root``."""
    if not os.path.isfile(path):
        raise CoverageInputError(f"{path}: coverage report not found")
    with open(path, "rb") as handle:
        head = handle.read(512).lstrip()
    if head.startswith(b"<"):
        return read_cobertura(path, root)
    if head.startswith(b"{"):
        return read_coveragepy_json(path, root)
    if head.startswith((b"TN:", b"SF:")):
        return read_lcov(path, root)
    raise CoverageInputError(f"{path}: not Cobertura XML, LCOV or coverage.py JSON")

"""Pick the reader for a coverage report by looking at its content, not trusting its name."""
from __future__ import annotations

import json

from .cobertura import read_cobertura
from .coveragepy_json import read_coveragepy_json
from .errors import CoverageInputError
from .gcovr_json import read_gcovr_json
from .go_profile import looks_like_go_profile, read_go_profile
from .lcov import read_lcov
from .llvm_cov_json import is_llvm_cov_json, read_llvm_cov_json
from .model import CoverageReport
from .safe_files import check_input_file

_BOM = b"\xef\xbb\xbf"
KNOWN = ("Cobertura XML, Clover XML, JaCoCo XML, LCOV, coverage.py JSON, gcovr JSON, llvm-cov JSON "
         "or a Go coverage profile")


def _looks_like_lcov(head: bytes) -> bool:
    """First record is ``TAG:`` in capitals (TN, SF, VER...) or ``end_of_record``."""
    first = head.split(b"\n", 1)[0].strip()
    tag, colon, _ = first.partition(b":")
    return first == b"end_of_record" or (bool(colon) and tag.isalpha() and tag.isupper())


def _read_json(path: str, root: str | None) -> CoverageReport:
    try:
        with open(path, encoding="utf-8-sig") as handle:
            document = json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CoverageInputError(f"{path}: not a readable JSON report ({exc.__class__.__name__})") from None
    if not isinstance(document, dict):
        raise CoverageInputError(f"{path}: JSON report is not an object; expected {KNOWN}")
    if is_llvm_cov_json(document):
        return read_llvm_cov_json(document, path, root)
    if "gcovr/format_version" in document or isinstance(document.get("files"), list):
        return read_gcovr_json(document, path, root)
    if "files" in document:
        return read_coveragepy_json(document, path, root)
    hint = " (Istanbul's coverage-final.json: use the lcov or cobertura reporter)" \
        if any(isinstance(v, dict) and "statementMap" in v for v in list(document.values())[:3]) else ""
    raise CoverageInputError(f"{path}: not a coverage.py JSON report (no \"files\" object){hint}")


def read_report(path: str, root: str | None = None) -> CoverageReport:
    """Read a Cobertura XML, Clover XML, JaCoCo XML, LCOV, coverage.py JSON, gcovr JSON, llvm-cov
    JSON or Go coverage profile report.

    Paths are made relative to ``root`` (the repository), see ``paths``.
    """
    check_input_file(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError as exc:
        raise CoverageInputError(f"{path}: cannot read coverage report ({exc.strerror})") from None
    head = head.removeprefix(_BOM).lstrip()
    if not head:
        # c8 writes a zero-byte lcov.info when nothing was measured (its Cobertura file for the
        # same run is a <coverage> with no classes): an empty report, shown as "?" and "n/a".
        return CoverageReport(format="empty", source=path)
    if head.startswith(b"<"):
        return read_cobertura(path, root)
    if head.startswith(b"{"):
        return _read_json(path, root)
    if looks_like_go_profile(head):
        return read_go_profile(path, root)
    if _looks_like_lcov(head):
        return read_lcov(path, root)
    raise CoverageInputError(f"{path}: not {KNOWN}")


def report_kind(path: str) -> str:
    """The report's format as one word ("cobertura", "lcov", "go-coverprofile"...), from reading
    it whole: a broken file is refused, not stored."""
    fmt = read_report(path).format.split(" (")[0]  # "cobertura (gcovr)": the flavour is not kept
    return fmt.replace("coverage.py", "coveragepy").replace(" ", "-")

"""Results documents (``perfbot.results/2``): load, validate, upgrade and dump.

A results document crosses trust boundaries (CI artifacts, uploads, files a user hands us), so
everything read here is treated as hostile: size-capped, parsed without NaN/Infinity, checked
against the versioned JSON schema in ``bot/schemas`` and then against the rules the schema cannot
say (unique rows, finite numbers).  Every failure is a ``ResultsError`` with a one-line message.
"""
from __future__ import annotations

import json
import math
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from common.errors import UserError

SCHEMA_ID = "perfbot.results/2"
# Version 1 documents (before the rate's method was recorded) still load, upgraded on the way in.
SCHEMA_V1 = "perfbot.results/1"
_SCHEMA_FILES = {SCHEMA_ID: "results-2.schema.json", SCHEMA_V1: "results-1.schema.json"}
COMPARE_SCHEMA_ID = "perfbot.compare/1"
SCHEMA_DIR = Path(__file__).with_name("schemas")
# A whole suite with thousands of samples per row stays far below this; anything larger is not ours.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
# Deeper than any real document, shallow enough that validation can never hit the recursion limit.
MAX_NESTING = 32
# The largest integer a database column takes (signed 64-bit).
MAX_INT = 2 ** 63 - 1


class ResultsError(UserError):
    """A results (or compare) document is unreadable or does not follow its schema."""


def _is_date_time(value: object) -> bool:
    # RFC 3339 as datetime.fromisoformat reads it (3.11 accepts "Z"); a time zone is required so
    # that runs recorded on different machines order correctly.
    if not isinstance(value, str):
        return True
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return False
    return "T" in value and parsed.tzinfo is not None


def _format_checker() -> jsonschema.FormatChecker:
    checker = jsonschema.FormatChecker(formats=())
    checker.checks("date-time")(_is_date_time)
    return checker


@lru_cache(maxsize=None)
def _validator(schema_file: str) -> jsonschema.protocols.Validator:
    schema = json.loads((SCHEMA_DIR / schema_file).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=_format_checker())


def _where(error: jsonschema.ValidationError) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return path.lstrip(".") or "document"


def _one_line(text: str, limit: int = 200) -> str:
    # Messages quote untrusted values: keep them on one line and short.
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _check_depth(value: Any, depth: int = 0) -> None:
    if depth > MAX_NESTING:
        raise ResultsError(f"results document is nested deeper than {MAX_NESTING} levels")
    if isinstance(value, dict):
        for item in value.values():
            _check_depth(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_depth(item, depth + 1)


def _check_numbers(value: Any, where: str = "document") -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ResultsError(f"{where}: non-finite number")
    # JSON integers are unbounded; a database column is not (SQLite and PostgreSQL stop at 64 bits).
    if isinstance(value, int) and not isinstance(value, bool) and not -MAX_INT <= value <= MAX_INT:
        raise ResultsError(f"{where}: integer {_one_line(str(value), 40)} is out of range")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_numbers(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_numbers(item, f"{where}[{index}]")


def _schema_errors(doc: Any, schema_file: str, expected_id: str, what: str,
                   also: tuple[str, ...] = ()) -> None:
    if not isinstance(doc, dict):
        raise ResultsError(f"{what} must be a JSON object, not {type(doc).__name__}")
    if doc.get("schema") != expected_id and doc.get("schema") not in also:
        found = _one_line(repr(doc.get("schema")), 80)
        raise ResultsError(f"{what} has schema {found}; expected {expected_id!r}")
    _check_depth(doc)
    error = jsonschema.exceptions.best_match(_validator(schema_file).iter_errors(doc))
    if error is not None:
        raise ResultsError(f"invalid {what} at {_where(error)}: {_one_line(error.message)}")
    _check_numbers(doc)


def legacy_measurement(target: str | None) -> dict:
    """What a run that recorded no measurement measured: until version 2 every sample was one
    host-fed ``Program.run`` (on the gpu target, copies in and out included)."""
    return {"rate": "host-fed" if target == "gpu" else "host", "sample": "one run"}


def upgrade_results(doc: dict) -> dict:
    """A version 2 document for an already validated version 1 or 2 document (a copy)."""
    if doc.get("schema") == SCHEMA_ID:
        return doc
    run = dict(doc["run"])
    run.setdefault("measurement", legacy_measurement(run.get("target")))
    return {**doc, "schema": SCHEMA_ID, "run": run}


def validate_results(doc: Any) -> dict:
    """Check ``doc`` against its schema (``perfbot.results/2``, or ``/1``); return it unchanged
    or raise ResultsError. ``upgrade_results`` turns an accepted version 1 document into 2."""
    schema = doc.get("schema") if isinstance(doc, dict) else None
    _schema_errors(doc, _SCHEMA_FILES.get(schema, _SCHEMA_FILES[SCHEMA_ID]), SCHEMA_ID,
                   "results document", also=(SCHEMA_V1,))
    seen: set[tuple[str, int, str]] = set()
    for index, row in enumerate(doc["rows"]):
        key = (row["name"], row["batch"], row["mode"])
        if key in seen:
            raise ResultsError(
                f"invalid results document at rows[{index}]: duplicate row "
                f"{_one_line(key[0], 80)!r} batch {key[1]} {key[2]}"
            )
        seen.add(key)
    return doc


def validate_compare(doc: Any) -> dict:
    """Check ``doc`` against ``perfbot.compare/1``; return it unchanged or raise ResultsError."""
    _schema_errors(doc, "compare-1.schema.json", COMPARE_SCHEMA_ID, "compare document")
    return doc


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def parse_results(text: str | bytes, source: str = "results document") -> dict:
    """Parse and validate a results document given as JSON text."""
    if len(text) > MAX_DOCUMENT_BYTES:
        raise ResultsError(f"{source}: larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB")
    doc = _parse_json(text, source)
    try:
        return upgrade_results(validate_results(doc))
    except ResultsError as exc:
        raise ResultsError(f"{source}: {exc}") from None


def _read_capped(path: Path, what: str) -> bytes:
    """The bytes of a document file, refused when larger than any document of ours."""
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            raise ResultsError(f"{path}: larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB")
        return path.read_bytes()
    except OSError as exc:
        raise ResultsError(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def _parse_json(text: str | bytes, source: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        # json.JSONDecodeError is a ValueError; UnicodeDecodeError too.
        raise ResultsError(f"{source}: not valid JSON ({_one_line(exc, 120)})") from None


def load_results(path: str | Path) -> dict:
    """Read a results JSON file, validate it and return the document."""
    path = Path(path)
    return parse_results(_read_capped(path, "results file"), str(path))


def load_compare(path: str | Path) -> dict:
    """Read a compare JSON file (``perfbot compare --format json``, perhaps from another job),
    validate it and return the document: the one way a compare document is read."""
    path = Path(path)
    doc = _parse_json(_read_capped(path, "compare file"), str(path))
    try:
        return validate_compare(doc)
    except ResultsError as exc:
        raise ResultsError(f"compare file {path} does not match {COMPARE_SCHEMA_ID}: {exc}") from None


def dump_results(doc: dict, path: str | Path | None = None) -> str:
    """Validate ``doc`` and return it as JSON text; also write it to ``path`` when given."""
    validate_results(doc)
    text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if path is not None:
        from bot.outfiles import write_output

        write_output(path, text, "results file")  # atomic: never half a file
    return text

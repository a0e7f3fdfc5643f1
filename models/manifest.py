"""The suite manifest: benchmark rows (what to build or load, batch, mode, tolerances, inputs).

The packaged manifest is ``models/suite.toml``; another one can be given by path. Every mistake
in a manifest is a ``ManifestError`` (a ``UserError``) naming the file, the row and the field.
"""
from __future__ import annotations

import difflib
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from compiler.errors import UserError

DEFAULT_MANIFEST = Path(__file__).with_name("suite.toml")
MODES = ("fp32", "fp16")
DEFAULT_TOLERANCE = {"fp32": (1e-3, 1e-3), "fp16": (4e-2, 4e-2)}
ROW_FIELDS = {"name", "builder", "path", "batch", "mode", "rtol", "atol", "threshold_pct", "inputs",
              "dims", "options", "params", "seed", "description"}
INPUT_FIELDS = {"normal": {"dist", "mean", "std"}, "uniform": {"dist", "low", "high"},
                "int": {"dist", "low", "high"}}


class ManifestError(UserError):
    """The manifest (or a name looked up in it) is wrong."""


@dataclass(frozen=True)
class InputSpec:
    """How to draw one input: ``normal`` (mean, std), ``uniform`` [low, high), ``int`` [low, high)."""
    dist: str = "normal"
    low: float = 0.0
    high: float = 1.0
    mean: float = 0.0
    std: float = 1.0


@dataclass
class Row:
    name: str
    builder: str | None
    path: Path | None
    batch: int
    mode: str
    rtol: float
    atol: float
    threshold_pct: float | None = None
    inputs: dict[str, InputSpec] = field(default_factory=dict)
    # Sizes of symbolic input dimensions other than the batch (an exported model's "seq", say).
    dims: dict[str, int] = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    params: int | None = None       # published parameter count (models check compares within 1 %)
    seed: int = 0
    description: str = ""

    @property
    def source(self) -> str:
        return self.builder if self.builder else str(self.path)


@dataclass
class Manifest:
    path: Path
    rows: list[Row]
    suites: dict[str, list[str]]

    def get(self, name: str) -> Row:
        for row in self.rows:
            if row.name == name:
                return row
        raise ManifestError(self._unknown(name))

    def _unknown(self, name: str) -> str:
        """One short line for a name that is neither a suite nor a row: the suites and the nearest
        names, not every row of the zoo."""
        names = list(self.suites) + [r.name for r in self.rows]
        close = difflib.get_close_matches(name, names, n=3)
        hint = (f"; did you mean {', '.join(close)}?" if close
                else "; `perfbot models list --suite SUITE` shows the rows")
        shown = name if len(name) <= 80 else name[:79] + "…"
        return (f"{shown!r} is neither a suite nor a row of manifest {self.path} "
                f"(suites: {', '.join(self.suites) or 'none'}){hint}")

    def suite(self, name: str) -> list[Row]:
        if name not in self.suites:
            raise ManifestError(self._unknown(name))
        return [self.get(n) for n in self.suites[name]]

    def select(self, spec: str) -> list[Row]:
        """Comma-separated suite and/or row names, in the order given, each row once."""
        items = [n.strip() for n in spec.split(",") if n.strip()]
        if not items:
            raise ManifestError("empty model selection")
        rows: dict[str, Row] = {}
        for item in items:
            for row in (self.suite(item) if item in self.suites else [self.get(item)]):
                rows.setdefault(row.name, row)
        return list(rows.values())


def load_manifest(path: str | Path | None = None) -> Manifest:
    path = Path(path) if path else DEFAULT_MANIFEST
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ManifestError(f"manifest {path} not found") from None
    except IsADirectoryError:
        raise ManifestError(f"manifest {path} is a folder; give the suite's .toml file") from None
    except OSError as exc:
        raise ManifestError(f"manifest {path} cannot be read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ManifestError(f"manifest {path}: not valid TOML: {exc}") from None
    return _parse(data, path)


# -- validation ------------------------------------------------------------------------------
def _parse(data: dict, path: Path) -> Manifest:
    where = f"manifest {path}"
    unknown = set(data) - {"suites", "rows"}
    if unknown:
        raise ManifestError(f"{where}: unknown top-level field(s) {', '.join(sorted(unknown))}")
    raw_rows = data.get("rows", [])
    if not isinstance(raw_rows, list) or not all(isinstance(r, dict) for r in raw_rows):
        raise ManifestError(f"{where}: 'rows' must be an array of tables ([[rows]])")
    rows, seen = [], set()
    for i, raw in enumerate(raw_rows):
        row = _parse_row(raw, path, f"{where}: row {raw.get('name', f'#{i + 1}')!r}")
        if row.name in seen:
            raise ManifestError(f"{where}: duplicate row name {row.name!r}")
        seen.add(row.name)
        rows.append(row)
    suites = data.get("suites", {})
    if not isinstance(suites, dict):
        raise ManifestError(f"{where}: 'suites' must be a table of name = [row names]")
    for suite, names in suites.items():
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ManifestError(f"{where}: suite {suite!r} must be a list of row names")
        missing = [n for n in names if n not in seen]
        if missing:
            raise ManifestError(f"{where}: suite {suite!r} names unknown row(s) {', '.join(missing)}")
        if len(set(names)) != len(names):
            raise ManifestError(f"{where}: suite {suite!r} lists a row twice")
    return Manifest(path, rows, {k: list(v) for k, v in suites.items()})


def _number(raw: dict, key: str, where: str, default=None, positive: bool = True):
    value = raw.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or (positive and value <= 0) or value < 0:
        raise ManifestError(f"{where}: field {key!r} must be a {'positive' if positive else 'non-negative'} "
                            f"number, got {value!r}")
    return float(value)


def _integer(value, key: str, where: str, minimum: int) -> int:
    """``value`` checked to be an integer (TOML booleans are not) of at least ``minimum`` (0 or 1)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        kind = "positive" if minimum == 1 else "non-negative"
        raise ManifestError(f"{where}: {key!r} must be a {kind} integer, got {value!r}")
    return value


def _parse_row(raw: dict, manifest: Path, where: str) -> Row:
    from models.builders import BUILDERS  # builders import onnx: only when a manifest is read

    unknown = set(raw) - ROW_FIELDS
    if unknown:
        raise ManifestError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    name = raw.get("name")
    if not isinstance(name, str) or not name or any(c in name for c in ", \t/"):
        raise ManifestError(f"{where}: 'name' must be a non-empty string without commas, spaces or '/'")
    if ("builder" in raw) == ("path" in raw):
        raise ManifestError(f"{where}: give exactly one of 'builder' or 'path'")
    builder, path = raw.get("builder"), None
    options = raw.get("options", {})
    if not isinstance(options, dict):
        raise ManifestError(f"{where}: 'options' must be a table")
    if builder is not None:
        if builder not in BUILDERS:
            raise ManifestError(f"{where}: unknown builder {builder!r}; known: {', '.join(sorted(BUILDERS))}")
        bad = set(options) - BUILDERS[builder].options()
        if bad:
            raise ManifestError(f"{where}: builder {builder!r} has no option(s) {', '.join(sorted(bad))}; "
                                f"known: {', '.join(sorted(BUILDERS[builder].options()))}")
    else:
        if options:
            raise ManifestError(f"{where}: 'options' only apply to builder rows")
        path = _resolve(raw["path"], manifest, where)
    batch = _integer(raw.get("batch"), "batch", where, minimum=1)
    mode = raw.get("mode", "fp32")
    if mode not in MODES:
        raise ManifestError(f"{where}: 'mode' must be one of {', '.join(MODES)}, got {mode!r}")
    rtol0, atol0 = DEFAULT_TOLERANCE[mode]
    params = raw.get("params")
    if params is not None:
        _integer(params, "params", where, minimum=1)
    seed = _integer(raw.get("seed", 0), "seed", where, minimum=0)
    dims = raw.get("dims", {})
    if not isinstance(dims, dict):
        raise ManifestError(f"{where}: 'dims' must be a table of dimension name = size, e.g. {{ seq = 128 }}")
    # a length may be 0: a decoder's first step takes a cache of no tokens
    dims = {str(k): _integer(v, f"dims.{k}", where, minimum=0) for k, v in dims.items()}
    inputs = raw.get("inputs", {})
    if not isinstance(inputs, dict):
        raise ManifestError(f"{where}: 'inputs' must be a table of input name = {{ dist = ... }}")
    return Row(
        name=name, builder=builder, path=path, batch=batch, mode=mode,
        rtol=_number(raw, "rtol", where, rtol0), atol=_number(raw, "atol", where, atol0),
        threshold_pct=_number(raw, "threshold_pct", where, positive=False),
        inputs={k: _parse_input(v, f"{where}: input {k!r}") for k, v in inputs.items()},
        dims=dims, options=dict(options), params=params, seed=seed, description=str(raw.get("description", "")),
    )


def input_from_text(text: str, where: str) -> InputSpec:
    """An input's draw written on a command line: ``int:LOW:HIGH``, ``uniform:LOW:HIGH``,
    ``normal:MEAN:STD``, or an integer N for that value everywhere (a sample rate, a flag)."""
    dist, _, rest = text.strip().partition(":")
    if not rest:
        try:
            value = int(dist)
        except ValueError:
            raise ManifestError(f"{where}: expected int:LOW:HIGH, uniform:LOW:HIGH, normal:MEAN:STD or an "
                                f"integer, got {text!r}") from None
        return InputSpec("int", low=value, high=value + 1)
    names = {"normal": ("mean", "std"), "uniform": ("low", "high"), "int": ("low", "high")}.get(dist)
    parts = rest.split(":")
    if names is None or len(parts) != 2:
        raise ManifestError(f"{where}: expected int:LOW:HIGH, uniform:LOW:HIGH or normal:MEAN:STD, got {text!r}")
    raw = {"dist": dist}
    for key, part in zip(names, parts):
        try:
            raw[key] = int(part) if dist == "int" else float(part)
        except ValueError:
            raise ManifestError(f"{where}: {key} must be {'an integer' if dist == 'int' else 'a number'}, "
                                f"got {part!r}") from None
    return _parse_input(raw, where)


def _parse_input(raw, where: str) -> InputSpec:
    if not isinstance(raw, dict):
        raise ManifestError(f"{where}: must be a table like {{ dist = \"int\", low = 0, high = 100 }}")
    dist = raw.get("dist", "normal")
    if dist not in INPUT_FIELDS:
        raise ManifestError(f"{where}: 'dist' must be one of {', '.join(INPUT_FIELDS)}, got {dist!r}")
    unknown = set(raw) - INPUT_FIELDS[dist]
    if unknown:
        raise ManifestError(f"{where}: field(s) {', '.join(sorted(unknown))} do not apply to dist {dist!r}")
    for key, value in raw.items():
        if key != "dist" and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ManifestError(f"{where}: {key!r} must be a number, got {value!r}")
    if dist == "normal":
        spec = InputSpec("normal", mean=float(raw.get("mean", 0.0)), std=float(raw.get("std", 1.0)))
        if spec.std <= 0:
            raise ManifestError(f"{where}: 'std' must be positive")
        return spec
    if "low" not in raw or "high" not in raw:
        raise ManifestError(f"{where}: dist {dist!r} needs 'low' and 'high'")
    low, high = raw["low"], raw["high"]
    if dist == "int" and not (isinstance(low, int) and isinstance(high, int)):
        raise ManifestError(f"{where}: 'low' and 'high' of an int input must be integers")
    if not low < high:
        raise ManifestError(f"{where}: needs low < high (the range is [low, high)), got [{low}, {high})")
    return InputSpec(dist, low=low, high=high)


def _resolve(value, manifest: Path, where: str) -> Path:
    """A model path: absolute as given, or relative to the manifest's folder and inside it."""
    if not isinstance(value, str) or not value:
        raise ManifestError(f"{where}: 'path' must be a non-empty string")
    given = Path(value).expanduser()
    if given.is_absolute():
        resolved = given
    else:
        base = manifest.resolve().parent
        resolved = (base / given).resolve()
        if not resolved.is_relative_to(base):
            raise ManifestError(f"{where}: path {value!r} escapes the manifest's folder {base} "
                                f"(give an absolute path to use a file outside it)")
    # Whether the file is there is asked when the row is built (``cache.build_model``): a row
    # whose file is missing fails alone, as an error row, and the suite's other rows still run.
    return resolved


def check_model_file(path: Path, where: str) -> None:
    """One line for a model path that is not a readable file: a folder, absent, or not regular."""
    if path.is_dir():
        raise ManifestError(f"{where}: model path {path} is a folder, not an .onnx file")
    if not path.exists():
        raise ManifestError(f"{where}: model file {path} not found")
    if not path.is_file():
        raise ManifestError(f"{where}: model path {path} is not a regular file")

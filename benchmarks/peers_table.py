"""The breadth table of issue 24 from one or more ``peers.py`` logs (``peers.log``, JSON lines).

    python3 benchmarks/peers_table.py RUN1/peers.log RUN2/peers.log ... [--format markdown|families|json]
    python3 benchmarks/peers_table.py BASE/peers.log HEAD/peers.log --format ab

A grid is measured in parts (``peers.py --grid K/N``), and fp32 rows twice: once with PyTorch as
it runs by default (TF32 convolutions) and once with ``--torch-exact`` (TF32 off in the whole
process). Each line says which (``torch_tf32``). For every row this takes the last line of each
kind, in the order the files are given, and sets ours against torch.compile both ways:

- **primary**: fp16 rows against torch.compile; fp32 rows against torch.compile with TF32 off,
  the ratio of the ``--torch-exact`` run itself (ours and PyTorch timed in that one process);
- **TF32 default**: every row against torch.compile as PyTorch runs by default.

It prints one Markdown row per grid row, then the geomean of each column and the rows below 0.7
of the primary ratio. Rows that failed are listed with their one-line error.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field

FLOOR = 0.7     # issue 24: no row below this ratio


@dataclass
class Row:
    name: str
    default: dict = field(default_factory=dict)   # PyTorch as it runs by default
    exact: dict = field(default_factory=dict)     # --torch-exact: TF32 off (fp32 rows)
    error: str | None = None

    @property
    def line(self) -> dict:
        """The row's measurement as run by default, else its --torch-exact one (ours, eager)."""
        return self.default or self.exact

    @property
    def dtype(self) -> str:
        return self.line.get("dtype") or self.name.rsplit(":", 1)[-1]

    @property
    def primary(self) -> float | None:
        """ours / torch.compile at the same arithmetic: fp32 rows from the exact run."""
        source = self.exact if self.dtype == "fp32" else self.default
        return _ratio(source)

    @property
    def tf32_default(self) -> float | None:
        return _ratio(self.default)


def _ratio(line: dict) -> float | None:
    ours, theirs = line.get("ours_rate"), line.get("torch_compile_rate")
    if not isinstance(ours, (int, float)) or not isinstance(theirs, (int, float)) or theirs <= 0:
        return None
    return ours / theirs


def collect(lines) -> dict[str, Row]:
    """Rows by name from JSON lines in order; a later line of the same kind replaces an earlier
    one. A line with an error marks the row unless a later line measured it."""
    rows: dict[str, Row] = {}
    for text in lines:
        text = text.strip()
        if not text:
            continue
        line = json.loads(text)
        name = str(line.get("row", ""))
        row = rows.setdefault(name, Row(name))
        if line.get("error"):
            row.error = str(line["error"])
            continue
        row.error = None
        if line.get("torch_tf32") is False:
            row.exact = line
        else:
            row.default = line
    return rows


def geomean(values) -> float | None:
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _fmt(value, digits: int = 0) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def markdown(rows: dict[str, Row]) -> str:
    out = ["| row | ours /s | eager | torch.compile | torch.compile, TF32 off | ours / compile (same arithmetic) "
           "| ours / compile (TF32 default) |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    measured = [r for r in rows.values() if r.error is None]
    for r in measured:
        out.append(f"| {r.name} | {_fmt(r.line.get('ours_rate'))} | {_fmt(r.default.get('eager_rate'))} "
                   f"| {_fmt(r.default.get('torch_compile_rate'))} | {_fmt(r.exact.get('torch_compile_rate'))} "
                   f"| {_fmt(r.primary, 2)} | {_fmt(r.tf32_default, 2)} |")
    summary = summarise(rows)
    out.append("")
    out.append(f"Geomean ours / torch.compile at the same arithmetic: {_fmt(summary['primary_geomean'], 2)} "
               f"over {summary['primary_rows']} rows; with PyTorch's TF32 default: "
               f"{_fmt(summary['tf32_default_geomean'], 2)} over {summary['tf32_default_rows']} rows.")
    below = ", ".join(f"{n} {v:.2f}" for n, v in summary["below_floor"]) or "none"
    out.append(f"Below {FLOOR}: {below}.")
    for name, error in summary["errors"]:
        out.append(f"- {name}: {error}")
    return "\n".join(out)


def families(rows: dict[str, Row]) -> str:
    """The grid's own view: one line a model (``tv:<model>:<batch>:<dtype>`` rows), the primary
    ratio at batch 1 and at its large batch, fp32 and fp16; a dash where no line measured it."""
    cells: dict[str, dict[tuple[str, str], float | None]] = {}
    large: dict[str, str] = {}
    for r in rows.values():
        parts = r.name.split(":")
        if len(parts) != 4 or parts[0] != "tv" or r.error is not None:
            continue
        _, model, batch, dtype = parts
        size = "1" if batch == "1" else "large"
        if size == "large":
            large[model] = batch
        cells.setdefault(model, {})[(size, dtype)] = r.primary
    out = ["| model | large batch | b1 fp32 | b1 fp16 | large fp32 | large fp16 |", "|---|---:|---:|---:|---:|---:|"]
    for model in sorted(cells):
        got = cells[model]
        ratios = " | ".join(_fmt(got.get((size, dtype)), 2) for size in ("1", "large") for dtype in ("fp32", "fp16"))
        out.append(f"| {model} | {large.get(model, '–')} | {ratios} |")
    return "\n".join(out)


def ab(base: dict[str, Row], head: dict[str, Row]) -> str:
    """Our rate on two trees (``peers.py --no-compile`` logs of each): base, head, head / base per
    row both measured, and their geomean."""
    out = ["| row | base /s | head /s | head / base | head max abs vs PyTorch |", "|---|---:|---:|---:|---:|"]
    ratios = []
    for name, h in head.items():
        b = base.get(name)
        line_b = b.line if b is not None and b.error is None else {}
        line_h = h.line if h.error is None else {}
        ours_b, ours_h = line_b.get("ours_rate"), line_h.get("ours_rate")
        ratio = ours_h / ours_b if ours_b and ours_h else None
        if ratio is not None:
            ratios.append(ratio)
        out.append(f"| {name} | {_fmt(ours_b)} | {_fmt(ours_h)} | {_fmt(ratio, 3)} "
                   f"| {h.error or line_h.get('max_abs_vs_torch', '–')} |")
    out.append("")
    out.append(f"Geomean head / base: {_fmt(geomean(ratios), 3)} over {len(ratios)} rows.")
    return "\n".join(out)


def summarise(rows: dict[str, Row]) -> dict:
    measured = [r for r in rows.values() if r.error is None]
    primary = [r.primary for r in measured if r.primary is not None]
    default = [r.tf32_default for r in measured if r.tf32_default is not None]
    return {"primary_geomean": geomean(primary), "primary_rows": len(primary),
            "tf32_default_geomean": geomean(default), "tf32_default_rows": len(default),
            "below_floor": [(r.name, r.primary) for r in measured if r.primary is not None and r.primary < FLOOR],
            "errors": [(r.name, r.error) for r in rows.values() if r.error is not None]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="+", help="peers.log files, oldest first")
    ap.add_argument("--format", choices=("markdown", "families", "json", "ab"), default="markdown",
                    help="markdown: a line a row; families: a line a model, batch 1 and large, fp32 and fp16; "
                    "ab: two logs, base then head, our rates side by side")
    args = ap.parse_args(argv)
    files = []
    for path in args.logs:
        with open(path, encoding="utf-8") as f:
            files.append(f.readlines())
    if args.format == "ab":
        if len(files) != 2:
            ap.error("--format ab takes two logs: base, then head")
        print(ab(collect(files[0]), collect(files[1])))
        return 0
    rows = collect(line for lines in files for line in lines)
    if args.format == "json":
        print(json.dumps(summarise(rows), indent=1))
    elif args.format == "families":
        print(families(rows))
    else:
        print(markdown(rows))
    return 0

if __name__ == "__main__":
    sys.exit(main())

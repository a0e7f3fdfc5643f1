"""``perfbot profile`` output: where a compiled program's time goes, slowest instruction first,
as text, Markdown or JSON. Instruction names come from the model: escaped in every format."""
from __future__ import annotations

from . import formatting as fmt
from .escape import md, terminal_text
from .formats import as_json


def _head(doc: dict) -> str:
    total = sum(e["mean_us"] for e in doc["entries"])
    half = ", fp16" if doc.get("fp16") else ""
    whole = f" (a whole run uninstrumented: {doc['run_us']:,.1f} µs)" if doc.get("run_us") else ""
    return (f"{doc['model']} on {doc['target']} (batch {doc['batch']}{half}): {total:,.1f} µs a run "
            f"over {len(doc['entries'])} instructions{whole}, {doc['runs']} profiled runs")


def _share(entry: dict, total: float) -> str:
    return f"{entry['mean_us'] / total * 100:.1f}%" if total > 0 else fmt.MISSING


def render_profile(doc: dict, fmt_name: str, top: int = 20) -> str:
    """``doc``: {"model", "target", "batch", "fp16" and "run_us" (optional), "runs", "entries":
    compiler.profiling entries}."""
    if fmt_name == "json":
        return as_json(doc)
    entries = doc["entries"][:top]
    total = sum(e["mean_us"] for e in doc["entries"])
    cells = [(e["name"], e["op"], e.get("root", ""), fmt.micros(e["mean_us"]), _share(e, total))
             for e in entries]
    if fmt_name == "markdown":
        lines = [f"**{md(_head(doc))}**", "", "|Instruction|Op|Root|µs a run|Share|",
                 "|:---|:---|:---|---:|---:|"]
        lines += ["|" + "|".join(md(c) for c in row) + "|" for row in cells]
        return "\n".join(lines)
    cols = ("instruction", "op", "root", "µs a run", "share")
    cells = [tuple(terminal_text(c) for c in row) for row in cells]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(cols)]
    lines = [terminal_text(_head(doc)), "  ".join(c.ljust(w) for c, w in zip(cols, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)

"""``perfbot compile`` and ``perfbot verify`` output: a compiled program's modules, and an
accuracy check's verdict, as text, Markdown or JSON."""
from __future__ import annotations

import json


def render_compile(doc: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(doc, indent=2)
    head = (f"{doc['model']}: targets {','.join(doc['targets'])}, offload_copy "
            f"{'on' if doc['offload_copy'] else 'off'}{', fp16' if doc['fp16'] else ''}; "
            f"parse {doc['parse_seconds']:.3f} s, compile {doc['compile_seconds']:.3f} s")
    cols = ("module", "target", "instructions", "parameters", "returns", "copies in/out")
    rows = [(r["module"], r["target"], str(r["instructions"]), str(len(r["parameters"])),
             str(r["returns"]), f"{r['copies_to_device']}/{r['copies_from_device']}")
            for r in doc["roots"]]
    if fmt == "markdown":
        lines = [f"**{head}**", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        if "program" in doc:
            lines += ["", "```", doc["program"].rstrip(), "```"]
        return "\n".join(lines)
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    lines = [head, "  ".join(c.ljust(w) for c, w in zip(cols, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows]
    if "program" in doc:
        lines += ["", doc["program"].rstrip()]
    return "\n".join(lines)


def render_verify(doc: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(doc, indent=2)
    def num(v):
        return "n/a" if v is None else f"{v:.3g}"
    verdict = ("meets tolerance" if doc["status"] == "PASSED" else "is not within tolerance")
    line = (f"{doc['status']}: {doc['model']} on {doc['target']} {verdict} "
            f"(rtol {doc['rtol']:g}, atol {doc['atol']:g}): max abs error {num(doc['max_abs_err'])}, "
            f"max rel error {num(doc['max_rel_err'])}")
    if doc.get("worst_output"):  # quoted: an output is often named "output"
        line += f", largest error in output {doc['worst_output']!r}"
        if doc.get("worst_index") is not None:
            line += f" at {doc['worst_index']}"
    if doc.get("problem"):
        line += f"; {doc['problem']}"
    if fmt == "markdown":
        icon = ":white_check_mark:" if doc["status"] == "PASSED" else ":red_circle:"
        return f"{icon} {line}"
    return line

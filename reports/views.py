"""Compare-document rows and coverage figures prepared for the templates (shared by the
Markdown and HTML renderers)."""
from __future__ import annotations

from .coverage_input import ImpactedFile

from . import formatting as fmt
from .escape import Trusted

ROW_FIELDS = ("mode", "rate_new", "rate_old", "diff_pct", "threshold_pct", "p_value", "remeasured",
              "reason", "compile_s_new", "compile_s_old", "peak_mem_new", "peak_mem_old",
              "ci_low_pct", "ci_high_pct", "unreliable", "detectable_pct", "e2e_rate_new",
              "e2e_rate_old", "judged", "compile_diff_pct", "compile_mark", "compile_threshold_pct",
              "peak_mem_diff_pct", "peak_mem_mark", "peak_mem_threshold_pct", "repro",
              "profile_diff")
FLAGS = ("regression", "improvement")


def resource_moved(row: dict) -> bool:
    """Whether the row's compile time or peak memory moved beyond its threshold."""
    return row.get("compile_mark") in FLAGS or row.get("peak_mem_mark") in FLAGS


def notable(row: dict) -> bool:
    """A row the notes under the table describe (and the last that a cut to size drops)."""
    return (row.get("mark") != "ok" or bool(row.get("unreliable")) or resource_moved(row)
            or (row.get("judged") is False and (row.get("reason") or "").startswith("not judged")))
ACCURACY_FIELDS = ("batch", "mode", "rtol", "atol", "max_abs_err", "max_rel_err", "worst_output",
                   "worst_index", "nonfinite", "error")


def with_defaults(item: dict, fields: tuple[str, ...]) -> dict:
    """The optional fields of a compare document present (None) so templates can test them."""
    return {**dict.fromkeys(fields), **item}


def moved_head(pr_head: str | None, head_commit: str | None) -> str | None:
    """The PR's head when it is not the commit the results are for, else None."""
    if not pr_head or not head_commit:
        return pr_head or None
    same = pr_head.startswith(head_commit) or head_commit.startswith(pr_head)
    return None if same else pr_head


def change_phrase(delta: float | None) -> Trusted:
    if not delta:
        return Trusted("not change coverage")
    word = "increase" if delta > 0 else "decrease"
    return Trusted(f"{word} coverage by {abs(delta):.2f}%")


def impacted_view(file: ImpactedFile) -> dict:
    delta = file.delta
    return {
        "path": file.path, "head_pct": file.head_pct,
        "patch_text": fmt.coverage_pct(file.patch_pct) if file.patch_pct is not None else "ø",
        "delta_text": f"{delta:+.2f}%" if delta else "ø",
        "arrow": "⬆️" if delta and delta > 0 else "⬇️" if delta and delta < 0 else "",
        "trend": "up" if delta and delta > 0 else "down" if delta and delta < 0 else "",
    }

"""Compare-document rows and coverage figures prepared for the templates (shared by the
Markdown and HTML renderers)."""
from __future__ import annotations

from .coverage_input import ImpactedFile

from . import formatting as fmt
from .escape import Trusted

ROW_FIELDS = ("mode", "rate_new", "rate_old", "diff_pct", "threshold_pct", "p_value", "remeasured",
              "reason", "compile_s_new", "compile_s_old", "peak_mem_new", "peak_mem_old",
              "ci_low_pct", "ci_high_pct", "unreliable", "detectable_pct", "e2e_rate_new",
              "e2e_rate_old", "judged")
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

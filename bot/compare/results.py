"""compare_results: two results documents in, one ``perfbot.compare/1`` document out."""
from __future__ import annotations

import math
import statistics

from bot.results_doc import COMPARE_SCHEMA_ID

from .config import CompareConfig
from .devices import stratified
from .profile_diff import add_profile_diffs
from .repro import add_repro
from .resources import resource_fields, resource_regressions, unjudged_resources
from .machine_shift import machine_shift_pct, relative_rates, shift_reason
from .measurement import busy_machine, differences, incomparable, independent_samples, measured_in_turns
from .stats import ERROR, IMPROVEMENT, OK, REGRESSION, assess, noise_band_pct, row_seed

MARK_SYMBOLS = {OK: "✅", REGRESSION: "🔴", IMPROVEMENT: "🔆", ERROR: "❌"}
ACCURACY_BAD = ("FAILED", "ERROR")


def _key(row: dict) -> tuple[str, int, str]:
    return row["name"], int(row["batch"]), row["mode"]


def _side_meta(doc: dict) -> dict:
    run = doc.get("run", {})
    return {"commit": run.get("commit", "unknown"), "run_id": run.get("id"),
            "branch": run.get("branch"), "target": run.get("target")}


def _usable_rate(row: dict) -> float | None:
    rate = row.get("rate")
    if isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0:
        return float(rate)
    return None


def _base_fields(key, old: dict | None, new: dict | None, threshold: float) -> dict:
    name, batch, mode = key
    old, new = old or {}, new or {}
    return {
        "name": name, "batch": batch, "mode": mode,
        "rate_new": new.get("rate"), "rate_old": old.get("rate"), "diff_pct": None,
        "mark": ERROR, "threshold_pct": threshold, "p_value": None,
        "remeasured": bool(new.get("remeasured", False)), "reason": None,
        "compile_s_new": new.get("compile_s"), "compile_s_old": old.get("compile_s"),
        "peak_mem_new": new.get("peak_mem_bytes"), "peak_mem_old": old.get("peak_mem_bytes"),
        "ci_low_pct": None, "ci_high_pct": None,
        "n_new": len(new.get("samples") or []), "n_old": len(old.get("samples") or []),
        "noise_band_pct": None, "outliers_new": 0, "outliers_old": 0,
        "e2e_rate_new": new.get("e2e_rate"), "e2e_rate_old": old.get("e2e_rate"),
        "blocks_new": None, "blocks_old": None,
        "unreliable": new.get("unreliable") or old.get("unreliable") or None,
        "detectable_pct": None,
        "machine_shift_pct": None,  # the machine's own speed, head against base (host targets)
        "judged": True,        # False: the samples could not decide (too few, unreliable, incomparable)
    }


def _error_reason(old: dict | None, new: dict | None) -> str | None:
    # The head's own failure says most; a missing side next; the base's failure last.
    if new is None:
        return "missing in the head run"
    if new.get("status") == "error":
        return f"head: {new.get('error') or 'failed'}"
    if old is None:
        return "missing in the base run"
    if old.get("status") == "error":
        return f"base: {old.get('error') or 'failed'}"
    for side, row in (("head", new), ("base", old)):
        if _usable_rate(row) is None:
            return f"{side}: no rate recorded"
    return None


def _busy(old: dict | None, new: dict | None, config: CompareConfig) -> str | None:
    for side, row in (("head", new), ("base", old)):
        found = busy_machine(row or {}, config.busy_limit_pct)
        if found:
            return f"{side}: {found}"
    return None


def compare_row(key, old: dict | None, new: dict | None, config: CompareConfig,
                history: list[dict] | None = None, not_comparable: str | None = None,
                interleaved: bool = False) -> dict:
    """One row of the compare document. ``interleaved``: the sides were measured in turns (an
    A/B), so the machine's speed over time fell on both alike and is not judged."""
    threshold = config.threshold_for(*key)
    out = _base_fields(key, old, new, threshold)
    out["unreliable"] = out["unreliable"] or _busy(old, new, config)
    out.update(resource_fields(old, new, config))
    reason = _error_reason(old, new)
    if reason is not None:
        out["reason"] = reason
        return out
    old_values, old_blocks = independent_samples(old)
    new_values, new_blocks = independent_samples(new)
    out["blocks_old"] = len(old_values) if old_blocks else None
    out["blocks_new"] = len(new_values) if new_blocks else None
    old_values, new_values = stratified(old, new, old_values, new_values)  # a GPU's speed is no change
    band = noise_band_pct([h.get("rate") for h in history or []], config)
    verdict = assess(old_values, new_values, _usable_rate(old),
                     _usable_rate(new), threshold, config, band_pct=band,
                     seed=row_seed(*key, config))
    if any(v is not None and not math.isfinite(v)
           for v in (verdict.diff_pct, verdict.ci_low_pct, verdict.ci_high_pct, verdict.p_value,
                     verdict.noise_band_pct)):
        # Rates a float ratio cannot relate (a denormal next to a normal one): an error row,
        # never an Infinity that would make the JSON document invalid.
        out["reason"] = "the two rates are too far apart to compare (their ratio overflows)"
        return out
    out.update(mark=verdict.mark, diff_pct=verdict.diff_pct, p_value=verdict.p_value,
               ci_low_pct=verdict.ci_low_pct, ci_high_pct=verdict.ci_high_pct,
               noise_band_pct=verdict.noise_band_pct, reason=verdict.reason,
               outliers_new=verdict.outliers_new, outliers_old=verdict.outliers_old)
    if isinstance(new.get("detectable_pct"), (int, float)):
        out["detectable_pct"] = new["detectable_pct"]
    if not interleaved:
        _judge_against_machine(out, old, new, threshold, config, band, row_seed(*key, config))
    # The first reason a row is not judged is the one shown: what the user must change (the way
    # the runs were measured, their number of processes) before what happened meanwhile.
    if not_comparable:
        out.update(mark=OK, judged=False, reason=f"not judged: {not_comparable}")
    elif verdict.p_value is None:
        out["judged"] = False
    elif out["unreliable"]:
        out.update(mark=OK, judged=False,
                   reason=f"measurement unreliable, not judged: {out['unreliable']}")
    if not out["judged"]:
        out.update(unjudged_resources(out))
    return out


def _judge_against_machine(out: dict, old: dict, new: dict, threshold: float,
                           config: CompareConfig, band: float | None, seed: int) -> None:
    """Where both sides timed the reference workload (``bot.compare.machine_shift``): a row
    is not judged when the machine's own shift reaches its threshold, and a flag stands only
    when the row's rates relative to the machine's speed give the same mark."""
    shift = machine_shift_pct(old, new)
    if shift is None:
        return
    out["machine_shift_pct"] = shift
    if abs(shift) >= threshold:
        out["unreliable"] = out["unreliable"] or shift_reason(shift)
        return
    if out["mark"] not in (REGRESSION, IMPROVEMENT):
        return
    before, after = relative_rates(old), relative_rates(new)
    relative = assess(before, after, statistics.median(before), statistics.median(after),
                      threshold, config, band_pct=band, seed=seed)
    if relative.mark != out["mark"]:
        out.update(mark=OK, reason=(
            f"{out['diff_pct']:+.1f} % by rate, {relative.diff_pct:+.1f} % relative to the "
            f"machine's own speed, which moved {shift:+.1f} %: not flagged "
            f"({relative.reason or 'within the threshold'})"))


def settled(row_doc: dict, config: CompareConfig) -> bool:
    """Whether more A/B rounds could not change this row's verdict much: an error; a change
    significant at a tenth of alpha (a stricter level while still sampling, so that looking
    after every round does not inflate false alarms); or an interval of the median ratio that
    lies inside ±threshold (no change of the threshold's size is consistent with the samples)."""
    mark = row_doc.get("mark")
    if mark == ERROR:
        return True
    p = row_doc.get("p_value")
    if mark in (REGRESSION, IMPROVEMENT):
        return p is not None and p < config.alpha / 10
    low, high, threshold = (row_doc.get("ci_low_pct"), row_doc.get("ci_high_pct"),
                            row_doc.get("threshold_pct"))
    if low is None or high is None or threshold is None:
        return False
    return -threshold < low and high < threshold


def accuracy_item(row: dict) -> dict:
    """The head run's accuracy verdict of one row (ERROR when the row itself failed)."""
    acc = row.get("accuracy") or {}
    status = acc.get("status") or "SKIPPED"
    error = acc.get("error")
    if row.get("status") == "error":
        status, error = "ERROR", row.get("error") or "failed"
    return {"name": row["name"], "batch": row["batch"], "mode": row["mode"], "status": status,
            "rtol": acc.get("rtol"), "atol": acc.get("atol"),
            "max_abs_err": acc.get("max_abs_err"), "max_rel_err": acc.get("max_rel_err"),
            "worst_output": acc.get("worst_output"), "worst_index": acc.get("worst_index"),
            "nonfinite": bool(acc.get("nonfinite", False)), "error": error}


def _history_of(history: dict | None, key) -> list[dict] | None:
    if not history:
        return None
    found = history.get(key)
    if found is None:
        found = history.get("/".join(str(part) for part in key))
    return found


def _suite_order(base_keys: list, head_keys: list) -> list:
    """The head run's keys, each base-only key placed after its predecessor in the base run
    (a row missing from the head, e.g. a crashed shard, stays where the suite has it).
    Linear: base-only keys are grouped under the nearest preceding key the head also has."""
    in_head = set(head_keys)
    after: dict = {}  # head key (None: the start) -> base-only keys that follow it
    anchor = None
    for key in base_keys:
        if key in in_head:
            anchor = key
        else:
            after.setdefault(anchor, []).append(key)
    order = list(after.get(None, []))
    for key in head_keys:
        order.append(key)
        order.extend(after.get(key, []))
    return order


def compare_results(base: dict, head: dict, config: CompareConfig | None = None,
                    history: dict | None = None, calibration: dict | None = None) -> dict:
    """Compare two results documents (already validated) row by row.

    ``history`` maps (name, batch, mode) — or "name/batch/mode" — to the base branch's past
    measurements of that row (``Store.history`` entries; only "rate" is used). Rows follow the
    suite's order: the head run's, with a row only the base run has put back after the row
    that preceded it there. ``calibration`` maps keys to each row's detectable change on this
    machine (``sides.calibration_for``).
    """
    config = config or CompareConfig.from_pyproject()
    old_rows = {_key(r): r for r in base.get("rows", [])}
    new_rows = {_key(r): r for r in head.get("rows", [])}
    keys = _suite_order(list(old_rows), list(new_rows))
    refused = incomparable(base, head)
    interleaved = measured_in_turns(base, head)
    rows = [compare_row(k, old_rows.get(k), new_rows.get(k), config, _history_of(history, k), refused,
                        interleaved) for k in keys]
    for row in rows:
        known = (calibration or {}).get((row["name"], row["batch"], row["mode"]))
        if row["detectable_pct"] is None and known is not None:
            row["detectable_pct"] = known
    add_repro(rows, _side_meta(base), _side_meta(head))
    add_profile_diffs(rows, old_rows, new_rows)
    accuracy = [accuracy_item(r) for r in head.get("rows", [])]
    summary = {mark: sum(r["mark"] == mark for r in rows) for mark in MARK_SYMBOLS}
    summary["accuracy_failures"] = sum(a["status"] in ACCURACY_BAD for a in accuracy)
    summary["unreliable"] = sum(bool(r.get("unreliable")) for r in rows)
    summary.update(resource_regressions(rows))
    warnings = ([refused] if refused else []) + [
        "measured differently: " + d for d in differences(base, head)]
    unjudged = sum("not enough independent samples" in (r.get("reason") or "") for r in rows)
    if unjudged:
        warnings.append(f"{unjudged} of {len(rows)} rows were not judged: too few worker processes "
                        "per side for their difference to say anything about the change (use "
                        "`perfbot ab`, or `perfbot run --rounds N` for both sides)")
    warnings.extend(_machine_warning(rows))
    bad = (summary[REGRESSION] or summary[ERROR] or summary["accuracy_failures"]
           or summary["compile_regressions"] or summary["peak_mem_regressions"])
    return {
        "schema": COMPARE_SCHEMA_ID,
        "base": _side_meta(base),
        "head": _side_meta(head),
        "verdict": "not-recommended" if bad else "recommended",
        "rows": rows,
        "warnings": warnings,
        "accuracy": accuracy,
        "summary": summary,
        "settings": {"threshold_pct": config.threshold_pct, "alpha": config.alpha,
                     "interval_level": config.interval_level,
                     "compile_threshold_pct": config.compile_threshold_pct,
                     "memory_threshold_pct": config.memory_threshold_pct,
                     "min_history": config.min_history, "history": bool(history)},
    }


def _machine_warning(rows: list[dict]) -> list[str]:
    shifted = [r["machine_shift_pct"] for r in rows if r.get("machine_shift_pct") is not None
               and abs(r["machine_shift_pct"]) >= r["threshold_pct"]]
    if not shifted:
        return []
    worst = max(shifted, key=abs)
    return [f"the machine's own speed moved between the two runs by up to {worst:+.1f} % (a fixed "
            f"reference workload timed next to every sample); {len(shifted)} of {len(rows)} rows "
            "were not judged: compare revisions with `perfbot ab`, which measures both sides in turns"]


def needs_remeasure(row_doc: dict) -> bool:
    """Whether a compare row is a suspected regression worth more samples before the verdict:
    flagged 🔴, or dropped by at least its threshold without the evidence to flag it yet."""
    if row_doc.get("mark") == REGRESSION:
        return True
    diff, threshold = row_doc.get("diff_pct"), row_doc.get("threshold_pct")
    return (row_doc.get("mark") == OK and diff is not None and threshold is not None
            and diff <= -threshold)

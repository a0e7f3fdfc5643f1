"""Finding the two sides of a comparison, and the base branch's history for it."""
from __future__ import annotations

import re
from pathlib import Path

from common.errors import UserError

from bot.compare.calibration import stored_detectable
from bot.results_doc import load_results
from bot.store import StoreError

_SHA = re.compile(r"^[0-9a-fA-F]{7,64}$")


def resolve_side(spec: str, store, target: str | None = None) -> dict:
    """A results document from ``spec``: a results JSON file, a run id in ``store``, a
    commit SHA (prefix; the newest complete run of that commit) or, failing those, a branch
    name (its newest finished run, on ``target`` when given: the stored-baseline fallback when
    no A/B was run). ``store`` may be None when only files are given."""
    if not spec.strip():  # Path("") is the current folder: say what is really wrong
        raise UserError("an empty run id, commit or results file name was given")
    if Path(spec).is_file():
        return load_results(spec)
    if Path(spec).is_dir():
        raise UserError(f"{spec!r} is a folder; give a results file, a run id or a commit")
    if store is not None:
        try:
            return store.get_run(spec)
        except StoreError as exc:
            if "no run" not in str(exc):
                raise
        if _SHA.match(spec):
            return store.get_run(_run_of_commit(spec, store))
        latest = store.latest_run(spec, target=target)
        if latest is not None:
            return store.get_run(latest["id"])
    elif _SHA.match(spec) or not spec.endswith(".json"):
        raise UserError(f"{spec!r} is not a file, and no results database was given to look it up")
    raise UserError(f"{spec!r} is neither a results file, a run id nor a commit in the results database, "
                    "nor a branch with a finished run; `perfbot results list` shows the recorded runs")


def _run_of_commit(sha: str, store) -> str:
    runs = store.find_runs(commit=sha, limit=200)
    commits = {r["commit"] for r in runs}
    if len(commits) > 1:
        raise UserError(f"commit prefix {sha!r} is ambiguous: {', '.join(sorted(c[:12] for c in commits))}")
    whole = [r for r in runs if not r.get("shard")]
    if whole:
        return whole[0]["id"]
    if runs:
        raise UserError(f"commit {sha} has only unmerged shard runs; run "
                        f"'perfbot results merge --commit {sha}' first")
    # The usual cause: the base commit was never measured (a missing baseline).
    raise UserError(f"no run of commit {sha!r} in the results database: measure it first "
                    "(`perfbot run` on that commit) or pass its results file")


def resolve_pair(base_spec: str, head_spec: str, store, with_history: bool = True):
    """``(base, head, history)`` of a comparison. A branch as the base means that branch's
    newest run on the head's target (the stored-baseline mode); history is None when not asked."""
    head = resolve_side(head_spec, store)
    base = resolve_side(base_spec, store, target=head.get("run", {}).get("target"))
    return base, head, (history_for(store, base, head) if with_history else None)


def history_for(store, base: dict, head: dict, limit: int = 30) -> dict:
    """{(name, batch, mode): [past measurements]} of the base run's branch and target, for
    every row of either side; the two runs being compared are left out."""
    run = base.get("run", {})
    branch = run.get("branch")
    if store is None or not branch:
        return {}
    skip = {run.get("id"), head.get("run", {}).get("id")}
    keys = {(r["name"], r["batch"], r["mode"]) for r in head.get("rows", []) + base.get("rows", [])}
    found = {}
    for key in keys:
        past = [h for h in store.history(*key, branch=branch, target=run.get("target"), limit=limit)
                if h["run_id"] not in skip]
        if past:
            found[key] = past
    return found


def history_of_compare(store, doc: dict) -> dict:
    """{(name, batch, mode): past measurements} of the base run's branch and target, for every
    row of a compare document written earlier."""
    branch = doc["base"].get("branch")
    if store is None or not branch:
        return {}
    found = {}
    for row in doc["rows"]:
        key = (row["name"], row["batch"], row.get("mode") or "fp32")
        past = store.history(*key, branch=branch, target=doc["base"].get("target"))
        if past:
            found[key] = past
    return found


def calibration_for(store, head: dict, limit: int = 200) -> dict:
    """{(name, batch, mode): detectable change, percent} from the newest calibration run
    (``perfbot calibrate``) of the head's target on the same GPU (or CPU); {} when none. Rows
    calibrated before the spread's upper bound was taken are worked out again
    (``calibration.stored_detectable``)."""
    if store is None:
        return {}
    run = head.get("run", {})
    where = (run.get("machine") or {}).get("gpu") or (run.get("machine") or {}).get("cpu")
    for found in store.find_runs(target=run.get("target"), limit=limit):
        machine = found.get("machine") or {}
        if (found.get("measurement") or {}).get("mode") != "calibrate" \
                or (machine.get("gpu") or machine.get("cpu")) != where:
            continue
        detectable = {(r["name"], r["batch"], r["mode"]): stored_detectable(r)
                      for r in store.get_run(found["id"])["rows"]}
        return {key: pct for key, pct in detectable.items() if pct is not None}
    return {}

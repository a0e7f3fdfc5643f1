"""Whether two runs were measured alike, and each side's independent samples.

A rate means what its run's ``measurement`` says (``bot.runner.sides.Settings.measurement``): the
gpu target's rate is the device-resident rate, a results document of schema 1 holds the host-fed
end-to-end rate. Two runs whose rates measure different things cannot be compared at all; runs
taken on other machines, GPUs, drivers or package versions, or with other sampling settings, can
be compared only with a loud warning.
"""
from __future__ import annotations

import statistics

from bot.results_doc import legacy_measurement

# Machine fields whose difference changes what a rate can be (hostname alone does not).
_MACHINE_KEYS = ("cpu", "gpu", "cuda_driver", "cuda_runtime")
_SETTING_KEYS = ("sample", "min_sample_s", "repeats")


def rate_kind(doc: dict) -> str:
    run = doc.get("run", {})
    measurement = run.get("measurement") or legacy_measurement(run.get("target"))
    return str(measurement.get("rate") or "unknown")


def incomparable(base: dict, head: dict) -> str | None:
    """Why the two runs' rates cannot be compared at all, or None."""
    old, new = base.get("run", {}), head.get("run", {})
    if old.get("target") and new.get("target") and old["target"] != new["target"]:
        return (f"the base run was measured on {old['target']} and the head run on {new['target']}; "
                "their rates are not comparable")
    if rate_kind(base) != rate_kind(head):
        return (f"the base run's rate is the {rate_kind(base)} rate and the head run's the "
                f"{rate_kind(head)} rate; they measure different things and are not compared")
    return None


def differences(base: dict, head: dict) -> list[str]:
    """Ways the two runs were measured differently that do not forbid a comparison."""
    old, new = base.get("run", {}), head.get("run", {})
    found = []
    for key in _MACHINE_KEYS:
        a, b = (old.get("machine") or {}).get(key), (new.get("machine") or {}).get(key)
        if a and b and a != b:
            found.append(f"{key}: {a} (base) vs {b} (head)")
    for name, a in (old.get("versions") or {}).items():
        b = (new.get("versions") or {}).get(name)
        if name != "perfbot" and b and a != b:
            found.append(f"{name} {a} (base) vs {b} (head)")
    ma = old.get("measurement") or legacy_measurement(old.get("target"))
    mb = new.get("measurement") or legacy_measurement(new.get("target"))
    for key in _SETTING_KEYS:
        if ma.get(key) != mb.get(key) and (key in ma or key in mb):
            found.append(f"{key}: {ma.get(key)} (base) vs {mb.get(key)} (head)")
    if ma.get("mode") != mb.get("mode") and ma.get("mode") and mb.get("mode"):
        found.append(f"taken by `perfbot {ma['mode']}` (base) vs `perfbot {mb['mode']}` (head)")
    return found


def measured_in_turns(base: dict, head: dict) -> bool:
    """Whether both sides come from one A/B (``perfbot ab``), which measures them round by round
    in turns, rather than from runs taken one after the other."""
    modes = [(doc.get("run", {}).get("measurement") or {}).get("mode") for doc in (base, head)]
    return modes == ["ab", "ab"]


def independent_samples(row: dict) -> tuple[list[float], bool]:
    """(values the statistics may treat as independent, whether blocks were recorded).

    Samples of one worker process share its speed: each process (block) gives one value, the
    median of its samples. A document without blocks (schema 1) gives its samples as they are."""
    samples = [float(s) for s in row.get("samples") or []]
    blocks = row.get("blocks")
    if not isinstance(blocks, list) or len(blocks) != len(samples):
        return samples, False
    by_block: dict = {}
    for value, block in zip(samples, blocks):
        by_block.setdefault(block, []).append(value)
    return [statistics.median(v) for v in by_block.values()], True


def busy_machine(row: dict, limit_pct: float) -> str | None:
    """Why a host-target row's samples measure the machine's load rather than the program, or
    None: the mean share of the CPUs that other work used during its samples (recorded per sample
    by the runner, ``bot.runner.cpu_state``) reached ``limit_pct``. The mean decides, not one
    sample: a tick-counted share over a 50 ms sample is coarse (one tick of two CPUs' ten is
    10 %), while a load that slows the row shows in most samples."""
    shares = [s["others_cpu_pct"] for s in row.get("conditions") or []
              if isinstance(s, dict) and isinstance(s.get("others_cpu_pct"), (int, float))]
    if not shares or limit_pct >= 100:
        return None
    mean = sum(shares) / len(shares)
    if mean < limit_pct:
        return None
    busy = sum(share >= limit_pct for share in shares)
    return (f"other work used {mean:.0f} % of the CPUs during the samples (over {limit_pct:g} % "
            f"in {busy} of {len(shares)} samples)")

"""The GPU as a block: a faster GPU is not a faster revision.

Rows measured with ``--devices`` record the GPU of every sample (``devices``, parallel to
``samples``). Two H200s of one host differ by a few percent in speed, so blocks (worker processes)
from a fast and a slow GPU are not draws from one distribution: pooled as they are, they widen the
spread, and wherever one side landed more often on the faster GPU they would pass for a change.

The comparison therefore stratifies by device: every block value is first divided by its GPU's
level (the median, in logarithms, of all blocks both sides ran on that GPU) and multiplied by the
overall level. What is left is each block's distance from its own GPU's typical speed, the
device's speed taken out, and the rank test and the interval work on those aligned values (the
aligned-rank idea of Hodges and Lehmann). ``perfbot ab`` keeps both sides of a round on one GPU and
spreads the rounds over every GPU alike, so each GPU holds both sides and the levels are fair.

Only where every GPU holds blocks of both sides can its speed be told from the revision's; when
one side ran on a GPU the other never used (two stored runs of different machines, say), nothing
is aligned and the samples are compared as they are, as without ``--devices``.
"""
from __future__ import annotations

import math
import statistics


def device_key(record) -> str | None:
    """One GPU's identity across runs: its UUID, else its name and index, else its index."""
    if not isinstance(record, dict):
        return None
    if record.get("uuid"):
        return str(record["uuid"])
    return f"{record.get('name') or 'gpu'}#{record.get('index')}"


def blocks_with_devices(row: dict) -> tuple[list[float], list[str]] | None:
    """(one value per block: the median of its samples, the block's GPU), a block being one worker
    process on one GPU; None when the row records no GPU for every sample."""
    samples, blocks, devices = row.get("samples") or [], row.get("blocks"), row.get("devices")
    if not isinstance(blocks, list) or not isinstance(devices, list) \
            or not len(samples) == len(blocks) == len(devices):
        return None
    keys = [device_key(d) for d in devices]
    if None in keys:
        return None
    grouped: dict[tuple, list[float]] = {}
    for value, block, key in zip(samples, blocks, keys):
        grouped.setdefault((key, block), []).append(float(value))
    return ([statistics.median(v) for v in grouped.values()], [key for key, _ in grouped])


def stratified(old: dict, new: dict, old_values: list[float], new_values: list[float]
               ) -> tuple[list[float], list[float]]:
    """The two sides' block values with each GPU's speed taken out (see the module docstring);
    the values as given when the rows cannot be stratified."""
    old_blocks, new_blocks = blocks_with_devices(old), blocks_with_devices(new)
    if old_blocks is None or new_blocks is None:
        return old_values, new_values
    (old_v, old_d), (new_v, new_d) = old_blocks, new_blocks
    used = set(old_d) | set(new_d)
    if len(used) < 2 or set(old_d) != set(new_d) \
            or any(v <= 0 or not math.isfinite(v) for v in old_v + new_v):
        return old_values, new_values
    logs: dict[str, list[float]] = {}
    for value, key in zip(old_v + new_v, old_d + new_d):
        logs.setdefault(key, []).append(math.log(value))
    level = {key: statistics.median(found) for key, found in logs.items()}
    center = statistics.median(math.log(v) for v in old_v + new_v)

    def align(values: list[float], keys: list[str]) -> list[float]:
        return [math.exp(math.log(v) - level[k] + center) for v, k in zip(values, keys)]

    return align(old_v, old_d), align(new_v, new_d)

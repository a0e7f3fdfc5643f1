"""The GPU as a block in the comparison: a faster GPU is not a faster revision, and a real change
is still caught on several GPUs."""
import numpy as np

from bot.compare import CompareConfig, compare_results
from bot.compare.devices import blocks_with_devices, stratified
from tests.conftest import make_doc

GPUS = [{"index": 0, "name": "H200", "uuid": "GPU-0"}, {"index": 1, "name": "H200", "uuid": "GPU-1"}]


def spread_row(name, rate, gpus_of_blocks, speed, seed, samples_per_block=3, noise_pct=0.3):
    """A row of one block per entry of ``gpus_of_blocks``; GPU g runs ``speed[g]`` times as fast."""
    rng = np.random.default_rng(seed)
    samples, blocks, devices = [], [], []
    for block, gpu in enumerate(gpus_of_blocks):
        level = rate * speed[gpu] * (1 + rng.normal(0, noise_pct / 100))
        for _ in range(samples_per_block):
            samples.append(float(level * (1 + rng.normal(0, noise_pct / 300))))
            blocks.append(block)
            devices.append(GPUS[gpu])
    return {"name": name, "batch": 1, "mode": "fp32", "status": "ok", "error": None,
            "rate": float(np.median(samples)), "samples": samples, "blocks": blocks,
            "devices": devices, "compile_s": 1.0, "peak_mem_bytes": 1, "accuracy": None}


def compare(base_row, head_row):
    config = CompareConfig(threshold_pct=1.0)
    return compare_results(make_doc([base_row], run_id="b"), make_doc([head_row], run_id="h"),
                           config)["rows"][0]


def without_devices(row):
    return {k: v for k, v in row.items() if k != "devices"}


def test_a_faster_gpu_is_not_a_faster_revision():
    """The same code; GPU 1 is 4 % faster, and the head's blocks landed there more often (as
    rows measured separately could). Pooled, that is a significant 'improvement'; with the GPU
    as a block it is nothing."""
    speed = {0: 1.0, 1: 1.04}
    base = spread_row("r", 100.0, [0] * 8 + [1] * 2, speed, seed=1)
    head = spread_row("r", 100.0, [1] * 8 + [0] * 2, speed, seed=2)
    pooled = compare(without_devices(base), without_devices(head))
    assert pooled["mark"] == "improvement"
    blocked = compare(base, head)
    assert blocked["mark"] == "ok" and blocked["p_value"] > 0.01


def test_a_real_slowdown_on_several_gpus_is_still_caught():
    speed = {0: 1.0, 1: 1.04}
    rounds = [0, 1, 1, 0, 0, 1, 1, 0]  # ab: both sides of a round on one GPU
    base = spread_row("r", 100.0, rounds, speed, seed=3)
    head = spread_row("r", 95.0, rounds, speed, seed=4)
    result = compare(base, head)
    assert result["mark"] == "regression", result["reason"]
    assert -6.5 < result["diff_pct"] < -3.5
    # the GPUs' own spread is taken out: the evidence is stronger than pooled
    assert result["p_value"] <= compare(without_devices(base), without_devices(head))["p_value"]


def test_blocks_are_one_worker_process_on_one_gpu():
    row = spread_row("r", 100.0, [0, 1, 1], {0: 1.0, 1: 1.1}, seed=5, samples_per_block=2)
    values, gpus = blocks_with_devices(row)
    assert gpus == ["GPU-0", "GPU-1", "GPU-1"] and len(values) == 3
    assert blocks_with_devices(without_devices(row)) is None


def test_gpus_only_one_side_used_cannot_be_told_from_the_revision():
    """Base all on GPU 0, head all on GPU 1: the GPU's speed and the change are one; nothing is
    aligned, the values stay as they were."""
    speed = {0: 1.0, 1: 1.0}
    base = spread_row("r", 100.0, [0] * 6, speed, seed=6)
    head = spread_row("r", 100.0, [1] * 6, speed, seed=7)
    old, new = [1.0] * 6, [2.0] * 6
    assert stratified(base, head, old, new) == (old, new)
    one_gpu = spread_row("r", 100.0, [0] * 6, speed, seed=8)
    assert stratified(base, one_gpu, old, new) == (old, new)

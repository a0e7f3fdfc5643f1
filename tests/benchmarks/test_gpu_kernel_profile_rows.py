"""benchmarks/gpu_kernel_profile.py resolves each --rows name on its own: ``tv:`` names are
peers.py rows (tx: too), every other name a suite row (a suite name used to be taken as a peers row)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "benchmarks"))
from gpu_kernel_profile import suite_or_peers_row  # noqa: E402


def test_suite_and_peers_names_resolve_apart():
    suite = {"unet_fp16": object()}
    assert suite_or_peers_row("unet_fp16", suite) is suite["unet_fp16"]
    assert suite_or_peers_row("tv:vit_b_16:32:fp16", suite) == "tv:vit_b_16:32:fp16"
    assert suite_or_peers_row("tx:bert:8:fp16", suite) == "tx:bert:8:fp16"
    with pytest.raises(KeyError):
        suite_or_peers_row("no_such_row", suite)

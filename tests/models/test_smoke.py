"""Small models run in ONNX Runtime with finite, fp16-safe values everywhere; the CLI works."""
from __future__ import annotations

import json

import numpy as np
import pytest

from bot.cli import main
from models.check import check_row
from models.manifest import Row, load_manifest

MANIFEST = load_manifest()

# Reduced-size variants of the big families, run with every intermediate value audited.
REDUCED = {
    "nasnet": dict(num_cells=3, penultimate_filters=264, image_size=96),
    "dpn": dict(k_sec=(1, 2, 2, 1), image_size=64),
    "densenet": dict(blocks=(2, 2, 2, 2), image_size=64),
    "inception": dict(version=4, style="slim", image_size=96, num_classes=10),
    "resnet": dict(depth=101, groups=8, width_per_group=4, layers=[1, 1, 6, 1], base_width=16, image_size=64),
    "bert": dict(style="tf", layers=2, hidden=64, heads=4, intermediate=128, vocab=500, seq=16, max_positions=16),
    "unet": dict(block_out_channels=(32, 64, 64, 64), cross_attention_dim=32, latent_size=16, context_len=8),
    "taau": dict(height=64, width=96),
    "wlang": dict(cell="gru", vocab=300, emb=32, hidden=32, seq=7),
}
INT_INPUTS = {
    "bert": {"input_ids": (0, 500), "input_mask": (0, 2), "segment_ids": (0, 2)},
    "unet": {"timestep": (0, 1000)},
    "wlang": {"input": (0, 300)},
}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.mark.parametrize("row", MANIFEST.suite("smoke"), ids=lambda r: r.name)
def test_smoke_rows_pass_check_with_activation_audit(row, cache):
    result = check_row(row, cache, activations=True)
    assert result.ok, result.problems
    assert result.params == row.params
    assert result.max_abs_activation < 1e3
    assert result.ort_spread is not None and result.ort_spread < 1e-4
    # Outputs carry signal: not constant across a batch-1 output tensor unless it is a scalar.
    assert result.out_max > result.out_min or row.builder == "dlrm"


@pytest.mark.parametrize("builder", sorted(REDUCED))
def test_reduced_families_stay_finite_and_fp16_safe(builder, cache):
    from models.manifest import InputSpec
    inputs = {k: InputSpec("int", low=lo, high=hi) for k, (lo, hi) in INT_INPUTS.get(builder, {}).items()}
    row = Row(name=f"reduced-{builder}", builder=builder, path=None, batch=1, mode="fp32", rtol=1e-3,
              atol=1e-3, inputs=inputs, options=REDUCED[builder])
    result = check_row(row, cache, activations=True)
    assert result.ok, result.problems
    assert 1e-3 < result.max_abs_activation < 1e3


def test_dlrm_output_is_not_saturated(cache):
    from models.cache import build_model
    from models.check import run_ort
    from models.inputs import make_feeds
    row = MANIFEST.get("smoke-dlrm")
    path = build_model(row, cache)
    (p,) = run_ort(path, make_feeds(row, path, batch=256))[0]
    assert 0.05 < p.min() and p.max() < 0.95 and p.std() > 1e-3


def test_cli_list_json_and_check(cache, capsys):
    assert main(["models", "list", "smoke-bert,agentmodel", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in listed] == ["smoke-bert", "agentmodel"]
    assert listed[1]["parameters"] == 613651 and listed[1]["gflops_per_inference"] > 0
    assert main(["models", "check", "agentmodel", "--cache-dir", str(cache), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["rows"][0]["params_ok"]


def test_cli_build_out_and_errors(tmp_path, cache, capsys):
    out = tmp_path / "out"
    assert main(["models", "build", "smoke-wlang-lstm", "--cache-dir", str(cache), "--out", str(out)]) == 0
    assert (out / "smoke-wlang-lstm.onnx").is_file()
    capsys.readouterr()
    bad = tmp_path / "bad.toml"
    bad.write_text('[[rows]]\nname = "x"\nbuilder = "nope"\nbatch = 1\n')
    assert main(["models", "list", "--manifest", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "unknown builder 'nope'" in err and err.count("\n") == 1
    assert main(["models", "check", "nope", "--cache-dir", str(cache)]) == 2


def test_check_reports_a_wrong_parameter_count(cache):
    row = MANIFEST.get("agentmodel")
    wrong = Row(**{**row.__dict__, "params": int(row.params * 1.02)})
    result = check_row(wrong, cache)
    assert not result.ok and not result.params_ok
    assert "more than 1 % apart" in result.problems[0]
    assert np.isfinite(result.out_max)

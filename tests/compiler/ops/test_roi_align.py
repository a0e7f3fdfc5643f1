"""RoiAlign, whose regions are pooled in groups that share a sampling grid, a bounded number at a
time: against ONNX Runtime on many regions of assorted sizes (so several grids and several steps),
and the same result whatever the step."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.onnx.testing import node_model, run_compiler, run_ort
from compiler.ops import detection


def _feeds(seed: int, regions: int = 60):
    rng = np.random.default_rng(seed)
    corner = rng.uniform(-4.0, 40.0, (regions, 2))
    rois = np.concatenate([corner, corner + rng.uniform(0.5, 30.0, (regions, 2))], axis=1).astype(np.float32)
    return {"x": rng.standard_normal((2, 5, 20, 24)).astype(np.float32), "rois": rois,
            "batch": rng.integers(0, 2, regions).astype(np.int64)}


def _model(regions: int, **attrs):
    return node_model("RoiAlign", {"x": ("float32", [2, 5, 20, 24]), "rois": ("float32", [regions, 4]),
                                   "batch": ("int64", [regions])}, {"y": ("float32", None)},
                      {"output_height": 3, "output_width": 4, "spatial_scale": 0.5, **attrs}, opset=16)


@pytest.mark.parametrize("sampling_ratio", [0, 2])
@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
def test_average_pooling_of_many_regions_matches_onnxruntime(sampling_ratio, transform):
    model = _model(60, sampling_ratio=sampling_ratio, coordinate_transformation_mode=transform)
    feeds = _feeds(1)
    np.testing.assert_allclose(run_compiler(model, feeds)[0], run_ort(model, feeds)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_the_result_is_the_same_whatever_the_number_of_regions_pooled_at_once(mode, monkeypatch):
    model = _model(60, mode=mode)
    feeds = _feeds(2)
    whole = run_compiler(model, feeds)[0]
    monkeypatch.setattr(detection, "_POOL_ELEMENTS", 1)          # one region a step
    np.testing.assert_array_equal(run_compiler(model, feeds)[0], whole)

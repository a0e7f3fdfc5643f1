"""cuDNN convolution plans built through the backend API (``kernels/cudnn_backend``), ahead on
worker threads (``cudnn_ahead``) and read back from disk, against the frontend's plans and the
reference target (needs a CUDA GPU with cuDNN)."""
import numpy as np
import pytest

import compiler
from compiler.targets.gpu.backend import gpu_available
from compiler.targets.gpu.options import GpuOptions

from tests.compiler.targets.gpu.cases import build, feeds_for

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]

UNKEPT = GpuOptions(plan_cache=False)     # plans built here, none loaded from disk


def _frontend_only(monkeypatch):
    """Every later plan built by the frontend (as where the backend build refuses a graph)."""
    from compiler.targets.gpu.kernels import conv as convk
    monkeypatch.setattr(convk, "backend_builds", lambda spec, options: False)


def _spec(kind):
    from compiler.targets.gpu.kernels import conv as convk
    if kind == "split-3x3":        # a split fp32 convolution without a residual (zeros form)
        return convk.ConvSpec((4, 48, 14, 14), (32, 48, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1, "float32",
                              bias=True, relu=True, nhwc=True, inputs="bfloat16")
    if kind == "split-residual-s2":
        return convk.ConvSpec((4, 48, 14, 14), (32, 48, 3, 3), (1, 1), (1, 1), (2, 2), (1, 1), 1, "float32",
                              bias=True, residual=True, relu=True, nhwc=True, inputs="bfloat16")
    if kind == "fp16-residual":
        return convk.ConvSpec((4, 64, 14, 14), (128, 64, 1, 1), (0, 0), (0, 0), (1, 1), (1, 1), 1, "float16",
                              bias=True, residual=True, relu=True, nhwc=True)
    return convk.ConvSpec((2, 16, 9, 9), (8, 16, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1, "float32",  # exact
                          bias=True, nhwc=True)


def _operands(spec, seed):
    import cupy

    from compiler.targets.gpu.kernels import conv as convk
    rng = cupy.random.default_rng(seed)

    def operand(lens):
        values = rng.standard_normal(convk.storage_shape(lens, spec.nhwc), dtype=cupy.float32)
        if spec.inputs == "bfloat16":
            return (values.view(cupy.uint32) >> 16).astype(cupy.uint16)
        return values.astype(spec.dtype)
    x, w = operand(spec.x_shape), operand(spec.w_shape)
    b = rng.standard_normal((spec.w_shape[0],), dtype=cupy.float32).astype(spec.dtype)
    r = (rng.standard_normal(convk.storage_shape(spec.out_shape, spec.nhwc), dtype=cupy.float32).astype(spec.dtype)
         if spec.residual else None)
    return x, w, b, r


def _output(conv, operands):
    import cupy
    out = conv(*operands)
    cupy.cuda.get_current_stream().synchronize()
    return cupy.asnumpy(out).astype(np.float64)


@pytest.mark.parametrize("kind", ["split-3x3", "split-residual-s2", "fp16-residual", "exact"])
def test_backend_plan_computes_what_the_frontend_graph_does(kind, monkeypatch):
    from compiler.targets.gpu.kernels import conv as convk
    spec = _spec(kind)
    back = convk.CudnnConv(spec, UNKEPT)
    _frontend_only(monkeypatch)
    front = convk.CudnnConv(spec, UNKEPT)
    assert front.plan is None and back.plan is not None and back.tuned == "heuristic"
    for seed in (1, 2):
        operands = _operands(spec, seed)
        want, got = _output(front, operands), _output(back, operands)
        scale = np.abs(want).max()
        assert scale > 0 and np.abs(got - want).max() <= (2e-3 if spec.dtype == "float16" else 1e-6) * scale


def test_a_backend_plan_read_back_from_disk_computes_what_the_built_one_does(tmp_path):
    from compiler.targets.gpu.kernels import conv as convk
    options = GpuOptions(cache_dir=str(tmp_path))
    spec = _spec("split-residual-s2")
    built = convk.CudnnConv(spec, options)
    loaded = convk.CudnnConv(spec, options)
    assert built.tuned == "heuristic" and loaded.tuned == "loaded" and loaded.plan is not None
    operands = _operands(spec, 3)
    assert np.array_equal(_output(built, operands), _output(loaded, operands))


@pytest.mark.parametrize("backend", ["1", "0"])
def test_a_compile_takes_plans_built_ahead_and_matches_the_reference(backend, tmp_path, monkeypatch):
    """The split convolutions' plans start on worker threads before the lowering and the lowering
    takes them (or, where the backend build is refused, the frontend builds them in place); eager,
    recorded and replayed runs match the reference."""
    from compiler.targets.gpu.kernels import conv as convk
    options = GpuOptions(cache_dir=str(tmp_path), fp32_conv="split-cudnn")
    if backend == "0":
        _frontend_only(monkeypatch)
    monkeypatch.setattr(convk, "_graphs", {})
    program = compiler.parse_onnx(build("residual_block")).compile("gpu", gpu_options=options)
    split = [g for (s, _o), g in convk.made_graphs().items() if g is not None and s.inputs == "bfloat16"]
    assert split
    assert all(g.tuned == ("ahead" if backend == "1" else "heuristic") for g in split)
    assert all((g.plan is not None) == (backend == "1") for g in split)
    reference = compiler.parse_onnx(build("residual_block")).compile("ref")
    for seed in (1, 2, 3):
        want = np.asarray(reference.run(feeds_for(reference, seed))[0])
        got = np.asarray(program.run(feeds_for(program, seed))[0])
        assert np.abs(got - want).max() <= 2e-5 * np.abs(want).max()


def test_split_convolutions_of_one_output_shape_share_one_buffer_of_zeros(monkeypatch):
    """The zeros a split convolution without a residual adds are one read-only buffer per output
    shape, not one per convolution; the result still matches the frontend graph's."""
    from dataclasses import replace

    from compiler.targets.gpu.kernels import conv as convk
    three = _spec("split-3x3")
    one = replace(three, w_shape=(32, 48, 1, 1), pads_begin=(0, 0), pads_end=(0, 0))
    assert three.out_shape == one.out_shape
    a, b = convk.CudnnConv(three, UNKEPT), convk.CudnnConv(one, UNKEPT)
    assert a.zeros is not None and a.zeros is b.zeros
    assert not a.zeros.get().any()
    operands = _operands(one, 4)
    _frontend_only(monkeypatch)
    want = _output(convk.CudnnConv(one, UNKEPT), operands)
    got = _output(b, operands)
    assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()

"""Every GPU lowering against the reference target on fresh random inputs (needs a CUDA GPU)."""
from dataclasses import replace

import numpy as np
import pytest

import compiler
from compiler.targets.gpu.backend import gpu_available
from compiler.targets.gpu.options import GpuOptions

from tests.compiler.targets.gpu.cases import CASES, build, feeds_for


def _options(**fields) -> GpuOptions:
    """The environment's options (its cache folder) with ``fields`` set."""
    return replace(GpuOptions.from_environment(), **fields)

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]

# cuDNN may use TF32 tensor cores for fp32 convolutions (as PyTorch does by default).
LOOSE = {"conv3x3", "conv7x7s2", "conv1x1", "conv_grouped", "conv_depthwise", "conv_dilated_asym",
         "conv_bn_relu_add", "residual_block", "matmul", "matmul_batched", "gemm", "einsum", "attention", "lstm", "gru",
         "gru_lbr0", "lstm_bidirectional", "gru_bidirectional", "conv_add_relu", "conv_relu", "conv_chain_pool_concat",
         "dense_block", "conv1d", "conv1d_strided_dilated", "conv1d_depthwise", "conv1d_grouped",
         "conv1d_waveform", "audio_front", "conv3d", "conv3d_stem", "conv_transpose",
         "conv_transpose1d", "conv_transpose_dilated", "pad_then_conv"}


def _run(name, target, seed, **options):
    program = compiler.parse_onnx(build(name))
    feeds = feeds_for(program, seed)
    program.compile(target, **options)
    return program, [np.asarray(o) for o in program.run(feeds)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_matches_reference(name):
    """Three runs on fresh inputs: eager, recorded into CUDA graphs, replayed."""
    program = compiler.parse_onnx(build(name)).compile("gpu")
    root = program.compiled.context.roots["main"]
    rtol = 2e-3 if name in LOOSE else 1e-5
    for seed in (1, 2, 3):
        _, ref = _run(name, "ref", seed)
        got = [np.asarray(o) for o in program.run(feeds_for(program, seed))]
        assert len(got) == len(ref)
        for g, r in zip(got, ref):
            assert g.dtype == r.dtype and g.shape == r.shape
            np.testing.assert_allclose(g, r, rtol=rtol, atol=rtol)
    assert root.host_fallbacks == []
    assert root.graph_error is None and root.graphs is not None


@pytest.mark.parametrize("name", ["conv_chain_pool_concat", "lstm"])
def test_back_to_back_replays_keep_stream_order(name):
    """Replays return without waiting for the GPU: runs issued back to back on device buffers,
    each output copied on the caller's stream before the next run and read only at the end, all
    equal the reference (a replay must wait for the caller's copy before overwriting its output
    buffer, and the copy for the replay)."""
    import cupy
    program = compiler.parse_onnx(build(name)).compile("gpu", offload_copy=False)
    params = program.main.parameters()
    copies, refs = [], []
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        for seed in range(1, 7):
            feeds = feeds_for(program, seed)
            refs.append(_run(name, "ref", seed)[1])
            args = [cupy.asarray(feeds[p.name]) if p.name in feeds else cupy.empty(p.shape.lens, dtype=p.shape.dtype)
                    for p in params]
            copies.append([o.copy() for o in program.compiled.run_raw(args)])
        got = [[cupy.asnumpy(o) for o in outs] for outs in copies]
    assert program.compiled.context.roots["main"].graphs is not None     # the later runs replayed
    for outs, ref in zip(got, refs):
        for g, r in zip(outs, ref):
            np.testing.assert_allclose(g, r, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("name", ["chain", "conv_bn_relu_add", "attention", "layernorm", "softmax",
                                  "conv_add_relu", "residual_block", "conv_chain_pool_concat", "lstm",
                                  "resize_linear", "audio_front", "conv1d_depthwise",
                                  "conv1d_waveform", "conv3d", "conv3d_stem", "conv_transpose"])
def test_fp16_mode_stays_close(name):
    _, ref = _run(name, "ref", 3)
    _, got = _run(name, "gpu", 3, fp16=True)
    for g, r in zip(got, ref):
        assert g.dtype == r.dtype
        np.testing.assert_allclose(g, r, rtol=3e-2, atol=3e-2)


def test_fp16_residual_convolution_takes_a_precompiled_cudnn_engine():
    """relu(conv + r + b) in fp16 (a ResNet-50 block's last convolution): cuDNN's classic fused
    form, served by a precompiled engine; the order conv + b + r had only runtime-compiled ones,
    most of a cold fp16 ResNet-50 compile. The fusion itself is checked by the fp16 cases above
    (``residual_block``)."""
    from compiler.targets.gpu.kernels import conv as convk
    spec = convk.ConvSpec((64, 256, 14, 14), (1024, 256, 1, 1), (0, 0), (0, 0), (1, 1), (1, 1), 1, "float16",
                          bias=True, residual=True, relu=True, nhwc=True)
    assert convk.residual_first(spec)
    compiled = convk.CudnnConv(spec, _options(plan_cache=False)).runtime_compiled()   # built, not loaded
    if compiled is None:
        pytest.skip("this cuDNN does not say whether an engine is runtime-compiled")
    assert compiled is False


@pytest.mark.parametrize("offload_copy", [True, False])
@pytest.mark.parametrize("assign", [{"Softmax": "cpu"}, {"Softmax": "gpu/cpu"}, {"Softmax": "gpu/cpu/gpu"}])
def test_partitioned_gpu_cpu_equals_single_target(assign, offload_copy):
    import cupy
    _, ref = _run("attention", "ref", 4)
    program = compiler.parse_onnx(build("attention"))
    feeds = feeds_for(program, 4)
    program.compile(["gpu", "cpu"], offload_copy=offload_copy, assign=assign)
    if not offload_copy:
        feeds = {k: cupy.asarray(v) for k, v in feeds.items()}
    for _ in range(3):   # eager, recorded, replayed
        got = program.run(feeds)
        for g, r in zip(got, ref):
            g = cupy.asnumpy(g) if isinstance(g, cupy.ndarray) else g
            np.testing.assert_allclose(g, r, rtol=2e-3, atol=2e-3)
    assert sum(1 for t in program.roots.values() if t == "gpu") >= 1


def test_conv_tails_fuse_into_the_convolution():
    program = compiler.parse_onnx(build("conv_add_relu")).compile("gpu")
    ops = [i.op for i in program.main.instructions]
    assert "fused_conv" in ops and "Conv" not in ops and "fused_pointwise" not in ops


@pytest.mark.parametrize("path", ["gemm", "split-gemm", "split-cudnn"])
@pytest.mark.parametrize("name", ["conv3x3", "conv7x7s2", "conv1x1", "conv_dilated_asym", "conv_add_relu",
                                  "conv_chain_pool_concat"])
def test_fp32_gemm_convolution_matches_reference(name, path):
    program = compiler.parse_onnx(build(name)).compile("gpu", gpu_options=_options(fp32_conv=path))
    for seed in (1, 2, 3):
        _, ref = _run(name, "ref", seed)
        got = program.run(feeds_for(program, seed))
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("path", ["gemm", "cudnn", "split-gemm", "split-cudnn"])
def test_fp32_convolutions_keep_fp32_arithmetic(path):
    """A deep fp32 convolution (K = 576 products per output) against the reference: TF32 tensor
    cores or a Winograd transform would differ by ~1e-3 of the output scale, exact fp32 by ~1e-6.
    Guards the GEMM path, and the cuDNN autotuner's accuracy gate and note filters."""
    from tests.compiler.targets.gpu.cases import conv
    model = conv((2, 64, 20, 20), (64, 64, 3, 3), pads=[1, 1, 1, 1])
    ref_p = compiler.parse_onnx(model)
    feeds = feeds_for(ref_p, 5)
    ref = ref_p.compile("ref").run(feeds)[0]
    got = np.asarray(compiler.parse_onnx(model).compile("gpu", gpu_options=_options(fp32_conv=path)).run(feeds)[0])
    scale = float(np.max(np.abs(ref)))
    assert float(np.max(np.abs(got - ref))) <= 2e-5 * scale
    if path == "split-cudnn":   # cuDNN took the bf16 graph (a refusal would fall back silently)
        from compiler.targets.gpu.kernels import conv as convk
        assert any(s.inputs == "bfloat16" and g is not None for (s, _o), g in convk.made_graphs().items())


def test_cudnn_plans_reload_from_disk(tmp_path, monkeypatch):
    """A built cuDNN plan (of the kinds kept: fp16, and bf16 for split fp32) is kept on disk; a
    later compile loads it (no build) and computes the same result."""
    import os

    from compiler.targets.gpu.kernels import conv as convk
    options = GpuOptions(cache_dir=str(tmp_path), fp32_conv="split-cudnn")
    for fp16 in (True, False):
        monkeypatch.setattr(convk, "_graphs", {})
        program = compiler.parse_onnx(build("conv_add_relu"))
        feeds = feeds_for(program, 6)
        first = np.asarray(program.compile("gpu", fp16=fp16, gpu_options=options).run(feeds)[0])
        assert [f for f in os.listdir(tmp_path / "cudnn_plans") if f.endswith(".plan")]
        monkeypatch.setattr(convk, "_graphs", {})
        again = compiler.parse_onnx(build("conv_add_relu")).compile("gpu", fp16=fp16, gpu_options=options)
        assert {g.tuned for g in convk.made_graphs().values() if g is not None} == {"loaded"}
        np.testing.assert_array_equal(np.asarray(again.run(feeds)[0]), first)


# 1, 3, 10: the row-per-thread kernel (three parts within 32 values); 16, 20, 32, 44: four values per
# thread, rows of 4, 5, 8 and 11 such units (several rows a warp); 29: one value per thread
@pytest.mark.parametrize("k", [1, 3, 10, 16, 20, 29, 32, 44])
def test_split_bf16_kernels_match_the_numpy_definition(k):
    """The device split (hi, lo bit patterns, padding, part order) equals ``split_bf16.hi_lo``
    on values across the fp32 range, specials included."""
    import cupy

    from compiler.targets.gpu.kernels import split_bf16
    rng = np.random.default_rng(7)
    v = (rng.standard_normal((37, k)) * 10.0 ** rng.integers(-30, 30, (37, k))).astype(np.float32)
    v.reshape(-1)[:6] = [np.inf, -np.inf, np.nan, 3.4028235e38, 1e-45, -0.0]
    nan_at = divmod(2, k)
    hi, lo = split_bf16.hi_lo(v)

    def bits(x):
        return (x.view(np.uint32) >> 16).astype(np.uint16)
    kp = split_bf16.width(k)
    got = cupy.asnumpy(split_bf16.along_last(cupy.asarray(v), split_bf16.LO_LEFT))
    assert got.shape == (37, kp)
    finite = np.isfinite(v)
    for part, want in ((0, hi), (1, hi), (2, lo)):
        block = got[:, part * k:(part + 1) * k]
        np.testing.assert_array_equal(block[finite], bits(want)[finite])
    assert not got[:, 3 * k:].any()
    assert np.isnan(split_bf16.bf16_round(v[nan_at[0], nan_at[1]:nan_at[1] + 1])).all()
    assert (int(got[nan_at]) & 0x7FFF) > 0x7F80                                        # NaN kept
    right = cupy.asnumpy(split_bf16.along_rows(cupy.asarray(v.T.copy())))     # (kp, 37)
    np.testing.assert_array_equal(right[k:2 * k].T[finite], bits(lo)[finite])
    np.testing.assert_array_equal(right[2 * k:3 * k].T[finite], bits(hi)[finite])


@pytest.mark.parametrize("c,stride,pads,dilation", [
    (3, (1, 1), ((1, 1), (1, 1)), (1, 1)),       # one value per thread
    (8, (2, 1), ((0, 2), (1, 0)), (1, 2)),       # four channels per thread, asymmetric padding
    (4, (2, 2), ((1, 1), (1, 1)), (1, 1)),
])
def test_split_window_gather_matches_the_numpy_definition(c, stride, pads, dilation):
    """``im2col_left``: every window of channels-last x, (ky, kx, c) order, split [hi | hi | lo],
    zero outside the image and in the row's padding."""
    import cupy

    from compiler.targets.gpu.kernels import conv as convk
    from compiler.targets.gpu.kernels import split_bf16
    rng = np.random.default_rng(11)
    n, h, w, kh, kw = 2, 7, 6, 3, 2
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    spec = convk.ConvSpec((n, c, h, w), (5, c, kh, kw), pads[0], pads[1], stride, dilation, 1, "float32")
    _, _, oh, ow = spec.out_shape
    padded = np.pad(x, ((0, 0), (pads[0][0], pads[1][0]), (pads[0][1], pads[1][1]), (0, 0)))
    windows = np.stack([padded[:, ky * dilation[0]: ky * dilation[0] + (oh - 1) * stride[0] + 1: stride[0],
                               kx * dilation[1]: kx * dilation[1] + (ow - 1) * stride[1] + 1: stride[1], :]
                        for ky in range(kh) for kx in range(kw)], axis=3).reshape(n * oh * ow, kh * kw * c)
    hi, lo = split_bf16.hi_lo(windows)
    bits = lambda v: (v.view(np.uint32) >> 16).astype(np.uint16)  # noqa: E731
    kk = kh * kw * c
    want = np.zeros((n * oh * ow, split_bf16.width(kk)), dtype=np.uint16)
    want[:, :kk], want[:, kk:2 * kk], want[:, 2 * kk:3 * kk] = bits(hi), bits(hi), bits(lo)
    got = cupy.asnumpy(split_bf16.im2col_left(cupy.asarray(x), spec))
    np.testing.assert_array_equal(got, want)


def _pool_reference(x, mode, kernel, strides, begin, end, include_pad):
    n, c, h, w = x.shape
    oh = (h + begin[0] + end[0] - kernel[0]) // strides[0] + 1
    ow = (w + begin[1] + end[1] - kernel[1]) // strides[1] + 1
    out = np.zeros((n, c, oh, ow), dtype=np.float64)
    for i in range(oh):
        for j in range(ow):
            y0, x0 = i * strides[0] - begin[0], j * strides[1] - begin[1]
            win = x[:, :, max(y0, 0):min(y0 + kernel[0], h), max(x0, 0):min(x0 + kernel[1], w)].astype(np.float64)
            if mode == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                count = kernel[0] * kernel[1] if include_pad else win.shape[2] * win.shape[3]
                out[:, :, i, j] = win.sum(axis=(2, 3)) / count
    return out


# channels-last fp32 with C % 4 == 0 takes the four-channels-per-thread kernel
@pytest.mark.parametrize("dtype,c,channels_last", [("float32", 8, True), ("float32", 6, True), ("float32", 8, False),
                                                   ("float16", 8, True), ("float64", 4, True)])
@pytest.mark.parametrize("mode,include_pad", [("max", 0), ("avg", 0), ("avg", 1)])
def test_pool_kernel_matches_the_numpy_definition(dtype, c, channels_last, mode, include_pad):
    import cupy

    from compiler.targets.gpu.kernels import pool
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, c, 9, 7)).astype(dtype)
    kernel, strides, begin, end = (3, 3), (2, 1), (1, 1), (1, 0)
    want = _pool_reference(x, mode, kernel, strides, begin, end, include_pad)
    xd = cupy.asarray(x.transpose(0, 2, 3, 1).copy()).transpose(0, 3, 1, 2) if channels_last else cupy.asarray(x)
    got = pool.pool2d(xd, want.shape, mode, kernel, strides, begin, end, (1, 1), include_pad)
    assert got.dtype == x.dtype and got.shape == want.shape
    tol = {"float16": 2e-3, "float32": 1e-6, "float64": 1e-12}[dtype]
    np.testing.assert_allclose(cupy.asnumpy(got).astype(np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("k", [8, 6])        # 8: four values per thread
@pytest.mark.parametrize("bias,residual,relu", [(True, False, True), (True, True, True), (False, True, False)])
def test_conv_epilogue_matches_numpy(k, bias, residual, relu):
    import cupy

    from compiler.targets.gpu.kernels import gemm_conv
    rng = np.random.default_rng(14)
    y = rng.standard_normal((37, k)).astype(np.float32)
    y[0, 0] = np.nan
    b = rng.standard_normal(k).astype(np.float32)
    r = rng.standard_normal((37, k)).astype(np.float32)
    want = y + (b if bias else 0) + (r if residual else 0)
    want = np.where(want < 0, 0, want) if relu else want
    got = gemm_conv.epilogue(cupy.asarray(y), cupy.asarray(b) if bias else None,
                             cupy.asarray(r).reshape(-1) if residual else None, relu)
    np.testing.assert_array_equal(cupy.asnumpy(got), want)


@pytest.mark.parametrize("dtype,width,offset,total", [("float32", 8, 4, 20), ("float32", 3, 5, 11),
                                                      ("float16", 8, 8, 24), ("float16", 5, 3, 9),
                                                      ("int64", 2, 1, 3)])
def test_slice_copy_writes_only_its_columns(dtype, width, offset, total):
    import cupy

    from compiler.targets.gpu.kernels import slice_copy
    rng = np.random.default_rng(15)
    src = (rng.standard_normal((301, width)) * 100).astype(dtype)
    dst = (rng.standard_normal((301, total)) * 100).astype(dtype)
    want = dst.copy()
    want[:, offset:offset + width] = src
    got = cupy.asarray(dst)
    slice_copy.into_columns(got, cupy.asarray(src), offset)
    np.testing.assert_array_equal(cupy.asnumpy(got), want)
    with pytest.raises(ValueError):
        slice_copy.into_columns(got, cupy.asarray(src), total - width + 1)


@pytest.mark.parametrize("transposed", [False, True])
def test_split_matmul_is_fp32_grade(transposed):
    """Batched and broadcast split-bf16 products against fp64, and against the NumPy definition."""
    import cupy

    from compiler.targets.gpu import matmul_split
    from compiler.targets.gpu.kernels import split_bf16
    from compiler.targets.gpu.kernels.gemm import make_matmul
    rng = np.random.default_rng(8)
    a = rng.standard_normal((3, 130, 200)).astype(np.float32)
    b = rng.standard_normal((96, 200) if transposed else (200, 96)).astype(np.float32)
    bd = cupy.asarray(b)
    bd = bd.T if transposed else bd
    exact, _ = make_matmul(cupy, True)
    mm = matmul_split.split_matmul(exact, constant_right=True)
    for _ in range(2):   # the second call takes the weight's kept split
        got = cupy.asnumpy(mm(cupy.asarray(a), bd))
    bb = b.T if transposed else b
    want = a.astype(np.float64) @ bb.astype(np.float64)
    scale = np.abs(want).max()
    assert np.abs(got - want).max() <= 2e-5 * scale
    np.testing.assert_allclose(got, split_bf16.matmul_reference(a.reshape(-1, 200), bb).reshape(got.shape),
                               rtol=0, atol=2e-6 * scale)


def test_large_fp32_matmul_and_gemm_take_the_split_path(monkeypatch):
    from tests.compiler.targets.gpu.cases import init, model, vi
    from onnx import helper

    from compiler.targets.gpu.kernels import split_bf16
    calls = []
    real = split_bf16.along_last
    monkeypatch.setattr(split_bf16, "along_last", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(9)
    m = model([helper.make_node("MatMul", ["x", "w1"], ["h0"]),
               helper.make_node("Reshape", ["h0", "shape"], ["h"]),
               helper.make_node("Gemm", ["h", "w2", "b2"], ["y"], transB=1)],
              [vi("x", (4, 96, 128))], [vi("y", (384, 80))],
              [init("w1", rng.standard_normal((128, 96)).astype(np.float32)),
               init("w2", rng.standard_normal((80, 96)).astype(np.float32)),
               init("b2", rng.standard_normal(80).astype(np.float32)),
               init("shape", np.array([384, 96], dtype=np.int64))])
    program = compiler.parse_onnx(m.SerializeToString())
    feeds = feeds_for(program, 3)
    ref = compiler.parse_onnx(m.SerializeToString()).compile("ref").run(feeds)[0]
    program.compile("gpu")
    for _ in range(3):
        got = np.asarray(program.run(feeds)[0])
        assert np.abs(got - ref).max() <= 2e-5 * np.abs(ref).max()
    assert calls


@pytest.mark.parametrize("path", ["split-cudnn", "split-gemm"])
def test_branches_of_one_input_share_its_split(path, monkeypatch):
    """Three fp32 convolutions of one input (Inception's branches): one split per run, results
    as the reference's, over eager, recorded and replayed runs with new inputs each."""
    from tests.compiler.targets.gpu.cases import init, model, vi
    from onnx import helper

    from compiler.targets.gpu.kernels import split_bf16
    splits = []
    real = split_bf16.along_last
    monkeypatch.setattr(split_bf16, "along_last", lambda *a: splits.append(tuple(a[0].shape)) or real(*a))
    rng = np.random.default_rng(13)
    nodes, inits = [helper.make_node("Relu", ["x"], ["r"])], []
    for i, (k, kh) in enumerate([(64, 1), (80, 1), (64, 3)]):
        inits += [init(f"w{i}", (rng.standard_normal((k, 64, kh, kh)) / 8).astype(np.float32)),
                  init(f"b{i}", rng.standard_normal(k).astype(np.float32))]
        nodes.append(helper.make_node("Conv", ["r", f"w{i}", f"b{i}"], [f"y{i}"], pads=[kh // 2] * 4))
    nodes.append(helper.make_node("Concat", ["y0", "y1", "y2"], ["y"], axis=1))
    m = model(nodes, [vi("x", (2, 64, 10, 10))], [vi("y", (2, 208, 10, 10))], inits)
    program = compiler.parse_onnx(m.SerializeToString())
    program.compile("gpu", gpu_options=_options(fp32_conv=path))
    for seed in (1, 2, 3):                           # eager, recorded, replayed (no Python calls)
        feeds = feeds_for(program, seed)
        ref = compiler.parse_onnx(m.SerializeToString()).compile("ref").run(feeds)[0]
        splits.clear()
        got = np.asarray(program.run(feeds)[0])
        assert np.abs(got - ref).max() <= 2e-5 * np.abs(ref).max()
        # r (channels-last (2, 10, 10, 64)) is split once, however many convolutions read it (the
        # split GEMM gathers the 3x3's windows from r itself); weights are split on first use.
        assert splits.count((2, 10, 10, 64)) == (1 if seed < 3 else 0), splits


@pytest.mark.parametrize("fused", ["sequence", "grid", "1", "0"])
@pytest.mark.parametrize("name", ["lstm", "gru", "lstm_bidirectional", "gru_bidirectional"])
def test_recurrent_steps_fused_and_not_match_reference(name, fused, monkeypatch):
    """The whole-sequence kernel (cluster and grid exchange), the fused step kernel (recurrent
    product + cell in one launch) and the GEMM + cell path."""
    from compiler.targets.gpu import ops_rnn
    monkeypatch.setattr(ops_rnn, "STEP_KERNEL", fused != "0")
    monkeypatch.setattr(ops_rnn, "SEQUENCE_KERNEL", fused in ("sequence", "grid"))
    monkeypatch.setattr(ops_rnn, "EXCHANGE", "grid" if fused == "grid" else "cluster")
    program = compiler.parse_onnx(build(name)).compile("gpu")
    for seed in (1, 2, 3):   # eager, recorded, replayed
        _, ref = _run(name, "ref", seed)
        got = [np.asarray(o) for o in program.run(feeds_for(program, seed))]
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("batch,hidden", [(1, 200), (3, 200), (2, 300)])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_whole_sequence_kernel_equals_step_kernels(cell, batch, hidden, monkeypatch):
    """One launch for all steps (rows held in registers; h exchanged through a cluster's shared
    memory or through global memory and a grid barrier) computes what one launch per step does
    (the same sums in the same order; the compiler may fuse the cell's multiply-adds differently,
    a rounding difference that the recurrence carries along),
    at the word-language-model size (hidden 200: a partial last register column, and a partial
    last block of the cluster) and past the cluster's reach (300), over a long sequence, both
    directions; and stays within the reference."""
    import cupy
    from tests.compiler.targets.gpu import cases as gpu_cases
    from compiler.targets.gpu.kernels import rnn_step
    m = getattr(gpu_cases, cell)(hidden=hidden, inp=24, seq=35, batch=batch, dirs=2).SerializeToString()
    program = compiler.parse_onnx(m)
    feeds = feeds_for(program, 8)
    ref = compiler.parse_onnx(m).compile("ref").run(feeds)
    results = {}
    from compiler.targets.gpu import ops_rnn
    for sequence in ("1", "grid", "0"):
        monkeypatch.setattr(ops_rnn, "SEQUENCE_KERNEL", sequence != "0")
        monkeypatch.setattr(ops_rnn, "EXCHANGE", "grid" if sequence == "grid" else "cluster")
        compiled = compiler.parse_onnx(m).compile("gpu")
        results[sequence] = [[np.asarray(o) for o in compiled.run(feeds)] for _ in range(3)]
    for run in range(3):   # eager, recorded, replayed
        for a, g, b, r in zip(results["1"][run], results["grid"][run], results["0"][run], ref):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-5)
            np.testing.assert_allclose(g, b, rtol=1e-5, atol=2e-5)
            np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-5)
    assert rnn_step.sequence_applies("float32", batch, hidden)   # else all three would be step kernels
    clusters = int(cupy.cuda.Device().compute_capability) >= 90 and hidden <= 32 * rnn_step.SEQ_CLUSTER
    assert rnn_step._cluster_fits(f"perfbot_{cell}_seq", batch, hidden) == clusters


@pytest.mark.parametrize("k,total", [(12, 16), (10, 13), (8, 8)])
def test_pointwise_split_kernel_matches_numpy(k, total):
    """``pointwise_split.run``: batch norm + ReLU over a channel slice of a wider channels-last
    buffer, split [hi | hi | lo] in one kernel (four channels per thread where K and the row
    stride allow, one otherwise), against the body computed in float64 and split by NumPy."""
    import cupy

    from compiler.targets.gpu.kernels import pointwise_split, split_bf16
    from tests.compiler.targets.gpu.test_split_prologue import BN_RELU
    rng = np.random.default_rng(17)
    n, h, w = 2, 5, 3
    buf = rng.standard_normal((n, h, w, total)).astype(np.float32)
    buf.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    x = buf.transpose(0, 3, 1, 2)[:, :k]
    a = rng.uniform(0.5, 2.0, (1, k, 1, 1)).astype(np.float32)
    b = rng.standard_normal((1, k, 1, 1)).astype(np.float32)
    dev = cupy.asarray(buf).transpose(0, 3, 1, 2)[:, :k]
    got = cupy.asnumpy(pointwise_split.run(pointwise_split.source(BN_RELU, 3), [dev, cupy.asarray(a), cupy.asarray(b)], (n, k, h, w),
                                           split_bf16.LO_LEFT))
    assert got.shape == (n, h, w, split_bf16.width(k)) and not got[..., 3 * k:].any()
    with np.errstate(invalid="ignore"):
        want = np.maximum(x.astype(np.float64) * a + b, 0).transpose(0, 2, 3, 1)
        want = np.where(np.isnan(x.transpose(0, 2, 3, 1)), np.nan, want)

    def value(bits):
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    assert (got[..., :k] == got[..., k:2 * k]).all()
    back = value(got[..., :k]) + value(got[..., 2 * k:3 * k])
    finite = np.isfinite(want)
    assert np.abs(back[finite] - want[finite]).max() <= 2.0 ** -15 * np.abs(want[finite]).max()
    assert np.isnan(back[np.isnan(want)]).all() and (back[np.isinf(want)] == want[np.isinf(want)]).all()


def test_pre_activations_compute_inside_the_split_and_concatenations_chain():
    """DenseNet's pattern on split-cudnn convolutions: each batch norm + ReLU defers to its
    convolution's split, the concatenations fill one buffer; eager, recorded and replayed runs
    on fresh inputs equal the reference."""
    program = compiler.parse_onnx(build("dense_block")).compile("gpu", gpu_options=_options(fp32_conv="split-cudnn"))
    body = program.compiled.context.roots["main"].body
    paths = [getattr(fn, "path", "") for _i, fn, _a, _d in body.steps]
    assert body.deferred == 3 and paths.count("pointwise-deferred") == 3
    assert paths.count("concat-chain") == 3
    for seed in (1, 2, 3):
        _, ref = _run("dense_block", "ref", seed)
        got = np.asarray(program.run(feeds_for(program, seed))[0])
        assert np.abs(got - ref[0]).max() <= 2e-5 * np.abs(ref[0]).max()


@pytest.mark.parametrize("path", ["split-gemm", "gemm"])
@pytest.mark.parametrize("name", ["conv1x1", "conv3x3", "conv_add_relu"])
def test_gemm_convolutions_fuse_their_epilogue_into_cublaslt(name, path, monkeypatch):
    """Bias, residual and ReLU written by cuBLASLt with the product (no separate epilogue
    kernel), equal to the reference over eager, recorded and replayed runs."""
    from compiler.targets.gpu.kernels import gemm_conv, gemm_lt
    epilogues = []
    real = gemm_conv.epilogue
    monkeypatch.setattr(gemm_conv, "epilogue", lambda *a: epilogues.append(1) or real(*a))
    program = compiler.parse_onnx(build(name)).compile("gpu", gpu_options=_options(fp32_conv=path))
    for seed in (1, 2, 3):
        _, ref = _run(name, "ref", seed)
        got = np.asarray(program.run(feeds_for(program, seed))[0])
        assert np.abs(got - ref[0]).max() <= 2e-5 * np.abs(ref[0]).max()
    assert not epilogues
    assert any(v is not None for v in gemm_lt._State.plans.values())


@pytest.mark.parametrize("op", ["Sigmoid", "Softplus", "Mish", "Elu", "Selu", "HardSwish", "Tanh"])
@pytest.mark.parametrize("fp16", [False, True])
def test_activations_at_extreme_inputs_match_reference(op, fp16):
    """Generated pointwise code at |x| = 100 and 1e4, where a naive log1p(exp(x)) overflows."""
    from tests.compiler.targets.gpu.cases import unary
    x = np.array([[-1e4, -100.0, -1.5, 0.0], [0.75, 30.0, 100.0, 1e4]], np.float32)   # fp16 holds 1e4
    model = unary(op, shape=x.shape)
    ref = compiler.parse_onnx(model).compile("ref").run({"x": x})[0]
    got = np.asarray(compiler.parse_onnx(model).compile("gpu", fp16=fp16).run({"x": x})[0])
    tol = 3e-2 if fp16 else 1e-5
    finite = np.isfinite(ref)
    assert np.array_equal(np.isfinite(got), finite)
    np.testing.assert_allclose(got[finite], ref[finite], rtol=tol, atol=tol)


def test_split_cudnn_convolution_with_a_zero_residual(monkeypatch):
    """relu(conv + b + 0) (cuDNN's runtime-fusion engine) gives the reference's result over
    eager, recorded and replayed runs."""
    from compiler.targets.gpu.kernels import conv as convk
    monkeypatch.setattr(convk, "_graphs", {})          # graphs built here, in this form
    program = compiler.parse_onnx(build("conv_relu")).compile("gpu", gpu_options=_options(fp32_conv="split-cudnn"))
    split = [g for (s, _o), g in convk.made_graphs().items()
             if g is not None and s.inputs == "bfloat16" and not s.residual]
    assert split and all(g.zeros is not None for g in split)
    for seed in (1, 2, 3):
        _, ref = _run("conv_relu", "ref", seed)
        got = np.asarray(program.run(feeds_for(program, seed))[0])
        assert np.abs(got - ref[0]).max() <= 2e-5 * np.abs(ref[0]).max()

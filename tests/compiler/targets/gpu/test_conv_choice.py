"""How an fp32 convolution's path is chosen (``conv_choice.fp32_conv``), with stand-in runners:
which paths are timed, what is kept on disk and reused, what the options force. The timing
itself runs on the GPU (tests/compiler/targets/gpu/test_ops.py); here it is replaced by given figures."""
from dataclasses import replace

import pytest

from compiler.targets.gpu import conv_choice
from compiler.targets.gpu.kernels import conv as convk
from compiler.targets.gpu.kernels import conv_plans
from compiler.targets.gpu.options import GpuOptions


def _spec(k=32, c=16, kh=3):
    return convk.ConvSpec((2, c, 8, 8), (k, c, kh, kh), (1, 1), (1, 1), (1, 1), (1, 1), 1, "float32")


@pytest.fixture
def opts(tmp_path):
    """Default options, with choices kept in the test's folder."""
    return GpuOptions(cache_dir=str(tmp_path))


@pytest.fixture
def timed(opts, monkeypatch):
    """Paths' stand-in milliseconds; returns the list of paths that were timed."""
    monkeypatch.setattr(conv_choice, "_device_identity", lambda: "test-gpu|cudnn-0")
    figures = {"split-cudnn": 3.0, "split-gemm": 1.0, "gemm": 2.0, "cudnn": 4.0}
    seen = []

    def milliseconds(spec, run):
        seen.append(run.path)
        return figures[run.path]
    monkeypatch.setattr(conv_choice, "_milliseconds", milliseconds)
    return seen


def _makers(made, available=("split-cudnn", "split-gemm", "gemm", "cudnn")):
    def maker(path):
        def make():
            made.append(path)
            run = lambda *args: path  # noqa: E731
            run.path = path
            return run
        return make
    return {p: (maker(p) if p in available else None) for p in ("split-cudnn", "split-gemm", "gemm", "cudnn")}


def test_a_small_convolution_is_timed_every_way_and_the_fastest_kept(timed, opts):
    made = []
    run = conv_choice.fp32_conv(_spec(), _makers(made), opts)
    assert run.path == "split-gemm"
    assert sorted(timed) == ["cudnn", "gemm", "split-cudnn", "split-gemm"]
    # A later compile (a new process: the cache is read from disk) takes the choice untimed.
    conv_plans.forget_choices()
    timed.clear()
    made.clear()
    assert conv_choice.fp32_conv(_spec(), _makers(made), opts).path == "split-gemm"
    assert timed == [] and made == ["split-gemm"]


def test_a_large_convolution_is_timed_on_the_split_paths_only(timed, opts):
    run = conv_choice.fp32_conv(_spec(k=64, c=64), _makers([]), opts)
    assert run.path == "split-gemm" and sorted(timed) == ["split-cudnn", "split-gemm"]


def test_a_large_convolution_over_a_few_pixels_is_timed_against_the_exact_gemm_too(timed, opts):
    fc = convk.ConvSpec((1, 512, 7, 7), (4096, 512, 7, 7), (0, 0), (0, 0), (1, 1), (1, 1), 1, "float32")
    assert conv_choice.weight_bound(fc)
    run = conv_choice.fp32_conv(fc, _makers([]), opts)
    # ... and not on cuDNN's bf16 plans, which read weights slowly.
    assert run.path == "split-gemm" and sorted(timed) == ["gemm", "split-gemm"]


def test_a_large_pointwise_convolution_takes_the_split_gemm_untimed(timed, opts):
    made = []
    assert conv_choice.fp32_conv(_spec(k=64, c=64, kh=1), _makers(made), opts).path == "split-gemm"
    assert timed == [] and made == ["split-gemm"]
    # Without the split GEMM (cuBLAS's bf16 product unavailable) cuDNN's split plan serves.
    assert conv_choice.fp32_conv(_spec(k=64, c=64, kh=1), _makers([], available=("split-cudnn", "gemm")), opts).path \
        == "split-cudnn"


def test_without_split_paths_a_large_convolution_takes_the_exact_gemm_untimed(timed, opts):
    exact = replace(opts, fp32_split=False)
    assert conv_choice.fp32_conv(_spec(k=64, c=64), _makers([]), exact).path == "gemm"
    assert timed == []


def test_a_forced_path_is_taken_and_an_unavailable_one_falls_back_to_the_choice(timed, opts):
    forced = replace(opts, fp32_conv="cudnn")
    assert conv_choice.fp32_conv(_spec(), _makers([]), forced).path == "cudnn" and timed == []
    forced = replace(opts, fp32_conv="split-cudnn")
    assert conv_choice.fp32_conv(_spec(), _makers([], available=("gemm", "cudnn")), forced).path == "gemm"


def test_a_choice_timed_on_another_gpu_is_not_reused(timed, opts, monkeypatch):
    conv_choice.fp32_conv(_spec(), _makers([]), opts)
    monkeypatch.setattr(conv_choice, "_device_identity", lambda: "other-gpu|cudnn-0")
    timed.clear()
    conv_choice.fp32_conv(_spec(), _makers([]), opts)
    assert timed   # timed again


def test_split_matmul_applies_to_large_products_only():
    import numpy as np

    from compiler.targets.gpu.matmul_split import worth
    assert worth(np.zeros((4, 96, 128)), np.zeros((128, 96)))
    assert not worth(np.zeros((1, 25088)), np.zeros((25088, 4096)))   # batch-1 fully connected
    assert not worth(np.zeros((512, 32)), np.zeros((32, 512)))        # short reduction


def test_a_shared_split_is_made_once_per_run_and_let_go_after_its_last_consumer():
    from compiler.targets.gpu.conv_split import SharedSplits
    shared, made = SharedSplits(), []

    def make(x):
        made.append(x)
        return ("split", x)
    first, second = shared.provider("r", make), shared.provider("r", make)
    alone = shared.provider("q", make)
    run1, run2 = object(), object()
    assert first(run1) == second(run1) == ("split", run1) and made == [run1]
    assert shared.live == {}                  # both consumers served: the split is let go
    assert second(run2) == first(run2) == ("split", run2) and made == [run1, run2]
    assert alone(run1) == alone(run1) == ("split", run1)   # a single consumer: no entry kept,
    assert made == [run1, run2, run1, run1] and shared.live == {}   # each call makes its own


def _fused(dtype, inputs=""):
    return convk.ConvSpec((2, 16, 8, 8), (16, 16, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1, dtype,
                          bias=True, residual=True, relu=True, nhwc=True, inputs=inputs)


def test_fused_graph_forms_name_their_epilogue_order():
    """fp16 residual convolutions add the residual first (cuDNN's classic fused form); split-bf16
    ones keep the bias first. The plan-file key carries this order, so a plan built by one form
    is never loaded for the other."""
    assert convk.epilogue_order(_fused("float16")) == ("add", "bias", "relu")
    assert convk.epilogue_order(_fused("float32", "bfloat16")) == ("bias", "add", "relu")
    assert convk.graph_form(_fused("float16")) != convk.graph_form(_fused("float32", "bfloat16"))
    plain = convk.ConvSpec((2, 16, 8, 8), (16, 16, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1, "float16")
    assert convk.epilogue_order(plain) == ()


def test_split_convolutions_without_a_residual_add_zeros():
    """relu(conv + b + 0) is the split-bf16 graph form that cuDNN's runtime-fusion engine takes."""
    plain = convk.ConvSpec((2, 48, 8, 8), (16, 48, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1, "float32",
                           bias=True, relu=True, nhwc=True, inputs="bfloat16")
    assert convk.zero_residual(plain) and convk.epilogue_order(plain) == ("bias", "add", "relu")
    assert not convk.zero_residual(_fused("float16"))                      # fp16 graphs as they were


def test_choices_made_under_other_options_are_kept_apart(timed, opts):
    """The whole ``GpuOptions`` is part of a choice's key."""
    names = ["split-cudnn", "split-gemm"]
    key = conv_choice._choice_key(_spec(), names, opts)
    assert conv_choice._choice_key(_spec(), names, replace(opts, tf32=True)) != key


def test_planned_paths_are_the_ones_the_choice_makes(timed, opts, monkeypatch):
    """``planned_paths`` (what ``cudnn_ahead`` builds plans for before the lowering) names the
    paths ``fp32_conv`` then makes: all eligible ones when timing, the remembered one after, a
    forced one, the only eligible one."""
    names = ("split-cudnn", "split-gemm", "gemm", "cudnn")
    made = []
    assert conv_choice.planned_paths(_spec(), names, opts) == list(names)
    conv_choice.fp32_conv(_spec(), _makers(made), opts)
    assert sorted(made) == sorted(names)
    made.clear()
    assert conv_choice.planned_paths(_spec(), names, opts) == ["split-gemm"]
    conv_choice.fp32_conv(_spec(), _makers(made), opts)
    assert made == ["split-gemm"]
    made.clear()
    assert conv_choice.planned_paths(_spec(k=64, c=64, kh=1), names, opts) == ["split-gemm"]
    forced = replace(opts, fp32_conv="cudnn")
    assert conv_choice.planned_paths(_spec(), names, forced) == ["cudnn"]
    conv_choice.fp32_conv(_spec(), _makers(made), forced)
    assert made == ["cudnn"]


def test_plans_built_ahead_are_the_graphs_the_lowering_asks_for(timed, opts, monkeypatch):
    """``cudnn_ahead.graphs_for``: an fp32 3x3 convolution timed with split-cudnn among its paths
    wants the split-bf16 graph (channels widened, bf16 inputs); a 1x1 one (split GEMM untimed)
    none; with exact cuDNN forced, its own graph; an fp16 convolution its own graph."""
    from compiler.targets.gpu import conv_split, cudnn_ahead
    from compiler.targets.gpu.kernels import split_bf16
    monkeypatch.setattr(conv_split, "available", lambda: True)
    wide = convk.ConvSpec((2, 64, 8, 8), (64, 64, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1, "float32",
                          bias=True, relu=True, nhwc=True)
    [graph] = cudnn_ahead.graphs_for(wide, opts)
    assert graph.inputs == "bfloat16" and graph.x_shape == (2, split_bf16.width(64), 8, 8)
    assert graph.w_shape == (64, split_bf16.width(64), 3, 3) and graph.relu and graph.bias
    assert cudnn_ahead.graphs_for(_spec(k=64, c=64, kh=1), opts) == []
    assert cudnn_ahead.graphs_for(wide, replace(opts, fp32_conv="cudnn")) == [wide]
    half = convk.ConvSpec((2, 64, 8, 8), (64, 64, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1, "float16", nhwc=True)
    assert cudnn_ahead.graphs_for(half, opts) == [half]


def test_backend_build_bars_the_notes_the_frontend_filter_bars():
    """One list of barred numerical notes serves both builds: FFT, Winograd and reduced-precision
    reduction always; TF32 tensor cores and down-converted inputs for exact fp32 only (not for
    split-bf16 inputs, not with ``GpuOptions.tf32``), as cuDNN's backend enum values."""
    from compiler.targets.gpu.kernels import cudnn_backend
    always = {2, 3, 5, 6, 7, 8}
    exact = convk.ConvSpec((2, 16, 8, 8), (16, 16, 3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1, "float32")
    assert cudnn_backend.barred_notes(exact) == always | {0, 1}
    assert cudnn_backend.barred_notes(_fused("float32", "bfloat16")) == always
    assert cudnn_backend.barred_notes(_fused("float16")) == always
    assert cudnn_backend.barred_notes(exact, tf32=True) == always


def test_nothing_building_ahead_means_no_convolution_waits(monkeypatch):
    """With no plan building ahead (a warm compile), the lowering's per-instruction check answers
    without deriving any convolution's graphs."""
    from compiler.targets.gpu import cudnn_ahead
    from compiler.targets.gpu.kernels import cudnn_backend
    monkeypatch.setattr(cudnn_backend, "_pending", {})

    def derive(spec, options):
        raise AssertionError("graphs derived with nothing building")
    monkeypatch.setattr(cudnn_ahead, "graphs_for", derive)

    class Conv:
        op = "Conv"
    assert cudnn_ahead.building(Conv(), GpuOptions()) is False

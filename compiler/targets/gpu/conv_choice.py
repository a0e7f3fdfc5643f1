"""fp32 convolutions: whichever of five paths runs each one fastest, timed once and remembered.

- split-cudnn, split-gemm: bf16 tensor cores on split-bf16 operands (``conv_split``), within
  ~1e-5 relative of fp32;
- grouped: our kernel for grouped convolutions of few channels a group (``grouped_conv``), exact;
- gemm: exact fp32 GEMM (cuBLAS without TF32, ~51 TFLOP/s), cudnn: cuDNN without TF32.

On the H200 (ResNet-50 fp32): batch 64 ran 5,788 img/s on split-cudnn, 3,880 on split-gemm, 2,498
on the exact GEMM, 400 on exact cuDNN; batch 1 ran 419, 1,202, 998 (cuDNN's bf16 plans are slow at
batch 1), so neither split path wins everywhere and each convolution is timed both ways (on random
data, once; the choice is kept on disk with the cuDNN plans, keyed by GPU and cuDNN version),
except where split-cudnn does not win: 1x1 convolutions (the split GEMM reads their split input as
its matrix) and few-pixel ones go to the split GEMM untimed, and no cuDNN plan is built for them.
A convolution large in both GEMM dimensions is not timed on the exact paths (they do not win there);
a small one (DenseNet-121's growth convolutions have 32 output channels) is timed on all four, and
one with a handful of output pixels (a fully connected layer as a convolution, at batch 1) on the
split paths and the exact GEMM.
3-D convolutions (video models) choose between split-cudnn and exact cuDNN only: the GEMM paths
gather 2-D windows (``ops_nn.fp32_paths``). Grouped ones (ResNeXt, RegNet) choose between
split-cudnn, over each group's three parts, and the grouped kernel where it takes them.
``GpuOptions.fp32_conv`` (split-cudnn|split-gemm|grouped|gemm|cudnn) forces one path; ``fp32_split`` off
keeps every fp32 convolution (and MatMul/Gemm) in exact fp32 arithmetic.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import replace

from .kernels import conv as convk
from .kernels.channels_last import logical_axes

# Output channels and reduction length (C * kh * kw) from which the exact paths are not timed.
SIZED = 64
PATHS = ("split-cudnn", "split-gemm", "grouped", "gemm", "cudnn")


# Output pixels (GEMM rows) up to which a convolution is a matrix-vector product in effect (VGG's
# fully connected layers written as 7x7 and 1x1 convolutions, at batch 1): bound by reading the
# weights, which the split makes 1.5x larger, so the exact GEMM is timed against the split paths.
WEIGHT_BOUND_ROWS = 16


def gemm_sized(spec) -> bool:
    k, cg, *window = spec.w_shape
    return k >= SIZED and cg * math.prod(window) >= SIZED


def weight_bound(spec) -> bool:
    n, _k, *sp = spec.out_shape
    return math.prod((n, *sp)) <= WEIGHT_BOUND_ROWS


def _switched(names, options) -> list[str]:
    """``names`` in PATHS order, less the split paths where ``options.fp32_split`` is off."""
    names = [p for p in PATHS if p in set(names)]
    if not options.fp32_split:
        names = [p for p in names if not p.startswith("split")]
    return names


def windowed(spec) -> bool:
    """Whether each output pixel reads a window of more than one input pixel (kernel > 1x1)."""
    return math.prod(spec.w_shape[2:]) > 1


def eligible_paths(spec, names, options) -> list[str]:
    """The paths among ``names`` worth timing for ``spec``."""
    names = _switched(names, options)
    if "split-gemm" in names and (not windowed(spec) or weight_bound(spec)):
        # The split GEMM reads a 1x1 convolution's split input as its matrix (no window gather),
        # and a few-pixel one is bound by reading weights, which cuDNN's bf16 plans do slowly: on
        # the H200 split-cudnn lost or tied on every such convolution of ResNet-50, DenseNet-121
        # and VGG-16 once the split GEMM fused its epilogue (ResNet-50 fp32 ran ~1 % slower
        # without it in one device run, DenseNet-121 and Inception-v3 within noise), and building
        # its plan is most of a cold compile (runtime-compiled engines).
        names = [p for p in names if p != "split-cudnn"]
    if "grouped" in names:
        # Our grouped kernel ran RegNet's and ResNeXt's grouped layers several times faster than
        # cuDNN's exact fp32 engines (``grouped_conv``): it stands in for the exact paths, and is
        # timed against the split one (bf16 tensor cores over each group's three parts).
        return [p for p in names if p != "cudnn"]
    if gemm_sized(spec):
        # Large in both GEMM dimensions: the exact paths cannot win against a split one (on the
        # H200 they ran ResNet-50 at 0.43x of the split paths); the exact GEMM stands alone when
        # no split path is available.
        split = [p for p in names if p.startswith("split")]
        if split and weight_bound(spec) and "gemm" in names:
            split.append("gemm")
        names = split or [p for p in names if p == "gemm"]
    return names


def _choice_key(spec, names, options) -> str:
    # The split-cudnn graph's form is part of what was timed (``conv_spec.zero_residual``).
    form = convk.graph_form(replace(spec, inputs="bfloat16"))
    return f"fp32conv|{_device_identity()}|{sorted(names)}|{form}|{options.key()}|{spec}"


def planned_paths(spec, names, options) -> list[str]:
    """The paths ``fp32_conv`` makes for ``spec`` when their makers succeed: a forced one, else
    the only eligible one, the remembered choice, or every eligible one (to time them)."""
    forced = options.fp32_conv
    if forced in _switched(names, options):
        return [forced]
    eligible = eligible_paths(spec, names, options)
    if len(eligible) > 1:
        chosen = convk.plan_cache(options).get(_choice_key(spec, eligible, options))
        if chosen in eligible:
            return [chosen]
    return eligible


def fp32_conv(spec, makers: dict, options):
    """The runner for fp32 convolution ``spec``. ``makers`` maps a path name to a function making
    its runner (None, or a function returning None, where the path cannot take ``spec``)."""
    makers = {p: m for p, m in makers.items() if m is not None}
    planned = planned_paths(spec, makers, options)
    if len(planned) == 1:
        run = makers[planned[0]]()
        if run is not None:
            return _noted(spec, run, None)
    names = eligible_paths(spec, makers, options)
    runs = {p: makers[p]() for p in names}
    runs = {p: r for p, r in runs.items() if r is not None}
    if not runs:
        return None
    if len(runs) == 1:
        return _noted(spec, next(iter(runs.values())), None)
    timed = {p: _milliseconds(spec, r) for p, r in runs.items()}
    best = min(timed, key=timed.get)
    convk.remember_plan(options, _choice_key(spec, names, options), best)
    return _noted(spec, runs[best], timed)


# (spec, path taken, {path: ms} where timed in this process), the latest few thousand: what
# benchmarks report.
choices: deque = deque(maxlen=4096)


def _noted(spec, run, timed):
    if run is not None:
        choices.append((spec, getattr(run, "path", "?"), timed))
    return run


def _device_identity() -> str:
    """GPU name and cuDNN version: a choice timed on one machine is no guide on another."""
    name = convk.device_name()
    cudnn = convk.cudnn_module()
    return f"{name}|{cudnn.backend_version() if cudnn is not None else 'no-cudnn'}"


def _milliseconds(spec, run, reps: int = 5) -> float:
    """Milliseconds of one run on random channels-last operands, as the convolution will run:
    ``reps`` runs recorded into one CUDA graph and replayed (timed eagerly, a batch-1 convolution
    measures its Python launch cost, not the GPU's work: on the H200 that picked cuDNN for
    ResNet-50 at batch 1, 693 img/s replayed against 1,202 for the split GEMM)."""
    import cupy
    rng = cupy.random.default_rng(0)

    def channels_last(lens):
        n, c, *sp = lens
        return rng.standard_normal((n, *sp, c), dtype=cupy.float32).transpose(logical_axes(len(lens)))
    args = [channels_last(spec.x_shape), rng.standard_normal(spec.w_shape, dtype=cupy.float32)]
    if spec.bias:
        args.append(rng.standard_normal((spec.w_shape[0],), dtype=cupy.float32))
    if spec.residual:
        args.append(channels_last(spec.out_shape))
    cupy.cuda.Device().synchronize()
    current, pool = cupy.cuda.get_current_stream(), cupy.cuda.MemoryPool()
    # Every launch on the caller's stream, only the capture on a side stream: eager kernels on a
    # second stream leave the process's later graph replays slower (``graphs._private``).
    with cupy.cuda.using_allocator(pool.malloc):
        run(*args)                      # warm-up: kernels compiled, weights split, pool filled
        graph = _recorded(run, args, reps)
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        if graph is not None:
            graph.launch(current)
            start.record(current)
            graph.launch(current)
        else:                           # not capturable: eager runs (launch cost included)
            start.record(current)
            for _ in range(reps):
                run(*args)
        end.record(current)
        end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / reps


def _recorded(run, args, reps: int):
    """``reps`` runs of ``run`` captured into one CUDA graph on a side stream (after the caller's
    queued work), or None if capture fails."""
    import cupy
    if not getattr(run, "capturable", True):
        return None
    from .graphs import after_callers_work
    stream = cupy.cuda.Stream(non_blocking=True)
    after_callers_work(stream)
    mode = getattr(cupy.cuda.runtime, "streamCaptureModeRelaxed", None)
    with stream:
        stream.begin_capture() if mode is None else stream.begin_capture(mode)
        try:
            for _ in range(reps):
                run(*args)
        except Exception:  # noqa: BLE001 - time it eagerly instead
            try:
                stream.end_capture()
            except Exception:  # noqa: BLE001
                pass
            return None
        return stream.end_capture()

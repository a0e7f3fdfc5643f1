"""cuDNN convolution graphs through ``nvidia-cudnn-frontend``: the module (None without the wheel
or the library, or where ``GpuOptions.hide`` hides it: the im2col fallback runs then), the
process's handle, and the graph of a ``ConvSpec`` with its fused epilogue. The frontend builds
the plans that are autotuned (``conv_autotune``) and those the backend build turns down."""
from __future__ import annotations

from .. import libraries
from .conv_spec import UID, ConvSpec, epilogue_order, excluded_note_names, layout_strides


def cudnn_module():
    """The cuDNN frontend module, or None when it does not import (or is hidden)."""
    return libraries.frontend()


def handle():
    """The process's cuDNN frontend handle, bound to the current stream (``libraries.frontend_handle``)."""
    return libraries.frontend_handle()


def excluded_notes(cudnn, dtype: str, tf32: bool) -> list:
    """``excluded_note_names`` as the frontend's note values (those this frontend knows)."""
    found = [getattr(cudnn.numerical_note, n, None) for n in excluded_note_names(dtype, tf32)]
    return [n for n in found if n is not None]


def runtime_compiled(graph) -> bool | None:
    """Whether the engine of ``graph``'s built plan is one cuDNN compiles while building the plan
    (runtime compilation) rather than a precompiled one; None when cuDNN does not say."""
    cudnn = cudnn_module()
    try:
        return cudnn.behavior_note.RUNTIME_COMPILATION in graph.get_behavior_notes()
    except Exception:  # noqa: BLE001 - a loaded or python-engine plan may not report notes
        return None


def frontend_graph(spec: ConvSpec, handle, steps: tuple | None = None):
    """The frontend's graph of ``spec`` with the epilogue ``steps`` (``epilogue_order``'s by
    default), validated and lowered to cuDNN's operation graph, no plans yet; returns it and its
    fed tensors by name (X, W, Y, and B and R where the steps read them). Split-bf16 operands:
    bf16 X and W, fp32 accumulation, bias, residual and Y."""
    cudnn = cudnn_module()
    steps = epilogue_order(spec) if steps is None else tuple(steps)
    dt = cudnn.data_type.HALF if spec.dtype == "float16" else cudnn.data_type.FLOAT
    dt_in = cudnn.data_type.BFLOAT16 if spec.inputs == "bfloat16" else dt
    g = cudnn.pygraph(io_data_type=dt, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=handle)

    def tensor(name, lens, data_type):
        return g.tensor(name=name, dim=list(lens), stride=layout_strides(lens, spec.nhwc), data_type=data_type,
                        uid=UID[name])
    tensors = {"X": tensor("X", spec.x_shape, dt_in), "W": tensor("W", spec.w_shape, dt_in)}
    y = g.conv_fprop(image=tensors["X"], weight=tensors["W"], pre_padding=list(spec.pads_begin),
                     post_padding=list(spec.pads_end), stride=list(spec.strides),
                     dilation=list(spec.dilations), compute_data_type=cudnn.data_type.FLOAT)
    if "bias" in steps:
        tensors["B"] = tensor("B", [1, spec.w_shape[0]] + [1] * (len(spec.x_shape) - 2), dt)
    if "add" in steps:
        tensors["R"] = tensor("R", spec.out_shape, dt)
    for step in steps:
        if step == "add":
            y = g.add(a=y, b=tensors["R"])
        elif step == "bias":
            y = g.bias(input=y, bias=tensors["B"])
        else:
            y = g.relu(input=y)
    y.set_output(True).set_data_type(dt).set_uid(UID["Y"])
    y.set_dim(list(spec.out_shape)).set_stride(layout_strides(spec.out_shape, spec.nhwc))
    tensors["Y"] = y
    g.validate()
    g.build_operation_graph()
    return g, tensors

"""fp16 mode: a root computes in half precision and keeps its float32 interface.

Float32 literals become float16 (except the ones read as sizes or scales, e.g. Resize's scales),
float32 parameters are cast to float16 where they enter, Casts to float32 inside the root cast to
float16 instead, and each returned value that was float32 is cast back before ``@return``. Shapes
are re-derived in order so every instruction's type follows. Accumulation precision is the
lowering's business: GEMMs and convolutions accumulate in fp32, and reductions, softmax and the
normalisations compute their statistics in fp32 from fp16 data.
"""
from __future__ import annotations

import numpy as np

from compiler.ir.instruction import LITERAL, PARAM, RETURN
from compiler.ir.shape import Shape
from compiler.ops.registry import compute_shape

# (op, input index) pairs whose float literals are parameters of the op, not data.
KEEP_FLOAT32 = {("Resize", 1), ("Resize", 2), ("Resize", 3), ("Upsample", 1),
                ("ConstantOfShape", 0), ("Range", 0), ("Range", 1), ("Range", 2)}
# Results whose type is not derived from their inputs here (calls into other roots, buffers).
SHAPE_SOURCES = frozenset({"run_on_target", "allocate", "copy"})


FP16_MAX = float(np.finfo(np.float16).max)


PARALLEL_ELEMENTS = 1 << 22     # arrays this large convert in chunks on several threads
CHUNK = 1 << 20


def _cast_in_chunks(value: np.ndarray) -> np.ndarray:
    """``value.astype(np.float16)``, chunk by chunk on the CPUs this process may use: NumPy's
    cast releases the GIL, and on the 2-core development machine it ran at 160-210 M values a
    second on one core, most of an fp16 compile of a large model (a Llama-style decoder of 8
    layers: 0.9 s of its 1.4 s of passes, profiled)."""
    import os
    from concurrent.futures import ThreadPoolExecutor
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    out = np.empty(value.shape, np.float16)
    src, dst = value.reshape(-1), out.reshape(-1)
    with ThreadPoolExecutor(max(1, min(cpus, 8))) as pool:
        list(pool.map(lambda s: np.copyto(dst[s:s + CHUNK], src[s:s + CHUNK], casting="unsafe"),
                      range(0, src.size, CHUNK)))
    return out


def to_fp16(value) -> np.ndarray:
    """``value`` in fp16, finite values beyond fp16's range clamped to its largest finite ones
    (as ONNX's own float16 converters do): a mask of float32's minimum (-3.4e38) stays a very
    negative number, not -inf, so a fully masked softmax row does not become 0/0."""
    value = np.asarray(value)
    if value.size == 0 or (value.min() >= -FP16_MAX and value.max() <= FP16_MAX):
        # in range (NaN fails both tests): a plain conversion, where the masked clamp below
        # makes four passes and three temporaries; VGG-11's 133 M weights took 3.5 s that way
        return _cast_in_chunks(value) if value.size >= PARALLEL_ELEMENTS else value.astype(np.float16)
    finite = np.isfinite(value)
    return np.where(finite, np.clip(value, -FP16_MAX, FP16_MAX), value).astype(np.float16)


def _is_f32(shape) -> bool:
    return isinstance(shape, Shape) and shape.dtype == "float32"


class QuantizeFp16:
    name = "quantize_fp16"

    def apply(self, mpm) -> None:
        module = mpm.module
        if module is not mpm.root_module:
            return
        ret = module.get_return()
        originally_f32 = [_is_f32(v.shape) for v in ret.inputs] if ret is not None else []
        for ins in list(module.instructions):
            if ins.op == PARAM and _is_f32(ins.shape) and ins.users:
                self._cast_after(module, ins, "float16")
            elif ins.op == LITERAL and _is_f32(ins.shape):
                if all((u.op, u.inputs.index(ins)) not in KEEP_FLOAT32 for u in ins.users):
                    ins.value = to_fp16(ins.value)
                    ins.shape = Shape("float16", ins.shape.lens)
            elif ins.op == "Cast" and ins.attrs.get("to") == "float32":
                ins.attrs = {**ins.attrs, "to": "float16"}
                ins.shape = ins.shape.with_dtype("float16")
            elif ins.op not in (PARAM, LITERAL, RETURN) and ins.op not in SHAPE_SOURCES:
                try:
                    ins.shape = compute_shape(ins.op, ins.attrs, ins.inputs, ins.module_inputs)
                except Exception:  # noqa: BLE001 - keep the old type; a cast below fixes it
                    pass
                if _is_f32(ins.shape) and ins.users:
                    self._cast_after(module, ins, "float16")
        if ret is None:
            return
        outs = []
        for value, was in zip(ret.inputs, originally_f32):
            if was and isinstance(value.shape, Shape) and value.shape.dtype == "float16":
                value = module.add_instruction("Cast", [value], {"to": "float32"},
                                               shape=value.shape.with_dtype("float32"), before=ret)
            outs.append(value)
        module.set_inputs(ret, outs)

    @staticmethod
    def _cast_after(module, ins, dtype):
        users = list(ins.users)
        index = module.instructions.index(ins) + 1
        while index < len(module.instructions) and module.instructions[index].op == PARAM:
            index += 1
        anchor = module.instructions[index]
        cast = module.add_instruction("Cast", [ins], {"to": dtype},
                                      shape=ins.shape.with_dtype(dtype), before=anchor)
        from compiler.passes.rewrite import rewire
        for u in users:
            rewire(u, ins, cast)

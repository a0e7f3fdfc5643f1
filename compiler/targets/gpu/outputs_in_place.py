"""A root's result computed by a step that can write into a given buffer is written straight into
the caller's output buffer, not into a buffer of its own that a ``copy`` then moves.

With offload copy off, ``replace_allocate`` gives each result of the root an output parameter
(``main:#output_<i>``) and a ``copy`` into it. The copy is a full read and write of the result, and
an eager step that cuts the root's CUDA graph in two: on the H200 GPT-2's fp32 logits (412 MB)
took 0.2 ms to copy, a tenth of the whole run. In fp16 mode every model's results end in such a
step, the cast back to the interface's float32.

Runs over a lowered module's steps once they are all lowered. The producing step takes the output
buffer as one more input (``out=``); the copy becomes a step that launches nothing and hands the
buffer on, so the root still returns what the copy returned.
"""
from __future__ import annotations

from collections import Counter

from compiler.ir.instruction import PARAM
from compiler.passes.offload_copy import is_output_parameter

from .graphs import record_on_device_operands


def _writing_into(fn, backend):
    """``fn`` with its last argument passed as ``out=``; a buffer not on the device (a caller may
    hand in host memory) gets the result copied as before."""
    def into(*args):
        out = args[-1]
        if backend.is_device_array(out):        # (emulating, every array is the device's)
            return fn(*args[:-1], out=out)
        out[...] = backend.to_host(fn(*args[:-1]))
        return out
    # A buffer in host memory takes a copy back, which no CUDA graph can hold: recorded only when
    # every operand, the caller's buffer included, is on the device (``graphs.capture_plan``).
    record_on_device_operands(into, when=getattr(fn, "capturable", True))
    into.path = f"{getattr(fn, 'path', getattr(fn, '__name__', 'step'))}-into-output"
    return into


def _handing_on(value):
    return value


_handing_on.path = "output-written-in-place"
# It launches nothing: recorded after a recorded producer, but after an eager one (a buffer in host
# memory) every replay must hand on that run's buffer, not the one of the recording.
record_on_device_operands(_handing_on)


def _same_buffer_shape(a, b) -> bool:
    sa, sb = a.shape, b.shape
    return getattr(sa, "dtype", None) == getattr(sb, "dtype", None) \
        and tuple(getattr(sa, "lens", ())) == tuple(getattr(sb, "lens", ()))


def write_outputs_in_place(steps: list, returned, backend) -> list:
    """Rewrite ``steps`` (a lowered module's (ins, fn, inputs, dead) list) in place: each ``copy``
    of a value into an output parameter, where the value's producer takes ``out=``
    (``fn.writes_into``), is read by nothing else and is not itself returned, has the producer
    write into the parameter. Returns the producers that now do."""
    readers = Counter(v for _ins, _fn, inputs, _dead in steps for v in inputs)
    position = {ins: k for k, (ins, _fn, _inputs, _dead) in enumerate(steps)}
    moved = []
    for k, (ins, _fn, inputs, dead) in enumerate(steps):
        if ins.op != "copy" or len(inputs) != 2:
            continue
        src, dst = inputs
        if dst.op != PARAM or not is_output_parameter(dst) or readers[dst] != 1:
            continue
        j = position.get(src)
        if j is None or readers[src] != 1 or src in returned or not _same_buffer_shape(src, dst):
            continue
        p_ins, p_fn, p_inputs, p_dead = steps[j]
        if not getattr(p_fn, "writes_into", False):
            continue
        steps[j] = (p_ins, _writing_into(p_fn, backend), p_inputs + (dst,), p_dead)
        steps[k] = (ins, _handing_on, (src,), dead)
        moved.append(p_ins)
    return moved

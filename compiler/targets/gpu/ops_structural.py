"""Lowerings of the structural ops (copies, buffers, tuples) and of fused pointwise kernels."""
from __future__ import annotations

from .graphs import record_on_device_operands
from .kernels.pointwise import lower_fused
from .lowering import lowers


@lowers("fused_pointwise")
def _fused(ins, L):
    return lower_fused(ins, L.backend)


def _eager(fn):
    """Steps that move data to or from the host, or hand out caller-visible buffers: they run
    outside CUDA graphs."""
    fn.capturable = False
    return fn


@lowers("copy_to_device")
def _to_device(ins, L):
    b = L.backend

    def to_device(x):
        return x if b.is_device_array(x) and b.on_gpu else b.to_device(x)
    to_device.into = True   # replays write the new host data into the recorded buffer
    return _eager(to_device)


@lowers("copy_from_device")
def _from_device(ins, L):
    b = L.backend
    return _eager(lambda x: b.to_host(x))


@lowers("allocate")
def _allocate(ins, L):
    xp = L.xp
    lens, dtype = tuple(ins.attrs["lens"]), ins.attrs["dtype"]
    return _eager(lambda: xp.empty(lens, dtype=dtype))


@lowers("copy")
def _copy(ins, L):
    xp = L.xp

    def copy(src, dst):
        if L.backend.on_gpu and not isinstance(dst, xp.ndarray):
            dst[...] = L.backend.to_host(src)
        else:
            dst[...] = src
        return dst
    # A copy into the caller's host buffer reads the device back; one between device buffers is a
    # kernel, which, left eager, cut the root's graph in two and cost a launch from Python a run.
    return record_on_device_operands(copy)


@lowers("get_tuple_elem")
def _tuple_elem(ins, L):
    index = ins.attrs["index"]
    # It launches nothing. After a recorded step its pick is the recorded buffer, which every replay
    # writes; after an eager step the replay must pick from the tuple of this run.
    return record_on_device_operands(lambda t: t[index])


@lowers("Identity")
def _identity(ins, L):
    return lambda x: x

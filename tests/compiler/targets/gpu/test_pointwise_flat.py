"""The flat pointwise kernel: which operand layouts it reads (checked on NumPy arrays) and the
source it writes. Its results on a GPU: test_pointwise_flat_kernel.py."""
import numpy as np

from compiler.targets.gpu.kernels.pointwise_flat import layout, source, vector_loads

ADD = {"op": "Add", "attrs": {}, "args": ["x0", "x1"]}
GELU = [{**ADD, "dtype": "D"}, {"op": "Div", "attrs": {}, "args": ["t0", "cfloat32:1.4142135"], "dtype": "D"},
        {"op": "Erf", "attrs": {}, "args": ["t1"], "dtype": "D"},
        {"op": "Add", "attrs": {}, "args": ["t2", "cfloat32:1.0"], "dtype": "D"},
        {"op": "Mul", "attrs": {}, "args": ["t0", "t3"], "dtype": "D"},
        {"op": "Mul", "attrs": {}, "args": ["t4", "cfloat32:0.5"], "dtype": "D"}]


def _typed(body, dtype):
    return [{**s, "dtype": dtype} for s in body]


def test_layouts_it_reads():
    out = (4, 5, 6)
    assert layout(np.zeros(out), out) == 0
    assert layout(np.zeros(6), out) == 6 and layout(np.zeros((5, 6)), out) == 30
    assert layout(np.zeros((1, 1, 6)), out) == 6 and layout(np.float32(2), out) == 1
    assert layout(np.zeros((4, 1, 6)), out) == (30, 6)            # broadcast in the middle
    assert layout(np.zeros((4, 1, 1)), out) == (30, 1)            # one value per leading index
    assert layout(np.zeros((1, 5, 1)), out) is None               # broadcast on both sides
    assert layout(np.zeros((6, 5, 4)).T, out) is None             # not packed


def test_source_reads_broadcast_operands_modulo_their_size():
    name, text = source(_typed(GELU, "float16"), ["float16", "float16"], [0, 3072])
    assert name.startswith("pwf_") and "in0[i]" in text and "in1[i % m1]" in text and "unsigned int m1" in text


def test_source_reads_a_scale_between_leading_and_trailing_axes():
    _name, text = source(_typed(GELU, "float16"), ["float16", "float16"], [0, (3136 * 96, 96)])
    assert "in1[(i / d1) * m1 + i % m1]" in text and "unsigned int d1, unsigned int m1" in text


def test_vector_loads_where_four_consecutive_elements_are_consecutive_and_aligned():
    base = np.zeros(64, dtype=np.float32)
    assert vector_loads(base, 0) and vector_loads(base, 8) and vector_loads(base, (32, 8))
    assert not vector_loads(base, 6)            # a trailing run of 6: the four may wrap around
    assert not vector_loads(base, (30, 8))      # a block of 30 between axes: the four may cross it
    assert not vector_loads(base, 1)            # one value for all: read once a lane
    assert not vector_loads(base[1:], 0)        # starts inside a 16-byte word


def test_source_packs_the_operands_it_may():
    _name, text = source(_typed(GELU, "float16"), ["float16", "float16"], [0, 6], (True, False))
    assert "const Pack<float16> p0 = *(const Pack<float16>*)(in0 + i0);" in text
    assert "const float16 x0 = p0.v[u];" in text and "const float16 x1 = in1[i % m1];" in text
    assert "*(Pack<float16>*)(out_ + i0) = packed;" in text

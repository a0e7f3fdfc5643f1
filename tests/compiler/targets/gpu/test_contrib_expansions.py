"""ONNX Runtime's contrib operators, expanded on import (``compiler/onnx/contrib``), on the gpu
target against the reference target: every case of ``tests/compiler/onnx/test_contrib_ops.py``
(those checked against ONNX Runtime and those against their definitions) and of
``test_group_query_attention.py``,
fp32 and fp16, eager, recorded into CUDA graphs and replayed (needs a CUDA GPU). The expansions
bring CastLike into fused pointwise kernels and attention in the spelled-out form the fusion pass
takes."""
import numpy as np
import pytest

import compiler
from compiler.targets.gpu.backend import gpu_available

from tests.compiler.onnx.test_contrib_ops import CASES, DEFINED_CASES
from tests.compiler.onnx.test_group_query_attention import CASES as GQA_CASES

ALL_CASES = {**CASES, **{name: case[:2] for name, case in DEFINED_CASES.items()},
             **{f"GroupQueryAttention_{name}": case for name, case in GQA_CASES.items()}}

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="needs CuPy and a CUDA device")]


@pytest.mark.parametrize("fp16", [False, True], ids=["fp32", "fp16"])
@pytest.mark.parametrize("case", sorted(ALL_CASES))
def test_expansion_on_the_gpu_matches_the_reference(case, fp16):
    model, feeds = ALL_CASES[case]
    reference = compiler.parse_onnx(model).compile("ref")
    program = compiler.parse_onnx(model).compile("gpu", fp16=fp16)
    want = reference.run(feeds)
    for _ in range(3):          # eager, recorded, replayed
        got = program.run(feeds)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            if w.dtype.kind in "iub":
                # a requantized value may take the neighbouring step after an ulp of float
                assert np.max(np.abs(g.astype(np.int64) - w.astype(np.int64))) <= (1 if case.startswith("Q") else 0)
                continue
            scale = max(float(np.abs(w).max()), 1e-6)
            bound = 2e-2 if fp16 else 1e-5
            assert float(np.abs(g.astype(np.float64) - w).max()) <= bound * scale

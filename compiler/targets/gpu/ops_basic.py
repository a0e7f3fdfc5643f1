"""The basic op families' lowerings, registered by importing their modules: data movement
(``ops_movement``, ``ops_pad``), products (``ops_gemm``), reductions (``ops_reduce``), softmax and
normalisations (``ops_norm``)."""
from __future__ import annotations

from . import ops_gemm, ops_movement, ops_norm, ops_pad, ops_reduce  # noqa: F401 (register lowerings)

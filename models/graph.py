"""A small ONNX graph under construction, with lazily generated, seeded weights.

Builders describe a network with ``Graph.op`` / ``Graph.param`` and never hold weight arrays:
each initializer is a ``WeightSpec`` (shape + distribution) that is only turned into numbers when
the model is written. That keeps three things cheap and exact:

* determinism — every tensor draws from its own generator seeded by (seed, tensor name), so the
  bytes do not depend on build order or on how many tensors came before;
* statistics — parameter counts and FLOPs come from shapes alone (``shape_only_model``), so
  ``perfbot models list`` never generates the 3.4 GB of a Stable Diffusion UNet;
* memory — large models stream one tensor at a time into an ONNX external-data file.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
# Protobuf cannot serialize a message over 2 GiB; stay well clear of it.
EXTERNAL_THRESHOLD_BYTES = 1 << 30


@dataclass(frozen=True)
class WeightSpec:
    """How one initializer is drawn: ``normal`` (a=std, b=mean), ``uniform`` (a=low, b=high)."""
    shape: tuple[int, ...]
    dist: str
    a: float = 0.0
    b: float = 0.0

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def materialize(self, seed: int, name: str) -> np.ndarray:
        # One generator per tensor, keyed by name: adding a layer never changes other weights.
        digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
        rng = np.random.default_rng([seed, int.from_bytes(digest, "little")])
        if self.dist == "normal":
            arr = rng.standard_normal(self.shape, dtype=np.float32)
            arr *= np.float32(self.a)
            if self.b:
                arr += np.float32(self.b)
            return arr
        if self.dist == "uniform":
            arr = rng.random(self.shape, dtype=np.float32)
            arr *= np.float32(self.b - self.a)
            arr += np.float32(self.a)
            return arr
        raise ValueError(f"unknown weight distribution {self.dist!r}")


class Graph:
    """Nodes, graph inputs/outputs and weight specs of one model being built."""

    def __init__(self, name: str, doc: str = ""):
        self.name, self.doc = name, doc
        self.nodes: list[onnx.NodeProto] = []
        self.weights: dict[str, WeightSpec] = {}
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self._used: dict[str, int] = {}
        # Weights replaced by computed values (BatchNorm statistics after calibration).
        self.fixed: dict[str, np.ndarray] = {}

    # -- naming ---------------------------------------------------------------------------
    def uniq(self, base: str) -> str:
        n = self._used.get(base, 0)
        self._used[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    # -- graph interface ------------------------------------------------------------------
    def input(self, name: str, elem_type: int, shape: list) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        self._used[name] = 1
        return name

    def output(self, value: str, name: str, elem_type: int = TensorProto.FLOAT,
               shape: list | None = None) -> str:
        """Expose ``value`` as graph output ``name`` (an Identity keeps exporter-like names)."""
        if value != name:
            self.op("Identity", [value], out=name)
        self.outputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def param(self, name: str, shape, dist: str = "normal", a: float = 0.0, b: float = 0.0) -> str:
        name = self.uniq(name)
        self.weights[name] = WeightSpec(tuple(int(s) for s in shape), dist, float(a), float(b))
        return name

    def const(self, value, dtype=None, name: str = "const") -> str:
        """A small fixed tensor (shapes, scalars, tables) as a Constant node, as exporters emit."""
        arr = np.asarray(value, dtype=dtype)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        base = self.uniq(name)
        out = f"{base}:0"
        self.nodes.append(helper.make_node("Constant", [], [out], name=base,
                                           value=numpy_helper.from_array(arr, base)))
        return out

    def op(self, op_type: str, inputs: list[str], n_out: int = 1, out: str | list | None = None,
           name: str | None = None, **attrs):
        """Append one node; returns its output name (or list of names when ``n_out`` > 1)."""
        base = self.uniq(name or op_type.lower())
        if out is None:
            # Value names carry an output index, so they never clash with graph input/output names.
            outs = [f"{base}:{i}" for i in range(n_out)]
        else:
            outs = [out] if isinstance(out, str) else list(out)
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=base, **attrs))
        return outs[0] if len(outs) == 1 else outs

    # -- statistics -----------------------------------------------------------------------
    def bn_stat_names(self) -> set[str]:
        return {n.input[i] for n in self.nodes if n.op_type == "BatchNormalization" for i in (3, 4)}

    def weight(self, name: str, seed: int) -> np.ndarray:
        fixed = self.fixed.get(name)
        return fixed if fixed is not None else self.weights[name].materialize(seed, name)

    def param_count(self) -> int:
        skip = self.bn_stat_names()
        return sum(w.size for n, w in self.weights.items() if n not in skip)

    def weight_bytes(self) -> int:
        return 4 * sum(w.size for w in self.weights.values())

    # -- output ---------------------------------------------------------------------------
    def _model(self, initializers: list[onnx.TensorProto], extra_inputs=()) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.name, list(self.inputs) + list(extra_inputs),
                                  self.outputs, initializer=initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="perfbot.models", doc_string=self.doc)
        model.ir_version = 8  # the IR version that goes with opset 17
        return model

    def shape_only_model(self) -> onnx.ModelProto:
        """The graph with weights declared as typed inputs: enough for shape inference."""
        return self._model([], [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(w.shape))
                                for n, w in self.weights.items()])

    def save(self, path: Path, seed: int, external: bool | None = None,
             progress: Callable[[int], None] | None = None) -> Path:
        """Write the model to ``path``; weights go to ``<path>.data`` when ``external``.

        ``external=None`` picks external data only when the weights would not fit a protobuf.
        ``progress`` is called with the byte count of each tensor as it is written.
        """
        path = Path(path)
        from models.calibrate import calibrate_batchnorm
        calibrate_batchnorm(self, seed)
        if external is None:
            external = self.weight_bytes() > EXTERNAL_THRESHOLD_BYTES
        if external:
            inits = self._write_external(path.with_name(path.name + ".data"), seed, progress)
        else:
            inits = self._inline(seed, progress)
        model = self._model(inits)
        with open(path, "wb") as f:
            f.write(model.SerializeToString(deterministic=True))
            f.flush()
            os.fsync(f.fileno())
        return path

    def _inline(self, seed: int, progress) -> list[onnx.TensorProto]:
        """Initializers holding their weights."""
        inits = []
        for name in self.weights:
            arr = self.weight(name, seed)
            inits.append(numpy_helper.from_array(arr, name))
            if progress:
                progress(arr.nbytes)
        return inits

    def _write_external(self, data_path: Path, seed: int, progress) -> list[onnx.TensorProto]:
        """Stream the weights, one tensor at a time, into ``data_path``; returns initializers
        that point into it (location relative to the model's folder, as ONNX requires)."""
        inits = []
        offset = 0
        with open(data_path, "wb") as data:
            for name in self.weights:
                arr = self.weight(name, seed)
                data.write(arr.tobytes())
                tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=arr.shape)
                tensor.data_location = TensorProto.EXTERNAL
                for key, value in (("location", data_path.name), ("offset", offset), ("length", arr.nbytes)):
                    entry = tensor.external_data.add()
                    entry.key, entry.value = key, str(value)
                offset += arr.nbytes
                inits.append(tensor)
                if progress:
                    progress(arr.nbytes)
        return inits

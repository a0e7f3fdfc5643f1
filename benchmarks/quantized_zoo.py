"""int8 models as ONNX Runtime's static quantizer writes them, through the compiler's targets
against ONNX Runtime: torchvision exports (``torchvision_zoo.py --out DIR``) quantized to uint8 in
both of its formats, QOperator (QLinearConv and ONNX Runtime's QLinearAdd, QLinearMul,
QLinearSigmoid, QLinearGlobalAveragePool, QGemm) and QDQ (QuantizeLinear/DequantizeLinear pairs
around float operators), calibrated on seeded random images.

A quantized output moves in whole steps of its final scale: a product rounded an ulp the other way
before a requantization moves a value one step. So the error is counted in those steps (the
largest |ours - ORT| / the output's DequantizeLinear scale), with ONNX Runtime's own difference
with its graph optimizations off beside it, and the top-1 class compared. ONNX Runtime runs on one
thread (its quantized kernels can split work by thread). uint8 weights: its uint8 x int8 kernels
saturate on x86 without VNNI. Not part of CI.

    python benchmarks/quantized_zoo.py --from DIR [--only resnet18,...] [--targets ref,cpu]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from export_check import ort_run  # noqa: E402

MODELS = ("resnet18", "mobilenet_v2", "efficientnet_b0", "mobilenet_v3_small", "regnet_y_400mf", "googlenet")


def quantize(source: str, out: str, fmt: str) -> None:
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    graph_input = onnx.load(source, load_external_data=False).graph.input[0]
    shape = [d.dim_value or 1 for d in graph_input.type.tensor_type.shape.dim]

    class Images(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{graph_input.name: np.random.default_rng(k).random(shape).astype(np.float32)}
                                 for k in range(4)])

        def get_next(self):
            return next(self.batches, None)

    from onnxruntime.quantization.shape_inference import quant_pre_process
    prepared = out + ".pre.onnx"  # the quantizer's own preparation (folded constants, shapes)
    quant_pre_process(source, prepared, skip_symbolic_shape=True)
    quantize_static(prepared, out, Images(), quant_format=getattr(QuantFormat, fmt),
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8)
    os.remove(prepared)


def output_step(model) -> float:
    """The scale of the DequantizeLinear that gives the graph's output (1.0 when there is none)."""
    from onnx import numpy_helper
    out = model.graph.output[0].name
    node = next((n for n in model.graph.node if out in n.output and n.op_type == "DequantizeLinear"), None)
    scale = next((t for t in model.graph.initializer if node is not None and t.name == node.input[1]), None)
    return float(np.max(numpy_helper.to_array(scale))) if scale is not None else 1.0


def check(path: str, targets: list[str]) -> str:
    import onnx

    import compiler
    model = onnx.load(path)
    graph_input = model.graph.input[0]
    shape = [d.dim_value or 1 for d in graph_input.type.tensor_type.shape.dim]
    feeds = {graph_input.name: np.random.default_rng(99).random(shape).astype(np.float32)}
    want = ort_run(path, feeds, threads=1)[0]
    plain = ort_run(path, feeds, optimized=False, threads=1)[0]
    step = output_step(model)
    cells = [f"ort-plain {np.max(np.abs(plain - want)) / step:4.1f}"]
    for target in targets:
        try:
            program = compiler.parse_onnx(path)
            program.compile(target)
            got = program.run(feeds)[0]
            top = "same" if got.argmax() == want.argmax() else "DIFF"
            cells.append(f"{target} {np.max(np.abs(got - want)) / step:4.1f} top-1 {top}")
        except Exception as exc:  # noqa: BLE001 - the table reports every failure
            cells.append(f"{target} {type(exc).__name__}: {str(exc).splitlines()[0][:100]}")
    return "  ".join(cells)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="from_dir", required=True, help="torchvision_zoo.py's --out folder")
    parser.add_argument("--only", default="")
    parser.add_argument("--targets", default="ref,cpu")
    parser.add_argument("--out", default="benchmarks/results/quantized_zoo")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    targets = [t for t in args.targets.split(",") if t]
    print("error in steps of the output's quantization scale against ONNX Runtime (one thread)")
    for model in [m for m in args.only.split(",") if m] or MODELS:
        for fmt in ("QOperator", "QDQ"):
            out = os.path.join(args.out, f"{model}_{fmt}.onnx")
            quantize(os.path.join(args.from_dir, f"{model}_legacy17.onnx"), out, fmt)
            print(f"{model:20} {fmt:9} {check(out, targets)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

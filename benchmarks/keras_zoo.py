"""Keras applications converted by tf2onnx (TensorFlow's ONNX converter), through the compiler's
targets against ONNX Runtime: models that reach ONNX the way TensorFlow users' do, channels-last
graphs with the converter's transposes, SAME paddings and folded batch norms.

Each application is built with random weights (seeded) and its logits (no softmax: random weights
saturate it), converted at opset 17 with a symbolic batch, and fed a batch of two random images in
[0, 255). ``ort-vs-tf`` says how far ONNX Runtime's result lies from TensorFlow's own, which checks
the conversion; the error of each target is against ONNX Runtime. Some conversions are unusable
(tf2onnx leaves a Keras 3 Normalization layer's statistics as graph inputs, or a call it cannot
convert): those are listed as such.

Two steps, as tf2onnx pins an old protobuf (install it with ``--no-deps`` beside tensorflow-cpu):

    python benchmarks/keras_zoo.py --export-only DIR [--only NAME,...]   # needs tensorflow, tf2onnx
    python benchmarks/keras_zoo.py --from DIR --targets ref,cpu,gpu --modes fp32,fp16

Not part of CI.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from export_check import finish, scaled_error  # noqa: E402
from zoo_store import run_stored, save_case  # noqa: E402

# name -> (keras.applications constructor, image side)
APPLICATIONS = {
    "mobilenet_v2": ("MobileNetV2", 224), "mobilenet_v3_small": ("MobileNetV3Small", 224),
    "resnet50": ("ResNet50", 224), "densenet121": ("DenseNet121", 224), "nasnet_mobile": ("NASNetMobile", 224),
    "inception_v3": ("InceptionV3", 299), "xception": ("Xception", 299), "mobilenet": ("MobileNet", 224),
    "resnet50_v2": ("ResNet50V2", 224),
    "efficientnet_b0": ("EfficientNetB0", 224), "efficientnet_v2_b0": ("EfficientNetV2B0", 224),
    "convnext_tiny": ("ConvNeXtTiny", 224),
}


def export(name: str, root: str) -> dict:
    """Convert one application into ``root`` with its feeds and ONNX Runtime's outputs."""
    import onnxruntime as ort
    import tensorflow as tf
    import tf2onnx
    constructor, side = APPLICATIONS[name]
    tf.keras.utils.set_random_seed(0)
    model = getattr(tf.keras.applications, constructor)(weights=None, input_shape=(side, side, 3),
                                                         classifier_activation=None)
    spec = (tf.TensorSpec((None, side, side, 3), tf.float32, name="input"),)

    @tf.function
    def logits(x):
        return model(x, training=False)

    path = os.path.join(root, f"{name}_tf2onnx.onnx")
    tf2onnx.convert.from_function(logits, input_signature=spec, opset=17, output_path=path)
    images = np.random.default_rng(0).random((2, side, side, 3)).astype(np.float32) * 255
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    if len(session.get_inputs()) > 1:
        return {"status": "UNUSABLE", "error": "the conversion left graph inputs: "
                + ", ".join(i.name for i in session.get_inputs()[1:])}
    want = session.run(None, {session.get_inputs()[0].name: images})
    save_case(root, name, "tf2onnx", path, {session.get_inputs()[0].name: images}, want)
    return {"status": "STORED",
            "error": f"ort-vs-tf {scaled_error(want[0], model(images, training=False).numpy()):.1e}"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--export-only", metavar="DIR", default="")
    parser.add_argument("--from", dest="from_dir", metavar="DIR", default="")
    parser.add_argument("--only", default="")
    parser.add_argument("--targets", default="ref,cpu")
    parser.add_argument("--modes", default="fp32")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(APPLICATIONS)
    targets = [t for t in args.targets.split(",") if t]
    if args.from_dir:
        rows = run_stored(args.from_dir, targets, [m for m in args.modes.split(",") if m], names=set(names))
        return finish(rows, targets, 20)
    if not args.export_only:
        parser.error("give --export-only DIR or --from DIR")
    os.makedirs(args.export_only, exist_ok=True)
    for name in names:
        try:
            row = export(name, args.export_only)
        except Exception as exc:  # noqa: BLE001 - the list reports every failure
            row = {"status": "UNUSABLE", "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:150]}"}
        print(f"{name:20} {row['status']:9} {row['error']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

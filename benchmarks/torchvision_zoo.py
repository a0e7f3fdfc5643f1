"""Real torchvision architectures (random weights, seed 0, eval mode) exported by both of
PyTorch's ONNX exporters and run through the compiler against ONNX Runtime.

One model per family by default (classification, segmentation, video, optical flow,
detection), at small inputs so the whole zoo runs on a 2-core CPU. Each row: export, parse,
compile and run on each target; the error is max |ours - ORT| / max |ORT| per output (≤ 1e-4
passes); detection outputs whose number of boxes differs are reported as such.

Run: ``python benchmarks/torchvision_zoo.py [--only NAME,...] [--exporters legacy17,dynamo]
[--targets cpu,ref] [--out DIR]``. Needs torch, torchvision and onnxscript (CPU); not part of CI.
Prints a table last; exits 1 when a file that exported fails.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np
import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compiler.onnx.sequences import subgraphs  # noqa: E402
from export_check import (TOLERANCE, against_targets, export_quietly, failure_row,  # noqa: E402
                          finish, scaled_error, zoo_arguments)
IMAGE = (1, 3, 224, 224)
CLIP = (1, 3, 8, 112, 112)

# name -> (constructor kwargs, input shapes); detection models take a list of images.
ZOO = {
    "alexnet": ({}, [IMAGE]),
    "convnext_tiny": ({}, [IMAGE]),
    "densenet121": ({}, [IMAGE]),
    "efficientnet_b0": ({}, [IMAGE]),
    "efficientnet_v2_s": ({}, [IMAGE]),
    "googlenet": ({"aux_logits": False, "init_weights": True}, [IMAGE]),
    "inception_v3": ({"aux_logits": False, "init_weights": True}, [(1, 3, 299, 299)]),
    "maxvit_t": ({}, [IMAGE]),
    "mnasnet0_5": ({}, [IMAGE]),
    "mobilenet_v2": ({}, [IMAGE]),
    "mobilenet_v3_small": ({}, [IMAGE]),
    "regnet_x_400mf": ({}, [IMAGE]),
    "regnet_y_400mf": ({}, [IMAGE]),
    "resnet18": ({}, [IMAGE]),
    "resnext50_32x4d": ({}, [IMAGE]),
    "shufflenet_v2_x0_5": ({}, [IMAGE]),
    "squeezenet1_1": ({}, [IMAGE]),
    "swin_t": ({}, [IMAGE]),
    "swin_v2_t": ({}, [IMAGE]),
    "vgg11_bn": ({}, [IMAGE]),
    "vit_b_32": ({}, [IMAGE]),
    "wide_resnet50_2": ({}, [IMAGE]),
    "deeplabv3_mobilenet_v3_large": ({"weights_backbone": None, "aux_loss": False}, [(1, 3, 160, 160)]),
    "fcn_resnet50": ({"weights_backbone": None, "aux_loss": False}, [(1, 3, 160, 160)]),
    "lraspp_mobilenet_v3_large": ({"weights_backbone": None}, [(1, 3, 160, 160)]),
    "r3d_18": ({}, [CLIP]),
    "r2plus1d_18": ({}, [CLIP]),
    "mc3_18": ({}, [CLIP]),
    "s3d": ({}, [(1, 3, 16, 224, 224)]),
    "swin3d_t": ({}, [CLIP]),
    "raft_small": ({}, [(1, 3, 128, 128), (1, 3, 128, 128)]),
    "ssdlite320_mobilenet_v3_large": ({"weights_backbone": None}, ["images", (3, 320, 320)]),
    # Score floors at 0: with random weights no box would pass the usual ones, leaving the
    # post-processing with nothing to do.
    "fasterrcnn_mobilenet_v3_large_320_fpn": ({"weights_backbone": None, "box_score_thresh": 0.0},
                                              ["images", (3, 320, 320)]),
    "retinanet_resnet50_fpn": ({"weights_backbone": None}, ["images", (3, 320, 320)]),
    "fcos_resnet50_fpn": ({"weights_backbone": None, "score_thresh": 0.0}, ["images", (3, 320, 320)]),
    "maskrcnn_resnet50_fpn": ({"weights_backbone": None, "box_score_thresh": 0.0}, ["images", (3, 320, 320)]),
}
EXPORTERS = ("legacy17", "dynamo")


class Wrapped(torch.nn.Module):
    """Tensor-in, tensors-out form: detection models take a list and return dicts; segmentation
    models return a dict; RAFT returns every refinement (only the last flow is kept)."""

    def __init__(self, name: str, model: torch.nn.Module):
        super().__init__()
        self.name, self.model = name, model

    def forward(self, *args):
        if ZOO[self.name][1][0] == "images":
            (found,) = self.model([args[0]])
            return tuple(found[k] for k in sorted(found))
        out = self.model(*args)
        if isinstance(out, dict):
            return out["out"]
        if isinstance(out, list):
            return out[-1]
        return out


def build(name: str) -> torch.nn.Module:
    torch.manual_seed(0)
    kwargs, _ = ZOO[name]
    model = torchvision.models.get_model(name, weights=None, **kwargs).eval()
    with torch.no_grad():  # running statistics that are not an identity
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
        for p in model.parameters():  # zero-initialised heads (ViT's) would make every output 0
            if p.dim() >= 2 and not p.any():
                p.normal_(0.0, 0.02)
    return Wrapped(name, model).eval()


def inputs(name: str) -> tuple:
    g = torch.Generator().manual_seed(1)
    shapes = ZOO[name][1]
    if shapes[0] == "images":
        return (torch.rand(*shapes[1], generator=g),)
    return tuple(torch.randn(*s, generator=g) for s in shapes)


def export(name: str, exporter: str, path: str) -> None:
    export_quietly(build(name), inputs(name), exporter, path)


SELECTIONS = ("TopK", "NonZero", "NonMaxSuppression")


def _reads(node) -> list[str]:
    """Values ``node`` reads, its subgraphs' reads of enclosing values included."""
    reads = [i for i in node.input if i]
    for g in subgraphs(node):
        inside = {o for n in g.node for o in n.output} | {i.name for i in g.input} | \
            {t.name for t in g.initializer}
        reads += [r for n in g.node for r in _reads(n) if r not in inside]
    return reads


def _selects(node) -> bool:
    return node.op_type in SELECTIONS or any(_selects(n) for g in subgraphs(node) for n in g.node)


def _rename_reads(node, renamed: dict[str, str]) -> None:
    node.input[:] = [renamed.get(i, i) for i in node.input]
    for g in subgraphs(node):
        for n in g.node:
            _rename_reads(n, renamed)


def decided_values(model) -> list[str]:
    """What the main graph's selections (TopK, NonZero, NonMaxSuppression, an If holding one)
    read, constants aside."""
    constants = {t.name for t in model.graph.initializer} | {i.name for i in model.graph.input} | \
        {o for n in model.graph.node if n.op_type == "Constant" for o in n.output}
    names = [r for node in model.graph.node if _selects(node) for r in _reads(node) if r not in constants]
    return list(dict.fromkeys(names))


def _ort(model, names: list[str], feeds: dict, optimise: bool = True) -> list:
    import onnxruntime as ort
    options = ort.SessionOptions()
    if not optimise:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"]).run(names, feeds)


def _float_error(got: list, want: list) -> float:
    return max((scaled_error(g, w) for g, w in zip(got, want) if np.asarray(w).dtype.kind == "f"),
               default=0.0)


def staged_errors(path: str, feeds: dict, targets: list[str]) -> dict:
    """Errors with every selection handed ONNX Runtime's inputs: the worst target's, and ONNX
    Runtime's own.

    Random weights leave many scores a few ulps apart; which of them TopK and NMS keep then
    depends on rounding, so whole-model outputs differ while every computed value agrees.
    Feeding each selection (TopK, NonZero, NonMaxSuppression, an If holding one) the same
    inputs on both sides checks every stage after it too (the box heads after the proposals).
    ``decided``: the values the selections read; ``outputs``: the model's outputs. ``*_noise``:
    the same figure between ONNX Runtime with and without its graph optimisations, the float32
    noise of this model (deep random-weight detectors amplify rounding)."""
    import onnx

    import compiler
    model = onnx.load(path)
    names = decided_values(model)
    outputs = [o.name for o in model.graph.output]
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n) for n in names)
    decided = _ort(probe, names, feeds)
    aliases = {name: f"fed::{name}" for name in names}
    for node in model.graph.node:
        if _selects(node):
            _rename_reads(node, aliases)
    fed = dict(feeds)
    for name, value in zip(names, decided):
        value = np.asarray(value)
        model.graph.input.append(onnx.helper.make_tensor_value_info(
            aliases[name], onnx.helper.np_dtype_to_tensor_dtype(value.dtype), list(value.shape)))
        fed[aliases[name]] = value
    model.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n) for n in names)
    every = outputs + names
    want = _ort(model, every, fed)
    plain = _ort(model, every, fed, optimise=False)
    k = len(outputs)
    errors = {"decided": 0.0, "outputs": 0.0,
              "decided_noise": _float_error(plain[k:], want[k:]),
              "outputs_noise": _float_error(plain[:k], want[:k])}
    for target in targets:
        program = compiler.parse_onnx(model)
        program.compile(target)
        got = program.run(fed)
        errors["decided"] = max(errors["decided"], _float_error(got[k:], want[k:]))
        errors["outputs"] = max(errors["outputs"], _float_error(got[:k], want[:k]))
    return errors


def check(path: str, name: str, targets: list[str]) -> dict:
    import onnx
    import onnxruntime as ort

    graph_inputs = [i.name for i in onnx.load(path, load_external_data=False).graph.input]
    feeds = {n: a.numpy() for n, a in zip(graph_inputs, inputs(name))}
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    row = against_targets(path, feeds, want, targets)
    if row["status"] == "FAIL" and ZOO[name][1][0] == "images" and not row["error"]:
        worst = staged_errors(path, feeds, targets)
        row.update(worst)
        # Within tolerance, or within ten times what ONNX Runtime's own two graph forms differ by.
        if all(worst[k] <= max(TOLERANCE, 10 * worst[k + "_noise"]) for k in ("decided", "outputs")):
            row["status"] = "PASS-TIES"
        row["error"] = (f"near-tie selections; each fed ORT's inputs: values they read "
                        f"{worst['decided']:.1e} (ORT vs ORT unoptimised {worst['decided_noise']:.1e}), "
                        f"outputs {worst['outputs']:.1e} ({worst['outputs_noise']:.1e})")
    return row


def main(argv=None) -> int:
    args, names, exporters, targets = zoo_arguments(argv, __doc__, "benchmarks/results/torchvision_zoo",
                                                    list(ZOO), EXPORTERS)
    torch.set_num_threads(os.cpu_count() or 1)
    rows = []
    for name in names:
        for exporter in exporters:
            path = os.path.join(args.out, f"{name}_{exporter}.onnx")
            start = time.perf_counter()
            try:
                if not (args.reuse and os.path.exists(path)):
                    export(name, exporter, path)
            except Exception as exc:  # noqa: BLE001
                rows.append((name, exporter, failure_row("EXPORT-FAIL", exc)))
                print(name, exporter, rows[-1][2], flush=True)
                continue
            export_s = time.perf_counter() - start
            try:
                row = check(path, name, targets)
            except Exception as exc:  # noqa: BLE001 - ONNX Runtime refused the export
                row = failure_row("ORT-FAIL", exc)
            row["export_s"] = export_s
            rows.append((name, exporter, row))
            print(name, exporter, row, flush=True)
    return finish(rows, targets, 38, f"\ntorch {torch.__version__}, torchvision {torchvision.__version__}; "
                                     "error = max|ours-ORT|/max|ORT|")


if __name__ == "__main__":
    sys.exit(main())

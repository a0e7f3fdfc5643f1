"""Which kept cuDNN plans load back: build the convolutions of the GPU test cases (fp16, split-bf16
fp32, exact fp32: the last keep no plan on disk) into an empty plan cache, then deserialize every
kept blob in a fresh process of its own (a blob cuDNN cannot read can crash the process, not
raise), then all of them in one process. Prints one line per blob: the convolution, how its plan
was chosen, and whether it loaded.

    source benchmarks/gpu_env.sh; python3 benchmarks/cudnn_plan_reload_check.py --out $OUT
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

CASES = ["conv3x3", "conv7x7s2", "conv1x1", "conv_dilated_asym", "conv_add_relu", "conv_chain_pool_concat",
         "conv_bn_relu_add", "conv_relu", "dense_block"]
SETTINGS = [("default", {}, False), ("fp16", {}, True), ("split-cudnn", {"PERFBOT_GPU_FP32_CONV": "split-cudnn"}, False),
            ("cudnn", {"PERFBOT_GPU_FP32_CONV": "cudnn"}, False)]


def build_all(cache: str) -> None:
    """Compile and run every case under every setting, recording each kept blob's spec."""
    os.environ["PERFBOT_GPU_CACHE"] = cache
    import numpy as np

    import compiler
    from compiler.targets.gpu.kernels import conv as convk
    from gpu_cases import build, feeds_for
    saved = convk.CudnnConv._save

    def recording_save(self, spec):
        saved(self, spec)
        path = convk.blob_path(spec)
        if path and os.path.exists(path):
            with open(path + ".json", "w") as f:
                json.dump({"spec": repr(spec), "strict": self.strict, "tuned": self.tuned,
                           "plan_index": self.plan_index, "setting": os.environ.get("CHECK_SETTING")}, f)
    convk.CudnnConv._save = recording_save
    for label, env, fp16 in SETTINGS:
        os.environ.pop("PERFBOT_GPU_FP32_CONV", None)
        os.environ.update(env)
        os.environ["CHECK_SETTING"] = label
        for name in CASES:
            program = compiler.parse_onnx(build(name)).compile("gpu", fp16=fp16)
            for seed in (1, 2, 3):     # eager, recorded into CUDA graphs, replayed
                np.asarray(program.run(feeds_for(program, seed))[0])


def load_many(paths: list[str]) -> None:
    """Deserialize the blobs in order in this process, naming each once it loaded."""
    from compiler.targets.gpu.kernels import conv as convk
    cudnn = convk.cudnn_module()
    kept = []
    for path in paths:
        with open(path, "rb") as f:
            blob = f.read()
        g = cudnn.pygraph()
        g.deserialize(convk._handle(), blob)
        kept.append(g)
        print("ok", os.path.basename(path), flush=True)


def _loads(paths: list[str]) -> tuple[int, int]:
    """(return code, blobs loaded) of loading ``paths`` in order in a fresh process."""
    run = subprocess.run([sys.executable, os.path.abspath(__file__), "--load", *paths], capture_output=True, text=True)
    return run.returncode, sum(1 for line in run.stdout.splitlines() if line.startswith("ok "))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--load", nargs="+")
    ap.add_argument("--build")
    args = ap.parse_args()
    if args.load:
        load_many(args.load)
        return 0
    if args.build:
        build_all(args.build)
        return 0
    cache = tempfile.mkdtemp(prefix="plans-")
    subprocess.run([sys.executable, os.path.abspath(__file__), "--build", cache], check=True)
    plans = os.path.join(cache, "cudnn_plans")
    blobs = sorted(os.path.join(plans, b) for b in os.listdir(plans) if b.endswith(".plan"))
    lines = []
    for i, blob in enumerate(blobs):
        with open(blob + ".json") as f:
            meta = json.load(f)
        rc, _ = _loads([blob])
        lines.append(f"{i:3d} alone rc={rc:4d} {meta['setting']:12s} strict={meta['strict']!s:5s} "
                     f"tuned={meta['tuned']:9s} {meta['spec']}")
    rc, loaded = _loads(blobs)
    lines.append(f"all {len(blobs)} in one process: rc={rc} after {loaded} loaded")
    if rc != 0 and loaded < len(blobs):
        k = loaded
        for label, subset in [("the one that crashed, twice", [blobs[k], blobs[k]]),
                              ("the one before, then it", [blobs[k - 1], blobs[k]] if k else [blobs[k]]),
                              ("every one before it, then it", blobs[:k + 1][-8:])]:
            lines.append(f"{label}: {_loads(subset)}")
    rebuild = subprocess.run([sys.executable, os.path.abspath(__file__), "--build", cache], capture_output=True, text=True)
    lines.append(f"second compile of every case, plans from disk: rc={rebuild.returncode} "
                 f"{rebuild.stderr.strip().splitlines()[-12:] if rebuild.returncode else ''}")
    with open(os.path.join(args.out, "cudnn_plan_reload.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

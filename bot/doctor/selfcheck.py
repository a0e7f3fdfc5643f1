"""The doctor's self-check: one small suite row compiled on each target this machine can run and
verified against ONNX Runtime, as ``perfbot verify`` does (seconds per target once the model is
built; building it the first time takes a few more)."""
from __future__ import annotations

import time

# The smoke suite's smallest convolution net: it goes through the convolutions (cuDNN or its
# fallback), the GEMMs and the fused pointwise kernels that the library report is about.
ROW = "smoke-resnet"


def targets(gpu_usable: bool) -> list[str]:
    return ["ref", "cpu", *(["gpu"] if gpu_usable else [])]


def run_all(gpu_usable: bool, row_name: str = ROW) -> list[dict]:
    return [check(target, row_name) for target in targets(gpu_usable)]


def check(target: str, row_name: str = ROW) -> dict:
    """PASSED / FAILED against ONNX Runtime, or error with the one-line reason."""
    start = time.perf_counter()
    out = {"target": target, "row": row_name}
    try:
        result = _verify(target, row_name)
        out.update(status=result.status, max_abs_err=result.max_abs_err,
                   detail=result.problem or f"rtol {result.rtol:g}, atol {result.atol:g}")
    except Exception as exc:  # noqa: BLE001 - whatever breaks is what the doctor must report
        out.update(status="error", max_abs_err=None, detail=f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
    out["seconds"] = round(time.perf_counter() - start, 2)
    return out


def _verify(target: str, row_name: str):
    import compiler
    from models.cache import build_model
    from models.inputs import make_feeds
    from models.manifest import load_manifest

    from bot.runner.accuracy import compare_outputs, reference_outputs

    row = load_manifest().get(row_name)
    path = str(build_model(row))
    program = compiler.parse_onnx(path, batch_size=row.batch, dims=row.dims or None)
    program.compile(target, fp16=row.mode == "fp16")
    feeds = make_feeds(row, path, batch=row.batch, seed=0)
    return compare_outputs(program.run(feeds), reference_outputs(path, feeds), row.rtol, row.atol)

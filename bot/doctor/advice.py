"""What is missing, each with the command that fixes it. An item is blocking (``perfbot doctor``
exits 1) when it affects a target this machine can run, or the GPU it was told to expect."""
from __future__ import annotations

from compiler.targets.gpu.libraries import HIDE_ENV, KNOWN

from .facts import GPU_PACKAGES
from .selfcheck import ROW

INSTALL = "python3 -m pip install -e ."
GPU_EXTRA = "python3 -m pip install -e '.[gpu]'"
DRIVER = "install the NVIDIA driver for CUDA 13 (580 or newer), then check that nvidia-smi lists the GPU"


def _item(what: str, fix: str, blocking: bool, scope: str = "all") -> dict:
    """``scope`` "gpu": only the gpu target needs it."""
    return {"what": what, "fix": fix, "blocking": blocking, "scope": scope}


def missing(doc: dict, expect_gpu: bool = False) -> list[dict]:
    gpu_matters = doc["gpu"]["usable"] or expect_gpu
    return [*_requirements(doc), *_gpu(doc, expect_gpu), *_gpu_packages(doc, gpu_matters),
            *_libraries(doc, gpu_matters), *_switches(doc), *_self_check(doc)]


def _requirements(doc: dict) -> list[dict]:
    return [_item(f"{r['name']} {r['wanted']} (installed: {r['installed'] or 'none'})", INSTALL, True)
            for r in doc["requirements"] if not r["ok"]]


def _gpu(doc: dict, expect_gpu: bool) -> list[dict]:
    gpu = doc["gpu"]
    if gpu["usable"]:
        return []
    fix = GPU_EXTRA if gpu["driver"] else DRIVER
    return [_item(f"a usable CUDA GPU ({'; '.join(gpu['problems']) or 'none found'})", fix, expect_gpu, "gpu")]


def _gpu_packages(doc: dict, gpu_matters: bool) -> list[dict]:
    absent = [name for name in GPU_PACKAGES if doc["packages"].get(name) is None]
    if not absent:
        return []
    return [_item(f"the gpu extra's package(s) {', '.join(absent)}", GPU_EXTRA, gpu_matters, "gpu")]


def _libraries(doc: dict, gpu_matters: bool) -> list[dict]:
    out = []
    for lib in doc["libraries"]:
        if lib["found"] or (lib["source"] == "missing" and doc["packages"].get(lib["package"]) is None):
            continue  # a package not installed is the item above, with the same fix
        fix = f"unset {HIDE_ENV}" if lib["source"] == "hidden" else GPU_EXTRA
        out.append(_item(f"{lib['title']} ({lib['package']}): {lib['detail']}; the gpu target falls back: "
                         f"{lib['fallback']}", fix, gpu_matters, "gpu"))
    return out


def _switches(doc: dict) -> list[dict]:
    options = doc["gpu_options"]
    out = [_item(f"{name} is set but nothing reads it (a misspelt switch?)", f"unset {name}", False)
           for name in options["unknown"]]
    out += [_item(f"{HIDE_ENV} names {name!r}, which is no library (known: {', '.join(KNOWN)})",
                  f"export {HIDE_ENV}=<{'|'.join(KNOWN)}>", False) for name in options["unknown_hidden"]]
    return out


def _self_check(doc: dict) -> list[dict]:
    return [_item(f"the self-check on {c['target']}: {c['status']} ({c['detail']})",
                  f"perfbot verify {c['row']} --target {c['target']}  # the same check, on its own", True)
            for c in doc["self_check"] if c["status"] != "PASSED"]

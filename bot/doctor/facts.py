"""The facts ``perfbot doctor`` reports: Python and package versions, the GPU, driver and CUDA
(through NVML and CuPy, each where installed), the gpu target's libraries and its switches."""
from __future__ import annotations

import platform
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from compiler.targets.gpu import libraries as gpu_libraries
from compiler.targets.gpu import options as gpu_options_module

CORE_PACKAGES = ("perfbot", "numpy", "onnx", "onnxruntime")
# What the `gpu` extra brings (pyproject.toml), and so what the gpu target can load.
GPU_PACKAGES = ("cupy-cuda13x", *dict.fromkeys(s.package for s in gpu_libraries.LIBRARIES.values()),
                gpu_libraries.FRONTEND.package, "nvidia-ml-py")

# The gpu target's switches (README "Configuration"), with what each does when set.
GPU_OPTIONS = {name: meaning for name, (_field, meaning) in gpu_options_module.SWITCHES.items()}


def python() -> dict:
    return {"version": platform.python_version(), "executable": sys.executable,
            "platform": platform.platform()}


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def packages() -> dict[str, str | None]:
    return {name: _version(name) for name in (*CORE_PACKAGES, *GPU_PACKAGES)}


def requirements() -> list[dict]:
    """perfbot's own dependencies (an installed perfbot's metadata) and whether each is met."""
    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for text in _declared():
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue  # an extra's (dev, gpu, postgres): not needed to run
        have = _version(req.name)
        out.append({"name": req.name, "wanted": str(req.specifier) or "any", "installed": have,
                    "ok": have is not None and req.specifier.contains(have, prereleases=True)})
    return out


def _declared() -> list[str]:
    """perfbot's requirements: the installed distribution's, else (a checkout run in place, as on
    a machine where nothing was installed) those of the checkout's pyproject.toml."""
    try:
        return metadata.requires("perfbot") or []
    except metadata.PackageNotFoundError:
        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        try:
            return tomllib.loads(pyproject.read_text())["project"]["dependencies"]
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return []


def gpu() -> dict:
    """The GPUs and driver as NVML sees them, and CUDA as CuPy sees it; each part says why it is
    empty where it is."""
    info = {"usable": False, "devices": [], "driver": None, "cuda_driver": None,
            "cuda_runtime": None, "problems": []}
    _from_nvml(info)
    _from_cupy(info)
    info["driver"] = info["driver"] or kernel_driver()
    return info


def kernel_driver(path: str = "/proc/driver/nvidia/version") -> str | None:
    """The loaded NVIDIA kernel module's version, which needs neither NVML nor CuPy: tells "no
    driver" from "driver, but no gpu extra"."""
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    match = re.search(r"Kernel Module\s+(?:for \S+\s+)?([0-9][0-9.]+)", text)
    return match.group(1) if match else None


def _cuda_version(value: int) -> str:
    return f"{value // 1000}.{value % 1000 // 10}"


def _from_nvml(info: dict) -> None:
    try:
        import pynvml
    except ImportError:
        info["problems"].append("nvidia-ml-py is not installed (no NVML readings)")
        return
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        info["problems"].append(f"NVML: {exc} (no NVIDIA driver loaded?)")
        return
    try:
        info["driver"] = _text(pynvml.nvmlSystemGetDriverVersion())
        info["cuda_driver"] = _cuda_version(pynvml.nvmlSystemGetCudaDriverVersion_v2())
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            info["devices"].append({"index": index, "name": _text(pynvml.nvmlDeviceGetName(handle)),
                                    "memory_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)})
    except pynvml.NVMLError as exc:
        info["problems"].append(f"NVML: {exc}")
    finally:
        pynvml.nvmlShutdown()


def _from_cupy(info: dict) -> None:
    try:
        import cupy
    except Exception as exc:  # noqa: BLE001 - not installed, or its CUDA libraries are not
        info["problems"].append(f"CuPy does not import ({type(exc).__name__}: {_line(exc)})")
        return
    try:
        info["cuda_runtime"] = _cuda_version(cupy.cuda.runtime.runtimeGetVersion())
        info["cuda_driver"] = info["cuda_driver"] or _cuda_version(cupy.cuda.runtime.driverGetVersion())
        info["usable"] = bool(cupy.cuda.is_available())
        if not info["usable"]:
            info["problems"].append("CuPy sees no CUDA device")
    except Exception as exc:  # noqa: BLE001 - no driver, no device
        info["problems"].append(f"CuPy: {type(exc).__name__}: {_line(exc)}")


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def library_findings() -> list[dict]:
    return [f.as_dict() for f in gpu_libraries.probe()]


def gpu_options() -> dict:
    """The gpu target's switches that are set, with value and meaning; PERFBOT_GPU_* variables
    that nothing reads (a typo, most likely) and unknown PERFBOT_GPU_HIDE names are listed apart."""
    given, unknown = gpu_options_module.set_switches()
    return {"set": [{"name": k, "value": v, "meaning": GPU_OPTIONS[k]} for k, v in sorted(given.items())],
            "unknown": unknown,
            "unknown_hidden": gpu_libraries.unknown_hidden()}

"""What the gpu target keeps on disk about convolutions, under ``GpuOptions.cache_dir``: the
chosen cuDNN plan or fp32 path per convolution (one JSON file), and each built plan (one file
per plan). Keys carry the GPU, the cuDNN version and the whole ``GpuOptions``, so a plan made
under other settings is never taken for one made under these."""
from __future__ import annotations

import functools
import hashlib
import json
import os

from compiler import tuning

from .conv_spec import ConvSpec, graph_form

_plans: dict[str, dict] = {}    # plan-choice file -> its entries


@functools.lru_cache(maxsize=None)
def _device_name(device_id: int) -> str:
    import cupy
    name = cupy.cuda.runtime.getDeviceProperties(device_id)["name"]
    return name.decode() if isinstance(name, bytes) else name


def device_name() -> str:
    """The current GPU's name, asked once per device (each query took ~1.3 ms on the H200)."""
    import cupy
    return _device_name(cupy.cuda.Device().id)


def cache_folder(options) -> str:
    from platformdirs import user_cache_dir
    return options.cache_dir or user_cache_dir("perfbot")


def plan_file(options) -> str:
    return os.path.join(cache_folder(options), "gpu_conv_plans.json")


def plan_cache(options) -> dict:
    """Chosen cuDNN plan (or fp32 path) per convolution, kept on disk so later compiles skip timing."""
    path = plan_file(options)
    if path not in _plans:
        try:
            with open(path) as f:
                _plans[path] = json.load(f)
        except (OSError, ValueError):
            _plans[path] = {}
    return _plans[path]


def forget_choices() -> None:
    """Drop the choice files read so far: the next ``plan_cache`` reads them from disk again."""
    _plans.clear()


def remember_plan(options, key: str, index) -> None:
    tuning.noted()
    cache = plan_cache(options)
    cache[key] = index
    path = plan_file(options)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(cache, f)
        os.replace(tmp, path)
    except OSError:
        pass   # an unwritable cache only costs the next compile its tuning


def blob_path(spec: ConvSpec, options, cudnn_version, backend: bool = False) -> str | None:
    """Where the built plan of ``spec`` is kept: one file per (cuDNN version, GPU, options, graph
    form, convolution, API: a backend plan's JSON text or the frontend's serialized graph);
    None when ``options.plan_cache`` is off."""
    return kept_plan_path(options, cudnn_version,
                          f"{options.key()}|{graph_form(spec)}|{spec}" + ("|backend-json" if backend else ""))


def kept_plan_path(options, cudnn_version, what: str) -> str | None:
    """The file a built cuDNN plan of ``what`` is kept in under this cuDNN version and GPU (the
    convolutions' and the attention's plans alike); None when ``options.plan_cache`` is off."""
    if not options.plan_cache:
        return None
    import cupy
    key = f"{cudnn_version}|{device_name()}|{cupy.cuda.Device().compute_capability}|{what}"
    return os.path.join(cache_folder(options), "cudnn_plans", hashlib.sha1(key.encode()).hexdigest() + ".plan")


def write_atomically(path: str, blob: bytes) -> None:
    """``blob`` to ``path`` through a temporary file, so a reader never sees half of it."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(blob)
    os.replace(tmp, path)

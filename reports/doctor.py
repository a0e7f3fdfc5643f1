"""``perfbot doctor`` output: versions, GPU, libraries, switches, the self-check and what is
missing with its fix, as sections of lines."""
from __future__ import annotations

import json


def render_doctor(doc: dict, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(doc, indent=2)
    lines = _lines(doc)
    if fmt == "markdown":
        return "\n".join(f"- {line}" if line and not line.startswith("#") else line for line in lines)
    return "\n".join(line.removeprefix("## ") for line in lines)


def _lines(doc: dict) -> list[str]:
    return [*_versions(doc), "", *_gpu(doc["gpu"]), "", *_libraries(doc["libraries"]), "",
            *_options(doc["gpu_options"]), "", *_self_check(doc["self_check"]), "", *_missing(doc)]


def _versions(doc: dict) -> list[str]:
    py = doc["python"]
    packages = ", ".join(f"{name} {version or '(not installed)'}" for name, version in doc["packages"].items())
    return ["## versions", f"Python {py['version']} ({py['executable']})", packages]


def _gpu(gpu: dict) -> list[str]:
    out = ["## GPU"]
    out += [f"GPU {d['index']}: {d['name']}, {d['memory_bytes'] / 2**30:.0f} GiB" for d in gpu["devices"]]
    out.append(f"driver {gpu['driver'] or 'unknown'}, CUDA driver API {gpu['cuda_driver'] or 'unknown'}, "
               f"CUDA runtime {gpu['cuda_runtime'] or 'unknown'}; gpu target "
               f"{'usable' if gpu['usable'] else 'not usable'}")
    out += gpu["problems"]
    return out


def _libraries(found: list[dict]) -> list[str]:
    out = ["## gpu target libraries"]
    for lib in found:
        if lib["found"]:
            version = f" {lib['version']}" if lib["version"] else ""
            out.append(f"{lib['title']}{version}: {lib['source']}, {lib['path']}")
        else:
            out.append(f"{lib['title']}: {lib['source']}; fallback: {lib['fallback']}")
    return out


def _options(options: dict) -> list[str]:
    out = ["## gpu switches"]
    out += [f"{o['name']}={o['value']} ({o['meaning']})" for o in options["set"]] or ["none set (defaults)"]
    out += [f"{name}: set, but nothing reads it" for name in options["unknown"]]
    return out


def _self_check(checks: list[dict]) -> list[str]:
    if not checks:
        return ["## self-check", "skipped (--no-self-check)"]
    out = ["## self-check (against ONNX Runtime)"]
    for c in checks:
        err = f", max abs error {c['max_abs_err']:.3g}" if c["max_abs_err"] is not None else ""
        out.append(f"{c['row']} on {c['target']}: {c['status']} in {c['seconds']:.1f} s{err} ({c['detail']})")
    return out


def _missing(doc: dict) -> list[str]:
    if not doc["missing"]:
        return ["## missing", "nothing"]
    out = ["## missing"]
    for item in doc["missing"]:
        flag = " (for the gpu target, which this machine cannot run)" if not item["blocking"] and \
            item["scope"] == "gpu" else ""
        out.append(f"{item['what']}{flag}\n    fix: {item['fix']}")
    return out

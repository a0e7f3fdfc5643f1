"""The GPUs a run may spread its rows over (``--devices all|0,1,...``), and each one's measuring CPU.

A device is named by its place among the GPUs this process may use: nvidia-smi's (NVML's) numbers,
or, when ``CUDA_VISIBLE_DEVICES`` is set, the place in that list (``--devices 1`` with
``CUDA_VISIBLE_DEVICES=4,5`` is nvidia-smi's GPU 5; integer entries are taken as nvidia-smi's
numbers, as ``gpu_state`` takes them). Its workers get ``CUDA_VISIBLE_DEVICES=<its UUID>`` (its
number where NVML gives no UUID), so every worker sees exactly one GPU, as CUDA device 0, whatever
order CUDA would number the GPUs in.

Devices apply to the gpu target only: the cpu and ref targets measure on the host, where several
"devices" would only share the same cores. ``PERFBOT_TEST_DEVICES`` (TEST-ONLY, like
``bot.runner.faults``) names fake GPUs, comma-separated (``PERFBOT_TEST_DEVICES=A,B`` is two
devices, 0 named A and 1 named B); with it set, discovery lists those instead of asking NVML, and
the host targets accept ``--devices`` as fake device slots, so that the scheduling can be tested on
a machine without GPUs. Nothing in perfbot sets it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from compiler.errors import UserError

TEST_ENV = "PERFBOT_TEST_DEVICES"


@dataclass(frozen=True)
class Device:
    index: int                     # CUDA index in this process (the --devices number)
    visible: str                   # the worker's CUDA_VISIBLE_DEVICES: the GPU's UUID, or number
    name: str | None = None        # NVML's name and UUID, where it gives them
    uuid: str | None = None
    cpu: int | None = None         # the CPU its measuring thread is pinned to

    def env(self) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": self.visible}

    def record(self) -> dict:
        """What each sample records of the device it ran on."""
        out: dict = {"index": self.index}
        if self.name:
            out["name"] = self.name
        if self.uuid:
            out["uuid"] = self.uuid
        return out


def discover() -> list[Device]:
    """The GPUs of this host that CUDA would show this process, in CUDA's order ([] when none)."""
    fake = os.environ.get(TEST_ENV)
    if fake is not None:
        names = [n.strip() for n in fake.split(",") if n.strip()]
        return [Device(i, str(i), name=n, uuid=f"FAKE-{n}") for i, n in enumerate(names)]
    nvml = _nvml_devices()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return [Device(i, uuid or str(i), name, uuid) for i, (name, uuid) in enumerate(nvml)]
    found = []
    for entry in (p.strip() for p in visible.split(",")):
        if not entry or entry == "-1":
            break  # CUDA stops at the first invalid entry
        name, uuid = _lookup(nvml, entry)
        found.append(Device(len(found), uuid or entry, name, uuid))
    return found


def choose(spec: str | None, target: str) -> list[Device] | None:
    """The devices ``--devices SPEC`` names on ``target``; None without the option (one device,
    the runner's usual way). A user mistake is one line (``UserError``)."""
    if spec is None:
        return None
    if target != "gpu" and TEST_ENV not in os.environ:
        raise UserError(f"--devices applies to the gpu target only; the {target} target measures "
                        "on the host's CPUs (leave --devices out)")
    available = discover()
    if not available:
        raise UserError("--devices: this host has no GPU that CUDA can see (nvidia-smi lists "
                        "them; check CUDA_VISIBLE_DEVICES)")
    wanted = parse(spec, len(available))
    return with_cpus([available[i] for i in wanted])


def parse(spec: str, count: int) -> list[int]:
    """``all`` or comma-separated distinct indices below ``count``."""
    text = spec.strip()
    if text == "all":
        return list(range(count))
    indices: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():
            raise UserError(f"--devices {spec!r} must be 'all' or GPU indices separated by commas, "
                            "e.g. 0,1")
        index = int(part)
        if index >= count:
            raise UserError(f"--devices {spec!r}: there is no GPU {index}; this host has {count} "
                            f"(0 to {count - 1})")
        if index in indices:
            raise UserError(f"--devices {spec!r} names GPU {index} twice")
        indices.append(index)
    return indices


def with_cpus(devices: list[Device]) -> list[Device]:
    """Each device with a measuring CPU of its own, the highest CPUs this runner may use (the
    last ones are the least likely to take the system's interrupts). With more devices than CPUs
    they share, round the CPUs."""
    if not hasattr(os, "sched_getaffinity"):
        return devices
    cpus = sorted(os.sched_getaffinity(0), reverse=True)
    return [Device(d.index, d.visible, d.name, d.uuid, cpus[k % len(cpus)])
            for k, d in enumerate(devices)]


def _nvml_devices() -> list[tuple[str | None, str | None]]:
    """(name, uuid) of every GPU NVML counts; [] without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no package, no driver: no GPUs to spread over
        return []
    try:
        found = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            found.append((_text(pynvml.nvmlDeviceGetName(handle)), _text(pynvml.nvmlDeviceGetUUID(handle))))
        return found
    except Exception:  # noqa: BLE001
        return []
    finally:
        pynvml.nvmlShutdown()


def _lookup(nvml: list, entry: str) -> tuple[str | None, str | None]:
    """The NVML name and UUID of a CUDA_VISIBLE_DEVICES entry (an index or a UUID)."""
    if entry.isdigit() and int(entry) < len(nvml):
        return nvml[int(entry)]
    for name, uuid in nvml:
        if uuid and (uuid == entry or uuid.startswith(entry)):
            return name, uuid
    return None, None


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)

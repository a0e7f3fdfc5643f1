"""``perfbot verify --devices``: the same check on each named GPU, one process per GPU.

CUDA binds a process to the GPUs it sees when it first touches one, so each GPU gets a process of
its own with ``CUDA_VISIBLE_DEVICES`` naming it, running ``perfbot verify`` without ``--devices``;
their answers are printed in turn under the GPU's name. The GPUs are checked one after another:
an accuracy check is short, and a faulty GPU is easier to tell from its neighbours' output.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import bot

CODE_ROOT = Path(bot.__file__).resolve().parent.parent


def verify_on_devices(args) -> int:
    """Run the verification of ``args`` on every device of ``args.devices``; 0 when all pass."""
    from bot.runner.devices import choose

    worst = 0
    for device in choose(args.devices, args.target):
        env = {**os.environ, **device.env(),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(CODE_ROOT), os.environ.get("PYTHONPATH")]))}
        done = subprocess.run([sys.executable, "-m", "bot", "verify", *single_device_argv(args)],
                              env=env, capture_output=True, text=True)
        print(f"GPU {device.index}{f' ({device.name})' if device.name else ''}:")
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        worst = max(worst, done.returncode)
    return worst


def single_device_argv(args) -> list[str]:
    """The command line of ``args`` without ``--devices``."""
    argv = [args.model, "--target", args.target, "--seed", str(args.seed),
            "--int-high", str(args.int_high), "--format", args.format]
    for flag, value in (("--batch", args.batch), ("--rtol", args.rtol), ("--atol", args.atol)):
        if value is not None:
            argv += [flag, str(value)]
    for dim in args.dim:
        argv += ["--dim", dim]
    for draw in args.input:
        argv += ["--input", draw]
    return argv + (["--fp16"] if args.fp16 else [])

"""``perfbot doctor``: what this machine has for perfbot, where the gpu target's libraries come
from, a self-check against ONNX Runtime, and what is missing with the command that fixes it."""
from __future__ import annotations

from bot.cli.options import add_format


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "doctor", help="check this machine: versions, GPU, libraries, switches, a self-check",
        description="Report Python and package versions; the GPU, driver and CUDA; which of cuDNN, "
        "the cuDNN frontend, cuBLAS and cuBLASLt the gpu target found and where (or the fallback it "
        "takes without them); the gpu switches that are set; compile a small model on every target "
        "this machine can run and verify it against ONNX Runtime; then list what is missing with the "
        "command that fixes it. Exit 1 when something missing affects a target this machine can run.")
    parser.add_argument("--no-self-check", action="store_true", help="skip the self-check")
    parser.add_argument("--expect-gpu", action="store_true",
                        help="a GPU runner: also exit 1 without a usable GPU or on a fallback path")
    add_format(parser)
    parser.set_defaults(func=doctor_command)


def doctor_command(args) -> int:
    from bot.doctor import examine
    from reports.doctor import render_doctor

    doc = examine(self_check=not args.no_self_check, expect_gpu=args.expect_gpu)
    print(render_doctor(doc, args.format))
    return 0 if doc["ok"] else 1

"""``perfbot doctor``: what this machine has for perfbot, what is missing, and a self-check.

``examine`` gathers the facts (``facts``), runs the self-check (``selfcheck``) and lists what is
missing with the command that fixes it (``advice``); ``reports.doctor`` renders them.
"""
from __future__ import annotations

from . import advice, facts, selfcheck


def examine(self_check: bool = True, expect_gpu: bool = False) -> dict:
    gpu = facts.gpu()
    doc = {"python": facts.python(), "packages": facts.packages(), "requirements": facts.requirements(),
           "gpu": gpu, "libraries": facts.library_findings(), "gpu_options": facts.gpu_options(),
           "self_check": selfcheck.run_all(gpu["usable"]) if self_check else []}
    doc["missing"] = advice.missing(doc, expect_gpu)
    doc["ok"] = not any(item["blocking"] for item in doc["missing"])
    return doc

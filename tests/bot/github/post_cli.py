"""`perfbot post` as the GitHub tests run it: one command line, retries without waiting."""
from __future__ import annotations

from bot.cli import main

# No pacing between writes and a tiny backoff: the fake servers answer at once.
FAST = ["--pace", "0", "--backoff", "0.01"]


def run_post(api_url: str, pr: int, body_file, kind: str = "performance", *extra: str) -> int:
    return main(["post", "--repo", "octo/widgets", "--pr", str(pr), "--kind", kind,
                 "--body", str(body_file), "--api-url", api_url, *FAST, *extra])


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path

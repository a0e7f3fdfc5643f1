"""`perfbot post` as the GitHub tests run it: one command line, retries without waiting, or\nseveral posters racing."""
from __future__ import annotations

import threading
from pathlib import Path

from bot.cli import main

# No pacing between writes and a tiny backoff: the fake servers answer at once.
FAST = ["--pace", "0", "--backoff", "0.01"]

# The pull request the tests post to: a token, its user, the number, head and base commits.
TOKEN = "ghp_posttesttoken0123456789abcdefABCDEF"
LOGIN = "perfbot-user"
PR = 7
HEAD = "a1" * 20
BASE = "b2" * 20


def run_post(api_url: str, pr: int, body_file, kind: str = "performance", *extra: str) -> int:
    return main(["post", "--repo", "octo/widgets", "--pr", str(pr), "--kind", kind,
                 "--body", str(body_file), "--api-url", api_url, *FAST, *extra])


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def post_at_once(api_url: str, pr: int, kind: str, token: str, bodies: list[Path]) -> list[Exception]:
    """Post every body from a thread of its own, all started together (racing posters); returns
    what they raised."""
    from bot.github import PostRequest, RetryPolicy, post_report

    errors: list[Exception] = []

    def one(path: Path) -> None:
        try:
            post_report(PostRequest("octo/widgets", pr, kind, path, token, api_url,
                                    policy=RetryPolicy(backoff=0.001, pace=0)))
        except Exception as exc:  # noqa: BLE001 - the caller asserts there were none
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(path,)) for path in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return errors

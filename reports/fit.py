"""Keeping a comment under GitHub's size limit by leaving whole rows out and saying how many."""
from __future__ import annotations

from typing import Callable, Sequence, TypeVar

GITHUB_COMMENT_LIMIT = 65_536  # characters GitHub accepts in one comment body
# Room left for what `perfbot post` adds to a rendered body: the marker line (when a hand-made
# body lacks it) and the stale-head warning. Renderers and the poster share COMMENT_LIMIT, so a
# report that `perfbot report` wrote is never refused by `perfbot post`.
POST_MARGIN = 400
COMMENT_LIMIT = GITHUB_COMMENT_LIMIT - POST_MARGIN

T = TypeVar("T")


def drop_order(items: Sequence[T], keep_first: Callable[[T], bool]) -> list[int]:
    """Indexes in the order they are given up: unremarkable rows from the end first, then the
    rows that matter (regressions, failures), also from the end."""
    plain = [i for i in reversed(range(len(items))) if not keep_first(items[i])]
    important = [i for i in reversed(range(len(items))) if keep_first(items[i])]
    return plain + important


def fit(render: Callable[[list[int], int], str], count: int, order: list[int],
        limit: int = COMMENT_LIMIT) -> str:
    """Render with as many rows as fit in ``limit``.

    ``render(kept_indexes, omitted_count)`` renders those rows (in their own order) plus a note
    about the omitted ones; the fewest omissions whose result fits win (binary search, since the
    length only grows with the rows kept).
    """
    def attempt(dropped: int) -> str:
        gone = set(order[:dropped])
        return render([i for i in range(count) if i not in gone], dropped)

    text = attempt(0)
    if len(text) <= limit:
        return text
    low, high = 1, count  # attempt(high) must fit: rows are the only unbounded part
    while low < high:
        mid = (low + high) // 2
        if len(attempt(mid)) <= limit:
            high = mid
        else:
            low = mid + 1
    text = attempt(low)
    if len(text) > limit:  # even without rows: cut, rather than lose the whole comment
        return cut_to_fit(text, "the HTML report has all of it", limit)
    return text


def cut_to_fit(text: str, pointer: str, limit: int = COMMENT_LIMIT) -> str:
    """``text`` cut after its last whole line that fits in ``limit`` together with a note that
    says how much was left out and where the whole report is (``pointer``); ``<details>`` blocks
    left open are closed so that the note renders outside them."""
    def note(dropped: int, open_blocks: int) -> str:
        return ("</details>\n" * open_blocks + f"\n> ✂️ This report was cut to fit one comment "
                f"({dropped} characters left out); {pointer}\n")

    size, open_blocks = 0, 0
    for line in text.splitlines(keepends=True):
        opened = max(open_blocks + line.count("<details>") - line.count("</details>"), 0)
        if size + len(line) + len(note(len(text), opened)) > limit:
            break
        size, open_blocks = size + len(line), opened
    return text[:size] + note(len(text) - size, open_blocks)

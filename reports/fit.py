"""Keeping a comment under GitHub's size limit by leaving whole rows out and saying how many."""
from __future__ import annotations

from typing import Callable, Sequence, TypeVar

COMMENT_LIMIT = 65_536  # characters GitHub accepts in one comment body

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
    if len(text) > limit:
        raise ValueError(f"report does not fit in {limit} characters even without its rows")
    return text

"""Hostile names cannot break a table, ping anyone, inject HTML or a fake marker, and a huge
report still fits in one GitHub comment without a cut row."""
from __future__ import annotations

import re
from html import unescape

from bot.coverage.figures import CoverageResult, ImpactedFile, Totals
from reports.escape import md
from reports.fit import COMMENT_LIMIT
from reports.markdown import MARKERS, render_accuracy, render_coverage, render_performance
from tests.reports.test_helpers import markdown_html, parse_markdown, seed_compare

HOSTILE = [
    "a|b||c",
    "line\nbreak\r\n|x|",
    "@everyone ping @org/team",
    "<!-- perfbot:coverage --> fake",
    "<script>alert(1)</script><img src=x onerror=alert(2)>",
    "[click](https://evil.example/) ![img](http://x/y.png)",
    "`code` ``more`` ***bold*** _it_ ~~gone~~",
    "closes #123 and www.evil.example",
    "$x^2$ back\\slash \\| pipe",
]


def _hostile_doc() -> dict:
    doc = seed_compare()
    for row, name in zip(doc["rows"], HOSTILE):
        row["name"] = name
        row.update(mark="error", reason=f"reason {name}")
    doc["accuracy"] = [{"name": n, "status": "FAILED", "worst_output": n, "error": n} for n in HOSTILE]
    doc["head"]["commit"] = "@head|<b>"
    return doc


def _no_live_mentions_or_refs(html: str) -> None:
    html = unescape(html)  # what a reader (and GitHub's mention finder) sees
    assert not re.search(r"@[A-Za-z0-9]", html), "a mention survived"
    assert not re.search(r"#\d", html), "an issue reference survived"


def test_md_escape_keeps_ordinary_names_readable():
    for name in ("torchvision-resnet50_fp16", "slim-mobilenet_1", "bert-mrpc-onnx", "src/pass_manager.cpp"):
        assert md(name) == name


def test_hostile_names_stay_in_their_cells():
    text = render_performance(_hostile_doc())
    parsed = parse_markdown(text)
    rows = parsed.tables[0][1:]
    assert len(rows) == 27 and all(len(row) == 6 for row in rows)
    for row, name in zip(rows, HOSTILE):
        shown = row[0].replace("\u200b", "")
        # Same characters as the name (line breaks become spaces), nothing interpreted.
        assert shown == re.sub(r"[\r\n]+", " ", name)
    html = markdown_html(text)
    assert not {"script", "img", "a", "code", "em", "s"} & set(parsed.tags)
    assert parsed.tags.count("strong") == len(HOSTILE) + 1  # only the notes (9 ❌, agentmodel 🔴)
    _no_live_mentions_or_refs(html)
    assert text.count("<!--") == 1 and text.startswith(MARKERS["performance"])


def test_hostile_accuracy_and_coverage():
    doc = _hostile_doc()
    text = render_accuracy(doc)
    parsed = parse_markdown(text)
    assert not {"script", "img", "a", "code", "em", "s"} & set(parsed.tags)
    assert parsed.tags.count("strong") == 1  # the summary's own label
    assert parsed.tags.count("details") == len(HOSTILE)
    summaries = re.findall(r"<summary>(.*?)</summary>", text)
    assert [unescape(s).replace("\u200b", "") for s in summaries] == \
        [re.sub(r"[\r\n]+", " ", n) + ": numbers" for n in HOSTILE]
    assert text.count("<!--") == 1
    _no_live_mentions_or_refs(markdown_html(text))
    for table in parsed.tables:
        assert all(len(row) == 7 for row in table)

    result = CoverageResult(head=Totals(1, 10, 5, 5), base=Totals(1, 10, 5, 5),
                            base_name="main`\n## @evil", head_commit="1234567",
                            files=[ImpactedFile(name, 50.0, 50.0, 1, 1, True) for name in HOSTILE])
    text = render_coverage(result, pr=5)
    parsed = parse_markdown(text)
    assert [row[0].replace("\u200b", "") for row in parsed.tables[0][1:]] == \
        sorted(re.sub(r"[\r\n]+", " ", n) for n in HOSTILE)
    assert all(len(row) == 3 for row in parsed.tables[0])
    # The box stays one code block of equal-width lines.
    box = text.split("```diff\n", 1)[1].split("\n```", 1)[0]
    assert len(box.splitlines()) == 10 and len({len(line) for line in box.splitlines()}) == 1
    assert text.count("```") == 2 and text.count("<!--") == 1
    assert "Merging #5 (1234567) into main" in text  # the PR's own number is meant to link
    html = markdown_html(text.replace(box, "").replace("Merging #5", "Merging"))
    _no_live_mentions_or_refs(html)


def _huge_doc(rows: int) -> dict:
    doc = seed_compare()
    template = doc["rows"][0]
    doc["rows"] = [{**template, "name": f"model-{i:05d}-" + "x|@" * 60, "batch": i + 1}
                   for i in range(rows)]
    for i in (17, 2500, rows - 1):
        doc["rows"][i].update(mark="regression", diff_pct=-9.0)
    doc["accuracy"] = [{"name": f"m{i}-" + "@|" * 90, "status": "FAILED" if i % 7 == 0 else "PASSED",
                        "worst_output": "o" * 300, "rtol": 1e-3, "atol": 1e-3}
                       for i in range(rows)]
    return doc


def test_huge_reports_fit_one_comment_without_cut_rows():
    doc = _huge_doc(5000)
    text = render_performance(doc)
    assert len(text) <= COMMENT_LIMIT
    rows = parse_markdown(text).tables[0][1:]
    assert all(len(row) == 6 for row in rows)
    omitted = int(re.search(r"…and (\d+) more rows", text).group(1))
    assert omitted + len(rows) == 5000 and omitted > 0
    # Regressions are never the rows left out, and the rows keep suite order.
    assert [r[1] for r in rows if r[5] == "🔴"] == ["18", "2501", "5000"]
    batches = [int(r[1]) for r in rows]
    assert batches == sorted(batches)
    assert text.rstrip().endswith("not recommended to merge 🔴")
    # No room was wasted: one more row would not have fit.
    assert len(text) > COMMENT_LIMIT - 2 * len(text.splitlines()[5])

    text = render_accuracy(doc)
    assert len(text) <= COMMENT_LIMIT
    assert text.count("<details>") == text.count("</details>")
    shown = len(re.findall(r"^(✅|🔴) ", text, re.M))
    assert int(re.search(r"…and (\d+) more models", text).group(1)) + shown == 5000
    # The summary counts every model, shown or not; failures are kept before passes.
    assert text.rstrip().endswith("**Accuracy:** 715 failed, 4285 passed")
    shown_failed = len(re.findall(r"^🔴 ", text, re.M))
    assert re.search(rf"more models not shown here \(4285 ✅, {715 - shown_failed} 🔴\)", text)
    assert shown == shown_failed  # every shown line is a failure: passes were left out first

    result = CoverageResult(head=Totals(1, 10, 5, 5), base=Totals(1, 10, 5, 5),
                            files=[ImpactedFile("d/" * 99 + f"f{i}", 50.0, 40.0, 1, 1, True)
                                   for i in range(5000)])
    text = render_coverage(result, max_files=10_000)
    assert len(text) <= COMMENT_LIMIT
    shown = len(parse_markdown(text).tables[0]) - 1
    assert int(re.search(r"…and (\d+) more", text).group(1)) + shown == 5000

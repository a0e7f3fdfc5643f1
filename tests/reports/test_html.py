"""The HTML report opened in headless Chromium: its tables, plots and summary render, it fetches
nothing, and hostile names stay text."""
from __future__ import annotations

import os
import shutil

import pytest

from bot.coverage.figures import CoverageResult, ImpactedFile, Totals
from reports.html import render_html, write_html
from tests.reports.test_helpers import seed_compare

WIDTH = 1280   # a laptop's screen; the report must fit it
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
HOSTILE = "<script>window.pwned=1</script><img src=x onerror=window.pwned=2>"


def _history(doc: dict) -> dict:
    """Twelve recorded base-branch runs per row, a deterministic wobble around the old rate."""
    return {(r["name"], r["batch"], r["mode"]): [
        {"commit": f"{i:07x}", "started": f"2026-11-{i + 1:02d}T00:00:00Z",
         "rate": r["rate_old"] * (1 + 0.004 * ((i * 7) % 5 - 2))} for i in range(12)]
        for r in doc["rows"]}


def _coverage() -> CoverageResult:
    return CoverageResult(
        head=Totals(419, 15544, 14204, 1340), base=Totals(419, 15542, 14204, 1338),
        patch_lines=3, patch_hits=3, base_name="develop", base_commit="edc4bf5", head_commit="436ea17",
        files=[ImpactedFile("src/pass_manager.cpp", 90.41, 93.06, 1, 1, True),
               ImpactedFile("src/promote_literals.cpp", 100.0, 100.0, 1, 1, True),
               ImpactedFile(HOSTILE, 50.0, 40.0, 1, 0, True)])


def _doc() -> dict:
    doc = seed_compare()
    doc["rows"][3].update(compile_s_new=12.5, compile_s_old=12.1, peak_mem_new=3 * 2**30,
                          ci_low_pct=-0.2, ci_high_pct=0.4, p_value=0.41)
    doc["rows"][5].update(mark="improvement", remeasured=True)
    doc["rows"].append({"name": HOSTILE, "batch": 1, "mode": "fp32", "rate_new": None,
                        "rate_old": 10.0, "diff_pct": None, "mark": "error", "reason": HOSTILE})
    doc["accuracy"].append({"name": HOSTILE, "status": "ERROR", "error": HOSTILE})
    return doc


def test_html_is_self_contained_and_escaped():
    page = render_html(_doc(), _coverage(), history=_history(_doc()), pr=1875, pr_head="5924fd9")
    assert "<script" not in page and "&lt;script&gt;window.pwned" in page
    assert "http://" not in page.replace("http://www.w3.org/", "").replace('http://purl.org/', "").replace(
        "http://creativecommons.org/", "")
    assert page.count("<svg") == 28 + 1  # 28 trend plots (27 rows + the hostile one) + summary
    assert "Compile s new" in page and "3,072.0 MiB" in page and "95% CI" in page
    assert "(Codecov&#39;s rule)" in page and "(diff-cover&#39;s rule)" in page   # the coverage legend


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary")
def test_html_renders_tables_and_plots_in_chromium(tmp_path):
    import numpy as np
    from PIL import Image
    from playwright.sync_api import sync_playwright

    doc = _doc()
    path = write_html(str(tmp_path / "report.html"), compare_doc=doc, coverage_result=_coverage(),
                      history=_history(doc), pr=1875, pr_head="5924fd9")
    shot = tmp_path / "report.png"
    requests: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": 900})
            page.on("request", lambda request: requests.append(request.url))
            page.goto(f"file://{path}")
            count = lambda selector: page.locator(selector).count()  # noqa: E731
            assert count("table.performance tbody tr") == 28
            assert count("table.accuracy tbody tr") == 15
            assert count("table.impacted tbody tr") == 3
            assert count("table.performance tbody tr.regression") == 1
            # The rate-diff table shows the reference numbers.
            first = page.locator("table.performance tbody tr").first.locator("td").all_inner_texts()
            assert first[:6] == ["torchvision-resnet50", "64", "fp32", "895.42", "895.19", "+0.03%"]
            agent = page.locator("tr.regression td").all_inner_texts()
            assert agent[0] == "agentmodel" and agent[5] == "-4.71%"
            # Every plot was laid out at a real size and has drawn marks in it.
            boxes = page.evaluate("""() => [...document.querySelectorAll('svg')].map(s => {
                const r = s.getBoundingClientRect();
                return [r.width, r.height, s.querySelectorAll('path, use').length]; })""")
            assert len(boxes) == 29
            assert all(w > 150 and h > 40 and marks > 5 for w, h, marks in boxes)
            summary = page.locator("figure.summary svg").bounding_box()
            assert summary["width"] > 500 and summary["height"] > 300
            # Hostile text stayed text: no script ran, no image was requested.
            assert page.evaluate("() => window.pwned") is None
            cell = page.locator("table.performance tbody tr").last.locator("td").first
            assert cell.locator(".name").inner_text() == HOSTILE and cell.locator(".reason").inner_text() == HOSTILE
            assert page.locator("tr.improvement .note").inner_text() == "re-measured"
            # Every column, the trend plots included, is on a 1280 px screen: nothing scrolls sideways.
            assert page.evaluate("() => document.documentElement.scrollWidth") <= WIDTH
            for table in ("performance", "accuracy", "impacted"):
                box = page.locator(f"table.{table}").bounding_box()
                assert box["x"] + box["width"] <= WIDTH, table
            assert page.locator("pre.box").inner_text().startswith("@@")
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert requests == [f"file://{path}"]  # one self-contained file: nothing else fetched

    pixels = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    height, width, _ = pixels.shape
    assert width == WIDTH and height > 2000   # a full-page shot widens with anything cut off
    r, g, b = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    inked = ((r + g + b) < 600).mean()  # a blank page is 0
    red = ((r > 150) & (g < 90) & (b < 90)).sum()
    blue = ((b > 150) & (r < 80)).sum()
    assert inked > 0.01 and red > 500 and blue > 500  # text, the red regression marks, blue trend lines
    keep = os.environ.get("PERFBOT_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)

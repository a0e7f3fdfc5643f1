"""The terminal report: the reference numbers in a rich table, colour only when asked for, and
rich markup in names printed as text."""
from __future__ import annotations

import re

from reports.terminal import render_text
from tests.reports.test_helpers import seed_compare
from tests.reports.test_markdown import reference_coverage

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_reference_rows_and_colours():
    doc = seed_compare()
    coloured = render_text(doc, reference_coverage(), pr=1875, color=True)
    plain = render_text(doc, reference_coverage(), pr=1875, color=False)
    assert ANSI.search(coloured) and not ANSI.search(plain)
    assert ANSI.sub("", coloured) == plain
    for name, new, old, diff in (("torchvision-resnet50", "895.42", "895.19", "+0.03%"),
                                 ("agentmodel", "5,581.60", "5,857.27", "-4.71%")):
        assert re.search(rf"{name} +│ +\d+ │ +{re.escape(new)} │ +{re.escape(old)} │ +{re.escape(diff)} │", plain)
    # The regression's Diff is bold red (1;31), the others green (32).
    assert re.search(r"\x1b\[1;31m-4\.71%", coloured) and re.search(r"\x1b\[32m\+0\.03%", coloured)
    assert "This build is not recommended to merge" in plain
    assert "cadene-dpn92_1" in plain and "FAILED" in plain
    assert "- Coverage    91.39%   91.37%   -0.02%" in plain
    assert re.search(r"src/pass_manager\.cpp +│ 90\.41% +│ 100\.00% +│ -2\.65%", plain)
    assert "(Codecov's rule)" in " ".join(plain.split()) and "(diff-cover's rule)" in " ".join(plain.split())


def test_markup_in_names_is_text():
    doc = seed_compare()
    doc["rows"][0]["name"] = "[bold red]evil[/] [link=http://x]y[/link]"
    doc["rows"][0]["reason"] = "[blink]boom"
    text = render_text(doc, color=False, width=200)
    assert "[bold red]evil[/] [link=http://x]y[/link]" in text
    assert "[blink]boom" in text

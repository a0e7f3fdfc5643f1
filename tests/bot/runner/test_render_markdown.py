"""``perfbot run --format markdown``: data in the table (names, error messages) stays inert."""
from reports.run_table import render_markdown


def _doc(rows):
    run = {"id": "r1", "commit": "abc1234", "target": "cpu", "started": "2026-11-29T10:00:00Z"}
    return {"schema": "perfbot.results/1", "run": run, "rows": rows}


def test_hostile_names_and_errors_cannot_mention_or_break_the_table():
    long_reason = "worker crashed: " + "x" * 500 + " END"
    rows = [{"name": "@octocat|<b>x</b>", "batch": 1, "mode": "fp32", "status": "error",
             "error": "see #12 [link](http://evil) `code`\nsecond line " + long_reason},
            {"name": "plain", "batch": 2, "mode": "fp32", "status": "ok", "rate": 1234.5,
             "compile_s": 0.5, "peak_mem_bytes": 2**20, "accuracy": {"status": "PASSED"}}]
    out = render_markdown(_doc(rows))
    table = [line for line in out.splitlines() if line.startswith("|")]
    # header, rule, two rows; every row has exactly the table's 8 cells (unescaped pipes only)
    assert len(table) == 4
    assert all(line.replace("\\|", "").count("|") == 9 for line in table)
    assert "@octocat" not in out and "<b>" not in out and "#12" not in out
    assert "](http://evil)" not in out and "`code`" not in out
    assert out.count("END") == 1  # a long error message is kept whole, not clipped
    assert "| plain | 2 | fp32 | 1,234.50 |" in out

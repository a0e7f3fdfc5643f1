"""The HTML report's trend plots mark where the base branch's rate stepped."""
from bot.drift.history import with_steps
from reports.plots import trend_svg


def _history(rates):
    return [{"commit": f"{i:07x}", "started": f"2026-11-{i + 1:02d}T00:00:00Z", "rate": r}
            for i, r in enumerate(rates)]


def test_a_step_in_the_history_is_marked_with_its_size():
    wobble = [1.0, 1.004, 0.996, 1.002, 0.998, 1.0]
    rates = [1000 * w for w in wobble * 2] + [900 * w for w in wobble * 2]
    svg = trend_svg(with_steps(_history(rates)), rates[-1], 890.0)
    assert ">-10%</text>" in svg


def test_a_flat_history_has_no_mark():
    rates = [1000 * (1 + 0.004 * ((i * 7) % 5 - 2)) for i in range(24)]
    assert "%</text>" not in trend_svg(with_steps(_history(rates)), rates[-1], 1001.0)

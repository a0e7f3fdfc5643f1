"""The time limit of a multi-row measurement: a row starts while the time so far plus the mean row
time so far stays within the limit (a clock given by the test)."""
from bot.runner.time_budget import TimeBudget


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_row_starts_only_if_it_should_finish_within_the_limit():
    clock = Clock()
    budget = TimeBudget(100, clock)
    assert budget.allows_another_row()          # nothing measured yet, nothing spent
    clock.now += 30
    budget.row_took(30)
    assert budget.allows_another_row()          # 30 spent + 30 expected <= 100
    clock.now += 40
    budget.row_took(40)                         # 70 spent, 35 a row expected
    assert not budget.allows_another_row()
    assert "100 s, --time-limit" in budget.reason()


def test_a_limit_already_passed_starts_nothing():
    clock = Clock()
    budget = TimeBudget(5, clock)
    clock.now += 6
    assert not budget.allows_another_row()

"""Spreading rows over several GPUs: longest first, one row's round per GPU at a time, ``ab``'s
pairs on one GPU, the rounds' GPUs drawn seeded and balanced, and the run in suite order.
Fake devices and fake measurements: the scheduling itself, without worker processes."""
import threading
from types import SimpleNamespace

import pytest

from bot.runner.devices import Device
from bot.runner.placement import SINGLE, DevicePool, SpreadPlacement
from bot.runner.schedule import longest_first, measure_rows, suite_positions
from bot.store import open_store
from tests.conftest import make_doc, make_row


def rows(*names):
    return [SimpleNamespace(name=n, batch=1, mode="fp32") for n in names]


def pool(count, seed=0):
    return DevicePool([Device(i, str(i), f"G{i}", cpu=None) for i in range(count)], seed)


def test_longest_first_from_the_stored_times_and_unknown_rows_first():
    suite = rows("a", "b", "c", "d", "e")
    costs = {("a", 1, "fp32"): 5.0, ("b", 1, "fp32"): 50.0, ("d", 1, "fp32"): 20.0,
             ("e", 1, "fp32"): 50.0}
    assert [r.name for r in longest_first(suite, costs)] == ["c", "b", "e", "d", "a"]
    assert [r.name for r in longest_first(suite, {})] == ["a", "b", "c", "d", "e"]


def test_without_devices_rows_run_one_after_another_in_suite_order():
    seen = []
    measure_rows(rows("a", "b", "c"), None, False,
                 lambda row, placement: seen.append((row.name, placement)) or row.name,
                 lambda row, result: seen.append(("recorded", result)),
                 costs={("c", 1, "fp32"): 100.0})
    assert seen == [("a", SINGLE), ("recorded", "a"), ("b", SINGLE), ("recorded", "b"),
                    ("c", SINGLE), ("recorded", "c")]


def _watched_measure(active: dict, lock, log: list, meet: threading.Barrier | None):
    """A measurement that holds its device as measure_row does, and notes who shares it."""
    def measure(row, placement):
        with placement.whole_row(), placement.hold(0) as device:
            with lock:
                active[device.index] = active.get(device.index, 0) + 1
                log.append((row.name, device.index, active[device.index]))
            if meet is not None:
                meet.wait()  # both devices busy at once, or this times out
            with lock:
                active[device.index] -= 1
        return device.index
    return measure


def test_rows_run_concurrently_one_per_device():
    active, lock, log, recorded = {}, threading.Lock(), [], []
    measure_rows(rows("a", "b", "c", "d"), pool(2), False,
                 _watched_measure(active, lock, log, threading.Barrier(2, timeout=60)),
                 lambda row, device: recorded.append((row.name, device)))
    assert sorted(name for name, _ in recorded) == ["a", "b", "c", "d"]
    assert all(sharing == 1 for _, _, sharing in log)  # never two rows on one device
    # every pair of rows met at the barrier: each ran beside a row on the other device
    assert sorted(device for _, device in recorded) == [0, 0, 1, 1]


def test_a_spread_rows_rounds_visit_every_device_once_per_cycle_seeded():
    plan = SpreadPlacement(pool(4, seed=7), "resnet-b1-fp32")
    devices = [plan.device_for(i).index for i in range(12)]
    for cycle in range(3):
        assert sorted(devices[4 * cycle:4 * cycle + 4]) == [0, 1, 2, 3]
    again = SpreadPlacement(pool(4, seed=7), "resnet-b1-fp32")
    assert [again.device_for(i).index for i in range(12)] == devices  # seeded: reproducible
    others = [[SpreadPlacement(pool(4, seed=s), "resnet-b1-fp32").device_for(i).index
               for i in range(12)] for s in range(8)]
    assert len({tuple(o) for o in others}) > 1  # the seed draws the order
    rows_differ = {tuple(SpreadPlacement(pool(4, seed=7), name).device_for(i).index for i in range(4))
                   for name in ("a", "b", "c", "d", "e", "f")}
    assert len(rows_differ) > 1  # and each row its own


def test_a_device_holds_one_round_at_a_time():
    devices = pool(1)
    order = []

    def second():
        with devices.take(0):
            order.append("second")

    with devices.take(0):
        waiting = threading.Thread(target=second)
        waiting.start()
        order.append("first")
    waiting.join(timeout=60)
    assert order == ["first", "second"]


def test_rows_finishing_out_of_order_are_stored_in_suite_order(tmp_path):
    suite = rows("a", "b", "c")
    places = suite_positions(suite)
    with open_store(f"sqlite:///{tmp_path / 'r.db'}") as store:
        run_id = store.create_run(make_doc([])["run"])
        for name in ("c", "a", "b"):  # as three GPUs finished them
            store.add_row(run_id, make_row(name), places[(name, 1, "fp32")])
        assert [r["name"] for r in store.get_run(run_id)["rows"]] == ["a", "b", "c"]


def test_stored_costs_are_the_rows_newest_times(tmp_path):
    with open_store(f"sqlite:///{tmp_path / 'r.db'}") as store:
        old = store.create_run(make_doc([], run_id="old", started="2026-11-01T10:00:00Z")["run"])
        new = store.create_run(make_doc([], run_id="new", started="2026-11-02T10:00:00Z")["run"])
        store.add_row(old, make_row("a", wall_s=99.0))
        store.add_row(new, make_row("a", wall_s=12.5))
        store.add_row(new, make_row("b"))  # no wall_s (an older perfbot): its compile time
        store.add_row(new, make_row("c", status="error"))
        assert store.row_costs("cpu") == {("a", 1, "fp32"): 12.5, ("b", 1, "fp32"): 1.5}
        assert store.row_costs("gpu") == {}


@pytest.mark.parametrize("spread", [True, False])
def test_placements_of_a_pool(spread):
    placement = pool(2).placement("row", spread)
    assert placement.spread is spread
    assert placement.again("row-verify").spread is spread




def test_an_interruption_ends_the_other_devices_rows_and_records_none_of_them():
    """Ctrl-C while rows measure on two GPUs: a row waiting for a GPU gives up instead of
    measuring on, nothing more is recorded, and the interruption reaches the caller."""
    devices, recorded, gave_up = pool(2), [], []
    with devices.take(0), devices.take(1):  # both GPUs busy: row b can only wait

        def measure(row, placement):
            if row.name == "a":
                raise KeyboardInterrupt  # as the main thread would see it
            try:
                with placement.whole_row():
                    return row.name
            except Exception as exc:  # measure_row makes a RowFailure an error row
                gave_up.append(str(exc))
                return row.name

        with pytest.raises(KeyboardInterrupt):
            measure_rows(rows("a", "b"), devices, False, measure,
                         lambda row, result: recorded.append(row.name))
    assert recorded == []
    assert all("interrupted" in reason for reason in gave_up)  # b gave up, or never started
    with pytest.raises(Exception, match="interrupted"):
        with devices.take(0):
            pass

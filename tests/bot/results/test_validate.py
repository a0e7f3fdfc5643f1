"""Results documents are untrusted input: bad and hostile ones are refused with one line."""
from __future__ import annotations

import copy
import json

import pytest

from bot import results_doc
from bot.results_doc import ResultsError, dump_results, load_results, parse_results, validate_results


@pytest.fixture
def doc(doc_factory, row_factory):
    return doc_factory([row_factory("resnet50", batch=64, seed=1), row_factory("bert", seed=2)])


def _mutated(doc, path, value):
    bad = copy.deepcopy(doc)
    target = bad
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return bad


@pytest.mark.parametrize("path, value, fragment", [
    (("schema",), "perfbot.results/3", "expected 'perfbot.results/2'"),
    (("schema",), KeyError, "has schema None"),
    (("run",), KeyError, "'run' is a required property"),
    (("extra",), {"x": 1}, "Additional properties"),
    (("run", "commit"), "abc1234; rm -rf /", "run.commit"),
    (("run", "commit"), "$(curl evil)", "run.commit"),
    (("run", "target"), "tpu", "run.target"),
    (("run", "started"), "last tuesday", "date-time"),
    (("run", "started"), "2026-11-01T10:00:00", "date-time"),  # no time zone
    (("run", "shard"), "1/2; drop table", "run.shard"),
    (("run", "id"), "x" * 201, "run.id"),
    (("rows", 0, "name"), "n" * 201, "rows[0].name"),
    (("rows", 0, "batch"), 0, "rows[0].batch"),
    (("rows", 0, "batch"), "64", "rows[0].batch"),
    (("rows", 0, "batch"), True, "rows[0].batch"),
    (("rows", 0, "mode"), "int8", "rows[0].mode"),
    (("rows", 0, "status"), "maybe", "rows[0].status"),
    (("rows", 0, "samples"), ["fast"], "rows[0].samples[0]"),
    (("rows", 0, "accuracy", "status"), "PERHAPS", "rows[0].accuracy.status"),
    (("rows", 1, "name"), "resnet50", None),  # differs by batch: fine
    (("rows",), "not a list", "rows"),
])
def test_bad_fields_are_refused(doc, path, value, fragment):
    bad = _mutated(doc, path, value)
    if fragment is None:
        assert validate_results(bad) is bad
        return
    with pytest.raises(ResultsError) as info:
        validate_results(bad)
    assert fragment in str(info.value) and "\n" not in str(info.value)
    assert len(str(info.value)) < 400


def test_duplicate_rows_are_refused(doc):
    doc["rows"].append(copy.deepcopy(doc["rows"][0]))
    with pytest.raises(ResultsError, match="duplicate row 'resnet50' batch 64 fp32"):
        validate_results(doc)


@pytest.mark.parametrize("text, fragment", [
    ("", "not valid JSON"),
    ("{'single': 'quotes'}", "not valid JSON"),
    ('{"schema": "perfbot.results/1", "run": {}, "rows": [NaN]}', "NaN is not valid JSON"),
    ('{"a": Infinity}', "Infinity is not valid JSON"),
    ("[" * 50000 + "]" * 50000, "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('"\\ud800"', "must be a JSON object"),
])
def test_unparseable_text_is_refused(text, fragment):
    with pytest.raises(ResultsError, match=fragment):
        parse_results(text)


def test_deep_nesting_inside_free_form_fields_is_refused(doc):
    bomb: dict = {}
    for _ in range(200):
        bomb = {"x": bomb}
    doc["run"]["machine"] = bomb
    with pytest.raises(ResultsError, match="nested deeper"):
        validate_results(doc)


def test_non_finite_numbers_built_in_python_are_refused(doc):
    doc["rows"][0]["rate"] = float("nan")
    with pytest.raises(ResultsError, match="non-finite"):
        validate_results(doc)
    with pytest.raises(ResultsError):
        dump_results(doc)


def test_oversized_file_is_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "big.json"
    path.write_text(" " * 2048)
    monkeypatch.setattr(results_doc, "MAX_DOCUMENT_BYTES", 1024)
    with pytest.raises(ResultsError, match="larger than"):
        load_results(path)


def test_missing_and_binary_files_are_one_line(tmp_path):
    with pytest.raises(ResultsError, match="cannot read results file"):
        load_results(tmp_path / "absent.json")
    junk = tmp_path / "junk.json"
    junk.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    with pytest.raises(ResultsError, match="not valid JSON") as info:
        load_results(junk)
    assert "\n" not in str(info.value)


def test_dump_then_load_round_trips(tmp_path, doc):
    path = tmp_path / "out" / "results.json"
    text = dump_results(doc, path)
    assert json.loads(text) == doc
    assert load_results(path) == doc
    assert not list(path.parent.glob(".*.tmp"))


def test_version_1_documents_load_upgraded_and_say_which_rate_they_hold(tmp_path):
    """A document written before the rate's method was recorded: the gpu rate then was the
    host-fed end-to-end rate, and the upgraded document says so."""
    import json

    from bot.results_doc import SCHEMA_ID, load_results

    old = {"schema": "perfbot.results/1",
           "run": {"id": "r", "commit": "a" * 40, "target": "gpu", "started": "2026-11-01T10:00:00Z"},
           "rows": [{"name": "m", "batch": 1, "mode": "fp32", "status": "ok", "rate": 5.0,
                     "samples": [5.0]}]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    doc = load_results(path)
    assert doc["schema"] == SCHEMA_ID
    assert doc["run"]["measurement"] == {"rate": "host-fed", "sample": "one run"}
    assert doc["rows"] == old["rows"]
    validate_results(doc)

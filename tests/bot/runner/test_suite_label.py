"""How a results document records a suite given as a list of row names too long for its field."""
import pytest

from bot.results_doc import ResultsError, validate_results
from bot.runner.suite import SUITE_TEXT_MAX, suite_label


def _names(count: int, stem: str = "torchvision-resnet50") -> str:
    return ",".join(f"{stem}_{i}" for i in range(count))


def test_a_suite_that_fits_is_recorded_as_given():
    assert suite_label("default") == "default"
    assert suite_label(_names(5)) == _names(5)


def test_a_long_list_is_recorded_by_count_digest_and_leading_names():
    label = suite_label(_names(20))
    assert len(label) == SUITE_TEXT_MAX
    assert label.startswith("20 rows ") and "torchvision-resnet50_0,torchvision-resnet50_1," in label
    assert label.endswith("…")


def test_two_long_lists_with_the_same_start_get_different_labels():
    longer = _names(20) + ",one-more-row"
    assert suite_label(_names(20) + ",another-row") != suite_label(longer)
    assert suite_label(_names(20))[:10] != suite_label(_names(21))[:10]


def test_a_document_with_the_label_is_valid_and_one_with_the_list_is_not(doc_factory, row_factory):
    doc = doc_factory([row_factory("resnet50", seed=1)])
    doc["run"]["suite"] = suite_label(_names(30))
    validate_results(doc)
    doc["run"]["suite"] = _names(30)
    with pytest.raises(ResultsError, match="run.suite"):
        validate_results(doc)

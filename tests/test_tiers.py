"""The test tiers of tests/conftest.py: every file has one, a test in none or in two
stops the collection."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import conftest
import pytest

HERE = Path(__file__).resolve().parent


class FakeItem:
    """What tier_of reads of a collected test."""

    def __init__(self, file: str, name: str, markers=()):
        self.fspath = HERE / file
        self.originalname = name
        self.nodeid = f"tests/{file}::{name}"
        self._markers = [SimpleNamespace(name=m) for m in markers]

    def iter_markers(self):
        return iter(self._markers)


def test_every_test_file_and_every_named_test_is_in_a_tier():
    conftest._check_tier_tables()  # (raises naming what is missing)
    assert set(conftest.FILE_TIERS) == {p.name for p in HERE.glob("test_*.py")}
    assert set(conftest.FILE_TIERS.values()) | set(conftest.TEST_TIERS.values()) == set(
        conftest.TIERS)


def test_a_tests_tier_is_its_own_marker_then_test_tiers_then_its_files():
    assert conftest.tier_of(FakeItem("test_config.py", "test_x")) == "data"
    assert conftest.tier_of(FakeItem(
        "test_config.py", "test_resolved_config_travels_with_the_result")) == "engine"
    assert conftest.tier_of(FakeItem("test_config.py", "test_x", ["slow"])) == "slow"


def test_a_test_in_no_tier_or_in_two_stops_the_collection():
    with pytest.raises(pytest.UsageError, match=r"^tests/test_new\.py::test_x: in no test "
                                                r"tier; add 'test_new\.py' to FILE_TIERS"):
        conftest.tier_of(FakeItem("test_new.py", "test_x"))
    with pytest.raises(pytest.UsageError, match=r"in tiers data, slow; a test is in one tier"):
        conftest.tier_of(FakeItem("test_config.py", "test_x", ["slow", "data"]))

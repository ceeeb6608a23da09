"""tests/parallel.py: which tests a pytest-xdist worker runs together, and in what order."""

from __future__ import annotations

import pytest

from tests.parallel import ENV, LIVE, SPARK, grouped_by_file, pytest_xdist_auto_num_workers, rank, scope_of


def test_the_live_run_and_spark_are_one_scope_each() -> None:
    assert scope_of("tests/compat/test_live.py::test_live_file[test_queues.py]") == LIVE
    assert scope_of("tests/compat/test_live.py::test_live_file[test_topic.py]") == LIVE
    assert scope_of("tests/spark/test_sink.py::test_a") == SPARK
    assert scope_of("tests/spark/test_source.py::TestX::test_b[1]") == SPARK


def test_a_file_with_module_scoped_fixtures_is_one_scope() -> None:
    # its own module-scoped fixture
    assert scope_of("tests/integration/test_tls.py::test_x[a]") == "tests/integration/test_tls.py"
    # module-scoped fixtures of tests/dashboard/conftest.py that the file uses
    assert grouped_by_file("tests/dashboard/test_counts.py")


def test_other_tests_are_scopes_of_their_own() -> None:
    nodeid = "tests/unit/test_errors.py::test_redact[redis://host:6379/0]"
    assert scope_of(nodeid) == nodeid
    assert not grouped_by_file("tests/unit/test_errors.py")


def test_long_scopes_come_first() -> None:
    scopes = {
        "tests/unit/test_errors.py::test_a": 1,
        "tests/integration/test_tls.py": 15,
        SPARK: 57,
        "tests/integration/test_input_errors.py": 256,
        LIVE: 18,
    }
    ordered = sorted(scopes, key=lambda s: rank(s, scopes[s]))
    assert ordered == [
        LIVE,
        SPARK,
        "tests/integration/test_input_errors.py",
        "tests/integration/test_tls.py",
        "tests/unit/test_errors.py::test_a",
    ]


def test_auto_workers_are_cpus_plus_one_unless_the_environment_says(
    monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert pytest_xdist_auto_num_workers(pytestconfig) == 3
    monkeypatch.setenv(ENV, "5")
    assert pytest_xdist_auto_num_workers(pytestconfig) == 5
    monkeypatch.setenv(ENV, "many")
    with pytest.raises(pytest.UsageError, match=ENV):
        pytest_xdist_auto_num_workers(pytestconfig)

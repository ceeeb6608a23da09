"""Microsoft's azure-servicebus 7.15.0 samples, ported mechanically (imports and connection), each
run against a real redis-server. See tests/compat/sdist.py and port.py; not_applicable.txt lists
what cannot apply, known_gaps.txt what applies but does not pass yet (strict xfails)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compat.samples import add_acl_user, run_sample
from tests.compat.sdist import azure_servicebus_source
from tests.redis_server import RedisServer

pytestmark = pytest.mark.compat
HERE = Path(__file__).parent


def listed(name: str) -> dict[str, str]:
    entries = {}
    for line in (HERE / name).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            path, _, reason = line.partition(": ")
            entries[path.strip()] = reason.strip()
    return entries


NOT_APPLICABLE, KNOWN_GAPS = listed("not_applicable.txt"), listed("known_gaps.txt")
SOURCE = azure_servicebus_source()
SAMPLES = sorted(p.relative_to(SOURCE).as_posix() for p in (SOURCE / "samples").glob("*_samples/*.py"))


def test_the_lists_name_real_files() -> None:
    assert set(KNOWN_GAPS) <= {p.relative_to(SOURCE).as_posix() for p in SOURCE.rglob("*.py")}
    # not_applicable.txt also names live tests: <file under the sdist's tests/>::<test>
    named = {entry.split("::", 1)[0] for entry in NOT_APPLICABLE}
    assert all((SOURCE / path).is_file() or (SOURCE / "tests" / path).is_file() for path in named), named
    assert not set(NOT_APPLICABLE) & set(KNOWN_GAPS)


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    srv = RedisServer().start()
    add_acl_user(srv.url)
    yield srv
    srv.stop()


def _params() -> list[object]:
    params: list[object] = []
    for sample in SAMPLES:
        if sample in NOT_APPLICABLE:
            continue
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[sample])] if sample in KNOWN_GAPS else []
        params.append(pytest.param(sample, marks=marks, id=sample.removeprefix("samples/")))
    return params


@pytest.mark.parametrize("sample", _params())
def test_sample_runs(sample: str, server: RedisServer, tmp_path: Path) -> None:
    outcome = run_sample(SOURCE / sample, server.url, tmp_path)
    assert outcome.returncode == 0, outcome.output

"""The dashboard as a user installs it: the wheel is built (hatchling, the project's build backend),
every file of sbredis/dashboard/static and the script the overview runs are in it, and the
dashboard served from the unpacked wheel (not from this checkout) works in Chromium with every
request to another host refused: nothing it needs comes from the internet."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.conftest import ROOT

pytestmark = pytest.mark.integration
STATIC = ROOT / "sbredis" / "dashboard" / "static"

pytest.importorskip("hatchling")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = "import sys; from hatchling.build import build_wheel; print(build_wheel(sys.argv[1]))"
    proc = subprocess.run(
        [sys.executable, "-c", build, str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return out / proc.stdout.strip().splitlines()[-1]


def test_every_dashboard_asset_is_in_the_wheel(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    assets = {p.relative_to(ROOT).as_posix() for p in STATIC.rglob("*") if p.is_file()}
    assert {"sbredis/dashboard/static/app.js", "sbredis/dashboard/static/style.css"} <= assets
    assert assets <= names, sorted(assets - names)
    code = {p.relative_to(ROOT).as_posix() for p in (ROOT / "sbredis" / "dashboard").glob("*.py")}
    assert code | {"sbredis/lua/dashboard_counts.lua"} <= names
    # the extra that serves it is declared in the wheel's metadata
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    with zipfile.ZipFile(wheel) as z:
        metadata = z.read(meta).decode()
    assert "Provides-Extra: dashboard" in metadata and re.search(r"starlette.*extra == .dashboard.", metadata)


@pytest.fixture()
def served_from_wheel(wheel: Path, tmp_path: Path, redis_url: str, namespace: Any) -> Iterator[str]:
    """`python -m sbredis dashboard` run from the unpacked wheel (its directory first on sys.path,
    before this checkout's editable install): the dashboard's address."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    env = dict(os.environ, SBREDIS_URL=redis_url)
    env.pop("PYTHONPATH", None)
    where = subprocess.run(
        [sys.executable, "-c", "import sbredis.dashboard.app as a; print(a.STATIC)"],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert where.stdout.strip() == str(site / "sbredis" / "dashboard" / "static"), where
    proc = subprocess.Popen(
        [sys.executable, "-m", "sbredis", "dashboard", "--port", "0"],
        cwd=site,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.match(r"serving (http://127\.0\.0\.1:\d+)/ \(Ctrl-C stops\)", line)
        assert m, (line, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        yield m.group(1)
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 0


def test_served_from_the_wheel_works_offline(served_from_wheel: str, page: Any) -> None:
    base = served_from_wheel
    elsewhere: list[str] = []

    def route(r: Any) -> None:  # the network stops at the dashboard
        if r.request.url.startswith(base + "/"):
            r.continue_()
        else:
            elsewhere.append(r.request.url)
            r.abort("internetdisconnected")

    page.route("**/*", route)
    statuses: dict[str, int] = {}
    page.on("response", lambda r: statuses.__setitem__(r.url.removeprefix(base), r.status))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    deadline = time.monotonic() + 20
    while True:  # the server may still be starting
        try:
            page.goto(base + "/")
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    assert page.title() == "Overview · sbredis"
    # app.js ran: it polled the JSON endpoint and marked the page updated
    page.wait_for_function("() => document.body.hasAttribute('data-updated')")
    assert page.locator('#entities tr[data-entity="orders"] [data-count="active"]').inner_text().isdigit()
    # style.css applied: its table class lays the grid out (the browser's default would not collapse borders)
    assert page.locator("#entities").evaluate("t => getComputedStyle(t).borderCollapse") == "collapse"
    page.goto(base + "/entity/orders")  # an entity page and its form controls, from the wheel too
    assert page.locator("h1").inner_text() == "queue orders"
    assets = {"/static/" + p.relative_to(STATIC).as_posix() for p in STATIC.rglob("*") if p.is_file()}
    for asset in sorted(assets):  # every asset answers from the wheel's copy
        assert page.request.get(base + asset).status == 200, asset
    assert elsewhere == [] and errors == []
    assert {k for k, v in statuses.items() if v != 200 and not k.startswith("/?")} <= {"/favicon.ico"}, statuses

"""The documentation site builds with ``mkdocs build --strict`` (a broken link, a nav entry without
its file or any other warning fails), and every page of docs/ is in the navigation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.docs.samples import DOCS, ROOT


def _nav_files(nav: Any) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [f for item in nav for f in _nav_files(item)]
    if isinstance(nav, dict):
        return [f for value in nav.values() for f in _nav_files(value)]
    return []


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    site = str(tmp_path / "site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"), "-d", site],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert "WARNING" not in log, log
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "quickstart" / "index.html").is_file()


def test_every_page_is_in_the_nav() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    listed = _nav_files(config["nav"])
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    missing = [p for p in pages if p not in listed]
    assert not missing, f"add these pages to the nav in mkdocs.yml: {missing}"
    assert len(listed) == len(set(listed)), "a page is listed twice in the nav"

"""Other projects' own test code, fetched from their source distributions at test time.

Some tests run a peer's test suite against sbredis (kombu's transport integration tests against
``sbredis://``). That code is not copied into this repository: the pinned sdist is downloaded with
pip into a cache folder, extracted there once, and imported from the extracted tree. Later runs
reuse the cache; concurrent ones (pytest-xdist workers) wait on a lock file while one downloads.

Cache folder: ``$SBREDIS_TEST_CACHE``, default ``~/.cache/sbredis-tests``. A failed download raises
`PeerSourceError` with pip's output; the tests that need the code turn it into a failure, not
a skip, so a run without the peer's tests never passes silently.
"""

from __future__ import annotations

import fcntl
import functools
import importlib.util
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from types import ModuleType

DOWNLOAD_TIMEOUT_S = 300


class PeerSourceError(RuntimeError):
    """A peer's source distribution could not be downloaded or extracted."""


def cache_dir() -> Path:
    """Where downloaded and extracted sdists are kept between runs."""
    return Path(os.environ.get("SBREDIS_TEST_CACHE") or Path.home() / ".cache" / "sbredis-tests").expanduser()


def _extract(archive: Path, into: Path) -> None:
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(into)
    else:
        with tarfile.open(archive) as t:
            t.extractall(into, filter="data")


@functools.cache
def fetch_sdist(name: str, version: str) -> Path:
    """The extracted source tree of `name`==`version`'s sdist (its top folder, e.g. ``kombu-5.7.0``).

    Downloaded with ``pip download --no-deps --no-binary :all:`` on first use and kept in
    `cache_dir()`; a present tree is reused without asking the index.

    Raises:
        PeerSourceError: pip could not download the sdist, or the archive is not one sdist.
    """
    root = cache_dir() / "sdists"
    target = root / f"{name}-{version}"
    if target.is_dir():
        return target
    root.mkdir(parents=True, exist_ok=True)
    # parallel test workers (pytest-xdist) and concurrent runs: one downloads, the others wait for it
    with (root / f".{name}-{version}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_dir():
            return target
        _download(name, version, root, target)
    return target


def _download(name: str, version: str, root: Path, target: Path) -> None:
    with tempfile.TemporaryDirectory(prefix=f".{name}-{version}-", dir=root) as tmp:
        download = Path(tmp, "download")
        cmd = [sys.executable, "-m", "pip", "download", f"{name}=={version}", "--no-deps", "--no-binary", ":all:"]
        try:
            proc = subprocess.run(
                [*cmd, "--quiet", "-d", str(download)],
                capture_output=True,
                text=True,
                timeout=DOWNLOAD_TIMEOUT_S,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise PeerSourceError(f"could not download {name} {version}'s sdist ({' '.join(cmd)}): {e}") from e
        archives = sorted(download.glob("*")) if download.is_dir() else []
        if proc.returncode != 0 or len(archives) != 1:
            raise PeerSourceError(
                f"could not download {name} {version}'s sdist, which these tests import their test code from.\n"
                f"Command: {' '.join(cmd)} -d <dir> (exit {proc.returncode})\n"
                f"Run it by hand with network access to the package index, or put the extracted sdist at {target}.\n"
                f"pip said:\n{proc.stdout}{proc.stderr}"
            )
        extracted = Path(tmp, "extracted")
        try:
            _extract(archives[0], extracted)
        except (OSError, tarfile.TarError, zipfile.BadZipFile) as e:
            raise PeerSourceError(f"could not extract {archives[0].name}: {e}") from e
        tops = [p for p in extracted.iterdir() if p.is_dir()]
        if len(tops) != 1:
            raise PeerSourceError(f"{archives[0].name} does not hold one top folder: {sorted(tops)}")
        try:
            tops[0].rename(target)  # atomic: a concurrent run finds either nothing or the whole tree
        except OSError:
            if not target.is_dir():
                raise


def load_module(path: Path, module_name: str) -> ModuleType:
    """Import one file of a peer's tree as a module named `module_name` (the tree is not a package
    on sys.path; the file's own imports must resolve against installed packages)."""
    if not path.is_file():
        raise PeerSourceError(f"{path} is missing from the extracted sdist")
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module

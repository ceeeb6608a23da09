"""Microsoft's azure-servicebus source distribution, fetched from the package index at test time.

Nothing of it is committed here: the tests download the pinned sdist once into a cache
($SBREDIS_TEST_CACHE, default ~/.cache/sbredis-tests), unpack it, and port its samples and tests
mechanically (tests/compat/port.py). A failed download fails the tests that need it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

AZURE_SERVICEBUS_VERSION = "7.15.0"


def cache_dir() -> Path:
    root = Path(os.environ.get("SBREDIS_TEST_CACHE", Path.home() / ".cache" / "sbredis-tests"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def azure_servicebus_source(version: str = AZURE_SERVICEBUS_VERSION) -> Path:
    """The unpacked sdist's top folder (samples/, tests/), downloading it on first use."""
    root = cache_dir()
    top = root / f"azure_servicebus-{version}"
    if (top / "samples").is_dir():
        return top
    archive = root / f"azure_servicebus-{version}.tar.gz"
    if not archive.exists():
        cmd = [sys.executable, "-m", "pip", "download", f"azure-servicebus=={version}", "--no-deps"]
        cmd += ["--no-binary", ":all:", "--quiet", "-d", str(root)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0 or not archive.exists():
            raise RuntimeError(f"could not download azure-servicebus {version}'s sdist: {done.stderr.strip()[-500:]}")
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    return top

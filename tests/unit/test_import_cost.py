"""`import sbredis` stays cheap: every Spark worker, CLI run and Celery worker pays it.

Each check runs in a fresh interpreter, so what earlier tests imported does not count. Nothing here
times anything: a heavy module that comes back shows up in sys.modules.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Loaded on first use only: the paired-namespace package, which only a client made with
# paired_namespace= needs.
HEAVY = ("sbredis.paired",)

PUBLIC_MODULES = (
    "sbredis",
    "sbredis.aio",
    "sbredis.exceptions",
    "sbredis.management",
    "sbredis.aio.management",
    "sbredis.amqp",
)


def run(code: str) -> object:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def test_import_sbredis_does_not_load_heavy_modules() -> None:
    loaded = run(f"import json, sys, sbredis; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    assert loaded == []


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_public_name_imports(module: str) -> None:
    code = (
        "import importlib, json\n"
        f"m = importlib.import_module({module!r})\n"
        "names = getattr(m, '__all__', [])\n"
        "missing = [n for n in names if getattr(m, n, None) is None]\n"
        "print(json.dumps([len(names), missing]))\n"
    )
    count, missing = run(code)  # type: ignore[misc]
    assert count > 0
    assert missing == []


AZURE_BASES = """
import json, sys
{first}
import sbredis.exceptions as s
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
out = [
    issubclass(s.MessagingEntityNotFoundError, ResourceNotFoundError),
    issubclass(s.MessagingEntityAlreadyExistsError, ResourceExistsError),
    issubclass(s.InvalidOperationError, HttpResponseError),
    issubclass(s.InvalidArgumentError, HttpResponseError),
    issubclass(s.InvalidArgumentError, TypeError) and issubclass(s.InvalidArgumentError, ValueError),
]
try:
    raise s.MessagingEntityNotFoundError("no queue q")
except ResourceNotFoundError as e:
    out.append(e.message == "no queue q")
print(json.dumps(out))
"""


@pytest.mark.parametrize("first", ["", "import azure.core.exceptions"], ids=["sbredis-first", "azure-first"])
def test_errors_are_azure_cores_whichever_is_imported_first(first: str) -> None:
    """Code ported from the SDK catches azure-core's errors, whichever of the two it imports first."""
    assert run(AZURE_BASES.format(first=first)) == [True] * 6

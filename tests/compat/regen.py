"""Run the ported azure-servicebus samples and live tests and rewrite the gap lists from the outcome.

    python -m tests.compat.regen                      # everything; rewrites both lists
    python -m tests.compat.regen --live test_queues.py --no-samples   # some live files only

Each listed live file's lines in live_known_gaps.txt are replaced by its failures now, with their
messages (other files' lines are kept); known_gaps.txt is rewritten when the samples run, a sample
that still fails keeping its hand-written reason. not_applicable.txt is read, never written.
Prints the counts (pass/applicable); --json writes every outcome, --from-json rewrites the lists
from such a file without running anything.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.compat.live import port_tree, run_all
from tests.compat.samples import add_acl_user, run_sample
from tests.compat.sdist import azure_servicebus_source
from tests.compat.test_live import FILES, _key
from tests.compat.test_samples import HERE, SAMPLES, listed
from tests.redis_server import RedisServer

LIVE_HEADER = """\
# azure-servicebus 7.15.0 live tests that apply to sbredis but do not pass yet (issue 22's backlog).
# tests/compat/test_live.py holds them: a failing test not listed fails the suite; a listed one that
# passes is reported. Written by tests/compat/regen.py. One per line: <file>::<test>: <what fails>.
"""
SAMPLES_HEADER = """\
# Samples of azure-servicebus 7.15.0 that apply to sbredis but do not pass yet (issue 22).
# They run as strict xfails: one that starts passing fails the suite until its line is removed.
# Written by tests/compat/regen.py. One per line: <path in the sdist>: <what fails>.
"""


def run_live(files: list[str], parallel: int) -> dict[str, dict[str, Any]]:
    work = Path(tempfile.mkdtemp(prefix="compat-regen-"))
    tree = port_tree(azure_servicebus_source(), work)
    return run_all(tree, files, work, parallel, listed("live_slow.txt"))


def run_samples(parallel: int) -> dict[str, str | None]:
    """Each applicable sample: None when it passed, else the last line of its output."""
    source = azure_servicebus_source()
    not_applicable = listed("not_applicable.txt")
    srv = RedisServer().start()
    try:
        add_acl_user(srv.url)

        def one(sample: str) -> tuple[str, str | None]:
            outcome = run_sample(source / sample, srv.url, Path(tempfile.mkdtemp(prefix="compat-sample-")))
            if outcome.returncode == 0:
                return sample, None
            lines = [line for line in outcome.output.splitlines() if line.strip()]
            return sample, (lines[-1][:200] if lines else f"exit {outcome.returncode}")

        todo = [s for s in SAMPLES if s not in not_applicable]
        with ThreadPoolExecutor(parallel) as pool:
            return dict(pool.map(one, todo))
    finally:
        srv.stop()


def live_counts(results: dict[str, dict[str, Any]]) -> tuple[int, int, dict[str, str], int]:
    """(passed, applicable, failures by key, reading SDK internals)."""
    not_applicable = listed("not_applicable.txt")
    passed = applicable = internals = 0
    failures: dict[str, str] = {}
    for relative, tests in results.items():
        for nodeid, r in tests.items():
            key = _key(relative, nodeid)
            if r["internals"]:
                internals += 1
                continue
            if key in not_applicable or r["outcome"] == "skipped":
                continue
            applicable += 1
            if r["outcome"] == "passed":
                passed += 1
            else:
                failures[key] = r["message"]
    return passed, applicable, failures, internals


_TRACKING_ID = re.compile(r"TrackingId:\S+")


def _write(name: str, header: str, entries: dict[str, str]) -> None:
    # a failure's tracking id differs at every run
    lines = [f"{k}: {' '.join(_TRACKING_ID.sub('', v).split())}" for k, v in sorted(entries.items())]
    (HERE / name).write_text(header + "".join(line + "\n" for line in lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--live", nargs="*", default=None, help="live files to run (default: all)")
    parser.add_argument("--no-live", action="store_true")
    parser.add_argument("--no-samples", action="store_true")
    parser.add_argument("--parallel", type=int, default=int(os.environ.get("SBREDIS_COMPAT_PARALLEL", "4")))
    parser.add_argument("--json", type=Path, help="write every outcome here")
    parser.add_argument("--from-json", type=Path, help="rewrite the lists from a --json file of an earlier run")
    args = parser.parse_args()
    report: dict[str, Any] = {}
    saved = json.loads(args.from_json.read_text()) if args.from_json else None
    if not args.no_live and (not saved or "live" in saved):
        files = args.live or FILES
        unknown = set(files) - set(FILES)
        if unknown:
            parser.error(f"not among tests/compat/test_live.py's FILES: {sorted(unknown)}")
        results = saved["live"] if saved else run_live(files, args.parallel)
        files = list(results) if saved else files
        passed, applicable, failures, internals = live_counts(results)
        kept = {k: v for k, v in listed("live_known_gaps.txt").items() if k.split("::", 1)[0] not in files}
        _write("live_known_gaps.txt", LIVE_HEADER, {**kept, **failures})
        report["live"] = results
        print(f"live ({len(files)} files): {passed} of {applicable} applicable pass; {internals} read SDK internals")
    if not args.no_samples and (not saved or "samples" in saved):
        outcomes = saved["samples"] if saved else run_samples(args.parallel)
        old = listed("known_gaps.txt")
        gaps = {k: old.get(k, v or "") for k, v in outcomes.items() if v is not None}
        _write("known_gaps.txt", SAMPLES_HEADER, gaps)
        report["samples"] = outcomes
        print(f"samples: {len(outcomes) - len(gaps)} of {len(outcomes)} applicable pass")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write tests/durations.json (seconds per test module) from a pytest JUnit report, and print the slowest.

    scripts/test.sh --junitxml=/tmp/junit.xml      # a whole run (any -n)
    .venv/bin/python scripts/test-durations.py /tmp/junit.xml [--top 50] [--write]

The file only orders pytest-xdist's queue (tests/scheduling.py: longest units first); a stale figure
makes a run slower, never wrong. Refresh it when a module's time changes a lot. Each testcase's time
is setup + call + teardown, so a module's first test carries its module fixture's start-up.
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def module_of(classname: str) -> str | None:
    """``tests.api.test_x`` or ``tests.api.test_x.TestCls`` → ``tests/api/test_x.py`` (the file that exists)."""
    parts = classname.split(".")
    for n in range(len(parts), 0, -1):
        path = "/".join(parts[:n]) + ".py"
        if (ROOT / path).is_file():
            return path
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit", type=Path)
    ap.add_argument("--top", type=int, default=50, help="print the N slowest tests and modules")
    ap.add_argument("--write", action="store_true", help="write tests/durations.json")
    args = ap.parse_args()
    cases = []
    for case in ET.parse(args.junit).getroot().iter("testcase"):
        cases.append((float(case.get("time", 0)), case.get("classname", ""), case.get("name", "")))
    per_module: dict[str, float] = defaultdict(float)
    for seconds, classname, _ in cases:
        module = module_of(classname)
        if module:
            per_module[module] += seconds
    total = sum(s for s, _, _ in cases)
    print(f"{len(cases)} tests, {total:.0f} s of test time in {len(per_module)} modules")
    print(f"\nslowest {args.top} tests (setup + call + teardown):")
    for seconds, classname, name in sorted(cases, reverse=True)[:args.top]:
        print(f"  {seconds:8.1f} s  {classname}::{name}")
    print(f"\nslowest {args.top} modules:")
    for module, seconds in sorted(per_module.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {seconds:8.1f} s  {module}")
    if args.write:
        out = ROOT / "tests" / "durations.json"
        out.write_text(json.dumps({m: round(s, 1) for m, s in sorted(per_module.items())}, indent=0) + "\n")
        print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The ninja targets a meson tree's tests need, one a line.

    suite_targets.py [--no-suite NAME]... BUILD_DIR SUITES [TESTS]

SUITES and TESTS are space-separated words: the tests of any of SUITES
(and, when TESTS is given, only those named there), less those also in a
--no-suite suite. A test needs its
executable and the targets it depends on (meson introspect). Only targets
inside BUILD_DIR are printed, relative to it, so that `ninja -C BUILD_DIR
$(suite_targets.py ...)` builds them. deploy/run-tests.sh and deploy/tsan.sh
build what they run with it.
"""
import json
import os
import subprocess
import sys


def introspect(build, what):
    return json.loads(
        subprocess.check_output(["meson", "introspect", build, what]))


def main():
    args = sys.argv[1:]
    excluded = set()
    while len(args) >= 2 and args[0] == "--no-suite":
        excluded.add(args[1])
        args = args[2:]
    if len(args) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    build = os.path.abspath(args[0])
    suites = set(args[1].split())
    only = set(args[2].split()) if len(args) == 3 else set()
    files = {t["id"]: t["filename"] for t in introspect(build, "--targets")}
    names = set()
    for test in introspect(build, "--tests"):
        test_suites = {s.split(":")[-1] for s in test["suite"]}
        if not suites & test_suites or excluded & test_suites:
            continue
        if only and test["name"] not in only:
            continue
        paths = [f for dep in test.get("depends", []) for f in files[dep]]
        paths.append(os.path.abspath(test["cmd"][0]))
        names.update(os.path.relpath(p, build) for p in paths
                     if p.startswith(build + os.sep))
    print("\n".join(sorted(names)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Tallies meson's testlog.json files: one line per tree, then the total.

    testlog_tally.py [--build-failures N] TESTLOG.json...

A tree's line names its failed tests; N trees that did not build count as
N failures. Exit 1 when anything failed, else 0. deploy/run-tests.sh and
deploy/tsan.sh print their closing lines with it.
"""
import argparse
import json
import os
import sys


def tally(path):
    """(passed, failed, skipped, names of the failed) of one testlog.json."""
    passed = failed = skipped = 0
    bad = []
    with open(path) as log:
        for line in log:
            line = line.strip()
            if not line:
                continue
            test = json.loads(line)
            result = test.get("result", "ERROR")
            if result in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif result == "SKIP":
                skipped += 1
            else:
                failed += 1
                bad.append("%s (%s)" % (test.get("name", "?"), result))
    return passed, failed, skipped, bad


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-failures", type=int, default=0)
    parser.add_argument("logs", nargs="*")
    args = parser.parse_args()
    passed = failed = skipped = 0
    for path in args.logs:
        tree = os.path.basename(os.path.dirname(os.path.dirname(path)))
        p, f, s, bad = tally(path)
        print("%-11s %d passed, %d failed, %d skipped%s" %
              (tree + ":", p, f, s,
               ("; failed: " + ", ".join(bad)) if bad else ""))
        passed, failed, skipped = passed + p, failed + f, skipped + s
    if args.build_failures:
        print("build failures (counted as failed): %d" % args.build_failures)
    if skipped:
        print("skipped: %d" % skipped)
    print("%d passed, %d failed" % (passed, failed + args.build_failures))
    return 1 if failed + args.build_failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Tallies meson's testlog.json files: one line per tree, then the total.

    testlog_tally.py [--build-failures N] TESTLOG.json...

A tree's line names its failed tests; N trees that did not build count as
N failures. The last lines of each failed test's output come first, so
that a CI log cut to its tail still shows why. Exit 1 when anything
failed, else 0. deploy/run-tests.sh and
deploy/tsan.sh print their closing lines with it.
"""
import argparse
import json
import os
import sys


TAIL_LINES = 40


def tally(path):
    """(passed, failed, skipped, names of the failed, their output tails)."""
    passed = failed = skipped = 0
    bad = []
    tails = []
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
                output = (test.get("stdout") or "") + (test.get("stderr") or "")
                tails.append((test.get("name", "?"),
                              output.splitlines()[-TAIL_LINES:]))
    return passed, failed, skipped, bad, tails


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-failures", type=int, default=0)
    parser.add_argument("logs", nargs="*")
    args = parser.parse_args()
    passed = failed = skipped = 0
    results = [(path, tally(path)) for path in args.logs]
    for path, (_, _, _, _, tails) in results:
        tree = os.path.basename(os.path.dirname(os.path.dirname(path)))
        for name, lines in tails:
            print("--- %s: %s, its last %d lines of output" %
                  (tree, name, len(lines)))
            for line in lines:
                print("    " + line)
    for path, (p, f, s, bad, _) in results:
        tree = os.path.basename(os.path.dirname(os.path.dirname(path)))
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

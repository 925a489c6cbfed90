#!/usr/bin/python3
"""Runs `bench/linerate/run --smoke` into a temporary directory and checks
its result.full.json with check_result.py, and that its result.json is the
summary of it (bench/result_json.py). Exit 77 (skipped) without
dpdk-testpmd or spinnic-gen.

usage: smoke_test.py RUN_SCRIPT BUILD_DIR CHECK_SCRIPT
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile


def main() -> int:
    run, builddir, check = sys.argv[1:4]
    if shutil.which("dpdk-testpmd") is None:
        print("skip: dpdk-testpmd not on PATH")
        return 77
    gen = os.path.join(builddir, "bench", "linerate", "spinnic-gen")
    if not os.access(gen, os.X_OK):
        print(f"skip: no {gen} (configure with -Dbench=true)")
        return 77
    out = tempfile.mkdtemp(prefix="harness-smoke-")
    try:
        proc = subprocess.run([run, "--smoke", "--builddir", builddir, "--out", out],
                              timeout=240)
        print(f"run exited with status {proc.returncode}")
        for name in ("summary.md",):
            path = os.path.join(out, name)
            if os.path.exists(path):
                print(open(path).read())
        if proc.returncode != 0:
            print("FAIL: the harness's smoke run did not complete")
            return 1
        full_path = os.path.join(out, "result.full.json")
        rc = subprocess.run([sys.executable, check, "--smoke", full_path]).returncode
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(run))))
        import result_json
        summary = json.load(open(os.path.join(out, "result.json")))
        if summary != result_json.summarize(json.load(open(full_path))):
            print("FAIL: result.json is not the summary of result.full.json")
            return 1
        return rc
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

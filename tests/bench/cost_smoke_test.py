#!/usr/bin/python3
"""Runs bench/cost's cost_bench for a few iterations of every path and checks
that each benchmark reported every counter of the cost model, finite and
positive. It never checks a timing: the figures are for bench/cost/README.md.
cost_bench itself exits 1 when an operation does not complete or a byte lands
wrong, which fails this test too.

usage: cost_smoke_test.py COST_BENCH [ITERATIONS]
"""
import json
import math
import os
import subprocess
import sys

# Every path of bench/cost/README.md, by its Google Benchmark name.
BENCHMARKS = [
    "BM_Passthrough/bytes:64",
    "BM_Passthrough/bytes:1500",
    "BM_NullHandler",
    "BM_DiadWrite",
    "BM_DiadWriteWindow",
    "BM_DiadStream",
    "BM_DiadRead",
    "BM_DiadRead4k",
    "BM_RoceWrite",
    "BM_RoceWriteWindow",
    "BM_RoceRead",
    "BM_NaaiceRpc",
]
COUNTERS = [
    "cycles_per_packet",
    "cycles_per_byte",
    "packets_per_op",
    "memcpy_cycles",
    "ratio_to_memcpy",
    "gbps_per_core",
]
# The paths with two dataplanes (A and B) report each end apart too.
PAIR_COUNTERS = [
    "a_cycles_per_op",
    "b_cycles_per_op",
    "gbps_per_core_busier_end",
]
# Runs of the whole set: the defaults, and 4 KiB packets (DiAD's and RoCE's
# path MTU raised, as bench/cost/README.md's "4 KiB packets" table).
PASSES = [[], ["--packet_bytes=4096"]]


def check_pass(binary: str, iterations: str, flags: list) -> list:
    env = dict(os.environ, SPINNIC_BENCH_ITERATIONS=iterations)
    proc = subprocess.run(
        [binary, "--benchmark_format=json", "--benchmark_filter=^BM_"] + flags,
        env=env, stdout=subprocess.PIPE, timeout=120)
    if proc.returncode != 0:
        return [f"{flags}: {binary} exited with status {proc.returncode}"]
    report = json.loads(proc.stdout)
    # With a fixed iteration count the name carries "/iterations:N".
    runs = {b["name"].split("/iterations:")[0]: b for b in report["benchmarks"]}
    failures = []
    for name in BENCHMARKS:
        run = runs.get(name)
        if run is None:
            failures.append(f"{flags} {name}: did not run")
            continue
        if run.get("error_occurred"):
            failures.append(f"{flags} {name}: {run.get('error_message')}")
            continue
        counters = COUNTERS
        if name.startswith(("BM_Diad", "BM_Roce")):
            counters = COUNTERS + PAIR_COUNTERS
        for counter in counters:
            value = run.get(counter)
            if not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value <= 0:
                failures.append(f"{flags} {name}: {counter} = {value!r}")
        print(f"{flags} {name}: " +
              ", ".join(f"{c}={run.get(c)}" for c in counters))
    return failures


def main() -> int:
    binary = sys.argv[1]
    iterations = sys.argv[2] if len(sys.argv) > 2 else "50"
    failures = []
    for flags in PASSES:
        failures += check_pass(binary, iterations, flags)
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Runs `bench/diad/run --quick` into a temporary directory and checks that
its result.full.json is complete: every configuration, point, round,
passthrough and read-latency field present and consistent; and that its
result.json is the summary of it (bench/result_json.py). It never checks a
timing.
Exit 77 (skipped) without root (memif between DPDK processes needs
/var/run/dpdk) or without the binaries.

usage: diad_smoke_test.py RUN_SCRIPT BUILD_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile


def check(result: dict) -> list:
    bad = []
    need = lambda d, keys, where: [bad.append(f"{where}: no {k}") for k in keys if k not in d]
    need(result, ["schema", "command", "environment", "config", "path_mtu",
                  "configurations", "complete", "error"], "result")
    if not result.get("complete") or result.get("error") is not None:
        bad.append(f"incomplete: {result.get('error')}")
    need(result.get("environment", {}), ["pinning", "cores", "dpdk", "git_commit"], "environment")
    # Scheduler-bound (bench/pinning.py): marked at the top and on every
    # figure, with the cost model's figure of its path beside it.
    need(result, ["scheduler_bound", "pollers", "cores"], "result")
    if result.get("scheduler_bound"):
        for e in result.get("configurations", []):
            recs = e.get("points", []) + [e.get("passthrough")] + (
                [e["read_latency"]] if e.get("read_latency") else [])
            for r in recs:
                if not (r or {}).get("scheduler_bound") or "cost_model" not in r:
                    bad.append(f"mt {e.get('max_transactions')} loss {e.get('loss')}: a "
                               f"figure not marked scheduler-bound")
    c = result.get("config", {})
    need(result.get("path_mtu", {}), ["used"], "path_mtu")
    confs = result.get("configurations", [])
    want = {(mt, loss) for mt in c.get("transactions", []) for loss in c.get("losses", [])}
    got = {(e.get("max_transactions"), e.get("loss")) for e in confs}
    if want != got:
        bad.append(f"configurations {sorted(got)} != {sorted(want)}")
    for e in confs:
        where = f"mt {e.get('max_transactions')} loss {e.get('loss')}"
        need(e, ["path_mtu", "points", "passthrough", "counters", "crashes", "error"], where)
        pt = e.get("passthrough", {})
        need(pt, ["frame", "payload_per_frame", "rounds", "delivered_payload_MBps", "error"],
             where + " passthrough")
        if not pt.get("delivered_payload_MBps"):
            bad.append(f"{where}: no passthrough rate ({pt.get('error')})")
        for g in pt.get("rounds", []):
            need(g, ["sent", "received", "lost", "rx_pps", "exit_status"], where + " gen")
            if g.get("received", 0) > g.get("sent", 0):
                bad.append(f"{where}: gen received > sent")
        sizes = ([(op, s) for op in c["ops"] for s in c["sizes"]]
                 if e.get("max_transactions") == c.get("size_sweep_transactions")
                 else [(op, c["transactions_sweep_size"]) for op in c["ops"]])
        have = {(p.get("op"), p.get("size")) for p in e.get("points", [])}
        for k in sizes:
            if k not in have:
                bad.append(f"{where}: no point {k}")
        for p in e.get("points", []):
            pw = f"{where} {p.get('op')} {p.get('size')}"
            need(p, ["calibration", "rounds", "goodput_MBps", "ratio", "latency_p50_ns",
                     "latency_p99_ns"], pw)
            if p.get("error"):
                bad.append(f"{pw}: {p['error']}")
            if len(p.get("rounds", [])) != c.get("rounds"):
                bad.append(f"{pw}: {len(p.get('rounds', []))} rounds")
            for r in p.get("rounds", []):
                need(r, ["count", "size", "bytes", "elapsed_ns", "goodput_MBps",
                         "latency_p50_ns", "latency_p99_ns", "latency_max_ns", "error"], pw)
                if r.get("bytes") != r.get("count", 0) * r.get("size", 0):
                    bad.append(f"{pw}: bytes {r.get('bytes')} != count x size")
                if not r.get("elapsed_ns"):
                    bad.append(f"{pw}: elapsed_ns 0")
                elif abs(r["goodput_MBps"] - r["bytes"] * 1e3 / r["elapsed_ns"]) > 1e-6 * r["goodput_MBps"]:
                    bad.append(f"{pw}: goodput is not bytes / elapsed")
                if not (r.get("latency_p50_ns", 0) <= r.get("latency_p99_ns", 0)
                        <= r.get("latency_max_ns", 0)):
                    bad.append(f"{pw}: latency percentiles not monotone")
            pr = p.get("ratio")
            if pr is None or pt.get("delivered_payload_MBps") is None or abs(
                    pr - p["goodput_MBps"] / pt["delivered_payload_MBps"]) > 1e-9:
                bad.append(f"{pw}: ratio is not goodput / passthrough")
        if e.get("max_transactions") == c.get("size_sweep_transactions"):
            rl = e.get("read_latency", {})
            need(rl, ["reads", "p50_ns", "p99_ns", "max_ns", "elapsed_ns", "error"], where + " read")
            if rl.get("reads") != c.get("read_repeat"):
                bad.append(f"{where}: {rl.get('reads')} reads, asked {c.get('read_repeat')}")
            if not (0 < rl.get("p50_ns", 0) <= rl.get("p99_ns", 0) <= rl.get("max_ns", 0)):
                bad.append(f"{where}: read latency percentiles not monotone")
    return bad


def check_summary(summary: dict, full: dict, run: str) -> list:
    """result.json is the summary of result.full.json: no per-round lists."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(run))))
    import result_json
    if summary != result_json.summarize(full):
        return ["result.json is not the summary of result.full.json"]
    if '"rounds": [' in json.dumps(summary):
        return ["result.json has per-round lists"]
    return []


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        bad = check(json.load(open(sys.argv[2])))
        for b in bad:
            print("FAIL:", b)
        return 1 if bad else 0
    run, builddir = sys.argv[1:3]
    if os.geteuid() != 0:
        print("skip: needs root (DPDK memif between processes, /var/run/dpdk)")
        return 77
    for rel in ("control/spinnicd", "control/spinctl/spinctl",
                "dataplane/impair/spinnic-impair", "bench/linerate/spinnic-gen"):
        if not os.access(os.path.join(builddir, rel), os.X_OK):
            print(f"skip: no {rel} in {builddir}")
            return 77
    out = tempfile.mkdtemp(prefix="diad-smoke-")
    try:
        proc = subprocess.run([run, "--quick", "--build", builddir, "--out", out], timeout=140)
        print(f"run exited with status {proc.returncode}")
        path = os.path.join(out, "summary.md")
        if os.path.exists(path):
            print(open(path).read())
        if proc.returncode == 77:
            return 77
        for name in ("result.json", "result.full.json"):
            if not os.path.exists(os.path.join(out, name)):
                print(f"FAIL: no {name}")
                return 1
        full = json.load(open(os.path.join(out, "result.full.json")))
        bad = check(full)
        bad += check_summary(json.load(open(os.path.join(out, "result.json"))), full, run)
        for b in bad:
            print("FAIL:", b)
        if proc.returncode != 0 and not bad:
            print("FAIL: the harness exited non-zero")
            return 1
        return 1 if bad else 0
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

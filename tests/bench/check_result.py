#!/usr/bin/python3
"""Checks that a result.full.json of bench/linerate/run (the one with every
round; result.json is its summary, bench/result_json.py) is complete and
consistent: every scenario x size x HPU count x round x role is present,
each generator report adds up (received <= sent, lost == sent - received,
latency percentiles in order), the search and the summaries follow from
the measurements and ratio == DUT / reference. Never checks a timing.

usage: check_result.py [--smoke] RESULT_FULL_JSON
"""
import json
import math
import os
import statistics
import sys

PCTS = ["p50", "p90", "p99", "p999", "max"]
GEN_FIELDS = ["sent", "received", "lost", "reordered", "duplicates", "late",
              "tx_pps", "rx_pps", "offered_pps", "duration_s", "latency_ns",
              "size", "rate_pps", "tx_port", "rx_port", "error", "exit_status"]

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
    return cond


def close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def check_latency(lat, where):
    if not expect(isinstance(lat, dict), f"{where}: latency is not an object"):
        return
    if lat.get("count"):
        values = [lat.get("min")] + [lat.get(p) for p in PCTS]
        if expect(all(isinstance(v, (int, float)) for v in values),
                  f"{where}: latency percentiles missing: {lat}"):
            expect(all(a <= b for a, b in zip(values, values[1:])),
                   f"{where}: latency not monotone min<=p50<=p90<=p99<=p999<=max: {lat}")


def check_gen(rep, where, size, sc):
    for f in GEN_FIELDS:
        expect(f in rep, f"{where}: generator report lacks '{f}'")
    if not all(f in rep for f in GEN_FIELDS):
        return
    expect(rep["error"] is None, f"{where}: error {rep['error']!r}")
    expect(rep["exit_status"] == 0, f"{where}: exit status {rep['exit_status']}")
    expect(rep["size"] == size, f"{where}: size {rep['size']} != {size}")
    expect(rep["tx_port"] == sc["gen_ports"]["tx"] and rep["rx_port"] == sc["gen_ports"]["rx"],
           f"{where}: generator ports {rep['tx_port']}->{rep['rx_port']} != {sc['gen_ports']}")
    expect(rep["received"] <= rep["sent"],
           f"{where}: received {rep['received']} > sent {rep['sent']}")
    if rep["error"] is None:
        expect(rep["lost"] == rep["sent"] - rep["received"],
               f"{where}: lost {rep['lost']} != sent {rep['sent']} - received {rep['received']}")
    expect(rep["sent"] > 0, f"{where}: nothing sent")
    check_latency(rep["latency_ns"], where)
    expect(rep["latency_ns"].get("count") == rep["received"],
           f"{where}: latency count {rep['latency_ns'].get('count')} != received {rep['received']}")


def check_search(s, cfg, where):
    for f in ("trials", "zero_loss_pps", "tolerance", "max_steps", "upper_pps"):
        if not expect(f in s, f"{where}: search lacks '{f}'"):
            return []
    trials = s["trials"]
    expect(1 <= len(trials) <= cfg["search"]["steps"],
           f"{where}: {len(trials)} trials, limit {cfg['search']['steps']}")
    best = 0
    for i, t in enumerate(trials):
        loss = t["lost"] / t["sent"] if t["sent"] else 1.0
        expect(close(t.get("loss_fraction"), loss), f"{where}: trial {i} loss_fraction")
        expect(t.get("pass") == (t["sent"] > 0 and loss <= s["tolerance"]),
               f"{where}: trial {i} pass flag disagrees with its loss")
        expect(t["rate_pps"] <= s["upper_pps"] + 1, f"{where}: trial {i} above the upper bound")
        if t.get("pass"):
            best = max(best, t["rate_pps"])
    expect(s["zero_loss_pps"] == best,
           f"{where}: zero_loss_pps {s['zero_loss_pps']} != best passing rate {best}")
    return trials


def check_summary(entry, where, cfg):
    s = entry.get("summary")
    if not expect(isinstance(s, dict), f"{where}: no summary"):
        return
    for role in ("dut", "ref"):
        recs = [rd[role] for rd in entry["rounds"]]
        flat = [r["flat"]["rx_pps"] / 1e6 for r in recs]
        rs = s[role]
        expect(len(rs["flat_mpps"]) == len(flat) and
               all(close(a, b) for a, b in zip(rs["flat_mpps"], flat)),
               f"{where}: {role} flat_mpps {rs['flat_mpps']} != measurements {flat}")
        expect(close(rs["flat_mpps_median"], statistics.median(flat)),
               f"{where}: {role} flat median")
        if cfg["search"]["enabled"]:
            zl = [r["search"]["zero_loss_pps"] / 1e6 for r in recs]
            expect(close(rs["zero_loss_mpps_median"], statistics.median(zl)),
                   f"{where}: {role} zero-loss median")
        else:
            expect(rs["zero_loss_mpps_median"] is None, f"{where}: zero-loss without search")
        if rs["latency_ns"] is not None:
            lat = rs["latency_ns"]
            expect(all(lat[a] <= lat[b] for a, b in zip(PCTS, PCTS[1:])),
                   f"{where}: {role} summary latency not monotone: {lat}")
    d, r = s["dut"], s["ref"]
    for key, dk in (("flat", "flat_mpps_median"), ("zero_loss", "zero_loss_mpps_median")):
        want = d[dk] / r[dk] if d[dk] is not None and r[dk] else None
        expect(close(s["ratio"][key], want),
               f"{where}: ratio {key} {s['ratio'][key]} != dut/ref {want}")
    expect(close(s["dut_mpps_per_hpu"], d["flat_mpps_median"] / entry["hpus"]),
           f"{where}: dut_mpps_per_hpu")


def main(argv):
    smoke = "--smoke" in argv
    paths = [a for a in argv if a != "--smoke"]
    if len(paths) != 1:
        print(__doc__)
        return 2
    path = paths[0]
    res = json.load(open(path))
    for f in ("schema", "started", "finished", "complete", "error", "environment",
              "config", "scenarios", "plots", "scheduler_bound", "pollers", "cores"):
        expect(f in res, f"result lacks '{f}'")
    if failures:
        return report(path)
    expect(res["complete"] is True and res["error"] is None,
           f"run incomplete: {res['error']!r}")
    env = res["environment"]
    for f in ("cpu_model", "cores", "pinning", "dpdk_version", "spinnicd_version",
              "git_commit", "build_type"):
        expect(env.get(f) not in (None, ""), f"environment lacks '{f}'")
    cfg = res["config"]
    if smoke:
        expect(cfg["smoke"] is True, "config.smoke is not true")
        expect(cfg["scenarios"] == ["passthrough"] and cfg["sizes"] == [64]
               and cfg["rounds"] == 1, f"smoke config: {cfg}")
    names = [sc["name"] for sc in res["scenarios"]]
    expect(names == cfg["scenarios"], f"scenarios {names} != config {cfg['scenarios']}")
    for sc in res["scenarios"]:
        keys = [(e["size"], e["hpus"]) for e in sc["results"]]
        want = [(size, h) for h in cfg["hpus"] for size in cfg["sizes"]]
        expect(sorted(keys) == sorted(want),
               f"{sc['name']}: results for {keys}, expected {want}")
        for e in sc["results"]:
            where = f"{sc['name']} {e['size']} B {e['hpus']} HPU"
            # bench/pinning.py: the generator and N workers are N + 1 busy
            # pollers; more than the cores and every figure is marked.
            bound = e["hpus"] + 1 > res["cores"]
            expect(bool(e.get("scheduler_bound")) == bound,
                   f"{where}: scheduler_bound {e.get('scheduler_bound')}, expected {bound}")
            if bound:
                expect(e.get("pollers") == e["hpus"] + 1 and "cost_model" in e,
                       f"{where}: scheduler-bound without pollers or cost_model")
                expect(res["scheduler_bound"] is True, "result not marked scheduler_bound")
            expect(len(e["rounds"]) == cfg["rounds"],
                   f"{where}: {len(e['rounds'])} rounds, expected {cfg['rounds']}")
            for rd in e["rounds"]:
                w = f"{where} round {rd['round']}"
                expect(sorted(rd.get("order", [])) == ["dut", "ref"], f"{w}: order")
                for role in ("dut", "ref"):
                    if not expect(role in rd and "flat" in rd[role], f"{w}: no {role} flat run"):
                        continue
                    rec = rd[role]
                    # 0, or SIGSEGV at stop, recorded (DPDK 22.11 memif at a
                    # peer's disconnect; the harness restarts and records it).
                    expect(rec.get("exit_status") == 0 or
                           (rec.get("exit_status") == -11 and
                            any(c["when"] == "at stop" for c in rec.get("crashes", []))),
                           f"{w} {role}: forwarder exit status {rec.get('exit_status')}")
                    for c in rec.get("crashes", []):
                        expect(c.get("exit_status") not in (0, None) and c.get("when"),
                               f"{w} {role}: malformed crash record {c}")
                    check_gen(rec["flat"], f"{w} {role} flat", e["size"], sc)
                    if "rate_pps" not in rec["flat"]:
                        continue
                    expect(rec["flat"]["rate_pps"] == 0, f"{w} {role}: flat run was paced")
                    if cfg["search"]["enabled"]:
                        if expect("search" in rec, f"{w} {role}: no search"):
                            for i, t in enumerate(check_search(rec["search"], cfg,
                                                               f"{w} {role} search")):
                                check_gen(t, f"{w} {role} trial {i}", e["size"], sc)
                    else:
                        expect("search" not in rec, f"{w} {role}: search with --no-search")
                    if sc["latency"]:
                        if expect("latency" in rec, f"{w} {role}: no latency run"):
                            check_gen(rec["latency"], f"{w} {role} latency", e["size"], sc)
                            expect(rec["latency"]["rate_pps"] == cfg["latency_rate_pps"],
                                   f"{w} {role}: latency rate")
            if all(role in rd and "flat" in rd[role] for rd in e["rounds"]
                   for role in ("dut", "ref")):
                check_summary(e, where, cfg)
    out = os.path.dirname(os.path.abspath(path))
    expect(os.path.exists(os.path.join(out, "summary.md")), "summary.md missing")
    if not res["plots"].startswith("plots skipped"):
        for png in ("throughput.png", "latency_cdf.png"):
            expect(os.path.getsize(os.path.join(out, png)) > 0 if
                   os.path.exists(os.path.join(out, png)) else False, f"{png} missing")
    return report(path)


def report(path):
    if failures:
        for f in failures:
            print(f"FAIL: {f}")
        print(f"{path}: {len(failures)} problem(s)")
        return 1
    print(f"{path}: complete and consistent")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

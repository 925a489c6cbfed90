#!/usr/bin/env python3
"""Strict checks of spinnicd's /metrics (tests/integration/metrics.sh).

  prom_check.py format METRICS            the exposition format, strictly
  prom_check.py compare METRICS S1 S2     values against two `spinctl --json
                                          stats` taken before (S1) and after
                                          (S2) the scrape

`format` accepts only: `# HELP name text`, `# TYPE name type`, and samples
`name{label="value",...} value` / `name value`; every sample belongs to a
family with a # TYPE line before it; counters are named *_total; histograms
have _bucket (with le, cumulative, ending in +Inf), _sum and _count; no
series twice. Exit 0 when everything holds, 1 with every problem printed.
"""
import json
import math
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(
    rf"^({NAME})(?:\{{((?:{LABEL})(?:,{LABEL})*)?,?\}})? "
    r"(-?[0-9.eE+-]+|(?i:nan)|[+-](?i:inf))(?: -?[0-9]+)?$")
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def parse(text):
    """Returns ({(name, labels): value}, {family: type}, [problems])."""
    problems = []
    types = {}
    samples = {}
    if not text.endswith("\n"):
        problems.append("the text does not end with a newline")
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP "):
            if not re.match(rf"^# HELP {NAME} .*$", line):
                problems.append(f"line {n}: bad HELP: {line!r}")
            continue
        if line.startswith("# TYPE "):
            m = re.match(rf"^# TYPE ({NAME}) (\w+)$", line)
            if not m or m.group(2) not in TYPES:
                problems.append(f"line {n}: bad TYPE: {line!r}")
                continue
            if m.group(1) in types:
                problems.append(f"line {n}: second TYPE for {m.group(1)}")
            types[m.group(1)] = m.group(2)
            continue
        if line.startswith("#") or not line.strip():
            problems.append(f"line {n}: neither HELP, TYPE nor a sample: {line!r}")
            continue
        m = SAMPLE.match(line)
        if not m:
            problems.append(f"line {n}: not `name{{labels}} value`: {line!r}")
            continue
        name, labels, value = m.group(1), m.group(2) or "", m.group(3)
        try:
            v = float(value)
        except ValueError:
            problems.append(f"line {n}: value {value!r} is not a number")
            continue
        lbl = tuple(sorted(LABEL_RE.findall(labels)))
        if len({k for k, _ in lbl}) != len(lbl):
            problems.append(f"line {n}: a label twice: {line!r}")
        family = name
        if family not in types:
            for suffix in ("_bucket", "_sum", "_count"):
                if name.endswith(suffix) and name[: -len(suffix)] in types:
                    family = name[: -len(suffix)]
        if family not in types:
            problems.append(f"line {n}: {name} has no # TYPE line before it")
        elif types[family] == "counter":
            if not name.endswith("_total"):
                problems.append(f"line {n}: counter {name} does not end in _total")
            if v < 0:
                problems.append(f"line {n}: counter {name} is negative")
        if (name, lbl) in samples:
            problems.append(f"line {n}: series {name}{dict(lbl)} twice")
        samples[(name, lbl)] = v
    # Histograms: cumulative buckets ending in +Inf == _count.
    for family, t in types.items():
        if t != "histogram":
            continue
        series = {}
        for (name, lbl), v in samples.items():
            if name == family + "_bucket":
                rest = tuple(x for x in lbl if x[0] != "le")
                le = dict(lbl).get("le")
                if le is None:
                    problems.append(f"{name}: a bucket without le")
                    continue
                series.setdefault(rest, []).append((float(le), v))
        for rest, buckets in series.items():
            buckets.sort()
            counts = [c for _, c in buckets]
            if counts != sorted(counts):
                problems.append(f"{family}{dict(rest)}: buckets not cumulative")
            if not math.isinf(buckets[-1][0]):
                problems.append(f"{family}{dict(rest)}: no le=\"+Inf\" bucket")
            count = samples.get((family + "_count", rest))
            if count is None or (family + "_sum", rest) not in samples:
                problems.append(f"{family}{dict(rest)}: no _count or _sum")
            elif count != buckets[-1][1]:
                problems.append(f"{family}{dict(rest)}: _count != +Inf bucket")
    if not samples:
        problems.append("no samples at all")
    return samples, types, problems


def compare(samples, s1, s2):
    """Every compared metric lies between S1 and S2; returns problems, and how
    many values were equal in S1 and S2 (a stopped moment) and so exact."""
    problems = []
    checked = exact = 0

    def get(name, **labels):
        for (n, lbl), v in samples.items():
            if n == name and all(dict(lbl).get(k) == str(x) for k, x in labels.items()):
                return v
        return None

    def between(what, metric, a, b):
        nonlocal checked, exact
        a, b = int(a), int(b)
        checked += 1
        if a == b:
            exact += 1
        if metric is None:
            problems.append(f"{what}: missing from /metrics (stats: {a})")
        elif not a <= metric <= b:
            problems.append(f"{what}: /metrics {metric:.0f}, stats {a} .. {b}")

    for p1, p2 in zip(s1["ports"], s2["ports"]):
        port = p1["name"]
        for f in ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes",
                  "hw_ipackets", "hw_opackets", "transport_paced"):
            between(f"port {port} {f}", get(f"spinnic_port_{f}_total", port=port),
                    p1[f], p2[f])
        for reason, v in p1["drops"].items():
            between(f"port {port} drops {reason}",
                    get("spinnic_port_drops_total", port=port, reason=reason),
                    v, p2["drops"][reason])
        for f in ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes"):
            shares = [v for (n, lbl), v in samples.items()
                      if n == f"spinnic_port_hpu_{f}_total" and dict(lbl).get("port") == port]
            total = get(f"spinnic_port_{f}_total", port=port)
            if len(shares) != len(s1["hpus"]) or sum(shares) != total:
                problems.append(f"port {port} {f}: per-HPU shares {shares} do not sum to {total}")
        up = get("spinnic_port_link_up", port=port)
        if up != (1.0 if p1["link_up"] else 0.0):
            problems.append(f"port {port}: link_up {up} in /metrics, {p1['link_up']} in stats")
    for h1, h2 in zip(s1["hpus"], s2["hpus"]):
        for f in ("loops", "busy_loops", "rx_packets", "tx_packets", "events",
                  "emitted"):
            between(f"hpu {h1['index']} {f}",
                    get(f"spinnic_hpu_{f}_total", hpu=h1["index"]), h1[f], h2[f])
    for e1, e2 in zip(s1["handlers"], s2["handlers"]):
        name = e1["name"]
        for f in ("messages", "packets", "bytes", "invocations", "cycles",
                  "dropped", "failed"):
            between(f"handler {name} {f}",
                    get(f"spinnic_handler_{f}_total", handler=name), e1[f], e2[f])
        between(f"handler {name} histogram count",
                get("spinnic_handler_cycles_per_invocation_count", handler=name),
                e1["invocations"], e2["invocations"])
        between(f"handler {name} histogram sum",
                get("spinnic_handler_cycles_per_invocation_sum", handler=name),
                e1["cycles"], e2["cycles"])
    for transport in ("diad", "roce"):
        after = {c["name"]: c["value"] for c in s2.get(transport, [])}
        for c in s1.get(transport, []):
            name = c["name"]
            if name.startswith("drop_"):
                metric = get(f"spinnic_{transport}_drops_total", reason=name[5:])
            else:
                metric = get(f"spinnic_{transport}_{name}_total")
            between(f"{transport} {name}", metric, c["value"], after[name])
            if name == "rtt_samples":
                between(f"{transport} rtt histogram count",
                        get(f"spinnic_{transport}_rtt_seconds_count"),
                        c["value"], after[name])
    return problems, checked, exact


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "format":
        _, types, problems = parse(open(sys.argv[2]).read())
        for p in problems:
            print(p)
        print(f"{len(types)} families, {len(problems)} problems")
        return 1 if problems else 0
    if len(sys.argv) == 5 and sys.argv[1] == "compare":
        samples, _, problems = parse(open(sys.argv[2]).read())
        s1 = json.load(open(sys.argv[3]))
        s2 = json.load(open(sys.argv[4]))
        more, checked, exact = compare(samples, s1, s2)
        for p in problems + more:
            print(p)
        print(f"{checked} values compared, {exact} of them exact (equal before and after)")
        return 1 if problems or more or checked == 0 else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

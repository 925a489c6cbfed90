"""Core pinning for the benchmark harnesses (bench/*/run), and what they
say when the machine has too few cores to pin.

A harness lists its busy pollers: threads that spin whether or not there is
work (each spinnicd HPU worker, spinnic-impair's lcore, spinnic-gen's loop,
each dpdk-testpmd forwarding lcore). A main lcore is not one: spinnicd's
serves the control plane and sleeps, dpdk-testpmd's waits on stdin.

  plan(pollers)   with at least as many usable cores (os.sched_getaffinity)
                  as pollers: a core of its own for each poller, in order,
                  and the core for the main lcores (a spare one, else the
                  first poller's: the harness lists first the poller that
                  main lcores may share with, never a spinnicd worker).
                  Otherwise scheduler-bound: the pollers share cores, every
                  throughput and latency figure measures the kernel's
                  time slices as much as spinnic.
  cost_model()    runs bench/cost/cost_bench once for the paths a harness
                  measures: cycles per packet and Gb/s per core of one
                  thread with no other poller, the figure printed beside a
                  scheduler-bound one (bench/cost/README.md).
  mark(record)    puts `scheduler_bound`, `pollers`, `cores` and the cost
                  model's figure of the path on a figure's record.
"""
import json
import os
import subprocess
from typing import List, Optional

COST_BENCH = os.path.join("bench", "cost", "cost_bench")
# Operations per benchmark: the figure is a median per operation, so a few
# hundred are plenty and the run takes seconds.
COST_ITERATIONS = 400


def usable_cores() -> List[int]:
    """The cores this process (and what it starts) may run on."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def plan(pollers: List[str], cores: Optional[List[int]] = None) -> dict:
    """Whether `pollers` fit on `cores` (default: usable_cores()), and
    where each goes if they do (`assignment`: name -> core, `main_core`)."""
    cores = usable_cores() if cores is None else list(cores)
    p = {"pollers": len(pollers), "cores": len(cores), "poller_names": list(pollers),
         "usable_cores": cores, "scheduler_bound": len(pollers) > len(cores),
         "assignment": None, "main_core": None}
    if not p["scheduler_bound"]:
        p["assignment"] = dict(zip(pollers, cores))
        p["main_core"] = cores[len(pollers)] if len(cores) > len(pollers) else cores[0]
    return p


def describe(p: dict) -> str:
    """One line for the log and summary.md."""
    if p["scheduler_bound"]:
        return (f"scheduler-bound: {p['pollers']} busy pollers "
                f"({', '.join(p['poller_names'])}) on {p['cores']} cores: they share "
                f"cores, so every throughput and latency figure measures the "
                f"scheduler's time slices as much as spinnic; the cost model's "
                f"figure (bench/cost, one thread, no scheduler) is beside each")
    where = ", ".join(f"{n} on core {c}" for n, c in p["assignment"].items())
    return (f"pinned: {p['pollers']} busy pollers on {p['cores']} cores, each on its "
            f"own ({where}); main lcores on core {p['main_core']}")


def cost_model(builddir: str, benchmarks: List[str], timeout: float = 300) -> dict:
    """cost_bench's figures for `benchmarks` (Google Benchmark names, e.g.
    BM_DiadWrite, BM_Passthrough/bytes:64): {"binary", "command",
    "tsc_hz", "benchmarks": {name: {...}}, "error"}. A missing binary or a
    failed run is an `error`, never an exception."""
    binary = os.path.join(builddir, COST_BENCH)
    out = {"binary": binary, "benchmarks": {}, "error": None}
    if not os.access(binary, os.X_OK):
        out["error"] = (f"cost model missing: no {binary} (ninja -C {builddir} "
                        f"bench/cost/cost_bench)")
        return out
    # Names end there or go on with "/iterations:N" (fixed iterations).
    regex = "^(" + "|".join(benchmarks) + ")(/iterations:[0-9]+)?$"
    argv = [binary, "--benchmark_format=json", f"--benchmark_filter={regex}"]
    out["command"] = f"SPINNIC_BENCH_ITERATIONS={COST_ITERATIONS} " + " ".join(argv)
    env = dict(os.environ, SPINNIC_BENCH_ITERATIONS=str(COST_ITERATIONS))
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except (OSError, subprocess.SubprocessError) as e:
        out["error"] = f"cost_bench did not run: {e}"
        return out
    if p.returncode != 0:
        out["error"] = (f"cost_bench exited with status {p.returncode}: "
                        f"{p.stderr.strip()[-300:]}")
        return out
    try:
        report = json.loads(p.stdout)
    except ValueError:
        out["error"] = "cost_bench printed no JSON"
        return out
    ctx = report.get("context", {})
    tsc_hz = float(ctx["tsc_hz"]) if ctx.get("tsc_hz") else None
    out["tsc_hz"] = tsc_hz
    for b in report.get("benchmarks", []):
        name = b["name"].split("/iterations:")[0]
        if b.get("error_occurred"):
            out["benchmarks"][name] = {"error": b.get("error_message")}
            continue
        cpp = b.get("cycles_per_packet")
        out["benchmarks"][name] = {
            "cycles_per_packet": cpp,
            "cycles_per_op": b.get("cycles_per_op"),
            "packets_per_op": b.get("packets_per_op"),
            "ratio_to_memcpy": b.get("ratio_to_memcpy"),
            "gbps_per_core": b.get("gbps_per_core"),
            # Packets per second one core carries at that cost.
            "mpps_per_core": tsc_hz / cpp / 1e6 if tsc_hz and cpp else None,
            # One operation's CPU time (a read's round trip, both ends).
            "us_per_op": (b["cycles_per_op"] / tsc_hz * 1e6
                          if tsc_hz and b.get("cycles_per_op") else None),
        }
    missing = [n for n in benchmarks if n not in out["benchmarks"]]
    if missing:
        out["error"] = f"cost_bench did not report {', '.join(missing)}"
    return out


def figure(cost: Optional[dict], benchmark: Optional[str]) -> dict:
    """The cost model's figure of one path, for a record (with `benchmark`
    naming it), or why there is none."""
    if not benchmark:
        return {"benchmark": None, "error": "no cost-model path for this figure"}
    if cost is None:
        return {"benchmark": benchmark, "error": "cost model not run"}
    b = cost["benchmarks"].get(benchmark)
    if b is None:
        return {"benchmark": benchmark, "error": cost.get("error") or "not reported"}
    return dict(b, benchmark=benchmark)


def mark(record: dict, p: dict, cost: Optional[dict], benchmark: Optional[str]) -> None:
    """Marks one throughput or latency record as scheduler-bound (nothing
    when `p` is not), with the cost model's figure of its path."""
    if not p["scheduler_bound"] or record is None:
        return
    record["scheduler_bound"] = True
    record["pollers"] = p["pollers"]
    record["cores"] = p["cores"]
    record["cost_model"] = figure(cost, benchmark)


def top(p: dict, cost: Optional[dict]) -> dict:
    """The fields a result.json carries at its top."""
    t = {"scheduler_bound": p["scheduler_bound"], "pollers": p["pollers"], "cores": p["cores"],
         "pinning_plan": p}
    if cost is not None:
        t["cost_model"] = cost
    return t


def cell(fig: Optional[dict], latency: bool = False) -> str:
    """A cost-model figure for a summary.md table cell: cycles per packet
    and Gb/s (and Mpps) per core; for a latency, the operation's cycles and
    CPU time."""
    if not fig:
        return "-"
    if fig.get("error") and fig.get("cycles_per_packet") is None:
        return f"({fig['error']})"
    if latency:
        s = f"{fig['cycles_per_op']:.0f} cycles"
        if fig.get("us_per_op") is not None:
            s += f" = {fig['us_per_op']:.2f} us of CPU"
    else:
        s = f"{fig['cycles_per_packet']:.0f} cycles/pkt, {fig['gbps_per_core']:.3g} Gb/s/core"
        if fig.get("mpps_per_core") is not None:
            s += f", {fig['mpps_per_core']:.2f} Mpps/core"
    return s + f" (`{fig['benchmark']}`)"


def markdown(p: dict, cost: Optional[dict]) -> List[str]:
    """summary.md lines: the pinning, and when scheduler-bound, a visible
    mark and the cost model's figures."""
    if not p["scheduler_bound"]:
        return [f"Pinning: {describe(p)}.", ""]
    lines = [f"**Scheduler-bound: {p['pollers']} busy pollers on {p['cores']} cores** "
             f"({', '.join(p['poller_names'])}). Every throughput and latency figure below "
             f"measures the scheduler's time slices as much as spinnic "
             f"(`scheduler_bound` in result.json); the cost model's figure for the same "
             f"path (bench/cost/cost_bench: one thread, no other poller) is beside it.", ""]
    if cost is None:
        return lines
    if cost.get("error"):
        lines += [f"Cost model: {cost['error']}", ""]
    if cost["benchmarks"]:
        lines += ["| cost-model path | cycles/packet | Gb/s per core | Mpps per core |",
                  "|---|---|---|---|"]
        for name, b in cost["benchmarks"].items():
            if b.get("error"):
                lines.append(f"| `{name}` | error: {b['error']} | | |")
                continue
            mpps = b.get("mpps_per_core")
            lines.append(f"| `{name}` | {b['cycles_per_packet']:.0f} | "
                         f"{b['gbps_per_core']:.3g} | "
                         f"{'-' if mpps is None else format(mpps, '.2f')} |")
        lines += ["", f"(`{cost.get('command', '')}`)", ""]
    return lines

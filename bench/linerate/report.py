"""bench/linerate/run's report: the medians and ratios of each (scenario,
size, HPU count) entry (`summary`, kept in result.json), summary.md (Mpps
DUT / reference / ratio, zero-loss rates, latency percentiles) and the plots
throughput.png and latency_cdf.png, made from the full result.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pinning  # noqa: E402  (bench/pinning.py: scheduler-bound figures)

PCTS = ["p50", "p90", "p99", "p999", "max"]


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(d, r):
    return d / r if d is not None and r else None


def summarize(entry: dict) -> None:
    """Medians over the rounds of one (scenario, size, hpus); ratio DUT/ref."""
    summ = {}
    for role in ("dut", "ref"):
        recs = [rd[role] for rd in entry["rounds"] if role in rd]
        flat = [r["flat"]["rx_pps"] / 1e6 for r in recs
                if r.get("flat") and r["flat"].get("error") is None]
        zl = [r["search"]["zero_loss_pps"] / 1e6 for r in recs
              if r.get("search") and "zero_loss_pps" in r["search"]]
        lat = [r["latency"]["latency_ns"] for r in recs
               if r.get("latency") and r["latency"].get("error") is None
               and r["latency"]["latency_ns"].get("count")]
        s = {"flat_mpps": flat, "flat_mpps_median": median_or_none(flat),
             "zero_loss_mpps": zl, "zero_loss_mpps_median": median_or_none(zl),
             "latency_ns": ({p: median_or_none([l[p] for l in lat]) for p in PCTS}
                            if lat else None)}
        summ[role] = s
    d, r = summ["dut"], summ["ref"]
    summ["ratio"] = {"flat": ratio(d["flat_mpps_median"], r["flat_mpps_median"]),
                     "zero_loss": ratio(d["zero_loss_mpps_median"],
                                        r["zero_loss_mpps_median"])}
    summ["dut_mpps_per_hpu"] = (d["flat_mpps_median"] / entry["hpus"]
                                if d["flat_mpps_median"] is not None else None)
    entry["summary"] = summ


def fmt(v, spec=".2f"):
    return "-" if v is None else format(v, spec)


def write_markdown(result: dict, path: str) -> None:
    env = result["environment"]
    cfg = result["config"]
    L = [f"# Line-rate run {result['started']}", ""]
    if not result["complete"]:
        L += [f"**Incomplete: {result['error']}** (partial results below)", ""]
    L += [f"- CPU: {env['cpu_model']}, {env['cores']} cores; DPDK {env['dpdk_version']}; "
          f"spinnicd {env['spinnicd_version']} ({env['build_type']}); commit {env['git_commit']}",
          f"- Pinning: {env['pinning']}",
          f"- {cfg['rounds']} round(s), DUT and reference alternately; flat-out "
          f"{cfg['duration_s']} s per run; Mpps = frames received back by the generator "
          f"per second (one direction); ratio = spinnicd / dpdk-testpmd (medians)"]
    if cfg["search"]["enabled"]:
        s = cfg["search"]
        L.append(f"- Zero-loss search: at most {s['steps']} trials of {s['trial_s']} s, "
                 f"loss <= {s['loss_tolerance']:g} of sent, resolution {s['resolution']:g}")
    crashes = {"dut": 0, "ref": 0}
    for sc in result["scenarios"]:
        for e in sc["results"]:
            for rd in e["rounds"]:
                for role in crashes:
                    crashes[role] += len(rd.get(role, {}).get("crashes", []))
    if any(crashes.values()):
        L.append(f"- Forwarder crashes in DPDK 22.11 memif at a generator's disconnect, "
                 f"restarted (result.json `crashes`): spinnicd {crashes['dut']}, "
                 f"dpdk-testpmd {crashes['ref']}")
    L.append("")
    if "pinning_plan" in result:
        L += pinning.markdown(result["pinning_plan"], result.get("cost_model"))
    bound = any(e.get("scheduler_bound") for sc in result["scenarios"] for e in sc["results"])
    for sc in result["scenarios"]:
        L += [f"## {sc['name']}", "", sc["description"], "",
              "| frame | HPUs | DUT Mpps | ref Mpps | ratio | DUT Mpps/HPU "
              "| zero-loss DUT | zero-loss ref | ratio |"
              + (" scheduler-bound: cost model, one core |" if bound else ""),
              "|---|---|---|---|---|---|---|---|---|" + ("---|" if bound else "")]
        for e in sc["results"]:
            s = e.get("summary")
            if not s:
                continue
            d, r = s["dut"], s["ref"]
            L.append(f"| {e['size']} B | {e['hpus']} | {fmt(d['flat_mpps_median'], '.3f')} "
                     f"| {fmt(r['flat_mpps_median'], '.3f')} | {fmt(s['ratio']['flat'])} "
                     f"| {fmt(s['dut_mpps_per_hpu'], '.3f')} "
                     f"| {fmt(d['zero_loss_mpps_median'], '.3f')} "
                     f"| {fmt(r['zero_loss_mpps_median'], '.3f')} "
                     f"| {fmt(s['ratio']['zero_loss'])} |"
                     + ((f" {pinning.cell(e.get('cost_model'))} |" if e.get("scheduler_bound")
                         else " no: a core per poller |") if bound else ""))
        lat_rows = [e for e in sc["results"] if e.get("summary") and
                    (e["summary"]["dut"]["latency_ns"] or e["summary"]["ref"]["latency_ns"])]
        if lat_rows:
            L += ["", f"Round-trip latency at {cfg['latency_rate_pps']} pps (µs, median "
                  "over rounds)" + (" (scheduler-bound where the table above says so; "
                                     "the cost model has no reflect path)" if bound else "")
                  + ":", "",
                  "| frame | HPUs | role | p50 | p90 | p99 | p99.9 | max |",
                  "|---|---|---|---|---|---|---|---|"]
            for e in lat_rows:
                for role, label in (("dut", "spinnicd"), ("ref", "testpmd")):
                    lat = e["summary"][role]["latency_ns"]
                    if lat:
                        L.append(f"| {e['size']} B | {e['hpus']} | {label} | " +
                                 " | ".join(fmt(lat[p] / 1e3, ".1f") for p in PCTS) + " |")
        L.append("")
    L.append(f"Plots: {result['plots']}")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def write_plots(result: dict, out: str) -> str:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "plots skipped: matplotlib missing"
    scs = result["scenarios"]
    fig, axes = plt.subplots(1, max(1, len(scs)), figsize=(5 * max(1, len(scs)), 4),
                             squeeze=False)
    for ax, sc in zip(axes[0], scs):
        for hp in sorted({e["hpus"] for e in sc["results"]}):
            es = [e for e in sc["results"] if e["hpus"] == hp and e.get("summary")]
            x = [e["size"] for e in es]
            for role, label, style in (("dut", "spinnicd", "o-"), ("ref", "testpmd", "s-")):
                y = [e["summary"][role]["flat_mpps_median"] for e in es]
                pts = [(a, b) for a, b in zip(x, y) if b is not None]
                if pts:
                    ax.plot(*zip(*pts), style, label=f"{label} flat, {hp} HPU")
                z = [e["summary"][role]["zero_loss_mpps_median"] for e in es]
                pts = [(a, b) for a, b in zip(x, z) if b is not None]
                if pts:
                    ax.plot(*zip(*pts), style[0] + "--", alpha=0.6,
                            label=f"{label} zero-loss, {hp} HPU")
        ax.set_xscale("log", base=2)
        sizes = sorted({e["size"] for e in sc["results"]})
        ax.set_xticks(sizes)
        ax.set_xticklabels([str(x) for x in sizes], fontsize=7)
        ax.set_xlabel("frame size (B)")
        ax.set_ylabel("Mpps")
        ax.set_title(sc["name"])
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "throughput.png"), dpi=100)
    plt.close(fig)

    # CDF from the generator's percentiles (it reports no histogram).
    fig, ax = plt.subplots(figsize=(6, 4))
    levels = [0.5, 0.9, 0.99, 0.999, 1.0]
    drawn = 0
    for sc in scs:
        for e in sc["results"]:
            for role, label in (("dut", "spinnicd"), ("ref", "testpmd")):
                lat = (e.get("summary") or {}).get(role, {}).get("latency_ns")
                if lat:
                    xs = [lat[p] / 1e3 for p in PCTS]
                    ax.step(xs, levels, where="post", marker="o",
                            label=f"{sc['name']} {e['size']} B {label}")
                    drawn += 1
    if drawn:
        ax.set_xscale("log")
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "no latency scenario in this run", ha="center",
                transform=ax.transAxes)
    ax.set_xlabel("round-trip latency (µs)")
    ax.set_ylabel("fraction of frames")
    ax.set_title(f"latency at {result['config']['latency_rate_pps']} pps")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "latency_cdf.png"), dpi=100)
    plt.close(fig)
    return "throughput.png, latency_cdf.png"

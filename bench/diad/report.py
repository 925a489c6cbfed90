"""bench/diad/run's report: summary.md (the tables: goodput and ratio vs
size and vs max_transactions per loss, passthrough rates, read latency) and
the plots goodput_vs_size.png, goodput_vs_transactions.png, both made from
the full result (bench/result_json.py). Also the two frame-size figures the
harness and the report share.
"""
import os
import sys
from typing import Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pinning  # noqa: E402  (bench/pinning.py: scheduler-bound figures)

DIAD_OVERHEAD = 96       # IPv6 + UDP + DiAD header: payload = path_mtu - 96
GEN_MAX_FRAME = 1514     # spinnic-gen over memif: MTU 1500 + 14 (DPDK 22.11)
# The cost model's path of each figure (bench/cost/README.md), printed beside
# it when the run is scheduler-bound (bench/pinning.py).
COST_PATHS = {"write": "BM_DiadWrite", "stream": "BM_DiadStream", "read": "BM_DiadRead",
              "passthrough": "BM_Passthrough/bytes:1500"}


def write_markdown(result: dict, path: str) -> None:
    c = result["config"]
    L = [f"# DiAD goodput ({result['environment']['date']})", ""]
    L.append(f"Command: `{result['command']}`")
    L.append("")
    pm = result.get("path_mtu", {})
    L.append(f"path_mtu used: **{pm.get('used')}** (DiAD payload {(pm.get('used') or 0) - DIAD_OVERHEAD} B "
             f"per packet); candidates tried: "
             + ", ".join(f"{t['path_mtu']} ({'ok' if t['ok'] else 'failed'})" for t in pm.get("tried", [])))
    L.append("")
    for t in pm.get("tried", []):
        if not t["ok"]:
            L.append(f"- path_mtu {t['path_mtu']} failed: "
                     f"{t.get('why') or t.get('error') or (t.get('write') or {}).get('error')}")
            L.append("")
    L.append("Goodput = payload bytes / the server's DiadExecute wall time (MB/s = 10^6 B/s). "
             "Ratio = goodput / passthrough delivered payload rate (spinnic-gen frames of "
             f"min(path_mtu + 14, {GEN_MAX_FRAME}) B flat out A host -> A -> impair -> B -> B host, "
             "rx frames/s x (frame - 110) B), same impairment, same configuration, medians of "
             f"{c['rounds']} round(s). Impairment loss applies to both directions.")
    L.append("")
    if any(e.get("passthrough", {}).get("same_frames") is False for e in result["configurations"]):
        L.append(f"**Not the same frames**: spinnic-gen sends at most {GEN_MAX_FRAME} B frames over "
                 "memif (MTU 1500), smaller than this run's DiAD data frames; the ratios compare "
                 "DiAD's payload rate with passthrough's payload rate in those smaller frames.")
        L.append("")
    L.append(f"Pinning: {result['environment']['pinning']}")
    L.append("")
    bound = result.get("scheduler_bound", False)
    if "pinning_plan" in result:
        L += pinning.markdown(result["pinning_plan"], result.get("cost_model"))
    losses = c["losses"]

    def cell(p):
        if p is None:
            return "-"
        if p.get("error") and p.get("goodput_MBps") is None:
            return "error"
        g, r = p.get("goodput_MBps"), p.get("ratio")
        s = f"{g:.1f}" if g is not None else "-"
        s += f" ({r:.2f})" if r is not None else ""
        if p.get("capped"):
            s += "*"
        return s

    def find(mt, loss, op, size):
        for e in result["configurations"]:
            if e["max_transactions"] == mt and e["loss"] == loss:
                for p in e["points"]:
                    if p["op"] == op and p["size"] == size:
                        return p
        return None

    def pt(mt, loss):
        for e in result["configurations"]:
            if e["max_transactions"] == mt and e["loss"] == loss:
                return e.get("passthrough", {}).get("delivered_payload_MBps")
        return None

    def cost(op, latency=False):
        """The cost model's figure of op's path (any record carries it)."""
        for e in result["configurations"]:
            recs = e["points"] + [e.get("read_latency") or {}, e.get("passthrough") or {}]
            for p in recs:
                fig = p.get("cost_model")
                if fig and fig.get("benchmark") == COST_PATHS[op]:
                    return pinning.cell(fig, latency)
        return "-"

    extra = " cost model, one core |" if bound else ""
    hdr = "| " + " | ".join(f"loss {l * 100:g} %" for l in losses) + " |" + extra
    sep = "|---" * (len(losses) + bound) + "|"
    L.append(f"## Goodput vs message size (max_transactions {c['size_sweep_transactions']})")
    L.append("")
    L.append("MB/s (ratio to passthrough); * = message count capped (--max-bytes).")
    L.append("")
    L.append("| op | message " + hdr)
    L.append("|---|---" + sep)
    for op in c["ops"]:
        for size in c["sizes"]:
            L.append(f"| {op} | {size // 1024} KiB | " + " | ".join(
                cell(find(c["size_sweep_transactions"], l, op, size)) for l in losses) + " |"
                + (f" {cost(op)} |" if bound else ""))
    L.append(f"| passthrough | payload MB/s | " + " | ".join(
        (f"{pt(c['size_sweep_transactions'], l):.1f}" if pt(c['size_sweep_transactions'], l) else "-")
        for l in losses) + " |" + (f" {cost('passthrough')} |" if bound else ""))
    L.append("")
    L.append(f"## Goodput vs in-flight limit ({c['transactions_sweep_size'] // 1024} KiB messages)")
    L.append("")
    L.append("| op | max_transactions " + hdr)
    L.append("|---|---" + sep)
    for op in c["ops"]:
        for mt in c["transactions"]:
            L.append(f"| {op} | {mt} | " + " | ".join(
                cell(find(mt, l, op, c["transactions_sweep_size"])) for l in losses) + " |"
                + (f" {cost(op)} |" if bound else ""))
    L.append("")
    L.append("Passthrough payload MB/s per configuration (the denominators):")
    L.append("")
    L.append("| max_transactions " + hdr)
    L.append("|---" + sep)
    for mt in c["transactions"]:
        L.append(f"| {mt} | " + " | ".join(
            (f"{pt(mt, l):.1f}" if pt(mt, l) else "-") for l in losses) + " |"
            + (f" {cost('passthrough')} |" if bound else ""))
    L.append("")
    L.append(f"## 8-byte remote read round trip (max_transactions {c['size_sweep_transactions']}, "
             f"{c['read_repeat']} reads)")
    L.append("")
    L.append("| loss | p50 us | p99 us | max us |" + (" cost model, both ends |" if bound else ""))
    L.append("|---|---|---|---|" + ("---|" if bound else ""))
    for e in result["configurations"]:
        rl = e.get("read_latency")
        if rl:
            f = lambda k: f"{rl[k] / 1e3:.1f}" if rl.get(k) is not None else "-"
            L.append(f"| {e['loss'] * 100:g} % | {f('p50_ns')} | {f('p99_ns')} | {f('max_ns')} |"
                     + (f" {pinning.cell(rl.get('cost_model'), latency=True)} |" if bound else ""))
    L.append("")
    errs = [(e["max_transactions"], e["loss"], p["op"], p["size"], p["error"])
            for e in result["configurations"] for p in e["points"] if p.get("error")]
    crashes = sum(len(e["crashes"]) for e in result["configurations"])
    L.append(f"Session restarts (a process died or a start failed): {crashes}.")
    if errs:
        L.append("")
        L.append("Points with errors:")
        L.append("")
        for mt, l, op, size, err in errs:
            L.append(f"- max_transactions {mt}, loss {l}, {op} {size} B: {err[:300]}")
    if result.get("error"):
        L.append("")
        L.append(f"**Incomplete**: {result['error']}")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def write_plots(result: dict, out: str) -> Optional[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not installed: no plots"
    c = result["config"]
    confs = result["configurations"]
    for name, xs, key, xlabel, fixed in (
            ("goodput_vs_size.png", c["sizes"], "size", "message size (KiB)", None),
            ("goodput_vs_transactions.png", c["transactions"], "max_transactions",
             "max_transactions", c["transactions_sweep_size"])):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for op in c["ops"]:
            for loss in c["losses"]:
                g, r, xv = [], [], []
                for x in xs:
                    for e in confs:
                        if e["loss"] != loss:
                            continue
                        if key == "size":
                            if e["max_transactions"] != c["size_sweep_transactions"]:
                                continue
                            size, tag = x, x
                        else:
                            if e["max_transactions"] != x:
                                continue
                            size, tag = fixed, x
                        for p in e["points"]:
                            if p["op"] == op and p["size"] == size and p.get("goodput_MBps"):
                                xv.append(tag / 1024 if key == "size" else tag)
                                g.append(p["goodput_MBps"])
                                r.append(p.get("ratio") or 0)
                lbl = f"{op}, loss {loss * 100:g}%"
                axes[0].plot(xv, g, marker="o", label=lbl)
                axes[1].plot(xv, r, marker="o", label=lbl)
        for ax, yl in ((axes[0], "goodput (MB/s)"), (axes[1], "ratio to passthrough")):
            ax.set_xscale("log", base=2)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(yl)
            ax.grid(True, alpha=0.3)
        axes[1].legend(fontsize=7)
        fig.suptitle(f"DiAD {name[:-4].replace('_', ' ')} (path_mtu {result['path_mtu']['used']})")
        fig.tight_layout()
        fig.savefig(os.path.join(out, name), dpi=110)
        plt.close(fig)
    return None

#!/usr/bin/python3
"""Renders deploy/grafana/spinnic.json's panels to a PNG, without Grafana.

Grafana is not in Debian, so docs/img/dashboard.png is made by this script:
it reads the dashboard JSON, runs each panel's PromQL targets against a
Prometheus server's HTTP API (/api/v1/query_range), and draws the panels
with matplotlib in the dashboard's own grid layout (gridPos: 24 columns),
with each panel's title, unit and legend format. What Grafana does that
this does not: variables other than $instance (all instances) and
$__rate_interval (4 x --scrape-interval, Grafana's rule), panel types other
than timeseries (drawn as time series), thresholds, overrides.

  render_dashboard.py --prometheus http://127.0.0.1:9090 --minutes 5 \
      --out docs/img/dashboard.png

docs/metrics.md describes the whole run (spinnicd, traffic, Prometheus).
"""

import argparse
import datetime
import json
import math
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Grafana's dark theme and its classic series palette.
BACKGROUND = "#111217"
PANEL = "#181b1f"
BORDER = "#2c3235"
TEXT = "#ccccdc"
DIM = "#8e8e8e"
PALETTE = ["#73bf69", "#f2cc0c", "#8ab8ff", "#ff780a", "#f2495c", "#5794f2",
           "#b877d9", "#705da0", "#37872d", "#fade2a", "#96d98d", "#ffb357"]

GRID_COLUMNS = 24
LEGEND_LINES = 4


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dashboard", default=os.path.join(REPO, "deploy/grafana/spinnic.json"))
    p.add_argument("--prometheus", default="http://127.0.0.1:9090",
                   help="Prometheus base URL (default %(default)s)")
    p.add_argument("--minutes", type=float, default=5,
                   help="time range: the last N minutes before --end (default %(default)s)")
    p.add_argument("--end", type=float, default=None,
                   help="end of the range, Unix seconds (default: now)")
    p.add_argument("--step", type=float, default=5, help="query step, seconds (default %(default)s)")
    p.add_argument("--scrape-interval", type=float, default=5,
                   help="the scrape interval; $__rate_interval is 4 times it (default %(default)s)")
    p.add_argument("--out", default=os.path.join(REPO, "docs/img/dashboard.png"))
    p.add_argument("--width", type=float, default=16, help="inches at 100 dpi (default %(default)s)")
    args = p.parse_args(argv)
    if args.minutes <= 0 or args.step <= 0 or args.scrape_interval <= 0:
        p.error("--minutes, --step and --scrape-interval must be positive")
    return args


def expand(expr, rate_interval):
    """The dashboard variables, as Grafana would expand them."""
    expr = expr.replace("$__rate_interval", "%ds" % rate_interval)
    expr = expr.replace('=~"$instance"', '=~".+"').replace('=~"${instance}"', '=~".+"')
    if "$" in expr:
        raise ValueError("unsupported dashboard variable in: %s" % expr)
    return expr


def query_range(base, expr, start, end, step):
    query = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": step})
    url = "%s/api/v1/query_range?%s" % (base.rstrip("/"), query)
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            body = json.load(response)
    except urllib.error.HTTPError as e:
        detail = e.read().decode(errors="replace")
        raise SystemExit("render_dashboard: Prometheus refused %r: %s %s" % (expr, e.code, detail))
    except (urllib.error.URLError, OSError) as e:
        raise SystemExit("render_dashboard: cannot reach Prometheus at %s (%s): is it running? "
                         "pass --prometheus" % (base, e))
    if body.get("status") != "success":
        raise SystemExit("render_dashboard: query %r failed: %s" % (expr, body))
    return body["data"]["result"]


def legend(fmt, labels):
    if not fmt:
        return "{" + ", ".join("%s=%s" % kv for kv in sorted(labels.items())) + "}"
    out = fmt
    while "{{" in out:
        head, _, rest = out.partition("{{")
        name, _, tail = rest.partition("}}")
        out = head + labels.get(name.strip(), "") + tail
    return " ".join(out.split())


def si(value, suffix):
    if value == 0:
        return "0" + (" " + suffix if suffix else "")
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= factor:
            return "%g %s%s" % (round(value / factor, 2), prefix, suffix)
    return "%g%s" % (round(value, 3), " " + suffix if suffix else "")


def seconds(value):
    if value == 0:
        return "0"
    if abs(value) < 1e-3:
        return "%g µs" % round(value * 1e6, 1)
    if abs(value) < 1:
        return "%g ms" % round(value * 1e3, 1)
    return "%g s" % round(value, 2)


FORMATTERS = {
    "pps": lambda v: si(v, "p/s"),
    "bps": lambda v: si(v, "b/s"),
    "ops": lambda v: si(v, "ops/s"),
    "s": seconds,
    "percentunit": lambda v: "%.3g%%" % (v * 100),
}


def style_axes(ax, start, end):
    ax.set_facecolor(PANEL)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.tick_params(colors=DIM, labelsize=7, length=0)
    ax.grid(True, color=BORDER, linewidth=0.6)
    # Every panel spans the same range, as in Grafana.
    ax.set_xlim(utc(start), utc(end))
    ax.xaxis.set_major_locator(mdates.AutoDateLocator(minticks=4, maxticks=7,
                                                      tz=datetime.timezone.utc))
    fmt = "%H:%M" if end - start >= 600 else "%H:%M:%S"
    ax.xaxis.set_major_formatter(mdates.DateFormatter(fmt, tz=datetime.timezone.utc))
    ax.yaxis.set_major_locator(MaxNLocator(5))


def utc(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc)


def draw_panel(fig, panel, series, box, unit, start, end):
    """box: (left, bottom, width, height) in figure fractions for the panel."""
    left, bottom, width, height = box
    pad = 0.004
    frame = fig.add_axes([left + pad, bottom + pad, width - 2 * pad, height - 2 * pad])
    frame.set_facecolor(PANEL)
    frame.set_xticks([])
    frame.set_yticks([])
    for spine in frame.spines.values():
        spine.set_color(BORDER)
    frame.text(0.012, 0.985, panel.get("title", ""), color=TEXT, fontsize=9, fontweight="bold",
               va="top", ha="left", transform=frame.transAxes)
    legend_rows = min(len(series), LEGEND_LINES)
    legend_frac = (0.055 * legend_rows + 0.02) if series else 0
    plot = fig.add_axes([left + pad + width * 0.085,
                         bottom + pad + height * (0.1 + legend_frac),
                         width * 0.88, height * (0.74 - legend_frac)])
    style_axes(plot, start, end)
    formatter = FORMATTERS.get(unit)
    if formatter:
        plot.yaxis.set_major_formatter(FuncFormatter(lambda v, _: formatter(v)))
    if not series:
        plot.text(0.5, 0.5, "No data", color=DIM, fontsize=11, ha="center", va="center",
                  transform=plot.transAxes)
        plot.set_yticks([])
        return
    for i, (name, times, values) in enumerate(series):
        plot.plot(times, values, color=PALETTE[i % len(PALETTE)], linewidth=1.1, label=name)
    if unit == "percentunit":
        plot.set_ylim(bottom=0)
    else:
        low, high = plot.get_ylim()
        plot.set_ylim(bottom=min(0, low), top=high if high > 0 else 1)
    handles, labels = plot.get_legend_handles_labels()
    if len(handles) > LEGEND_LINES * 2:
        extra = len(handles) - (LEGEND_LINES * 2 - 1)
        handles = handles[:LEGEND_LINES * 2 - 1]
        labels = labels[:LEGEND_LINES * 2 - 1] + ["(+%d more)" % extra]
        handles.append(plt.Line2D([], [], color=PANEL))
    plot.legend(handles, labels, loc="upper left", bbox_to_anchor=(-0.06, -0.12),
                ncol=2 if len(handles) > LEGEND_LINES else 1, frameon=False, fontsize=7,
                labelcolor=TEXT, handlelength=1.2, borderaxespad=0, columnspacing=1.5)


def main(argv):
    args = parse_args(argv)
    with open(args.dashboard) as f:
        dashboard = json.load(f)
    end = args.end if args.end is not None else time.time()
    start = end - args.minutes * 60
    rate_interval = int(round(4 * args.scrape_interval))

    panels = [p for p in dashboard.get("panels", []) if p.get("type") != "row" and "gridPos" in p]
    if not panels:
        raise SystemExit("render_dashboard: %s has no panels with a gridPos" % args.dashboard)
    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels)
    header = 1.6  # grid units for the title line
    total = rows + header
    # A Grafana grid unit is 30 px high, a column 1/24 of the width.
    unit_px = 30 * 1.1
    fig_w = args.width
    fig_h = total * unit_px / 100
    fig = plt.figure(figsize=(fig_w, fig_h), dpi=100, facecolor=BACKGROUND)

    non_empty = 0
    for panel in panels:
        grid = panel["gridPos"]
        unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit", "none")
        series = []
        for target in panel.get("targets", []):
            if target.get("hide") or not target.get("expr"):
                continue
            for result in query_range(args.prometheus, expand(target["expr"], rate_interval),
                                      start, end, args.step):
                points = [(float(t), float(v)) for t, v in result["values"]
                          if math.isfinite(float(v))]
                if not points:
                    continue
                times = [utc(t) for t, _ in points]
                series.append((legend(target.get("legendFormat"), result["metric"]), times,
                               [v for _, v in points]))
        non_empty += bool(series)
        box = (grid["x"] / GRID_COLUMNS, 1 - (header + grid["y"] + grid["h"]) / total,
               grid["w"] / GRID_COLUMNS, grid["h"] / total)
        draw_panel(fig, panel, series, box, unit, start, end)
        print("render_dashboard: %-40s %d series" % (panel.get("title", "?"), len(series)))

    span = "%s to %s UTC" % (
        datetime.datetime.fromtimestamp(start, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
        datetime.datetime.fromtimestamp(end, datetime.timezone.utc).strftime("%H:%M"))
    fig.text(0.006, 1 - 0.55 / total, dashboard.get("title", "dashboard"), color=TEXT,
             fontsize=13, fontweight="bold", va="center")
    fig.text(0.994, 1 - 0.55 / total,
             "%s   |   rendered from %s's PromQL by render_dashboard.py (not Grafana)"
             % (span, os.path.basename(args.dashboard)),
             color=DIM, fontsize=8, va="center", ha="right")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out, dpi=100, facecolor=BACKGROUND)
    plt.close(fig)
    shrink(args.out)
    print("render_dashboard: %s: %d of %d panels with data, %d KB"
          % (args.out, non_empty, len(panels), os.path.getsize(args.out) // 1024))
    return 0 if non_empty else 1


def shrink(path):
    """A palette PNG: a quarter of the size, no visible change on flat colours."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

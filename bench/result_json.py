#!/usr/bin/python3
"""The two result files the benchmark harnesses write (bench/*/run):

  result.json       the summary a report needs and the repository keeps:
                    every figure of the full result except the per-round
                    measurements (each `rounds` list becomes `round_count`;
                    the medians over them stay) and counters that stayed 0
  result.full.json  everything, every round's record (.gitignored: not
                    committed)

summary.md and the plots are made from the full result in memory.

As a program: `bench/result_json.py result.json...` rewrites committed
result.json files as summaries (idempotent).
"""
import copy
import json
import os
import sys

SUMMARY = "result.json"
FULL = "result.full.json"

# Dictionaries of counters (the appliances' and the impairment's): only
# their non-zero entries are kept.
COUNTER_KEYS = {"counters", "impair_stats"}


def _is_zero(v) -> bool:
    return v is None or v in (0, "0", 0.0) or (isinstance(v, (dict, list)) and not v)


def _nonzero(x):
    """x without the entries (recursively) that are zero or empty."""
    if isinstance(x, dict):
        kept = {k: _nonzero(v) for k, v in x.items()}
        return {k: v for k, v in kept.items() if not _is_zero(v) or k in ("id", "name")}
    if isinstance(x, list):
        return [_nonzero(v) for v in x]
    return x


def summarize(result):
    """The commit-worthy summary of a full result (a new object)."""
    def walk(x):
        if isinstance(x, dict):
            out = {}
            for k, v in x.items():
                if k == "rounds" and isinstance(v, list):
                    out["round_count"] = len(v)
                elif k in COUNTER_KEYS and isinstance(v, (dict, list)):
                    out[k] = _nonzero(v)
                else:
                    out[k] = walk(v)
            return out
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x
    return walk(copy.deepcopy(result))


def _flat(x) -> bool:
    values = x.values() if isinstance(x, dict) else x
    return all(not isinstance(v, (dict, list)) for v in values)


def dumps_compact(x, default=None, level=0) -> str:
    """JSON with one line per object or list of plain values (a round's
    record, a counter set), nested ones indented by one space per level."""
    if not isinstance(x, (dict, list)) or _flat(x):
        return json.dumps(x, default=default)
    pad = " " * (level + 1)
    if isinstance(x, dict):
        items = [f"{pad}{json.dumps(k)}: {dumps_compact(v, default, level + 1)}"
                 for k, v in x.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * level + "}"
    items = [pad + dumps_compact(v, default, level + 1) for v in x]
    return "[\n" + ",\n".join(items) + "\n" + " " * level + "]"


def write(out_dir: str, result: dict, default=None) -> None:
    """Writes result.full.json (everything) and result.json (the summary)."""
    with open(os.path.join(out_dir, FULL), "w") as f:
        json.dump(result, f, indent=1, default=default)
    with open(os.path.join(out_dir, SUMMARY), "w") as f:
        f.write(dumps_compact(summarize(result), default=default) + "\n")


def main(paths) -> int:
    for path in paths:
        with open(path) as f:
            result = json.load(f)
        with open(path, "w") as f:
            f.write(dumps_compact(summarize(result), default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

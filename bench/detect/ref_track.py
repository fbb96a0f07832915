#!/usr/bin/env python3
"""How well each reference kernel tracks a cell over a recording's base runs.

usage: ref_track.py [--cell SUBSTRING]... RECORDING.jsonl.xz...

For each recording (bench/detect/record.py) and each cell whose key contains one of the
substrings (default: the four shapes' subject cells), over the base runs (the unchanged build,
one run each): the robust spread (1.4826 x MAD) of the cell's log p50, then for every kernel of
the family, read beside the cell itself and as the run's state (its median beside the run's first
three anchor cells, as collector/analysis/analysis_read.c forms the memory states), the spread
left about the kernel's Theil-Sen line in log (slope clamped to [0, 1.5], as
collector/analysis/detect_levels.c does). A reference tracks the cell where it leaves less.
Exit status: 0, or 2 on bad usage."""

import argparse
import json
import lzma
import math
import statistics
import sys

ANCHORS = 3  # AW_ANCHORS


def is_anchor(c):
    return (c.get("op") and not c.get("reader") and not c.get("subject")
            and not c.get("kernel") and c.get("contender_cpu") is None
            and c.get("c") in (None, 0) and not c.get("d"))


def spread(v):
    m = statistics.median(v)
    return 1.4826 * statistics.median([abs(x - m) for x in v])


def theil_sen(y, x):
    s = [(y[j] - y[i]) / (x[j] - x[i]) for i in range(len(x)) for j in range(i + 1, len(x))
         if abs(x[j] - x[i]) > 1e-9]
    return min(1.5, max(0.0, statistics.median(s))) if s else float("nan")


def rows_of(path, wanted):
    """{cell key: [(p50, {kernel: beside}, {kernel: at anchors})]} over the base runs."""
    out = {}
    with lzma.open(path, "rt") as f:
        for line in f:
            d = json.loads(line)
            if "doc" not in d or d.get("variant") != "base":
                continue
            doc = d["doc"]
            refs = {r["kernel"]: r["values"] for r in doc.get("references", [])}
            anchor = {k: [] for k in refs}
            for i, c in enumerate(doc["cells"]):
                if c["status"] == "ok" and is_anchor(c):
                    for k, v in refs.items():
                        if len(anchor[k]) < ANCHORS and v[i]:
                            anchor[k].append(v[i])
            state = {k: statistics.median(v) for k, v in anchor.items() if v}
            for i, c in enumerate(doc["cells"]):
                if c["status"] != "ok" or not any(w in c["key"] for w in wanted):
                    continue
                beside = {k: v[i] for k, v in refs.items() if v[i]}
                out.setdefault(c["key"], []).append((c["p50"], beside, state))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cell", action="append", default=None)
    ap.add_argument("recordings", nargs="+")
    args = ap.parse_args()
    wanted = args.cell or ["op=overlap", "op=hash", "op=branchy", "op=chain"]
    for path in args.recordings:
        print(path)
        for key, rows in sorted(rows_of(path, wanted).items()):
            y = [math.log(r[0]) for r in rows]
            parts = ["%d runs, spread %.3f" % (len(rows), spread(y))]
            for kernel in sorted(rows[0][1]):
                for where, at in (("beside", 1), ("anchors", 2)):
                    pairs = [(a, math.log(r[at][kernel])) for a, r in zip(y, rows)
                             if kernel in r[at]]
                    if len(pairs) < 10:
                        continue
                    b = theil_sen([p[0] for p in pairs], [p[1] for p in pairs])
                    if math.isnan(b):
                        continue
                    left = spread([a - b * x for a, x in pairs])
                    parts.append("%s %s %.3f" % (kernel, where, left))
            print("  %s: %s" % (key, "; ".join(parts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

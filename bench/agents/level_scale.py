#!/usr/bin/python3
"""How long this machine stays in one level (docs/benchmarks.md "The machine's levels"): builds
and runs level_scale.c (a throughput-bound block of independent multiplies and a latency-bound
chain timed back to back in fine slices on one CPU), then prints the levels the throughput block
falls into, how long the machine dwells in each, and how often a window of a given length sees
more than one level. The A/B agent's slice length is set from the last figure (agents/ab.c).

usage: level_scale.py [--seconds 40] [--slice-us 20] [--cpu 0] [--threshold 1.05]
                      [--raw FILE] [--json FILE]"""

import argparse
import bisect
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def quantile(sorted_values, p):
    return sorted_values[int(p * (len(sorted_values) - 1))]


def read(path):
    data = open(path, "rb").read()
    at = data.rindex(b"TRAILER")
    n, steps, ticks_per_ns, chains = data[at:].split()[1:5]
    n, steps, ticks_per_ns = int(n), int(steps), float(ticks_per_ns)
    recs = [struct.unpack_from("<QII", data, 16 * i) for i in range(n)]
    start_ms = [r[0] / ticks_per_ns / 1e6 for r in recs]
    tp = [r[1] / ticks_per_ns / steps for r in recs]
    lat = [r[2] / ticks_per_ns / steps for r in recs]
    return start_ms, tp, lat, int(chains)


def runs_of(cls, start_ms, slice_ms):
    """Dwell times (ms) of consecutive slices of one class; a gap (the thread preempted) ends a
    run."""
    out = {False: [], True: []}
    first = 0
    for i in range(1, len(cls) + 1):
        if i == len(cls) or cls[i] != cls[first] or start_ms[i] - start_ms[i - 1] > 3 * slice_ms:
            out[cls[first]].append(start_ms[i - 1] - start_ms[first] + slice_ms)
            first = i
    return out


def time_weighted_median(runs):
    total, acc = sum(runs), 0
    for r in sorted(runs):
        acc += r
        if acc >= total / 2:
            return r
    return float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--slice-us", type=float, default=20)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--threshold", type=float, default=1.05,
                    help="a slice is 'shared' when its throughput block is this much slower "
                    "than the 5th percentile")
    ap.add_argument("--raw", help="read this level_scale output instead of measuring")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="aw-levels-")
    raw = args.raw
    if not raw:
        exe = os.path.join(tmp, "level_scale")
        subprocess.run(["cc", "-O2", "-o", exe, os.path.join(HERE, "level_scale.c")],
                       check=True)
        raw = os.path.join(tmp, "slices.bin")
        load0 = os.getloadavg()
        subprocess.run([exe, "--cpu", str(args.cpu), "--seconds", str(args.seconds),
                        "--slice-us", str(args.slice_us), "--out", raw], check=True)
        load1 = os.getloadavg()
        print("load average %.2f %.2f %.2f before, %.2f %.2f %.2f after" % (load0 + load1))
    start_ms, tp, lat, chains = read(raw)
    n = len(tp)
    span_ms = start_ms[-1]
    # a slice's own length: the median gap between consecutive slices (the mean includes the
    # time the thread was not running)
    slice_ms = sorted(b - a for a, b in zip(start_ms, start_ms[1:]))[n // 2]
    stp, slat = sorted(tp), sorted(lat)
    floor_tp, floor_lat = quantile(stp, 0.05), quantile(slat, 0.05)
    print("%d slices over %.1f s, %.1f us each, the thread running %.0f%% of the time "
          "(throughput block: %d chains)" % (n, span_ms / 1e3, 1e3 * slice_ms,
                                             100 * n * slice_ms / span_ms, chains))
    print("throughput block ns/step: p5 %.4f p50 %.4f p90 %.4f p99 %.4f"
          % tuple(quantile(stp, p) for p in (0.05, 0.5, 0.9, 0.99)))
    print("latency chain ns/step:    p5 %.4f p50 %.4f p90 %.4f p99 %.4f"
          % tuple(quantile(slat, p) for p in (0.05, 0.5, 0.9, 0.99)))
    # the levels: a histogram of the throughput block relative to its floor, 2% bins
    hist = {}
    for v in tp:
        k = round(math.log(v / floor_tp) / math.log(1.02))
        hist[k] = hist.get(k, 0) + 1
    print("throughput block relative to its 5th percentile (bins of 2%, >= 0.5% of slices):")
    for k in sorted(hist):
        if hist[k] >= 0.005 * n:
            print("  x%.3f  %5.1f%%" % (1.02 ** k, 100.0 * hist[k] / n))
    shared = [v > floor_tp * args.threshold for v in tp]
    both = sum(1 for a, b in zip(tp, lat) if a > floor_tp * args.threshold and
               b > floor_lat * args.threshold)
    print("slices 'shared' (throughput block > x%.2f): %.1f%%; of them the latency chain slower "
          "too: %.1f%%" % (args.threshold, 100.0 * sum(shared) / n,
                           100.0 * both / max(1, sum(shared))))
    runs = runs_of(shared, start_ms, slice_ms)
    figures = {"slices": n, "slice_us": 1e3 * slice_ms, "shared_fraction": sum(shared) / n,
               "levels": {}, "lags": []}
    for level, name in ((False, "alone"), (True, "shared")):
        r = sorted(runs[level])
        if not r:
            continue
        f = {"runs": len(r), "p50_ms": quantile(r, 0.5), "p90_ms": quantile(r, 0.9),
             "p99_ms": quantile(r, 0.99), "max_ms": r[-1],
             "time_weighted_median_ms": time_weighted_median(r)}
        figures["levels"][name] = f
        print("dwell in '%s': %d spells, p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.1f ms; "
              "half the time is spent in spells of %.2f ms or longer"
              % (name, f["runs"], f["p50_ms"], f["p90_ms"], f["p99_ms"], f["max_ms"],
                 f["time_weighted_median_ms"]))
    # how fast the level decorrelates: of slices L ms apart (the first slice that began L ms or
    # more after another), the fraction whose levels differ, relative to the fraction that
    # independent draws would give, 2 p (1 - p): 0 at a lag within one spell, 1 once the level
    # at one time says nothing about the level L later
    p = sum(shared) / n
    independent = 2 * p * (1 - p)
    print("slices L apart in different levels, relative to independent draws (%.1f%%):"
          % (100 * independent))
    step = max(1, n // 200000)
    for lag in (0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 20, 100, 1000):
        if lag > span_ms / 4:
            break
        differ = pairs = 0
        for i in range(0, n, step):
            j = bisect.bisect_left(start_ms, start_ms[i] + lag, i + 1)
            if j >= n:
                break
            if start_ms[j] - start_ms[i] > lag * 1.5 + 3 * slice_ms:
                continue  # the thread was not running at the lag: no pair
            pairs += 1
            differ += shared[i] != shared[j]
        if not pairs:
            continue
        rel = differ / pairs / independent if independent else float("nan")
        figures["lags"].append({"ms": lag, "relative": rel, "pairs": pairs})
        print("  %7.2f ms: %.2f (%d pairs)" % (lag, rel, pairs))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())

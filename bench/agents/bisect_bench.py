#!/usr/bin/python3
"""Bisection on real builds (docs/benchmarks.md "Bisection"): a subject repository of 32 commits
(tests/e2e/bisect_repo.py: bench/detect/subject_chain.c, one commit in the middle adding EXTRA
adds to the chain, a real code change, every other commit a change of a comment only), only the
first and the last given to `atomwatch-agent bisect` against a real collector (SQLite, through
tests/e2e/harness.py), TRIES times for each EXTRA. A fresh repository per try and EXTRA, the
culprit's position drawn at random in the middle half, so that no try reuses another's builds.
Prints per EXTRA: the culprit named in how many tries, an honest range of at most 3 candidates
holding it in how many, a comment-only commit named in how many (must be 0), the steps and the
seconds per bisection (median and max), the change measured, and the load average.

usage: bisect_bench.py --agent BIN [--tries 10] [--extras 10,5] [--commits 32] [--json FILE]"""

import argparse
import json
import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import agent_helpers as a  # noqa: E402
import bisect_repo  # noqa: E402
import harness as h  # noqa: E402

HOST = "bench-bisect"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--tries", type=int, default=10)
    ap.add_argument("--extras", default="10,5")
    ap.add_argument("--commits", type=int, default=32)
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--json", help="write the raw figures here")
    args = ap.parse_args()
    os.environ["AW_AGENT"] = args.agent
    extras = [int(e) for e in args.extras.split(",")]
    col = h.Collector(h.Database("sqlite").url).start()
    token = col.token("agent", HOST)
    url = "http://127.0.0.1:%d" % col.port
    rng = random.Random(33)
    load0 = os.getloadavg()
    results = {e: [] for e in extras}
    for t in range(args.tries):
        for e in extras:
            repo = h.tempdir("aw-bisect-bench-")
            culprit = rng.randrange(args.commits // 4, 3 * args.commits // 4)
            shas = bisect_repo.make(repo, n=args.commits, culprit=culprit, extra=e)
            ag = a.Agent(url, token, HOST, extra=bisect_repo.subject_config(repo, "s"),
                         matrix="matrix:\n  profile: %s\n  ops: [plain]\n" % args.profile)
            t0 = time.time()
            p = ag.run("bisect", "--subject", "s", "--project", "bench-%d-%d" % (e, t),
                       "--good", shas[0], "--bad", shas[-1], "--format", "json", "--quiet",
                       timeout=1800)
            wall = time.time() - t0
            if p.returncode not in (0, 4):
                raise SystemExit("bisect failed (%d): %s" % (p.returncode, p.stderr))
            o = json.loads(p.stdout)
            named = o["culprit"]
            cand = o["candidates"]
            results[e].append({
                "culprit_index": culprit, "named": named,
                "named_index": shas.index(named) if named else None,
                "right": named == shas[culprit],
                "range3": not named and shas[culprit] in cand and len(cand) <= 3,
                "comment_only": bool(named) and named != shas[culprit],
                "candidates": len(cand), "outcome": o["outcome"],
                "steps": o["steps_done"], "builds": o["builds"], "seconds": o["seconds"],
                "wall_s": wall, "change": o["change"], "load": os.getloadavg()[0]})
            r = results[e][-1]
            print("  +%d try %d: %s in %d steps, %.1f s (change %s), load %.1f" % (
                e, t + 1, "right" if r["right"] else r["outcome"], r["steps"], wall,
                "%+.2f%%" % (100 * (o["change"] - 1)) if o["change"] else "-", r["load"]),
                flush=True)
    load1 = os.getloadavg()
    print("bisect, %d commits, culprit in the middle half, the rest comment-only, %d tries, "
          "profile %s" % (args.commits, args.tries, args.profile))
    print("%-6s %-10s %-16s %-14s %-14s %-16s %s" % (
        "change", "culprit", "<= 3 candidates", "comment-only", "steps", "seconds",
        "measured change"))
    for e in extras:
        rs = results[e]
        steps = [r["steps"] for r in rs]
        secs = [r["wall_s"] for r in rs]
        changes = [r["change"] for r in rs if r["change"]]
        print("%-6s %-10s %-16s %-14s %-14s %-16s %s" % (
            "+%d" % e, "%d/%d" % (sum(r["right"] for r in rs), len(rs)),
            "%d/%d" % (sum(r["right"] or r["range3"] for r in rs), len(rs)),
            "%d/%d" % (sum(r["comment_only"] for r in rs), len(rs)),
            "%g (max %d)" % (statistics.median(steps), max(steps)),
            "%.1f (max %.1f)" % (statistics.median(secs), max(secs)),
            "%+.2f%%" % (100 * (statistics.median(changes) - 1)) if changes else "-"))
    print("load average: %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end"
          % (load0 + load1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results, "load": [load0, load1]}, f,
                      indent=1)
    h._cleanup_all()


if __name__ == "__main__":
    main()

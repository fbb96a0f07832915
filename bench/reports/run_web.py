#!/usr/bin/python3
"""Reports served by the collector, end to end (docs/benchmarks.md, "Reports"):

1. ready: four hosts upload one commit of the default matrix at once (a 96-CPU Neoverse-V2:
   17 ops on every CPU, the readers on the first CPU, the contention grid near and far: 1,723
   cells); the time from the last 201 to the last chart file of that commit (heat map, and per
   host the compare chart, the per-CPU chart, 12 contention maps and the compare chart against
   the previous commit), polled every 5 ms. A few commits are stored first so that there is a
   baseline and the analysis has history to read; the trends that follow are timed too.
2. pages: one host with 1,000 runs of history (uploaded with charts off, then
   the newest commit's verdict and charts drawn by `render`); 100 requests each of
   /hosts/{name}, /commits/{sha} and / against a collector with its workers idle: p50, p95, max.

usage: run_web.py [--build-dir DIR] [--rounds N] [--history N] [--cpus N] [--noise X]
                  [--wild-tails] [--quick] [--json F]
--quick (the CTest entry) uses fewer rounds and 200 runs of history."""

import argparse
import concurrent.futures
import json
import os
import sqlite3
import statistics
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import harness as h  # noqa: E402

OPS = ["plain", "llsc", "stadd", "ldadd", "ldadda", "ldaddl", "ldaddal", "prfm_keep_stadd",
       "prfm_strm_stadd", "cas", "icas", "swp", "casp", "ldxp_stxp", "c11_relaxed",
       "c11_seqcst", "c11_cas"]
READERS = {
    "srcu": ["plain", "llsc", "stadd", "ldadd", "prfm_keep_stadd", "prfm_strm_stadd",
             "c11_relaxed"],
    "srcu_fast": ["plain", "llsc", "stadd", "ldadd", "prfm_keep_stadd", "prfm_strm_stadd",
                  "c11_relaxed"],
    "srcu_nmisafe": ["llsc", "stadd", "ldadd", "c11_relaxed", "c11_seqcst"],
}
CONTENDED = ["llsc", "stadd", "ldadd", "prfm_keep_stadd", "prfm_strm_stadd", "c11_relaxed"]


def default_doc(host, commit, seed, cpus, k, noise, wild_tails=False):
    """A result document of the default matrix profile on a `cpus`-CPU aarch64 host whose
    medians move by up to `noise` (relative) from run to run; `wild_tails` keeps the harness's
    p95 and p99, drawn at random up to 1.8x the median in every run."""
    import random
    rng = random.Random(seed)
    doc = h.make_doc(host=host, commit=commit, cells=1, seed=seed,
                     commit_time="2026-%02d-%02dT09:00:00Z" % (1 + k // 28 % 12, 1 + k % 28),
                     started_at="2026-11-29T10:00:00.000000Z")
    cells = [h.make_cell(rng, op, cpu, noise=noise) for cpu in range(cpus) for op in OPS]
    cells += [h.make_cell(rng, op, 0, reader=r, noise=noise)
              for r, ops in READERS.items() for op in ops]
    for placement, other in (("near", 1), ("far", cpus // 2)):
        for op in CONTENDED:
            for c in (10, 100, 1000):
                for d in (0, 100):
                    cell = h.make_cell(rng, op, 0, contender=other, c=c, d=d, noise=noise)
                    cell["placement"] = placement
                    cells.append(cell)
    for cell in [] if wild_tails else cells:
        # tails as steady as the median (harness cells draw p95 and p99 at random): p99 is
        # judged too, and a tail that moves by 40% between runs makes every cell "noisy"
        cell["p95"] = round(cell["p50"] * 1.08 * rng.uniform(1 - noise, 1 + noise), 6)
        cell["p99"] = round(cell["p50"] * 1.30 * rng.uniform(1 - 2 * noise, 1 + 2 * noise), 6)
        cell["max"] = max(cell["max"], cell["p99"])
    doc["cells"] = cells
    doc["run_id"] = str(uuid.uuid4())
    return doc


def commit_files(commit, hosts, prev, cpus):
    files = ["charts/commits/%s/heatmap" % commit]
    for host in hosts:
        d = "charts/commits/%s/hosts/%s/" % (commit, host)
        files += [d + "compare-main", d + "percpu"]
        if prev:
            files.append(d + "compare-%s" % prev)
        files += [d + "contention-%s-%s" % (op, p) for op in CONTENDED for p in ("near", "far")]
    return [f + ext for f in files for ext in (".svg", ".png")]


def trend_files(hosts):
    groups = ["llsc", "lse", "prefetch", "cas", "c11"] + ["reader-" + r for r in READERS]
    return ["charts/hosts/%s/refs/main/trend-%s%s" % (host, g, ext) for host in hosts
            for g in groups for ext in (".svg", ".png")]


def wait_files(root, files, since, timeout=120):
    """Polls every 5 ms until every file exists and was written after `since` (wall clock);
    returns the newest file's mtime. Only the files still missing are looked at again, so the
    poll costs the machine little."""
    deadline = time.time() + timeout
    pending, newest = list(files), 0.0
    while pending:
        left = []
        for f in pending:
            try:
                m = os.stat(os.path.join(root, f)).st_mtime
            except FileNotFoundError:
                m = 0.0
            if m < since:
                left.append(f)
            else:
                newest = max(newest, m)
        pending = left
        if pending and time.time() > deadline:
            raise SystemExit("%d of %d chart files still missing after %ds"
                             % (len(pending), len(files), timeout))
        if pending:
            time.sleep(0.005)
    return newest


def upload_bodies(col, bodies, hosts, tokens):
    """Uploads the bodies at once, one uploader per host; returns the wall time of the last
    201."""
    def one(i):
        r = col.request("POST", "/api/v1/results", bodies[i], token=tokens[hosts[i]],
                        headers={"Content-Type": "application/json"}, timeout=120)
        if r.status != 201:
            raise SystemExit("upload failed: %r" % r)
        return time.time()

    with concurrent.futures.ThreadPoolExecutor(len(bodies)) as pool:
        return max(pool.map(one, range(len(bodies))))


def bench_ready(args):
    hosts = ["v2-%d" % i for i in range(4)]
    db = h.Database("sqlite")
    col = h.Collector(db.url, config="log_level: %s\n" % ("debug" if args.debug else "info"))
    col.start()
    data = os.path.join(col.dir, "data")
    tokens = {host: col.token("agent", host) for host in hosts}
    rounds = []
    prev = None
    for k in range(args.warmup + args.rounds):
        commit = "%040x" % (0xbe0000 + k)
        docs = [default_doc(host, commit, k * 10 + i, args.cpus, k, args.noise,
                            args.wild_tails)
                for i, host in enumerate(hosts)]
        bodies = [json.dumps(d).encode() for d in docs]  # serialised before the clock starts
        t0 = time.time()
        last_201 = upload_bodies(col, bodies, hosts, tokens)
        newest = wait_files(data, commit_files(commit, hosts, prev, args.cpus), t0)
        trends = wait_files(data, trend_files(hosts), t0)
        if k >= args.warmup:
            rounds.append({"commit": commit, "ready_s": round(newest - last_201, 3),
                           "trends_s": round(trends - last_201, 3),
                           "uploads_s": round(last_201 - t0, 3)})
            print("round %d: charts of the commit ready %.2fs after the last 201, trends "
                  "%.2fs (uploads took %.2fs)" % (k - args.warmup + 1, newest - last_201,
                                                  trends - last_201, last_201 - t0),
                  flush=True)
        prev = commit
        time.sleep(0.5)  # let the workers go idle between rounds
    n_charts = len(commit_files(commit, hosts, prev, args.cpus)) // 2
    logs = col.logs()
    if args.debug:
        print(logs)
    col.stop()
    ready = [r["ready_s"] for r in rounds]
    return {"hosts": len(hosts), "cells_per_run": len(docs[0]["cells"]),
            "charts_per_commit": n_charts, "rounds": rounds,
            "ready_median_s": round(statistics.median(ready), 3), "ready_max_s": max(ready),
            "dropped": "chart queue full" in logs}


def timed(col, path, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        r = col.request("GET", path)
        times.append((time.perf_counter() - t) * 1000)
        if r.status != 200:
            raise SystemExit("%s: %r" % (path, r))
    times.sort()
    return {"p50_ms": round(statistics.median(times), 2),
            "p95_ms": round(times[int(0.95 * len(times)) - 1], 2),
            "max_ms": round(times[-1], 2), "bytes": len(r.body),
            "images": r.body.count(b"<img "),
            "pending": r.body.count(b"chart not drawn yet")}


def bench_pages(args):
    host = "v2-history"
    db = h.Database("sqlite")
    # The history goes in with charts off: the workers cache each commit's verdict (as the
    # service does after every upload) but draw nothing, which would take 1,000 x 16 charts.
    col = h.Collector(db.url, config="postingest:\n  charts: off\n").start()
    token = col.token("agent", host)
    commits = ["%040x" % (0xc0000 + k) for k in range(args.history)]
    t0 = time.time()

    def one(k):
        doc = default_doc(host, commits[k], k, args.cpus, k, args.noise, args.wild_tails)
        r = col.request("POST", "/api/v1/results", json.dumps(doc).encode(), token=token,
                        headers={"Content-Type": "application/json"}, timeout=120)
        if r.status != 201:
            raise SystemExit("upload failed: %r" % r)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(one, range(args.history)))
    while db.count("verdicts") < args.history and time.time() - t0 < 3600:
        time.sleep(0.5)
    load_s = time.time() - t0
    # the host page shows the charts of its newest run (uploads ran in parallel: not always
    # the last commit)
    newest = col.request("GET", "/api/v1/runs?host=%s&limit=1" % host).json()["runs"][0]
    col.stop()
    data = os.path.join(col.dir, "data")
    out = col.cli("render", "--db", db.url, "--data-dir", data, "--commit", newest["commit"])
    print("pages: %d runs and their verdicts stored in %.0fs; %s"
          % (args.history, load_s, out.stdout.strip()), flush=True)
    col = h.Collector(db.url, args=("--data-dir", data)).start()  # the charts drawn above
    con = sqlite3.connect(db.path)
    doc_kib = con.execute("SELECT AVG(LENGTH(json)) / 1024 FROM verdicts").fetchone()[0]
    con.close()
    res = {"runs": db.count("runs"), "verdicts": db.count("verdicts"),
           "cells_per_run": db.count("measurements") // args.history,
           "verdict_doc_kib": round(doc_kib, 1),
           "db_mib": round(os.path.getsize(db.path) / 2**20, 1), "load_s": round(load_s, 1)}
    for name, path in (("host", "/hosts/" + host), ("commit", "/commits/" + newest["commit"]),
                       ("overview", "/")):
        timed(col, path, 10)  # warm the page cache and the connection pool
        res[name] = timed(col, path, args.requests)
        print("%-8s %s: %s" % (name, path[:40], res[name]), flush=True)
    col.stop()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.environ.get("AW_BUILD_DIR", h.BUILD_DIR))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3, help="commits stored before the rounds")
    ap.add_argument("--history", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--cpus", type=int, default=96)
    ap.add_argument("--noise", type=float, default=0.005,
                    help="relative run-to-run change of each median (a quiet, pinned host)")
    ap.add_argument("--wild-tails", action="store_true",
                    help="p95 and p99 at random in each run: most cells are judged noisy and "
                    "each cached verdict lists them (the worst case for pages)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--part", choices=("all", "ready", "pages"), default="all")
    ap.add_argument("--debug", action="store_true", help="print the collector's log")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.history = 2, 200
    os.environ.setdefault("AW_COLLECTOR", os.path.join(args.build_dir, "collector",
                                                       "atomwatch-collector"))
    results = {"command": " ".join(sys.argv), "cpus": os.cpu_count(),
               "loadavg_before": os.getloadavg()[0]}
    results["ready"] = bench_ready(args) if args.part in ("all", "ready") else None
    results["pages"] = bench_pages(args) if args.part in ("all", "pages") else None
    results["loadavg_after"] = os.getloadavg()[0]
    r, p = results["ready"], results["pages"]
    print()
    if r:
        print("ready after the last ingest (%d hosts x %d cells, %d charts): median %.2fs, "
              "max %.2fs (target <= 2 s: %s)"
              % (r["hosts"], r["cells_per_run"], r["charts_per_commit"], r["ready_median_s"],
                 r["ready_max_s"], "met" if r["ready_max_s"] <= 2 else "MISSED"))
    for name in ("host", "commit", "overview") if p else ():
        print("%s page, %d runs of history: p50 %.1f ms, p95 %.1f ms, max %.1f ms, %d bytes%s"
              % (name, p["runs"], p[name]["p50_ms"], p[name]["p95_ms"], p[name]["max_ms"],
                 p[name]["bytes"], "" if name == "overview" else
                 " (target p95 <= 50 ms: %s)" % ("met" if p[name]["p95_ms"] <= 50
                                                  else "MISSED")))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

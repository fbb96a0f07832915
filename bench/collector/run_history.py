#!/usr/bin/python3
"""What a long history costs (issue 32): one host with N = 100, 1,000, 5,000 and 20,000 runs on
main (30 or 300 cells, SQLite or PostgreSQL), every commit's verdict cached, filled straight
through the store (`ingest_bench fill`, seconds, not N uploads). One collector per N runs at
once and the measurements go round the N in turns, so that the machine's noise falls on every
N alike; each figure is printed beside N = 100's with the ratio and the least-squares cost of
each further run (the fit per run).

  gate        GET /api/v1/gate of a new head (a commit on a pull-request ref, its runs
              uploaded and its verdict cached by the post-ingest worker first): what CI asks
  gate_spot   the same gate with cells=* (every cell): judged against main on each request,
              as a gate asked before the worker got to the head is, and as the worker judges
  series      GET /api/v1/series of one cell (the default 500 newest points)
  overview    GET /
  commit      GET /commits/SHA of the newest commit on main
  charts      one upload of a new commit on main until every post-ingest task is done (its
              verdict, change points, charts, the host's trend charts): the
              atomwatch_postingest_tasks gauge back at 0
  cpu         the collector's CPU time over that upload and its post-ingest work (its gnuplot
              children apart, as gnuplot_cpu; PostgreSQL's server processes as db_cpu, all of
              them, the other collectors' idle polls included)
  rss         the collector's VmRSS after everything above

Then, with --throughput COUNT (default 20,000; 0: skip), COUNT uploads from 16 clients (16
hosts, a new commit each upload) into an empty database through the collector with its
default post-ingest workers, timed until every verdict is cached (the target) and, with
--throughput-tasks, until no task is left either (the charts: 20,000 commits' charts take half an
hour on 2 vCPUs); given up after --throughput-timeout seconds, with what was done by then.

With --retention-days D, the largest N again, an hour apart up to now, then a collector with
retention.raw_days D: the database's bytes before, in use after its passes, after a VACUUM.

usage: run_history.py [--build-dir DIR] [--runs 100,1000,5000,20000] [--setups sqlite:30,...]
                      [--reps 15] [--uploads 5] [--throughput N] [--throughput-timeout S]
                      [--throughput-tasks]
                      [--throughput-config YAML] [--no-history] [--retention-days D]
                      [--quick] [--json FILE]"""

import argparse
import json
import os
import platform
import random
import sqlite3
import subprocess
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import harness as h  # noqa: E402

HOST = "bench-host-0"          # the host ingest_bench fill stores
T0 = 1704067200                # its first commit's time (2024-01-01), then an hour each
CELL = "op=stadd cpu=0"        # the series read
FIGURES = ("gate", "gate_spot", "series", "overview", "commit", "charts", "cpu", "db_cpu",
           "gnuplot_cpu", "rss")
UNITS = {"gate": "ms", "gate_spot": "ms", "series": "ms", "overview": "ms", "commit": "ms",
         "charts": "s", "cpu": "ms", "db_cpu": "ms", "gnuplot_cpu": "ms", "rss": "MiB"}


def machine():
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"cpus": os.cpu_count(), "cpu_model": model, "kernel": platform.release(),
            "loadavg_before": os.getloadavg()}


def bench_bin(build):
    return os.path.join(build, "bench", "collector", "ingest_bench")


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def base_ns(op, reader):
    b = 48.7 if op == "stadd" else 0.9 if op == "plain" else 5.1
    return b * (2.1 if reader else 1.0)


def make_doc(cells, commit, when, ref="main", seed=1):
    """A document of the filled host with the fill's values (ingest_bench's fill_cell()), so
    that a new head is judged against a history like itself."""
    rng = random.Random(seed)
    d = h.make_doc(host=HOST, commit=commit, ref=ref, cells=cells, seed=seed,
                   commit_time=rfc3339(when), started_at=rfc3339(when))
    for c in d["cells"]:
        p50 = base_ns(c["op"], c["reader"]) * rng.uniform(0.97, 1.03)
        p95 = p50 * rng.uniform(1.01, 1.2)
        p99 = p95 * rng.uniform(1.01, 1.5)
        c.update({"p50": round(p50, 6), "min": round(p50 * rng.uniform(0.9, 0.99), 6),
                  "p95": round(p95, 6), "p99": round(p99, 6),
                  "max": round(p99 * rng.uniform(1.0, 4.0), 6),
                  "mean": round((p50 + p95) / 2, 6), "stddev": round(p50 * 0.03, 6),
                  "ci_lo": round(p50 * 0.995, 6), "ci_hi": round(p50 * 1.005, 6)})
    return d


def proc_cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu(pid):
    """CPU seconds of the live children of pid (the collector's gnuplots, the postmaster's
    backends)."""
    total = 0.0
    try:
        kids = []
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                kids += [int(x) for x in f.read().split()]
        for kid in kids:
            try:
                total += proc_cpu(kid)
            except OSError:
                pass  # gone meanwhile
    except OSError:
        pass
    return total


def db_cpu(s):
    """The PostgreSQL server's CPU seconds, its backends' included; 0 for SQLite (in the
    collector's own)."""
    if s.backend != "postgres":
        return 0.0
    pid = s.db.pg.pid()
    return proc_cpu(pid) + children_cpu(pid)


class Setup:
    """One collector over a database of n runs."""

    def __init__(self, args, backend, cells, n, pg):
        self.n, self.cells, self.backend = n, cells, backend
        self.db = h.Database(backend, pg)
        out = subprocess.run([bench_bin(args.build_dir), "fill", self.db.url, str(n),
                              str(cells)], stdout=subprocess.PIPE, text=True, timeout=7200)
        if out.returncode != 0:
            raise SystemExit("fill failed:\n" + out.stdout)
        self.fill = json.loads(out.stdout)
        self.db_bytes = self.size()
        # trends after every upload (postingest.trends_interval 0): each timed upload pays
        # for its host's trends, as one after a quiet spell does
        self.col = h.Collector(self.db.url).start()
        self.token = self.col.token("admin")
        self.next = n          # the next commit's hour
        self.heads = []
        self.samples = {k: [] for k in FIGURES}

    def size(self):
        if self.backend == "sqlite":
            return sum(os.path.getsize(self.db.path + s) for s in ("", "-wal")
                       if os.path.exists(self.db.path + s))
        return int(self.db.pg.psql("SELECT pg_database_size(current_database())",
                                   self.db.name))

    def upload(self, ref="main"):
        sha = "%08x%032x" % (0xbe000000 | self.cells, self.next)
        doc = make_doc(self.cells, sha, T0 + 3600 * self.next, ref, seed=self.next)
        self.next += 1
        r = self.col.request("POST", "/api/v1/results", doc, token=self.token)
        h.eq(r.status, 201, r)
        return sha

    def settle(self, timeout=600):
        h.wait_for_postingest(self.col.port, timeout)

    def get(self, path):
        t = time.perf_counter()
        r = self.col.request("GET", path, timeout=120)
        ms = (time.perf_counter() - t) * 1000
        h.eq(r.status, 200, (path, r.status, r.body[:300]))
        return ms


def measure_uploads(setups, rounds):
    for _ in range(rounds):
        for s in setups:
            s.settle()
            cpu0, kid0, db0 = s.col.cpu_seconds(), children_cpu(s.col.proc.pid), db_cpu(s)
            t = time.perf_counter()
            s.heads.append(s.upload())
            s.settle()
            s.samples["charts"].append(time.perf_counter() - t)
            s.samples["cpu"].append((s.col.cpu_seconds() - cpu0) * 1000)
            s.samples["db_cpu"].append((db_cpu(s) - db0) * 1000)
            s.samples["gnuplot_cpu"].append((children_cpu(s.col.proc.pid) - kid0) * 1000)


def measure_reads(setups, reps):
    for s in setups:
        s.pr_head = s.upload(ref="pr/1")
        s.settle()
    cell = urllib.parse.quote(CELL)
    for _ in range(reps):
        for s in setups:
            gate = "/api/v1/gate?project=linux&commit=%s&baseline_ref=main" % s.pr_head
            s.samples["gate"].append(s.get(gate))
            s.samples["gate_spot"].append(s.get(gate + "&cells=*"))
            s.samples["series"].append(s.get("/api/v1/series?host=%s&cell=%s&ref=main"
                                             % (HOST, cell)))
            s.samples["overview"].append(s.get("/"))
            s.samples["commit"].append(s.get("/commits/%s" % s.heads[-1]))
    for s in setups:
        s.samples["rss"].append(s.col.rss_kib() / 1024)


def fit(ns, ys):
    """Least squares y = a + b n: b, the cost of one more run of history."""
    k = len(ns)
    mn, my = sum(ns) / k, sum(ys) / k
    var = sum((n - mn) ** 2 for n in ns)
    return sum((n - mn) * (y - my) for n, y in zip(ns, ys)) / var if var else 0.0


def table(name, setups):
    ns = [s.n for s in setups]
    print()
    print("%s: p50 (ratio to N = %d); fit: the cost of 1,000 more runs" % (name, ns[0]))
    print()
    print("| figure | " + " | ".join("N = {:,}".format(n) for n in ns) + " | fit per 1,000 runs |")
    print("|---|" + "---|" * (len(ns) + 1))
    out = {}
    for k in FIGURES:
        vals = [median(s.samples[k]) for s in setups]
        base = vals[0] or 1e-9
        cells = ["%s %s (%.2fx)" % (("%.2f" if v < 100 else "%.0f") % v, UNITS[k], v / base)
                 if i else ("%.2f" if v < 100 else "%.0f") % v + " " + UNITS[k]
                 for i, v in enumerate(vals)]
        slope = fit(ns, vals) * 1000
        print("| %s | %s | %+.3g %s |" % (k, " | ".join(cells), slope, UNITS[k]))
        out[k] = {"p50": vals, "fit_per_1000": slope}
    sizes = [s.db_bytes for s in setups]
    print("| db bytes per run (after the fill) | %s | |" % " | ".join(
        "%.0f" % (b / s.n) for b, s in zip(sizes, setups)))
    out["db_bytes"] = sizes
    return out


def throughput(args, backend, cells, pg, count):
    db = h.Database(backend, pg)
    # the collector's own defaults (trends at most once per postingest.trends_interval)
    col = h.Collector(db.url, config=args.throughput_config.replace("\\n", "\n")
                      if args.throughput_config else None, trends_at_once=False).start()
    token = col.token("admin")
    t0 = time.perf_counter()
    out = subprocess.Popen([bench_bin(args.build_dir), "load",
                            "http://127.0.0.1:%d/api/v1/results" % col.port, token, "16",
                            str(count), str(cells), "16", "fresh"], stdout=subprocess.PIPE,
                           text=True)
    res = {"uploads": count, "cells": cells}
    verdicts_at = None
    deadline = t0 + args.throughput_timeout
    load = None
    while True:
        if load is None and out.poll() is not None:
            load = json.loads(out.stdout.read())
            res["uploads_s"] = round(time.perf_counter() - t0, 1)
            res["load"] = load
        done = db.count("verdicts")
        if verdicts_at is None and done >= count:
            verdicts_at = time.perf_counter() - t0
            res["verdicts_s"] = round(verdicts_at, 1)
        if load is not None and verdicts_at is not None:
            if h.postingest_gauges(col.port)["tasks"] == 0:
                res["all_tasks_s"] = round(time.perf_counter() - t0, 1)
                break
            if not args.throughput_tasks:
                res["tasks_left"] = h.postingest_gauges(col.port)["tasks"]
                break
        if time.perf_counter() > deadline:
            res["gave_up_s"] = args.throughput_timeout
            res["verdicts_cached"] = done
            break
        time.sleep(1)
    res["verdicts_cached"] = db.count("verdicts")
    res["rss_mib"] = round(col.rss_kib() / 1024, 1)
    col.stop()
    if out.poll() is None:
        out.kill()
        out.wait()
    print("throughput %s, %d cells: %s" % (backend, cells, res), flush=True)
    return res


def db_bytes(db, vacuum=False):
    """(bytes in use, bytes on disk) of the database; vacuumed first when asked (SQLite's
    VACUUM, PostgreSQL's VACUUM FULL: what the space is once handed back)."""
    if db.backend == "sqlite":
        con = sqlite3.connect(db.path, timeout=60)
        try:
            if vacuum:
                con.execute("VACUUM")
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            size, pages, free = (con.execute("PRAGMA %s" % k).fetchone()[0]
                                 for k in ("page_size", "page_count", "freelist_count"))
        finally:
            con.close()
        return size * (pages - free), os.path.getsize(db.path)
    if vacuum:
        db.pg.psql("VACUUM FULL", db.name)
    size = int(db.pg.psql("SELECT pg_database_size(current_database())", db.name))
    return size, size


def retention(args, backend, cells, pg, n, days):
    """n runs an hour apart up to now, then a collector with retention.raw_days = days:
    the database's size before and after its passes (it thins all but the last `days` days)."""
    db = h.Database(backend, pg)
    first = int(time.time()) - n * 3600
    out = subprocess.run([bench_bin(args.build_dir), "fill", db.url, str(n), str(cells),
                          str(first)], stdout=subprocess.PIPE, text=True, timeout=7200)
    if out.returncode != 0:
        raise SystemExit("fill failed:\n" + out.stdout)
    before, disk_before = db_bytes(db)
    col = h.Collector(db.url, config="retention:\n  raw_days: %d\n" % days).start()
    t = time.perf_counter()
    last = None
    while True:
        runs = db.count("runs")
        if runs == last and h.postingest_gauges(col.port)["tasks"] == 0:
            break
        last = runs
        time.sleep(2)
    took = time.perf_counter() - t - 2
    aggregates = db.count("aggregates")
    rss = col.rss_kib() / 1024
    col.stop()
    after, disk_after = db_bytes(db)
    vacuumed, _ = db_bytes(db, vacuum=True)
    res = {"runs_before": n, "runs_after": runs, "aggregates": aggregates, "raw_days": days,
           "seconds": round(took, 1), "bytes_before": before, "bytes_in_use_after": after,
           "bytes_on_disk_after": disk_after, "bytes_after_vacuum": vacuumed,
           "bytes_per_run_before": round(before / n), "rss_mib": round(rss, 1)}
    print("retention %s, %d cells, %d runs, raw_days %d: %s" % (backend, cells, n, days, res),
          flush=True)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.environ.get("AW_BUILD_DIR", h.BUILD_DIR))
    ap.add_argument("--runs", default="100,1000,5000,20000")
    ap.add_argument("--setups", default="sqlite:30,sqlite:300,postgres:30",
                    help="backend:cells, comma-separated")
    ap.add_argument("--reps", type=int, default=15, help="requests of each page per N")
    ap.add_argument("--uploads", type=int, default=5, help="timed uploads per N")
    ap.add_argument("--throughput", type=int, default=20000)
    ap.add_argument("--throughput-timeout", type=float, default=1800)
    ap.add_argument("--throughput-tasks", action="store_true",
                    help="time the uploads until no post-ingest task is left, charts included")
    ap.add_argument("--throughput-config",
                    help="the collector's configuration for the uploads, e.g. "
                         "'postingest:\\n  charts: false\\n' (verdicts alone)")
    ap.add_argument("--no-history", action="store_true",
                    help="only the uploads (--throughput), no N series")
    ap.add_argument("--retention-days", type=int, default=0,
                    help="and the largest N filled up to now, then thinned by a collector with "
                         "retention.raw_days of this: the database before and after")
    ap.add_argument("--quick", action="store_true", help="N = 100, 1,000; few repetitions")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.reps, args.uploads = "100,1000", 5, 2
        args.throughput = min(args.throughput, 500)
    os.environ["AW_COLLECTOR"] = os.path.join(args.build_dir, "collector",
                                              "atomwatch-collector")
    ns = [int(x) for x in args.runs.split(",")]
    results = {"machine": machine(), "command": " ".join(sys.argv), "setups": {}}
    pg = None
    for setup in args.setups.split(","):
        backend, cells = setup.split(":")
        cells = int(cells)
        if backend == "postgres" and pg is None:
            pg = h.Postgres().start()
        res = {}
        if not args.no_history:
            t = time.perf_counter()
            setups = [Setup(args, backend, cells, n, pg) for n in ns]
            print("%s %d cells: filled %s in %.0f s" % (backend, cells, ns,
                                                         time.perf_counter() - t), flush=True)
            measure_uploads(setups, args.uploads)
            measure_reads(setups, args.reps)
            res = table("%s, %d cells" % (backend, cells), setups)
            res["samples"] = {s.n: s.samples for s in setups}
            res["loadavg_after"] = os.getloadavg()
            for s in setups:
                s.col.stop()
        if args.retention_days:
            res["retention"] = retention(args, backend, cells, pg, ns[-1], args.retention_days)
        if args.throughput:
            res["throughput"] = throughput(args, backend, cells, pg, args.throughput)
        results["setups"][setup] = res
        sys.stdout.flush()
    print()
    print("machine: %s" % results["machine"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

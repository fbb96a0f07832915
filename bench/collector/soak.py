#!/usr/bin/python3
"""Collector soak: N agents uploading and M readers browsing the pages for a bounded time
against one collector over 127.0.0.1, with the post-ingest work on (verdicts, change points,
charts drawn by gnuplot). Reports the errors (want 0), the collector's RSS at the start and at
the end (want flat: growth <= 10%), and per minute the upload p99 and the page p95. Once for
SQLite and once for PostgreSQL (a throw-away server, tests/e2e/harness.py).

usage: soak.py [--agents N] [--readers M] [--minutes T] [--backend sqlite|postgres|both]
               [--cells C] [--chart-cache SIZE] [--json FILE]

An agent uploads a new run of its own host every --interval seconds (default 1; a realistic
fleet uploads far less often, this is a soak), a reader GETs the overview, a host page, a
commit page, a compare page, /api/v1/runs and a chart in turn without pause. An error is any
reply other than 200/201 (404 for a chart not drawn yet is counted apart) or a failed
connection. RSS is read from /proc after the first minute's warm-up (the caches are full by
then: the chart cache is bounded at --chart-cache, 64 MiB, so that it evicts from then on) and
at the end; per minute, the median of RSS and of the heap in use (/metrics) sampled every 5 s."""

import argparse
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import harness as h  # noqa: E402


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


class Stats:
    def __init__(self, t0):
        self.t0 = t0
        self.lock = threading.Lock()
        self.uploads = {}  # minute -> [seconds]
        self.pages = {}
        self.errors = []
        self.not_drawn = 0
        self.count = {"uploads": 0, "pages": 0}

    def add(self, kind, secs):
        minute = int((time.monotonic() - self.t0) // 60)
        with self.lock:
            getattr(self, kind).setdefault(minute, []).append(secs)
            self.count[kind] += 1

    def error(self, what):
        with self.lock:
            if len(self.errors) < 50:
                self.errors.append(what)
            else:
                self.errors.append("...")


def agent(col, token, host, i, stop, st, args):
    seq = 0
    commit_base = 0x1000000 * (i + 1)
    while not stop.is_set():
        seq += 1
        doc = h.make_doc(host=host, cells=args.cells, seed=i * 100000 + seq,
                         commit="%040x" % (commit_base + seq))
        t = time.monotonic()
        try:
            r = col.request("POST", "/api/v1/runs", doc, token=token, timeout=60)
            if r.status not in (200, 201):
                st.error("upload %s: %r" % (host, r))
            else:
                st.add("uploads", time.monotonic() - t)
        except OSError as e:
            st.error("upload %s: %s" % (host, e))
        stop.wait(args.interval)


def reader(col, hosts, i, stop, st):
    n = 0
    while not stop.is_set():
        n += 1
        host = hosts[(i + n) % len(hosts)]
        try:
            runs = col.request("GET", "/api/v1/runs?limit=20&host=" + host, timeout=60)
            commits = [r["commit"] for r in runs.json().get("runs", [])] if \
                runs.status == 200 else []
        except (OSError, ValueError) as e:
            st.error("runs: %s" % e)
            commits = []
        paths = ["/", "/hosts/" + host]
        if commits:
            paths.append("/commits/" + commits[0])
        if len(commits) > 1:
            paths.append("/compare?base=%s&head=%s" % (commits[1], commits[0]))
        for path in paths:
            t = time.monotonic()
            try:
                r = col.request("GET", path, timeout=60)
            except OSError as e:
                st.error("GET %s: %s" % (path, e))
                continue
            if r.status == 200:
                st.add("pages", time.monotonic() - t)
            else:
                st.error("GET %s: %r" % (path, r))
        # a chart a page links to (404 while not drawn yet, counted apart)
        try:
            page = col.request("GET", "/hosts/" + host, timeout=60).body.decode(errors="replace")
            at = page.find('src="/charts/')
            if at >= 0:
                src = page[at + 5:page.find('"', at + 5)]
                r = col.request("GET", src, timeout=60)
                if r.status == 404:
                    with st.lock:
                        st.not_drawn += 1
                elif r.status != 200:
                    st.error("GET %s: %r" % (src, r))
        except OSError as e:
            st.error("chart: %s" % e)


def gauges(col):
    """The collector's heap and chart-cache gauges from /metrics (None where absent)."""
    want = {'atomwatch_heap_bytes{state="in_use"}': "heap_in_use",
            'atomwatch_heap_bytes{state="free"}': "heap_free",
            "atomwatch_chart_cache_files": "chart_files",
            "atomwatch_chart_cache_bytes": "chart_bytes"}
    out = dict.fromkeys(want.values())
    r = col.request("GET", "/metrics", timeout=60)
    for line in r.body.decode(errors="replace").splitlines():
        name, _, value = line.rpartition(" ")
        if name in want:
            out[want[name]] = int(float(value))
    return out


def soak(backend, args, pg):
    db = h.Database(backend, pg)
    config = "postingest:\n  workers: 2\n"
    if args.chart_cache:
        config += "  chart_cache: %s\n" % args.chart_cache
    col = h.Collector(db.url, config=config)
    hosts = ["soak-%02d" % i for i in range(args.agents)]
    tokens = [col.token("agent", host) for host in hosts]
    col.start()
    # every host exists before the readers start (a page of an unknown host is 404)
    for i, host in enumerate(hosts):
        r = col.request("POST", "/api/v1/runs", h.make_doc(host=host, cells=args.cells,
                                                           seed=i * 100000,
                                                           commit="%040x" % (i + 1)),
                        token=tokens[i], timeout=60)
        if r.status != 201:
            raise SystemExit("soak: the first upload of %s: %r" % (host, r))
    t0 = time.monotonic()
    st = Stats(t0)
    stop = threading.Event()
    threads = [threading.Thread(target=agent, args=(col, tokens[i], hosts[i], i, stop, st, args))
               for i in range(args.agents)]
    threads += [threading.Thread(target=reader, args=(col, hosts, i, stop, st))
                for i in range(args.readers)]
    for t in threads:
        t.daemon = True
        t.start()
    end = t0 + args.minutes * 60
    rss_start = g_start = None
    samples = {}  # minute -> [(rss KiB, heap in use bytes)], every 5 s
    while time.monotonic() < end:
        time.sleep(min(5, max(0, end - time.monotonic())))
        minute = int((time.monotonic() - t0) // 60)
        if minute < args.minutes:
            samples.setdefault(minute, []).append((col.rss_kib(), gauges(col)["heap_in_use"]))
        if rss_start is None and time.monotonic() - t0 >= min(60, args.minutes * 30):
            rss_start = col.rss_kib()
            g_start = gauges(col)
    rss_end = col.rss_kib()
    g_end = gauges(col)
    stop.set()
    for t in threads:
        t.join(90)
    eq_stop = col.stop()
    minutes = sorted(set(st.uploads) | set(st.pages))
    per_minute = [{"minute": m + 1,
                   "uploads": len(st.uploads.get(m, [])),
                   "upload_p99_ms": round(1e3 * (pct(st.uploads.get(m, []), 99) or 0), 1),
                   "pages": len(st.pages.get(m, [])),
                   "page_p95_ms": round(1e3 * (pct(st.pages.get(m, []), 95) or 0), 1),
                   "rss_kib": pct([x[0] for x in samples.get(m, [])], 50),
                   "heap_in_use_kib": (pct([x[1] for x in samples.get(m, [])], 50) or 0) // 1024}
                  for m in minutes if m < args.minutes]
    return {"backend": backend, "agents": args.agents, "readers": args.readers,
            "minutes": args.minutes, "uploads": st.count["uploads"],
            "pages": st.count["pages"], "errors": len(st.errors),
            "error_samples": st.errors[:10], "charts_not_drawn_yet": st.not_drawn,
            "rss_start_kib": rss_start, "rss_end_kib": rss_end,
            "rss_growth_pct": round(100.0 * (rss_end - rss_start) / rss_start, 1)
            if rss_start else None,
            "gauges_start": g_start, "gauges_end": g_end,
            "exit_status": eq_stop, "per_minute": per_minute}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--readers", type=int, default=8)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--cells", type=int, default=300)
    ap.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    ap.add_argument("--chart-cache", default="64MiB",
                    help="postingest.chart_cache (64MiB: full and evicting within the first "
                    "minute; the collector's default is 1GiB)")
    ap.add_argument("--json")
    args = ap.parse_args()
    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    pg = h.Postgres().start() if "postgres" in backends else None
    results = []
    for backend in backends:
        r = soak(backend, args, pg)
        results.append(r)
        print("\n%s: %d agents, %d readers, %g min: %d uploads, %d pages, %d errors, "
              "RSS %s -> %s KiB (%s%%), stop status %s" % (
                  backend, r["agents"], r["readers"], r["minutes"], r["uploads"], r["pages"],
                  r["errors"], r["rss_start_kib"], r["rss_end_kib"], r["rss_growth_pct"],
                  r["exit_status"]))
        a, b = r["gauges_start"] or r["gauges_end"], r["gauges_end"]
        print("  heap in use %s -> %s KiB, free in the arenas %s -> %s KiB; chart cache %s -> "
              "%s files, %s -> %s MiB" % (
                  a["heap_in_use"] // 1024, b["heap_in_use"] // 1024, a["heap_free"] // 1024,
                  b["heap_free"] // 1024, a["chart_files"], b["chart_files"],
                  a["chart_bytes"] >> 20, b["chart_bytes"] >> 20))
        for e in r["error_samples"]:
            print("  error: " + e)
        print("| minute | uploads | upload p99 ms | pages | page p95 ms | RSS KiB | heap in use "
              "KiB |")
        print("|---|---|---|---|---|---|---|")
        for m in r["per_minute"]:
            print("| %d | %d | %.1f | %d | %.1f | %s | %s |" % (
                m["minute"], m["uploads"], m["upload_p99_ms"], m["pages"], m["page_p95_ms"],
                m["rss_kib"], m["heap_in_use_kib"]))
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    sys.exit(1 if any(r["errors"] or r["exit_status"] != 0 for r in results) else 0)


if __name__ == "__main__":
    main()

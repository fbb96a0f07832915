#!/usr/bin/python3
"""Collector ingest benchmark: uploads/s and latency of realistic 300-cell documents from
concurrent uploaders over 127.0.0.1 (SQLite with synchronous=full and =normal, PostgreSQL),
the raw rate of storing the same documents straight into SQLite (same schema, one transaction
per document), and the collector's RSS with 10,000 stored runs. Prints a Markdown table for
docs/benchmarks.md and the raw figures as JSON.

usage: run_ingest.py [--build-dir DIR] [--uploads N] [--runs-for-rss N] [--concurrency N]
                     [--quick] [--nice] [--no-postgres] [--json FILE]

For the RSS figure the database of the synchronous=normal run is first filled with raw inserts
so that, after the collector's own uploads, it holds --runs-for-rss runs; the collector's RSS
is then read after a few queries. --quick (the CTest entry) uses fewer uploads. --nice raises
the scheduling priority of the whole bench (every process it starts inherits it) so that on a
shared machine other work does not take the CPUs being measured; it needs root."""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import harness as h  # noqa: E402


def machine():
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) // 1024
    return {"cpus": os.cpu_count(), "cpu_model": model, "memory_mib": mem,
            "kernel": platform.release(), "loadavg_before": os.getloadavg()[0]}


def bench_bin(build):
    return os.path.join(build, "bench", "collector", "ingest_bench")


def load(build, col, token, concurrency, uploads):
    out = subprocess.run([bench_bin(build), "load",
                          "http://127.0.0.1:%d/api/v1/results" % col.port, token,
                          str(concurrency), str(uploads), "300", "16"],
                         stdout=subprocess.PIPE, text=True, timeout=3600)
    if out.returncode != 0:
        raise SystemExit("load generator failed:\n" + out.stdout)
    return json.loads(out.stdout)


def raw(build, url, count, sync):
    out = subprocess.run([bench_bin(build), "raw", url, str(count), "300", sync],
                         stdout=subprocess.PIPE, text=True, timeout=3600)
    if out.returncode != 0:
        raise SystemExit("raw insert failed:\n" + out.stdout)
    return json.loads(out.stdout)


def status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def collector_run(build, db_url, config, concurrency, uploads, cpu_note):
    col = h.Collector(db_url, config=config).start()
    token = col.token("admin")
    warm = load(build, col, token, concurrency, min(200, uploads))  # caches, JIT of the pool
    cpu0 = col.cpu_seconds()
    res = load(build, col, token, concurrency, uploads)
    res["collector_cpu_ms_per_upload"] = round(
        (col.cpu_seconds() - cpu0) * 1000 / uploads, 2)
    res["warmup_uploads"] = warm["uploads"]
    res["loadavg_after"] = os.getloadavg()[0]
    res.update(cpu_note)
    return col, token, res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.environ.get("AW_BUILD_DIR", h.BUILD_DIR))
    ap.add_argument("--uploads", type=int, default=3000)
    ap.add_argument("--quick", action="store_true", help="fewer uploads (CTest)")
    ap.add_argument("--runs-for-rss", type=int, default=10000)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--no-postgres", action="store_true")
    ap.add_argument("--nice", action="store_true", help="run at nice -20 (root)")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.quick:
        args.uploads = min(args.uploads, 1000)
    raw_count = 1000 if args.quick else 2000
    os.environ.setdefault("AW_COLLECTOR", os.path.join(args.build_dir, "collector",
                                                       "atomwatch-collector"))
    if args.nice:
        os.setpriority(os.PRIO_PROCESS, 0, -20)
    results = {"machine": machine(), "command": " ".join(sys.argv),
               "nice": os.getpriority(os.PRIO_PROCESS, 0)}
    tmp = h.tempdir("aw-bench-")

    # Where an upload's CPU time goes, one thread, same document.
    out = subprocess.run([bench_bin(args.build_dir), "stages", "sqlite:%s/stages.db" % tmp,
                          "300" if args.quick else "1000"], stdout=subprocess.PIPE, text=True,
                         timeout=3600)
    if out.returncode != 0:
        raise SystemExit("stages failed:\n" + out.stdout)
    results["stages"] = json.loads(out.stdout)
    print("stages: %s" % results["stages"], flush=True)

    # Raw SQLite inserts: the store alone, one document per transaction.
    for sync in ("full", "normal"):
        results["raw_sqlite_" + sync] = raw(args.build_dir, "sqlite:%s/raw-%s.db" % (tmp, sync),
                                            raw_count, sync)
        print("raw sqlite (%s): %s" % (sync, results["raw_sqlite_" + sync]), flush=True)

    # Ingest alone, without the post-ingest workers' verdicts and charts after each upload
    # (each upload still stores its task): what that work costs the uploads (it must not slow
    # them down).
    db = h.Database("sqlite")
    col, token, res = collector_run(
        args.build_dir, db.url, "store:\n  sqlite_synchronous: full\npostingest:\n  workers: 0\n",
        args.concurrency, args.uploads, {"synchronous": "full", "postingest_workers": 0})
    results["collector_sqlite_nopostingest"] = res
    print("collector sqlite (full, no post-ingest work): %s" % res, flush=True)
    col.stop()

    # The collector on SQLite, durable across power loss (full) and across crashes (normal),
    # with its default two post-ingest workers.
    for sync in ("full", "normal"):
        db = h.Database("sqlite")
        if sync == "normal":
            prefill = args.runs_for_rss - args.uploads - min(200, args.uploads)
            if prefill > 0:
                raw(args.build_dir, db.url, prefill, "normal")
        col, token, res = collector_run(
            args.build_dir, db.url, "store:\n  sqlite_synchronous: %s\n" % sync,
            args.concurrency, args.uploads, {"synchronous": sync})
        results["collector_sqlite_" + sync] = res
        print("collector sqlite (%s): %s" % (sync, res), flush=True)
        if sync == "full":
            # Latency below saturation: two uploaders.
            results["collector_sqlite_light"] = load(args.build_dir, col, token, 2,
                                                     300 if args.quick else 1000)
            print("collector sqlite (full, 2 uploaders): %s"
                  % results["collector_sqlite_light"], flush=True)
        if sync == "normal":
            # Top up to the RSS target's run count, then read a little, then measure.
            stored = db.count("runs")
            if stored < args.runs_for_rss:
                load(args.build_dir, col, token, args.concurrency, args.runs_for_rss - stored)
            for path in ("/api/v1/runs?limit=1000", "/api/v1/hosts",
                         "/api/v1/series?host=bench-host-0&cell=op%3Dstadd%20cpu%3D0"):
                col.request("GET", path)
            results["rss"] = {"runs": db.count("runs"),
                              "rss_mib": round(status_kib(col.proc.pid, "VmRSS") / 1024, 1),
                              "peak_rss_mib": round(status_kib(col.proc.pid, "VmHWM") / 1024,
                                                    1),
                              "db_mib": round(os.path.getsize(db.path) / 2**20, 1)}
            print("rss: %s" % results["rss"], flush=True)
        col.stop()

    if not args.no_postgres:
        pg = h.Postgres().start()
        db = h.Database("postgres", pg)
        col, token, res = collector_run(args.build_dir, db.url, None, args.concurrency,
                                        args.uploads // 2 if args.quick else args.uploads, {})
        results["collector_postgres"] = res
        print("collector postgres: %s" % res, flush=True)
        col.stop()
        db2 = h.Database("postgres", pg)
        results["raw_postgres"] = raw(args.build_dir, db2.url, raw_count // 2, "full")
        print("raw postgres: %s" % results["raw_postgres"], flush=True)

    m = results["machine"]
    full, normal = results["collector_sqlite_full"], results["collector_sqlite_normal"]
    raw_full, raw_normal = results["raw_sqlite_full"], results["raw_sqlite_normal"]
    print()
    print("Machine: %d CPUs (%s), %d MiB, Linux %s; load average before: %.2f; nice %d" % (
        m["cpus"], m["cpu_model"], m["memory_mib"], m["kernel"], m["loadavg_before"],
        results["nice"]))
    print()
    print("| setup | uploads/s | p50 ms | p99 ms | collector CPU ms/upload | raw insert docs/s | "
          "ratio |")
    print("|---|---|---|---|---|---|---|")
    for name, res, rawres in (("SQLite, synchronous=full", full, raw_full),
                              ("SQLite, synchronous=normal", normal, raw_normal)):
        print("| %s | %.0f | %.1f | %.1f | %.2f | %.0f | %.0f%% |" % (
            name, res["uploads_per_s"], res["p50_ms"], res["p99_ms"],
            res["collector_cpu_ms_per_upload"], rawres["documents_per_s"],
            100 * res["uploads_per_s"] / rawres["documents_per_s"]))
    nr = results["collector_sqlite_nopostingest"]
    print("| SQLite, synchronous=full, no post-ingest workers | %.0f | %.1f | %.1f | %.2f | %.0f | "
          "%.0f%% |" % (nr["uploads_per_s"], nr["p50_ms"], nr["p99_ms"],
                        nr["collector_cpu_ms_per_upload"], raw_full["documents_per_s"],
                        100 * nr["uploads_per_s"] / raw_full["documents_per_s"]))
    light = results["collector_sqlite_light"]
    print("| SQLite, synchronous=full, 2 uploaders | %.0f | %.1f | %.1f | | | |" % (
        light["uploads_per_s"], light["p50_ms"], light["p99_ms"]))
    if "collector_postgres" in results:
        pgres, pgraw = results["collector_postgres"], results["raw_postgres"]
        print("| PostgreSQL 15 (local, fsync on) | %.0f | %.1f | %.1f | %.2f | %.0f | %.0f%% |"
              % (pgres["uploads_per_s"], pgres["p50_ms"], pgres["p99_ms"],
                 pgres["collector_cpu_ms_per_upload"], pgraw["documents_per_s"],
                 100 * pgres["uploads_per_s"] / pgraw["documents_per_s"]))
    st = results["stages"]
    total = sum(st[k] for k in ("parse_ms", "validate_ms", "free_tree_ms", "hash_ms",
                                "store_ms"))
    print()
    print("One upload's CPU, single thread (%d-byte document, %d cells):" % (st["body_bytes"],
                                                                          st["cells"]))
    print()
    print("| step | ms |")
    print("|---|---|")
    for key, name in (("parse_ms", "JSON parse (jansson, duplicate keys rejected)"),
                      ("validate_ms", "validation into the model (aw_result_from_json)"),
                      ("free_tree_ms", "freeing the JSON tree"),
                      ("hash_ms", "content hash"),
                      ("store_ms", "SQLite insert, synchronous=normal (writer thread)")):
        print("| %s | %.2f |" % (name, st[key]))
    print("| total | %.2f |" % total)
    if "fast_ms" in st:  # the collector's path for a valid document: no tree, in one pass
        print()
        print("The collector's fast path (aw_result_parse_fast: the text straight into the "
              "model) takes %.2f ms of those %.2f ms of parse, validation and freeing; an "
              "upload it takes costs %.2f ms." % (
                  st["fast_ms"], st["parse_ms"] + st["validate_ms"] + st["free_tree_ms"],
                  st["fast_ms"] + st["hash_ms"] + st["store_ms"]))
    rss = results["rss"]
    print()
    print("RSS with %d stored runs: %.1f MiB (peak %.1f MiB); database %.1f MiB" % (
        rss["runs"], rss["rss_mib"], rss["peak_rss_mib"], rss["db_mib"]))
    targets = [("SQLite >= 1000 uploads/s", full["uploads_per_s"] >= 1000),
               ("SQLite >= 50% of the raw insert rate",
                full["uploads_per_s"] >= 0.5 * raw_full["documents_per_s"]),
               ("SQLite p99 <= 50 ms", full["p99_ms"] <= 50),
               ("RSS <= 64 MB with 10,000 runs", rss["rss_mib"] * 2**20 <= 64e6)]
    print()
    for name, ok in targets:
        print("target %-40s %s" % (name, "met" if ok else "MISSED"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()

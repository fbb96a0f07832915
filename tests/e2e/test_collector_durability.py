#!/usr/bin/python3
"""Durability: a stream of concurrent uploads, kill -9 of the collector in the middle, a
restart on the same database. Every upload that got a 2xx must be there, whole; no run may be
half stored (a run's measurements are all there or the run is not).

usage: test_collector_durability.py --backend sqlite|postgres [--synchronous full|normal]"""

import argparse
import json
import os
import random
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

UPLOADERS = 6


def stream(col, token, host, acked, stop):
    """Uploads distinct documents until the collector dies; records every acknowledged one."""
    seed = 0
    while not stop.is_set():
        seed += 1
        doc = h.make_doc(host=host, seed=seed, cells=120 + seed % 50)
        try:
            r = col.request("POST", "/api/v1/results", doc, token=token, timeout=10)
        except OSError:
            return  # the collector is gone
        if r.status in (200, 201):
            acked.append(doc)
        elif r.status != 503:
            raise AssertionError("unexpected %r" % r)


def run_once(backend, synchronous, pg):
    db = h.Database(backend, pg)
    config = "store:\n  sqlite_synchronous: %s\n" % synchronous
    col = h.Collector(db.url, config=config).start()
    token = col.token("admin")
    acked = [[] for _ in range(UPLOADERS)]
    stop = threading.Event()
    threads = [threading.Thread(target=stream, args=(col, token, "dur-%d" % i, acked[i], stop))
               for i in range(UPLOADERS)]
    for th in threads:
        th.start()
    # Kill in the middle of the stream, at a moment that is not aligned to anything: once ten
    # uploads were acknowledged (however slow this build and machine are), plus a random delay.
    deadline = time.monotonic() + 60
    while sum(len(per) for per in acked) < 10 and time.monotonic() < deadline:
        if not any(th.is_alive() for th in threads):
            break
        time.sleep(0.05)
    time.sleep(random.uniform(0.0, 0.5))
    col.kill9()
    stop.set()
    for th in threads:
        th.join(30)
    done = [doc for per in acked for doc in per]
    check(len(done) >= 10, "only %d uploads acknowledged before the kill" % len(done))
    # the killed collector's server sessions end once they finished what they were doing: a
    # commit still landing would make the count below and the listing after it differ
    db.settle()

    col2 = h.Collector(db.url, config=config).start()
    for doc in done:
        r = col2.request("GET", "/api/v1/runs/" + doc["run_id"])
        eq(r.status, 200, "acknowledged run %s lost" % doc["run_id"])
        eq(json.dumps(r.json(), sort_keys=True), json.dumps(doc, sort_keys=True),
           "acknowledged run %s changed" % doc["run_id"])
    runs = db.count("runs")
    check(runs >= len(done), "%d runs stored, %d acknowledged" % (runs, len(done)))
    half = db.count("runs r", "WHERE r.n_cells <> (SELECT COUNT(*) FROM measurements m "
                              "WHERE m.run_seq = r.seq)")
    eq(half, 0, "runs stored without all their measurements")
    # Whatever was committed without an answer is whole too, and readable.
    page = col2.request("GET", "/api/v1/runs?limit=1000").json()["runs"]
    eq(len(page), runs, "listed runs")
    for run in page:
        r = col2.request("GET", "/api/v1/runs/" + run["run_id"])
        eq(r.status, 200)
        eq(len(r.json()["cells"]), run["cells"], "cells of " + run["run_id"])
    # And the service goes on: the same uploads again are duplicates, new ones are created.
    eq(col2.request("POST", "/api/v1/results", done[0], token=token).status, 200)
    eq(col2.request("POST", "/api/v1/results", h.make_doc(host="dur-x", seed=1),
                    token=token).status, 201)
    eq(col2.stop(), 0)
    print("  %s/%s: %d acknowledged, %d stored, none half-stored" % (backend, synchronous,
                                                                     len(done), runs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=("sqlite", "postgres"), required=True)
    args = ap.parse_args()
    pg = h.Postgres().start() if args.backend == "postgres" else None
    tests = [("kill -9 mid-stream (synchronous full)", lambda: run_once(args.backend, "full", pg))]
    if args.backend == "sqlite":
        tests.append(("kill -9 mid-stream (synchronous normal)",
                      lambda: run_once(args.backend, "normal", pg)))
    h.run(tests, "collector durability (%s)" % args.backend)


if __name__ == "__main__":
    main()

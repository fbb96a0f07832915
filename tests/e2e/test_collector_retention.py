#!/usr/bin/python3
"""Retention through the collector, against SQLite or a real PostgreSQL: a host's runs of ten
weeks in 2024 uploaded, the collector restarted with retention on (its pass is queued at the
start and run by a post-ingest worker, as any collector's would), the runs older than the window
thinned but the newest keep_runs, and the whole history still there per day and per week
(GET /api/v1/series?downsample=), verdicts and change points kept; bad parameters refused.

usage: test_collector_retention.py --backend sqlite|postgres"""

import argparse
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

HOST = "graviton4-a"
CELL = "op=plain cpu=0"
# keep_runs at least detection.history and window: smaller ones here, so that a few dozen runs
# make a history
CONFIG = ("detection:\n  history: 10\n  window: 5\n  confirm_jobs: 0\n"
          "postingest:\n  charts: false\n")
RETENTION = "retention:\n  raw_days: 30\n  keep_runs: 10\n  interval: 1h\n"
MONDAY = 1704067200  # 2024-01-01, a Monday
RUNS = 40            # two a day, every other day: six weeks


def when(i):
    return MONDAY + (i // 2) * 2 * 86400 + (i % 2) * 12 * 3600


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(t))


def series(col, downsample=None, metric=None, limit=None):
    path = "/api/v1/series?host=%s&cell=%s&ref=main" % (HOST, urllib.parse.quote(CELL))
    if downsample:
        path += "&downsample=" + downsample
    if metric:
        path += "&metric=" + metric
    if limit:
        path += "&limit=%d" % limit
    return col.request("GET", path)


def test_thinned(backend):
    pg = h.Postgres().start() if backend == "postgres" else None
    db = h.Database(backend, pg)
    col = h.Collector(db.url, config=CONFIG).start()
    agent = col.token("agent", HOST)
    values = {}
    for i in range(RUNS):
        doc = h.make_doc(host=HOST, commit="c0ffee%04d" % i, cells=8, seed=i,
                         started_at=rfc3339(when(i)), commit_time=rfc3339(when(i)))
        values[i] = doc["cells"][0]["p50"]
        r = col.request("POST", "/api/v1/results", doc, token=agent)
        eq(r.status, 201, r)
    h.wait_for_postingest(col.port, timeout=120)
    before = series(col, "day").json()["points"]
    eq(len(before), RUNS // 2, "a day of two runs each other day")
    check(all(p["count"] == 2 and p["thinned"] == 0 for p in before), before[:2])
    verdicts = db.count("verdicts")
    changepoints = db.count("change_points")
    eq(col.stop(), 0)

    # restarted with retention: its pass at the start thins every week that ended more than 30
    # days ago (all of them), but the newest 10 runs
    col = h.Collector(db.url, config=CONFIG + RETENTION).start()
    deadline = time.time() + 60
    while db.count("runs") > 10:
        check(time.time() < deadline, "runs left: %d" % db.count("runs"))
        time.sleep(0.1)
    h.wait_for_postingest(col.port, timeout=60)
    eq(db.count("runs"), 10)
    check("retention: 30 runs older than 30 days thinned into" in col.logs(), col.logs())
    eq(db.count("verdicts"), verdicts, "verdicts kept")
    eq(db.count("change_points"), changepoints, "change points kept")

    # the raw series has the kept runs; per day, the whole history as before
    eq(len(series(col).json()["points"]), 10)
    after = series(col, "day").json()["points"]
    eq([p["start"] for p in after], [p["start"] for p in before])
    eq([p["count"] for p in after], [2] * (RUNS // 2))
    eq(sum(p["thinned"] for p in after), 30)
    for i, p in enumerate(after):
        pair = sorted((values[2 * i], values[2 * i + 1]))
        check(abs(p["min"] - pair[0]) < 1e-9 and abs(p["max"] - pair[1]) < 1e-9 and
              abs(p["median"] - (pair[0] + pair[1]) / 2) < 1e-9, (i, p, pair))
    weeks = series(col, "week").json()
    eq(weeks["downsample"], "week")
    eq(weeks["points"][0]["start"], "2024-01-01T00:00:00.000000Z")
    eq([p["count"] for p in weeks["points"]], [8, 6, 8, 6, 8, 4])
    eq(len(series(col, "week", limit=3).json()["points"]), 3)

    # bad parameters
    r = series(col, "month")
    eq((r.status, r.error()["field"]), (400, "downsample"), r)
    r = series(col, "day", metric="p99")
    eq((r.status, r.error()["field"]), (400, "metric"), r)
    # a second pass finds nothing more to thin
    eq(col.stop(), 0)
    col = h.Collector(db.url, config=CONFIG + RETENTION).start()
    h.wait_for_postingest(col.port, timeout=60)
    eq(db.count("runs"), 10)
    eq(col.stop(), 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=("sqlite", "postgres"), required=True)
    args = ap.parse_args()
    h.run([("thinned, and the history per day and week", lambda: test_thinned(args.backend))],
          "collector retention (%s)" % args.backend)


if __name__ == "__main__":
    main()

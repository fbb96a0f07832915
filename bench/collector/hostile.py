#!/usr/bin/python3
"""/healthz and upload latency of a well-behaved client (127.0.0.1) while hostile clients hold
--idle idle connections from 127.0.0.2 and --slow connections trickling a byte a second from
127.0.0.3 (the collector's default limits; SQLite). Target (issue 15): /healthz p99 <= 100 ms
under 2,000 hostile connections.

usage: hostile.py [--idle N] [--slow N] [--requests N]"""

import argparse
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import harness as h  # noqa: E402
from test_collector_hostile import connect_from  # noqa: E402


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--idle", type=int, default=2000)
    ap.add_argument("--slow", type=int, default=100)
    ap.add_argument("--requests", type=int, default=1000)
    args = ap.parse_args()
    db = h.Database("sqlite")
    col = h.Collector(db.url)
    token = col.token("agent", "graviton4-a")
    col.start()
    idle, slow = [], []
    for _ in range(args.idle):
        try:
            idle.append(connect_from("127.0.0.2", col.port))
        except OSError:
            pass
    for _ in range(args.slow):
        s = connect_from("127.0.0.3", col.port)
        s.sendall(b"POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
        slow.append(s)
    stop = threading.Event()

    def trickle():
        while not stop.is_set():
            for s in slow:
                try:
                    s.sendall(b"x")
                except OSError:
                    pass
            stop.wait(1)

    threading.Thread(target=trickle, daemon=True).start()
    times, uploads, errors = [], [], 0
    for i in range(args.requests):
        t = time.monotonic()
        r = col.request("GET", "/healthz", timeout=30)
        times.append(time.monotonic() - t)
        errors += r.status != 200
        if i % 50 == 0:
            t = time.monotonic()
            r = col.request("POST", "/api/v1/runs", h.make_doc(cells=300, seed=i + 1),
                            token=token, timeout=60)
            uploads.append(time.monotonic() - t)
            errors += r.status != 201
    stop.set()
    print("hostile: %d idle connections tried from 127.0.0.2 (%d connected), %d slow senders "
          "from 127.0.0.3" % (args.idle, len(idle), args.slow))
    print("/healthz x%d: p50 %.2f ms, p99 %.2f ms, max %.2f ms; uploads x%d: p50 %.1f ms, "
          "max %.1f ms; errors %d" % (len(times), 1e3 * pct(times, 50), 1e3 * pct(times, 99),
                                      1e3 * max(times), len(uploads), 1e3 * pct(uploads, 50),
                                      1e3 * max(uploads), errors))
    for s in idle + slow:
        s.close()
    col.stop()
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The collector under hostile and broken clients, over real HTTP on loopback (SQLite): a second
collector on an address in use, thousands of idle connections from one client address and
clients trickling a byte a second, symlinks planted under the charts path, a full disk (a small
tmpfs mounted in a mount namespace of the collector's own), an exclusive lock on the SQLite
file, HTTP/1.1 without Host, Content-Length with Transfer-Encoding, and uploads of the wrong
Content-Type. Every case ends with a well-behaved client served and nothing acknowledged lost.

The hostile clients connect from other loopback addresses (127.0.0.2, 127.0.0.3: the whole
127.0.0.0/8 is the loopback interface on Linux) so that the per-client limit applies to them
and not to the well-behaved client on 127.0.0.1.

usage: test_collector_hostile.py"""

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

HOST = "graviton4-a"


class Suite:
    pass


S = Suite()


def setup():
    S.db = h.Database("sqlite")
    S.col = h.Collector(S.db.url).start()
    S.agent = S.col.token("agent", HOST)
    S.seed = 1000


def upload(col, token, cells=20, doc=None, headers=None):
    if doc is None:
        S.seed += 1
        doc = h.make_doc(host=HOST, cells=cells, seed=S.seed)
    return doc, col.request("POST", "/api/v1/runs", doc, token=token, headers=headers)


def raw(port, data, timeout=10):
    """Sends raw bytes; returns everything the collector answers until it closes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            out += chunk
        return out
    finally:
        s.close()


def run_ids(col):
    r = col.request("GET", "/api/v1/runs?limit=1000")
    eq(r.status, 200, "runs")
    return {run["run_id"] for run in r.json()["runs"]}


# ---- the listening address ----

def test_address_in_use_refused():
    port = h.free_port()
    first = h.Collector(S.db.url, args=["--listen", "127.0.0.1:%d" % port]).start()
    eq(first.port, port, "the first collector's port")
    second = subprocess.run(
        [h.collector_binary(), "serve", "--listen", "127.0.0.1:%d" % port, "--db", S.db.url,
         "--data-dir", h.tempdir()], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=60)
    eq(second.returncode, 3, "exit status of a collector on an address in use:\n" +
       second.stdout)
    check("in use" in second.stdout and str(port) in second.stdout, second.stdout)
    # The first one still has every connection.
    for _ in range(10):
        eq(first.request("GET", "/healthz").status, 200, "healthz of the first collector")
    eq(first.stop(), 0, "the first collector stops cleanly")


# ---- connection limits and slow clients ----

def connect_from(addr, port):
    s = socket.socket()
    s.bind((addr, 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    return s


def healthz_times(col, n):
    times = []
    for _ in range(n):
        t = time.monotonic()
        r = col.request("GET", "/healthz", timeout=30)
        times.append(time.monotonic() - t)
        eq(r.status, 200, "healthz of the well-behaved client")
    return sorted(times)


def test_idle_flood_from_one_address():
    """2,000 idle connections from one address (the default limits): the others are served."""
    col = h.Collector(S.db.url).start()
    socks = []
    try:
        for _ in range(2000):
            try:
                socks.append(connect_from("127.0.0.2", col.port))
            except OSError:
                pass  # refused outright once the backlog is full: as good
        times = healthz_times(col, 50)
        print("  /healthz under 2,000 idle connections: p50 %.1f ms, p99 %.1f ms, max %.1f ms"
              % (times[24] * 1e3, times[48] * 1e3, times[-1] * 1e3))
        check(times[-1] < 10, "healthz took %.1f s" % times[-1])  # generous: a loaded machine
        _, r = upload(col, S.agent)
        eq(r.status, 201, "an upload under the flood: %r" % r)
        # The collector closed what is over the per-client limit (128 by default).
        open_ones = 0
        for s in socks:
            s.setblocking(False)
            try:
                if s.recv(1) != b"":
                    open_ones += 1
            except BlockingIOError:
                open_ones += 1  # nothing to read: still open
            except OSError:
                pass  # reset: closed
        check(open_ones <= 128, "%d connections of one address left open" % open_ones)
    finally:
        for s in socks:
            s.close()
    eq(col.stop(), 0, "clean stop")


def test_slow_senders_cut_off():
    """Clients trickling a byte a second: cut off after http.request_timeout, although never
    idle for http.timeout."""
    col = h.Collector(S.db.url, config="http:\n  request_timeout: 2s\n  timeout: 120s\n").start()
    socks = [connect_from("127.0.0.3", col.port) for _ in range(100)]
    t0 = time.monotonic()
    for s in socks:
        s.sendall(b"POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
    closed_at = {}
    stop = threading.Event()

    def trickle():
        while not stop.is_set() and len(closed_at) < len(socks):
            for i, s in enumerate(socks):
                if i in closed_at:
                    continue
                try:
                    s.sendall(b"x")
                    s.setblocking(False)
                    try:
                        if s.recv(65536) == b"":
                            closed_at[i] = time.monotonic() - t0
                    except BlockingIOError:
                        pass
                    finally:
                        s.setblocking(True)
                except OSError:
                    closed_at[i] = time.monotonic() - t0
            time.sleep(1)

    th = threading.Thread(target=trickle, daemon=True)
    th.start()
    try:
        # Meanwhile a normal client is served.
        times = healthz_times(col, 20)
        check(times[-1] < 10, "healthz took %.1f s" % times[-1])
        _, r = upload(col, S.agent)
        eq(r.status, 201, "an upload next to the slow clients")
        th.join(60)  # generous: the deadline is 2 s, the reaper looks 4 times a second
        eq(len(closed_at), len(socks), "slow connections cut off within 60 s")
        print("  slow senders cut off after %.1f..%.1f s" % (min(closed_at.values()),
                                                            max(closed_at.values())))
    finally:
        stop.set()
        for s in socks:
            s.close()
    eq(col.stop(), 0, "clean stop")


def test_config_limits_rejected():
    for text, where in (("http:\n  max_connections_per_client: 0\n", ":2:31:"),
                        ("http:\n  request_timeout: 10ms\n", ":2:20:"),
                        ("http:\n  request_timeout: soon\n", ":2:20:"),
                        ("store:\n  busy_timeout: -1s\n", ":2:17:")):
        path = os.path.join(h.tempdir(), "collector.yaml")
        with open(path, "w") as f:
            f.write(text)
        out = subprocess.run([h.collector_binary(), "serve", "--config", path, "--listen",
                              "127.0.0.1:0", "--db", S.db.url, "--data-dir", h.tempdir()],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=60)
        check(out.returncode != 0, "%r accepted" % text)
        check(path + where in out.stdout, "%r: %s" % (text, out.stdout))


# ---- protocol ----

def test_http11_without_host_is_400():
    out = raw(S.col.port, b"GET /healthz HTTP/1.1\r\n\r\n")
    check(out.startswith(b"HTTP/1.1 400"), out[:200])
    check(b"Host" in out, out)
    # HTTP/1.0 never needed one.
    out = raw(S.col.port, b"GET /healthz HTTP/1.0\r\n\r\n")
    check(out.startswith(b"HTTP/1.0 200") or out.startswith(b"HTTP/1.1 200"), out[:200])


def test_content_length_with_transfer_encoding_is_400():
    smuggled = b"GET /api/v1/runs HTTP/1.1\r\nHost: x\r\n\r\n"
    body = b"0\r\n\r\n" + smuggled
    out = raw(S.col.port,
              b"POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n" % len(body) + body)
    check(out.startswith(b"HTTP/1.1 400"), out[:300])
    eq(out.count(b"HTTP/1.1 "), 1, "replies on the connection (no smuggled second request)")


def test_upload_content_type():
    before = run_ids(S.col)
    _, r = upload(S.col, S.agent, headers={"Content-Type": "text/plain"})
    eq(r.status, 415, "text/plain: %r" % r)
    eq(r.error()["field"], "Content-Type", "field")
    _, r = upload(S.col, S.agent, headers={"Content-Type": "application/x-www-form-urlencoded"})
    eq(r.status, 415, "form: %r" % r)
    _, r = upload(S.col, S.agent, headers={"Content-Type": "application/jsonp"})
    eq(r.status, 415, "application/jsonp")
    eq(run_ids(S.col), before, "nothing stored")
    _, r = upload(S.col, S.agent, headers={"Content-Type": "Application/JSON; charset=utf-8"})
    eq(r.status, 201, "with a charset: %r" % r)
    # No Content-Type at all: taken as JSON, as it always was.
    S.seed += 1
    body = json.dumps(h.make_doc(host=HOST, cells=5, seed=S.seed)).encode()
    r = S.col.request("POST", "/api/v1/runs", body, token=S.agent)
    eq(r.status, 201, "without a Content-Type: %r" % r)


# ---- the charts path ----

def test_symlinked_directories_not_followed():
    outside = h.tempdir("aw-outside-")
    os.makedirs(os.path.join(outside, "trend"))
    with open(os.path.join(outside, "trend", "secret.svg"), "w") as f:
        f.write("<svg>secret</svg>")
    charts = os.path.join(S.col.dir, "data", "charts")
    os.makedirs(charts, exist_ok=True)
    os.makedirs(os.path.join(charts, "real"), exist_ok=True)
    os.symlink(outside, os.path.join(charts, "linked"))
    os.symlink(os.path.join(outside, "trend"), os.path.join(charts, "real", "trend"))
    for path in ("/charts/linked/trend/secret.svg", "/charts/real/trend/secret.svg",
                 "/charts/linked/trend/../trend/secret.svg"):
        r = S.col.request("GET", path)
        eq(r.status, 404, path)
        check(b"secret" not in r.body, path)


# ---- storage failures ----

TMPFS_WRAPPER = """#!/bin/sh
# Runs the collector in a mount namespace of its own with its database directory on a tmpfs of
# $AW_TMPFS_SIZE (a copy of what was there), so that the disk fills without touching the host.
set -e
dir=$AW_TMPFS_DIR
save=$(mktemp -d)
cp -a "$dir/." "$save/"
exec unshare -m --propagation private sh -c '
	mount -t tmpfs -o size=$AW_TMPFS_SIZE tmpfs "$1" && cp -a "$2/." "$1/" && rm -rf "$2" &&
	shift 2 && exec "$AW_REAL_COLLECTOR" "$@"' sh "$dir" "$save" "$@"
"""


def can_mount_tmpfs():
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                           "mount -t tmpfs -o size=1m tmpfs /mnt"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def fill(path):
    """Writes zeros to `path` until the file system is full; returns the bytes written."""
    n = 0
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                n += f.write(b"\0" * 65536)
        except OSError:
            pass
    return n


def check_disk_full(col, r):
    """What an upload `r` refused on a full disk must show: 507 with Retry-After, /healthz
    degraded with the reason (reads still work), the metric counting it."""
    eq(r.status, 507, "an upload on a full disk: %r" % r)
    eq(r.error()["code"], "storage_full", "code")
    check(int(r.headers["retry-after"]) > 0, "Retry-After")
    hz = col.request("GET", "/healthz")
    eq(hz.status, 200, "healthz on a full disk (reads still work)")
    eq(hz.json()["status"], "degraded", "healthz status")
    check("disk full" in hz.json()["reason"], hz.json())
    metrics = col.request("GET", "/metrics").body.decode()
    full = [line for line in metrics.splitlines()
            if line.startswith("atomwatch_db_disk_full_total ")]
    check(full and int(full[0].split()[1]) >= 1, "atomwatch_db_disk_full_total: %r" % full)


def test_disk_full_is_507():
    if not can_mount_tmpfs():
        print("  SKIP: cannot mount a tmpfs in a mount namespace here")
        return
    db = h.Database("sqlite")
    col = h.Collector(db.url, config="postingest:\n  workers: 0\n")
    token = col.token("agent", HOST)
    wrapper = os.path.join(col.dir, "collector-on-tmpfs.sh")
    with open(wrapper, "w") as f:
        f.write(TMPFS_WRAPPER)
    os.chmod(wrapper, 0o755)
    col.env = {"AW_TMPFS_DIR": os.path.dirname(db.path), "AW_TMPFS_SIZE": "8m",
               "AW_REAL_COLLECTOR": col.binary}
    col.binary = wrapper
    col.start()
    # The database as the collector sees it, through its mount namespace.
    seen = "/proc/%d/root%s" % (col.proc.pid, os.path.dirname(db.path))
    kept = []
    doc, r = upload(col, token, cells=10)
    eq(r.status, 201, "an upload before the disk is full")
    kept.append(doc["run_id"])
    filler = os.path.join(seen, "filler")
    check(fill(filler) > 0, "the filler file")
    doc, r = upload(col, token, cells=3000)
    check_disk_full(col, r)
    eq(run_ids(col), set(kept), "what was acknowledged is there, nothing else")
    # Space again: the same upload, retried, is stored; health is back.
    os.unlink(filler)
    _, r = upload(col, token, doc=doc)
    eq(r.status, 201, "the retried upload: %r" % r)
    kept.append(doc["run_id"])
    eq(col.request("GET", "/healthz").json()["status"], "ok", "healthz once there is space")
    eq(run_ids(col), set(kept), "every acknowledged upload")
    eq(col.stop(), 0, "clean stop")


def test_sqlite_lock_bounded_by_busy_timeout():
    db = h.Database("sqlite")
    col = h.Collector(db.url, config="store:\n  busy_timeout: 1s\npostingest:\n  workers: 0\n")
    token = col.token("agent", HOST)
    col.start()
    doc, r = upload(col, token, cells=10)
    eq(r.status, 201, "before the lock")
    kept = {doc["run_id"]}
    # Another process holds the write lock for 30 s.
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        "con = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)\n"
        "con.execute('BEGIN EXCLUSIVE')\n"
        "print('locked', flush=True)\n"
        "time.sleep(30)\n"), db.path], stdout=subprocess.PIPE, text=True)
    h.on_exit(holder.kill)
    eq(holder.stdout.readline().strip(), "locked", "the lock holder")
    t = time.monotonic()
    doc, r = upload(col, token, cells=10)
    took = time.monotonic() - t
    eq(r.status, 503, "an upload while the file is locked: %r" % r)
    check(int(r.headers["retry-after"]) > 0, "Retry-After")
    print("  503 after %.1f s (busy_timeout 1 s, lock held 30 s)" % took)
    check(took < 20, "the upload waited %.1f s for a lock held 30 s" % took)
    holder.kill()
    holder.wait()
    _, r = upload(col, token, doc=doc)
    eq(r.status, 201, "the retried upload once the lock is gone: %r" % r)
    kept.add(doc["run_id"])
    eq(run_ids(col), kept, "every acknowledged upload")
    eq(col.stop(), 0, "clean stop")


def main():
    setup()
    tests = [(name, fn) for name, fn in globals().items()
             if name.startswith("test_") and callable(fn)]
    h.run(tests, "collector hostile")


if __name__ == "__main__":
    main()

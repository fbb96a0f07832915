#!/usr/bin/python3
"""PostgreSQL's disk full, over real HTTP: the collector's database lives in a tablespace on a
small tmpfs that only the PostgreSQL server sees (mounted in a mount namespace the server is
started in), the test fills it, and an upload must then get 507 with Retry-After (PostgreSQL's
SQLSTATE 53100), /healthz must say degraded with the reason, the metric must count it, nothing
acknowledged may be lost and nothing half stored; once there is space the same upload is
stored and health is back. The SQLite case is in test_collector_hostile.py.

usage: test_collector_disk_full_pg.py"""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402
import test_collector_hostile as hostile  # noqa: E402

HOST = hostile.HOST

# Runs the rest of its argv in a new mount namespace in which $1 is a tmpfs of $2 owned by
# postgres: pg_ctl then starts the server there, and its processes keep that namespace.
MOUNT = ('mount -t tmpfs -o size="$2",mode=0700 tmpfs "$1" && chown postgres:postgres "$1" '
         '&& shift 2 && exec "$@"')


def pg_with_small_tablespace(size):
    pg = h.Postgres()
    ts = os.path.join(pg.dir, "ts")
    os.mkdir(ts)
    shutil.chown(ts, "postgres", "postgres")
    pg.start(wrap=["unshare", "-m", "--propagation", "private", "sh", "-c", MOUNT, "sh", ts,
                   size])
    pg.psql("CREATE TABLESPACE small LOCATION '%s'" % ts)
    return pg, ts


def test_pg_disk_full_is_507():
    # the tablespace holds the new database's copy of template1 (~7.5 MB) and the schema
    pg, ts = pg_with_small_tablespace("24m")
    db = h.Database("postgres", pg, tablespace="small")
    hostile.S.seed = 5000
    col = h.Collector(db.url, config="postingest:\n  workers: 0\n").start()
    token = col.token("agent", HOST)
    kept = set()
    for _ in range(2):
        doc, r = hostile.upload(col, token, cells=10)
        eq(r.status, 201, "an upload before the disk is full: %r" % r)
        kept.add(doc["run_id"])
    before = db.counts()
    # the tablespace as the server sees it, through its mount namespace
    filler = "/proc/%d/root%s/filler" % (pg.pid(), ts)
    check(hostile.fill(filler) > 0, "the filler file")
    doc, r = hostile.upload(col, token, cells=3000)
    hostile.check_disk_full(col, r)
    eq(hostile.run_ids(col), kept, "what was acknowledged is there, nothing else")
    eq(db.counts(), before, "no row of the refused upload stored")
    # space again: the same upload, retried, is stored; health is back
    os.unlink(filler)
    _, r = hostile.upload(col, token, doc=doc)
    eq(r.status, 201, "the retried upload: %r" % r)
    kept.add(doc["run_id"])
    eq(col.request("GET", "/healthz").json()["status"], "ok", "healthz once there is space")
    eq(hostile.run_ids(col), kept, "every acknowledged upload")
    eq(col.stop(), 0, "clean stop")


def main():
    if os.geteuid() != 0 or not hostile.can_mount_tmpfs():
        # the suite runs as root (README); a tmpfs needs it
        print("test_collector_disk_full_pg: needs root and mount namespaces", file=sys.stderr)
        sys.exit(1)
    h.run([("test_pg_disk_full_is_507", test_pg_disk_full_is_507)], "collector disk full (pg)")


if __name__ == "__main__":
    main()

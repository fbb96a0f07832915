#!/usr/bin/python3
"""The migration to stored run orders (schema 8) on a database the release before made
(tests/fixtures/db/release-v6), grown to tens of thousands of runs, killed with SIGKILL while it
fills in the runs' orders, then run again: it finishes from where it stopped, no run is lost and
every run gets the order that release served (its commit's, else its own start).

usage: test_collector_migrate.py [--backend sqlite|postgres]"""

import argparse
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

FIXTURES = os.path.join(h.SOURCE_DIR, "tests", "fixtures", "db")
RUN_COLS = ("project_id, host_id, fingerprint_id, ref, commit_time, trigger, started_at, "
            "finished_at, matrix_name, matrix_version, matrix_hash, matrix_profile, meta, "
            "n_cells, content_hash, received_at, reference, confirmation_of, confirm")


class Db:
    """The release-v6 fixture of one backend, copied, and SQL on it."""

    def __init__(self, backend, pg):
        self.backend = backend
        if backend == "sqlite":
            self.path = os.path.join(h.tempdir("aw-mig-"), "atomwatch.db")
            shutil.copy(os.path.join(FIXTURES, "release-v6.sqlite"), self.path)
            self.url = "sqlite:" + self.path
        else:
            self.pg = pg
            self.name = "aw_mig_%d_%d" % (os.getpid(), int(time.time() * 1000) % 100000)
            self.url = pg.create_db(self.name)
            subprocess.run(
                [os.path.join(h.PG_BIN, "psql") if os.path.exists(os.path.join(h.PG_BIN, "psql"))
                 else "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", pg.dir, "-p",
                 str(pg.port), "-U", "postgres", "-d", self.name, "-f",
                 os.path.join(FIXTURES, "release-v6.pg.sql")],
                check=True, stdout=subprocess.DEVNULL)

    def rows(self, sql):
        """The rows of a query, as tuples of text (PostgreSQL) or values (SQLite)."""
        if self.backend == "sqlite":
            con = sqlite3.connect(self.path, timeout=30)
            try:
                return con.execute(sql).fetchall()
            finally:
                con.close()
        out = self.pg.psql(sql, self.name)
        return [tuple(line.split("|")) for line in out.splitlines() if line]

    def one(self, sql):
        return int(self.rows(sql)[0][0])

    def grow(self, copies):
        """Each run of the fixture `copies` more times (new ids, later starts; one copy in
        five without a commit, which places a run by its own start)."""
        if self.backend == "sqlite":
            self.rows("SELECT 1")  # the file exists
            con = sqlite3.connect(self.path, timeout=30)
            con.execute(
                "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < %d) "
                "INSERT INTO runs (run_id, commit_id, started_us, %s) SELECT "
                "printf('%%08x-0000-4000-8000-%%012d', k.i, r.seq), "
                "CASE WHEN k.i %% 5 = 0 THEN NULL ELSE r.commit_id END, "
                "r.started_us + k.i, %s FROM k, runs r WHERE r.seq <= 17"
                % (copies, RUN_COLS, ", ".join("r." + c.strip() for c in RUN_COLS.split(","))))
            con.commit()
            con.close()
        else:
            self.pg.psql(
                "INSERT INTO runs (run_id, commit_id, started_us, %s) SELECT "
                "lpad(to_hex(k), 8, '0') || '-0000-4000-8000-' || lpad(r.seq::text, 12, '0'), "
                "CASE WHEN k %% 5 = 0 THEN NULL ELSE r.commit_id END, r.started_us + k, %s "
                "FROM generate_series(1, %d) k, runs r WHERE r.seq <= 17"
                % (RUN_COLS, ", ".join("r." + c.strip() for c in RUN_COLS.split(",")), copies),
                self.name)

    def version(self):
        return self.one("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")

    def order_of_runs(self, column):
        """seq -> the order `column` gives, as integers."""
        return {int(seq): int(v) for seq, v in self.rows(
            "SELECT r.seq, %s FROM runs r LEFT JOIN commits c ON c.id = r.commit_id" % column)}

    def has_index(self, name):
        if self.backend == "sqlite":
            return bool(self.rows("SELECT 1 FROM sqlite_master WHERE type = 'index' AND "
                                  "name = '%s'" % name))
        return bool(self.rows("SELECT 1 FROM pg_indexes WHERE indexname = '%s'" % name))


def migrate(db):
    return subprocess.Popen([h.collector_binary(), "migrate", "--db", db.url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def kill_half_way(db):
    """Starts the migration and SIGKILLs it once some runs have their order and others not.
    Returns (filled, left) as the kill left them, or None when it finished first."""
    proc = h._track(migrate(db))
    deadline = time.time() + 120
    while proc.poll() is None and time.time() < deadline:
        try:
            if db.version() == 7 and db.one("SELECT COUNT(*) FROM runs WHERE order_us IS "
                                            "NOT NULL") > 0:
                proc.send_signal(signal.SIGKILL)
                break
        except (sqlite3.OperationalError, subprocess.CalledProcessError):
            pass  # the column does not exist yet, or the table is being altered
        time.sleep(0.005)
    rc = proc.wait()
    if rc != -signal.SIGKILL:
        eq(rc, 0, proc.stderr.read())
        return None
    return (db.one("SELECT COUNT(*) FROM runs WHERE order_us IS NOT NULL"),
            db.one("SELECT COUNT(*) FROM runs WHERE order_us IS NULL"))


def test_resume(backend, pg):
    copies = 3000
    for attempt in range(4):
        db = Db(backend, pg)
        eq(db.version(), 6)
        db.grow(copies)
        runs = db.one("SELECT COUNT(*) FROM runs")
        want = db.order_of_runs("COALESCE(c.order_us, r.started_us)")
        eq(len(want), runs)
        half = kill_half_way(db)
        if half:
            break
        copies *= 2  # it finished before the kill: more rows, more passes
    check(half, "the migration always finished before it could be killed")
    filled, left = half
    print("killed with %d of %d runs filled in, %d left; schema version %d"
          % (filled, runs, left, db.version()))
    eq(db.version(), 7, "version 8 is recorded only once every run has its order")
    check(filled > 0 and left > 0, "killed half-way: %d filled, %d left" % (filled, left))
    eq(filled + left, runs)

    proc = migrate(db)
    out, err = proc.communicate(timeout=300)
    eq(proc.returncode, 0, err)
    # 8, 9 (the bisections), 10 (task rests), 11 (packed reference series)
    eq(out.strip(), "schema version 11 (was 7)")
    eq(db.version(), 11)
    eq(db.one("SELECT COUNT(*) FROM runs"), runs, "no run lost")
    eq(db.one("SELECT COUNT(*) FROM runs WHERE order_us IS NULL"), 0)
    got = db.order_of_runs("r.order_us")
    bad = [seq for seq in want if got.get(seq) != want[seq]]
    check(not bad, "%d runs with another order, e.g. seq %s: %s, want %s" % (
        len(bad), bad[:1], got.get(bad[0]) if bad else None, want[bad[0]] if bad else None))
    check(db.has_index("runs_history") and db.has_index("runs_history_project"))
    check(not db.has_index("runs_order_todo"), "the backfill's own index is gone")

    proc = migrate(db)
    out, err = proc.communicate(timeout=60)
    eq((proc.returncode, out.strip()), (0, "schema version 11 (was 11)"), err)

    # the collector serves the migrated history in commit order: grace's measured runs on
    # main (the copies have no cells), c0ffee10's two moved back between c0ffee01 and c0ffee02
    col = h.Collector(db.url).start()
    r = col.request("GET", "/api/v1/series?host=grace&cell=op%3Dplain%20cpu%3D0&ref=main")
    eq(r.status, 200, r)
    eq([p["commit"] for p in r.json()["points"]],
       ["c0ffee01", "c0ffee10", "c0ffee10", "c0ffee02", "c0ffee03", "c0ffee04", "c0ffee05",
        "c0ffee06"])
    col.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    args = ap.parse_args()
    pg = h.Postgres().start() if args.backend == "postgres" else None
    h.run([("resume after a kill", lambda: test_resume(args.backend, pg))],
          "collector.migrate." + args.backend)


if __name__ == "__main__":
    main()

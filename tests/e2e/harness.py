"""End-to-end harness (Python 3 standard library only): starts the real collector on 127.0.0.1
with an ephemeral port and a temp data dir, a real PostgreSQL of its own (initdb into a temp
dir, pg_ctl on a free port, run as the postgres user when we are root), crafts realistic
result documents, and runs test functions. Every helper process is killed at exit, even when
a test fails or the run is interrupted (the libuv test-runner model)."""

import atexit
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
import uuid

PG_BIN = os.environ.get("AW_PG_BIN", "/usr/lib/postgresql/15/bin")
SOURCE_DIR = os.environ.get(
    "AW_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD_DIR = os.environ.get("AW_BUILD_DIR", os.path.join(SOURCE_DIR, "build", "native"))


def collector_binary():
    path = os.environ.get("AW_COLLECTOR", os.path.join(BUILD_DIR, "collector",
                                                       "atomwatch-collector"))
    if not os.access(path, os.X_OK):
        raise SystemExit("harness: no collector binary at %s (set AW_COLLECTOR)" % path)
    return path


def sanitized():
    """Whether BUILD_DIR is the ASan/UBSan configuration (AW_SANITIZE)."""
    try:
        with open(os.path.join(BUILD_DIR, "CMakeCache.txt")) as f:
            return any(l.strip() == "AW_SANITIZE:BOOL=ON" for l in f)
    except OSError:
        return False


# ---- process registry: everything we start is stopped at exit ----

_procs = []
_cleanups = []
_databases = []  # every Database made, for the state a timed-out wait prints
_collectors = []  # every Collector started, likewise


def _track(proc):
    _procs.append(proc)
    return proc


def on_exit(fn):
    """Registers a cleanup that runs at exit (last registered, first run)."""
    _cleanups.append(fn)


def _cleanup_all():
    for proc in _procs:
        if proc.poll() is None:
            try:
                proc.kill()
                proc.wait(timeout=10)
            except Exception:
                pass
    while _cleanups:
        fn = _cleanups.pop()
        try:
            fn()
        except Exception as e:  # cleanup must go on
            print("harness: cleanup failed: %s" % e, file=sys.stderr)


atexit.register(_cleanup_all)


def _on_signal(signum, frame):
    # CTest's timeout or ^C: clean up, then die of the signal.
    _cleanup_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGINT, _on_signal)


def tempdir(prefix="aw-e2e-"):
    d = tempfile.mkdtemp(prefix=prefix)
    on_exit(lambda: shutil.rmtree(d, ignore_errors=True))
    return d


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- PostgreSQL ----

class Postgres:
    """A throwaway PostgreSQL cluster listening on a unix socket in its own temp dir."""

    def __init__(self):
        self.dir = tempdir("aw-pg-")
        self.data = os.path.join(self.dir, "data")
        self.port = free_port()
        self.started = False
        self.as_root = os.geteuid() == 0
        if self.as_root:
            # PostgreSQL refuses to run as root; everything below runs as 'postgres'.
            os.chmod(self.dir, 0o755)
            shutil.chown(self.dir, "postgres", "postgres")

    def _run(self, argv, wrap=(), **kw):
        if self.as_root:
            argv = ["runuser", "-u", "postgres", "--"] + argv
        argv = list(wrap) + argv
        return subprocess.run(argv, check=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, **kw)

    def start(self, wrap=()):
        """Starts the server; `wrap`: an argv prefix the start runs under (as root, before
        the switch to 'postgres'), e.g. an `unshare -m` that mounts something first."""
        self._run([os.path.join(PG_BIN, "initdb"), "-D", self.data, "-U", "postgres",
                   "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
        on_exit(self.stop)
        self._run([os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-w", "-t", "60",
                   "-l", os.path.join(self.dir, "log"), "-o",
                   "-p %d -k %s -c listen_addresses='' -c fsync=on -c max_connections=200"
                   % (self.port, self.dir), "start"], wrap=wrap)
        self.started = True
        return self

    def pid(self):
        """The postmaster's pid (the first line of postmaster.pid)."""
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())

    def stop(self):
        if self.started:
            self.started = False
            try:
                self._run([os.path.join(PG_BIN, "pg_ctl"), "-D", self.data, "-m",
                           "immediate", "-w", "stop"])
            except subprocess.CalledProcessError as e:
                print("harness: pg_ctl stop failed: %s" % e.stdout, file=sys.stderr)

    def url(self, db="postgres"):
        return "postgres:///%s?host=%s&port=%d&user=postgres" % (db, self.dir, self.port)

    def psql(self, sql, db="postgres"):
        out = subprocess.run(
            [os.path.join(PG_BIN, "psql") if os.path.exists(os.path.join(PG_BIN, "psql"))
             else "psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-h", self.dir,
             "-p", str(self.port), "-U", "postgres", "-d", db, "-c", sql],
            check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return out.stdout.strip()

    def create_db(self, name, tablespace=None):
        self.psql("CREATE DATABASE %s%s" % (name, " TABLESPACE " + tablespace
                                             if tablespace else ""))
        return self.url(name)


# ---- databases for a suite ----

class Database:
    """One fresh database of the given backend, with direct row counts for checks."""

    _serial = 0

    def __init__(self, backend, pg=None, tablespace=None):
        Database._serial += 1
        self.backend = backend
        if backend == "sqlite":
            self.path = os.path.join(tempdir("aw-db-"), "atomwatch.db")
            self.url = "sqlite:" + self.path
        else:
            self.pg = pg
            self.name = "aw_%d_%d" % (os.getpid(), Database._serial)
            self.url = pg.create_db(self.name, tablespace)
        _databases.append(self)

    def count(self, table, where=""):
        sql = "SELECT COUNT(*) FROM %s %s" % (table, where)
        if self.backend == "sqlite":
            con = sqlite3.connect(self.path, timeout=30)
            try:
                return con.execute(sql).fetchone()[0]
            finally:
                con.close()
        return int(self.pg.psql(sql, self.name))

    def settle(self, timeout=30):
        """Waits until no other session is connected to this database (PostgreSQL): a server
        session whose client was killed may still be committing what the client sent last."""
        if self.backend == "sqlite":
            return
        sql = ("SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() "
               "AND pid <> pg_backend_pid()")
        deadline = time.monotonic() + timeout
        while int(self.pg.psql(sql, self.name)) and time.monotonic() < deadline:
            time.sleep(0.05)

    def value(self, sql):
        """The first column of the first row of `sql` as text (None when there is no row)."""
        if self.backend == "sqlite":
            con = sqlite3.connect(self.path, timeout=30)
            try:
                row = con.execute(sql).fetchone()
            finally:
                con.close()
            return None if row is None or row[0] is None else str(row[0])
        out = self.pg.psql(sql, self.name)
        return out.splitlines()[0] if out else None

    def counts(self):
        """Rows of every table that ingest touches."""
        return {t: self.count(t) for t in
                ("runs", "measurements", "cells", "hosts", "fingerprints", "commits",
                 "projects")}


# ---- the collector ----

def _trends_at_once(config):
    """`config` with postingest.trends_interval 0 added (appended, so that the line numbers of
    what the test wrote stay), unless it sets one: a test that waits for every chart after a
    few uploads must not wait for the trends' rest (30 s by default)."""
    if config is not None and "trends_interval" in config:
        return config
    config = config or ""
    if config and not config.endswith("\n"):
        config += "\n"
    if re.search(r"^postingest:", config, re.M):
        # the key goes at the end of the postingest block (its indented lines)
        lines = config.splitlines(True)
        at = next(i for i, l in enumerate(lines) if l.startswith("postingest:"))
        end = at + 1
        while end < len(lines) and (lines[end].startswith(" ") or not lines[end].strip()):
            end += 1
        lines.insert(end, "  trends_interval: 0s\n")
        return "".join(lines)
    return config + "postingest:\n  trends_interval: 0s\n"


class Collector:
    def __init__(self, db_url, config=None, args=(), env=None, trends_at_once=True):
        """trends_at_once: the host's trends redrawn after every upload (the collector's
        postingest.trends_interval 0) unless `config` sets an interval; False: the
        collector's own default."""
        self.binary = collector_binary()
        self.db_url = db_url
        self.dir = tempdir("aw-col-")
        self.log_path = os.path.join(self.dir, "collector.log")
        self.args = list(args)
        self.config = _trends_at_once(config) if trends_at_once else config
        self.env = env
        self.proc = None
        self.port = None

    def cli(self, *argv, check=True):
        out = subprocess.run([self.binary] + list(argv), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=60)
        if check and out.returncode != 0:
            raise AssertionError("%s failed (%d): %s" % (argv, out.returncode, out.stderr))
        return out

    def token(self, role, host=None):
        argv = ["token", "create", "--db", self.db_url, "--role", role]
        if host:
            argv += ["--host", host]
        return self.cli(*argv).stdout.strip().splitlines()[-1]

    def start(self, timeout=30):
        argv = [self.binary, "serve", "--listen", "127.0.0.1:0", "--db", self.db_url,
                "--data-dir", os.path.join(self.dir, "data")]
        if self.config is not None:
            path = os.path.join(self.dir, "collector.yaml")
            with open(path, "w") as f:
                f.write(self.config)
            argv += ["--config", path]
        argv += self.args
        self.log = open(self.log_path, "ab")
        env = dict(os.environ)
        env.update(self.env or {})
        self.proc = _track(subprocess.Popen(argv, stdout=self.log, stderr=self.log, env=env))
        _collectors.append(self)
        deadline = time.time() + timeout
        while time.time() < deadline:
            with open(self.log_path, "rb") as f:
                text = f.read().decode(errors="replace")
            marker = "listening on http://127.0.0.1:"
            at = text.rfind(marker)
            if at >= 0:
                self.port = int(text[at + len(marker):].split()[0])
                return self
            if self.proc.poll() is not None:
                raise AssertionError("collector exited (%d):\n%s" % (self.proc.returncode,
                                                                     text))
            time.sleep(0.02)
        raise AssertionError("collector did not start:\n" + self.logs())

    def logs(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Stops the collector; returns its exit status."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("collector did not stop in %ds:\n%s" % (timeout, self.logs()))

    def kill9(self):
        self.proc.kill()
        self.proc.wait()

    def cpu_seconds(self):
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    # HTTP

    def request(self, method, path, body=None, token=None, headers=None, timeout=30):
        return request(self.port, method, path, body, token, headers, timeout)


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def error(self):
        """The error object of an error reply, checked for its shape."""
        doc = self.json()
        err = doc["error"]
        assert set(err) == {"code", "message", "field"}, doc
        return err

    def __repr__(self):
        return "<%d %s>" % (self.status, self.body[:300])


def request(port, method, path, body=None, token=None, headers=None, timeout=30):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    hdrs = dict(headers or {})
    if token is not None:
        hdrs["Authorization"] = "Bearer " + token
    if body is not None and not isinstance(body, (bytes, bytearray)):
        body = json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    try:
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        data = resp.read()
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
    finally:
        conn.close()


def wait_for_chart(port, path, timeout=60):
    """GETs a chart until the post-ingest workers (of any collector on the database) have
    drawn it (404 until then): an SVG served as one. Returns its text."""
    deadline = time.time() + timeout
    while True:
        r = request(port, "GET", path)
        if r.status == 200:
            check(r.headers.get("content-type", "").startswith("image/svg+xml"), r)
            check(b"<svg" in r.body[:2000], "an SVG document: %s" % path)
            return r.body.decode()
        eq(r.status, 404, r)
        check(time.time() < deadline, "%s was not drawn within %d s" % (path, timeout))
        time.sleep(0.1)


def postingest_gauges(port):
    """The post-ingest gauges of a collector's /metrics, by name (the prefix
    atomwatch_postingest_ dropped): tasks (waiting or running, of every collector on the
    database, plus the charts asked of this one), tasks_running (this one's), tasks_dead,
    charts_asked (the charts asked of this one, waiting or being drawn)."""
    text = request(port, "GET", "/metrics").body.decode()
    out = {}
    for line in text.splitlines():
        if line.startswith(("atomwatch_postingest_tasks", "atomwatch_postingest_charts")):
            name, value = line.rsplit(" ", 1)
            out[name[len("atomwatch_postingest_"):]] = int(value)
    check("tasks" in out, "the post-ingest gauges: " + text)
    return out


def _postingest_state():
    """What a post-ingest wait that timed out leaves behind: the task rows of every database
    this process made (who claimed each, when, its attempts and last error) and the last
    lines of every collector it started (a task that cannot be reported says why there)."""
    out = []
    sql = ("SELECT id, kind, commit_sha, host, ref, generation, attempts, max_attempts, owner, "
           "claimed_at, lease_us, last_error FROM tasks")
    for db in _databases:
        try:
            if db.backend == "sqlite":
                con = sqlite3.connect(db.path, timeout=30)
                try:
                    rows = [repr(r) for r in con.execute(sql)]
                finally:
                    con.close()
            else:
                rows = db.pg.psql(sql, db.name).splitlines()
        except Exception as e:  # a database already dropped, or no tasks table yet
            rows = ["(not readable: %s)" % e]
        out.append("tasks of %s:\n  %s" % (db.url, "\n  ".join(rows) or "(none)"))
    for col in _collectors:
        tail = col.logs().splitlines()[-15:]
        out.append("collector %s (%s), last lines:\n  %s"
                   % (col.port, "running" if col.proc and col.proc.poll() is None
                      else "stopped", "\n  ".join(tail)))
    return "\n".join(out)


def wait_for_postingest(port, timeout=60):
    """Until no post-ingest task is left: none waiting or running in the database (of any
    collector), no chart asked of this collector undrawn (its atomwatch_postingest_tasks
    gauge reads 0)."""
    deadline = time.time() + timeout
    while True:
        gauges = postingest_gauges(port)
        if gauges["tasks"] == 0:
            return
        check(time.time() < deadline, "post-ingest tasks pending after %d s: %s\n%s"
              % (timeout, gauges, _postingest_state()))
        time.sleep(0.1)


# ---- result documents ----

AARCH64_OPS = ["plain", "llsc", "stadd", "ldadd", "ldadda", "ldaddl", "ldaddal",
               "prfm_keep_stadd", "prfm_strm_stadd", "cas", "icas", "swp", "casp", "ldxp_stxp",
               "c11_relaxed", "c11_seqcst", "c11_cas"]
BASE_NS = {"plain": 0.9, "llsc": 5.1, "stadd": 48.7, "ldadd": 4.4, "prfm_keep_stadd": 8.2,
           "prfm_strm_stadd": 8.6}


def cell_key(op, cpu=None, reader=None, contender=None, c=None, d=0):
    parts = []
    if reader:
        parts.append("reader=" + reader)
    parts.append("op=" + op)
    if cpu is not None:
        parts.append("cpu=%d" % cpu)
    if contender is not None:
        parts.append("contender=%d" % contender)
    if c is not None:
        parts.append("c=%d" % c)
    if d:
        parts.append("d=%d" % d)
    return " ".join(parts)


def make_cell(rng, op, cpu, reader=None, contender=None, c=None, d=0, scale=1.0, noise=0.03):
    base = BASE_NS.get(op, 6.0) * scale * (2.1 if reader else 1.0) * (1 + (c or 0) / 500)
    p50 = round(base * rng.uniform(1 - noise, 1 + noise), 6)  # run-to-run noise
    mn = round(p50 * rng.uniform(0.90, 0.99), 6)
    p95 = round(p50 * rng.uniform(1.01, 1.2), 6)
    p99 = round(p95 * rng.uniform(1.01, 1.5), 6)
    mx = round(p99 * rng.uniform(1.0, 4.0), 6)
    return {
        "key": cell_key(op, cpu, reader, contender, c, d), "op": op, "reader": reader,
        "cpu": cpu, "contender_cpu": contender, "c": c, "d": d, "unit": "ns", "n": 200,
        "batch": 4096, "min": mn, "p50": p50, "p95": p95, "p99": p99, "max": mx,
        "mean": round((p50 + p95) / 2, 6), "stddev": round(p50 * 0.03, 6),
        "ci_lo": round(p50 * 0.995, 6), "ci_hi": round(p50 * 1.005, 6),
        "baseline_ns": 0.312, "below_resolution": False, "status": "ok", "reason": None}


def make_doc(host="graviton4-a", project="linux", commit=None, ref="main", cells=300,
             run_id=None, seed=1, commit_time=None, scale=1.0, started_at=None):
    """A realistic atomwatch.result/1 document of an aarch64 host with `cells` cells."""
    rng = random.Random(seed)
    out = []
    for cpu in range(64):
        for op in AARCH64_OPS:
            out.append(make_cell(rng, op, cpu, scale=scale))
        if cpu == 0:
            for reader in ("srcu", "srcu_fast", "srcu_nmisafe"):
                for op in ("llsc", "stadd", "ldadd"):
                    out.append(make_cell(rng, op, 0, reader=reader, scale=scale))
            for c in (10, 100, 1000):
                for d in (0, 100):
                    out.append(make_cell(rng, "stadd", 0, contender=1, c=c, d=d, scale=scale))
        if len(out) >= cells:
            break
    out = out[:cells]
    started = started_at or "2026-11-29T10:00:00.000000Z"
    doc = {
        "schema": "atomwatch.result/1",
        "run_id": run_id or str(uuid.uuid4()),
        "project": project,
        "commit": commit if commit is not None else "%040x" % rng.getrandbits(160),
        "ref": ref,
        "trigger": "ci",
        "started_at": started,
        "finished_at": "2026-11-29T10:03:12.500000Z" if not started_at else started,
        "host": {
            "name": host, "arch": "aarch64", "cpu_model": "Neoverse-V2",
            "platform_hash": "5f1c2e9a0b7d3c41",
            "labels": {"cloud": "aws", "instance": "c8g.metal-48xl"},
            "stable": {"implementer": "0x41", "part": "0xd4f", "cpus": 64, "lse": True,
                       "compiler": "gcc 12.2.0", "cflags": "-O2"},
            "changing": {"kernel": "6.12.0", "governor": "performance", "timer": "cntvct",
                         "timer_hz": 1000000000.0}},
        "matrix": {"name": "default", "version": 1, "hash": "9a8b7c6d5e4f3a2b",
                   "profile": "full"},
        "meta": {"agent": "atomwatch-agent 0.1.0"},
        "cells": out,
    }
    if commit_time:
        doc["commit_time"] = commit_time
    return doc


def make_ab_doc(host, project, base, head, ratio=1.0, rounds=12, ops=("op",), ab_id=None,
                aa=False):
    """An atomwatch.ab/1 document whose A/B rounds have head = base * ratio * (1 +- e), e a
    few tenths of a per mille alternating in sign (the A/A rounds the same around 1): its
    verdict is fixed by `ratio` (1.0: unchanged; 1.05: regressed)."""
    cells = []
    for op in ops:
        ab, aa_rounds = [], []
        for i in range(rounds):
            e = (1 if i % 2 else -1) * 0.0001 * (1 + i % 3)
            ab.append({"first": "head" if i % 4 in (1, 2) else "base", "base": 10.0,
                       "head": 10.0 * ratio * (1 + e), "base_ref": 0.95, "head_ref": 0.95})
            aa_rounds.append({"first": "base" if i % 4 in (1, 2) else "head", "base": 10.0,
                              "head": 10.0 * (1 - e), "base_ref": 0.95, "head_ref": 0.95})
        cells.append({"key": "subject=subj op=%s cpu=0" % op, "op": op, "reader": None,
                      "cpu": 0, "status": "ok", "rounds": ab, "aa_rounds": aa_rounds})
    return {"schema": "atomwatch.ab/1", "ab_id": ab_id or str(uuid.uuid4()),
            "project": project, "ref": "refs/pull/1/head", "subject": "subj", "aa": aa,
            "base": {"commit": base, "build_s": 0.1}, "head": {"commit": head, "build_s": 0.1},
            "started_at": "2026-12-01T10:00:00.000000Z",
            "finished_at": "2026-12-01T10:00:10.000000Z",
            "host": {"name": host, "arch": "x86_64", "cpu_model": "test", "labels": {}},
            "agent": "atomwatch-agent 0.1.0", "reference_kernel": "mulchain-v1",
            "rounds": rounds, "aa_rounds": rounds, "cells": cells}


# ---- a tiny test runner ----

def check(cond, what="check failed"):
    if not cond:
        raise AssertionError(what)


def eq(got, want, what=""):
    if got != want:
        raise AssertionError("%s: got %r, want %r" % (what or "values differ", got, want))


def run(tests, name):
    """Runs (name, fn) pairs in order; prints a line per test; exits non-zero on failure."""
    failed = []
    t0 = time.time()
    for test_name, fn in tests:
        t = time.time()
        try:
            fn()
            print("ok   %-50s %6.2fs" % (test_name, time.time() - t), flush=True)
        except Exception:
            failed.append(test_name)
            print("FAIL %-50s %6.2fs" % (test_name, time.time() - t), flush=True)
            traceback.print_exc()
    print("%s: %d tests, %d failed, %.1fs" % (name, len(tests), len(failed), time.time() - t0))
    if failed:
        print("failed: " + ", ".join(failed))
    _cleanup_all()
    sys.exit(1 if failed else 0)

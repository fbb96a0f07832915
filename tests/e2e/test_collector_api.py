#!/usr/bin/python3
"""The collector's HTTP API over real HTTP, against SQLite or a real PostgreSQL: uploads (through
POST /api/v1/runs and POST /api/v1/results, one resource) and their idempotency, every bad
input of the ingest rules (status, field, database unchanged), authentication of every
endpoint, the queries, jobs with long-polls, metrics, SIGTERM draining and the command line.

usage: test_collector_api.py --backend sqlite|postgres"""

import argparse
import copy
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

HOST = "graviton4-a"
OTHER = "altra-b"
# The two paths of an upload: the same resource, auth, validation, replies and metrics.
UPLOADS = ("/api/v1/results", "/api/v1/runs")


NO_CONFIRM_JOBS = "detection:\n  confirm_jobs: 0\n"

class Suite:
    pass


S = Suite()


def setup(backend):
    S.backend = backend
    S.pg = h.Postgres().start() if backend == "postgres" else None
    S.db = h.Database(backend, S.pg)
    # the hosts here both poll for jobs and upload runs with suspects: no confirmation jobs
    # of the collector's own among the jobs these tests count (test_agent_confirm.py)
    S.col = h.Collector(S.db.url, config=NO_CONFIRM_JOBS).start()
    S.agent = S.col.token("agent", HOST)
    S.other = S.col.token("agent", OTHER)
    S.ci = S.col.token("ci")
    S.admin = S.col.token("admin")
    S.revoked = S.col.token("agent", HOST)
    out = S.col.cli("token", "list", "--db", S.db.url).stdout
    revoked_id = [line.split()[0] for line in out.splitlines()[1:]][-1]
    S.col.cli("token", "revoke", "--db", S.db.url, revoked_id)
    S.wrong = "awt_" + "0" * 64


def post(doc, token=None, col=None, path="/api/v1/results"):
    return (col or S.col).request("POST", path, doc, token=token or S.agent)


def get(path, token=None, col=None):
    return (col or S.col).request("GET", path, token=token)


def q(s):
    return urllib.parse.quote(s, safe="")


# ---- uploads ----

def test_health_and_metrics():
    r = get("/healthz")
    eq(r.status, 200, "healthz")
    eq(r.json()["database"], S.backend, "database kind")
    r = get("/metrics")
    eq(r.status, 200, "metrics")
    check(r.headers["content-type"].startswith("text/plain"), r.headers)
    text = r.body.decode()
    for name in ("atomwatch_http_requests_total", "atomwatch_ingest_duration_seconds_bucket",
                 "atomwatch_runs_stored_total", "atomwatch_db_errors_total"):
        check("# TYPE " + name.replace("_bucket", "") in text, name)
    heap = {l.split('"')[1]: int(l.split()[-1]) for l in text.splitlines()
            if l.startswith("atomwatch_heap_bytes{")}
    if h.sanitized():  # ASan's allocator replaces glibc's: mallinfo2() would say 0
        eq(heap, {}, "no heap gauges under a sanitizer")
    else:
        eq(sorted(heap), ["free", "in_use"], "heap gauges")
        check(heap["in_use"] > 64 * 1024, heap)  # a serving collector's config, caches...


def test_upload_round_trip():
    doc = h.make_doc(commit_time="2026-11-28T12:00:00+01:00")
    before = S.db.counts()
    r = post(doc)
    eq(r.status, 201, r)
    eq(r.json()["status"], "created")
    eq(r.json()["run_id"], doc["run_id"])
    after = S.db.counts()
    eq(after["runs"], before["runs"] + 1, "one run stored")
    eq(after["measurements"], before["measurements"] + 300, "300 measurements")
    r = get("/api/v1/runs/" + doc["run_id"])
    eq(r.status, 200, r)
    eq(json.dumps(r.json(), sort_keys=True), json.dumps(doc, sort_keys=True), "round trip")
    # The rebuilt document is a valid upload and the same content: 200.
    r = post(r.json())
    eq(r.status, 200, r)
    eq(r.json()["status"], "duplicate")


def test_idempotency():
    doc = h.make_doc(seed=2)
    eq(post(doc).status, 201)
    before = S.db.counts()
    # The same content again, even spelled differently (key order, 4 vs 4.0): 200.
    r = post(json.dumps(doc, indent=2, sort_keys=True).encode())
    eq(r.status, 200, r)
    doc2 = copy.deepcopy(doc)
    doc2["cells"][0]["baseline_ns"] = 0.3120
    eq(post(json.dumps(doc2).replace('"baseline_ns": 0.312', '"baseline_ns": 3.12e-1')
            .encode()).status, 200)
    # Different content under the same run_id: 409, nothing changes.
    doc3 = copy.deepcopy(doc)
    doc3["cells"][4]["p50"] += 0.001
    r = post(doc3)
    eq(r.status, 409, r)
    eq(r.error()["field"], "run_id")
    eq(r.error()["code"], "conflict")
    eq(S.db.counts(), before, "database unchanged")


def mutate(fn):
    doc = h.make_doc(seed=99)
    fn(doc)
    return doc


BAD = [
    # (name, body maker, status, field, code or None)
    ("invalid json", lambda: b'{"schema": ', 400, "", "json"),
    ("duplicate keys", lambda: b'{"schema":"atomwatch.result/1","schema":"x"}', 400, "",
     "json"),
    ("not an object", lambda: b"[1, 2]", 400, "", "type"),
    ("empty body", lambda: b"", 400, "", "required"),
    ("number overflow", lambda: json.dumps(h.make_doc(seed=98)).replace(
        '"n": 200', '"n": 1e999', 1).encode(), 400, "", "json"),
    ("NaN", lambda: json.dumps(h.make_doc(seed=97)).replace('"p50": ', '"p50": NaN, "x": ',
                                                              1).encode(), 400, "", "json"),
    ("Infinity", lambda: json.dumps(h.make_doc(seed=96)).replace(
        '"max": ', '"max": Infinity, "x": ', 1).encode(), 400, "", "json"),
    ("unknown schema", lambda: mutate(lambda d: d.update(schema="atomwatch.result/2")), 400,
     "schema", "unsupported_schema"),
    ("unknown field", lambda: mutate(lambda d: d.update(bogus=1)), 400, "bogus",
     "unknown_field"),
    ("run_id missing", lambda: mutate(lambda d: d.pop("run_id")), 400, "run_id", "required"),
    ("run_id uppercase", lambda: mutate(lambda d: d.update(run_id=d["run_id"].upper())), 400,
     "run_id", "invalid"),
    ("project bad name", lambda: mutate(lambda d: d.update(project="a b")), 400, "project",
     "invalid"),
    ("project too long", lambda: mutate(lambda d: d.update(project="p" * 65)), 400, "project",
     "invalid"),
    ("commit null", lambda: mutate(lambda d: d.update(commit=None)), 400, "commit",
     "required"),
    ("commit not hex", lambda: mutate(lambda d: d.update(commit="xyz1234")), 400, "commit",
     "invalid"),
    ("commit too short", lambda: mutate(lambda d: d.update(commit="abc12")), 400, "commit",
     "invalid"),
    ("ref with space", lambda: mutate(lambda d: d.update(ref="my branch")), 400, "ref",
     "invalid"),
    ("trigger", lambda: mutate(lambda d: d.update(trigger="nightly")), 400, "trigger",
     "invalid"),
    ("started_at", lambda: mutate(lambda d: d.update(started_at="yesterday")), 400,
     "started_at", "invalid"),
    ("finished before start", lambda: mutate(lambda d: d.update(
        finished_at="2026-11-29T09:00:00Z")), 400, "finished_at", "order"),
    ("host missing", lambda: mutate(lambda d: d.pop("host")), 400, "host", "required"),
    ("host.name", lambda: mutate(lambda d: d["host"].update(name="<script>")), 400,
     "host.name", "invalid"),
    ("host label type", lambda: mutate(lambda d: d["host"]["labels"].update(rack=7)), 400,
     "host.labels.rack", "type"),
    ("cpu_model too long", lambda: mutate(lambda d: d["host"].update(cpu_model="x" * 600)),
     400, "host.cpu_model", "too_long"),
    ("control characters", lambda: mutate(lambda d: d["host"].update(cpu_model="a\u0001b")),
     400, "host.cpu_model", "invalid"),
    ("matrix.version", lambda: mutate(lambda d: d["matrix"].update(version=0)), 400,
     "matrix.version", "range"),
    ("matrix.hash", lambda: mutate(lambda d: d["matrix"].update(hash="XYZ")), 400,
     "matrix.hash", "invalid"),
    ("cells not a list", lambda: mutate(lambda d: d.update(cells={})), 400, "cells", "type"),
    ("p50 a string", lambda: mutate(lambda d: d["cells"][3].update(p50="4.5")), 400,
     "cells[3].p50", "type"),
    ("p50 negative", lambda: mutate(lambda d: d["cells"][3].update(p50=-1.0)), 400,
     "cells[3].p50", "range"),
    ("p99 below p95", lambda: mutate(lambda d: d["cells"][3].update(
        p99=d["cells"][3]["p95"] / 2)), 400, "cells[3].p99", "order"),
    ("status", lambda: mutate(lambda d: d["cells"][5].update(status="great")), 400,
     "cells[5].status", "invalid"),
    ("duplicate cell key", lambda: mutate(lambda d: d["cells"][7].update(
        key=d["cells"][6]["key"])), 400, "cells[7].key", "duplicate"),
    ("unknown cell field", lambda: mutate(lambda d: d["cells"][2].update(bogus=1)), 400,
     "cells[2].bogus", "unknown_field"),
    ("unit", lambda: mutate(lambda d: d["cells"][9].update(unit="us")), 400,
     "cells[9].unit", "invalid"),
    ("cpu out of range", lambda: mutate(lambda d: d["cells"][9].update(cpu=70000)), 400,
     "cells[9].cpu", "range"),
    ("fractional n", lambda: mutate(lambda d: d["cells"][9].update(n=1.5)), 400,
     "cells[9].n", "type"),
]


def test_bad_inputs():
    before = S.db.counts()
    for path in UPLOADS:
        for name, make, status, field, code in BAD:
            body = make()
            r = post(body if isinstance(body, bytes) else body, path=path)
            eq(r.status, status, "%s %s: %r" % (path, name, r))
            err = r.error()
            eq(err["field"], field, "%s %s" % (path, name))
            if code:
                eq(err["code"], code, "%s %s" % (path, name))
            check(err["message"], "%s %s: empty message" % (path, name))
    eq(S.db.counts(), before, "database unchanged after every bad input")


def test_wrong_host_and_limits():
    before = S.db.counts()
    for path in UPLOADS:
        r = post(h.make_doc(host=OTHER, seed=5), path=path)
        eq(r.status, 403, "%s: %r" % (path, r))
        eq(r.error()["field"], "host.name")
    # A collector with small limits: body size and cell count.
    strict = h.Collector(S.db.url, config="http:\n  max_body: 100KiB\ningest:\n  max_cells: 50\n")
    strict.start()
    try:
        for i, path in enumerate(UPLOADS):
            r = post(h.make_doc(seed=6), col=strict, path=path)  # ~120 KB
            eq(r.status, 413, "%s: %r" % (path, r))
            eq(r.error()["code"], "too_large")
            r = post(h.make_doc(seed=7, cells=51), col=strict, path=path)
            eq(r.status, 400, "%s: %r" % (path, r))
            eq(r.error()["field"], "cells")
            eq(r.error()["code"], "too_many")
            # 413 comes before the body is read: the headers alone get it.
            s = socket.create_connection(("127.0.0.1", strict.port), timeout=10)
            s.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: t\r\n"
                      b"Content-Length: 9999999\r\n"
                      b"Authorization: Bearer " + S.agent.encode() + b"\r\n\r\n")
            eq(s.recv(4096).split(b"\r\n")[0], b"HTTP/1.1 413 Content Too Large",
               "early 413 on " + path)
            s.close()
            eq(post(h.make_doc(seed=8 + 100 * i, cells=50), col=strict, path=path).status, 201)
    finally:
        strict.stop()
    after = S.db.counts()
    eq(after["runs"], before["runs"] + len(UPLOADS), "only the good uploads stored")


def metric(text, prefix):
    """The value of the one sample of /metrics whose line starts with `prefix`, 0 when none."""
    lines = [l for l in text.splitlines() if l.startswith(prefix)]
    check(len(lines) <= 1, lines)
    return int(float(lines[0].split()[-1])) if lines else 0


def test_runs_is_results():
    """POST /api/v1/runs is POST /api/v1/results: a run stored through one is the same run
    through the other (duplicate, conflict), with the same replies and the same metrics."""
    runs, results = UPLOADS[1], UPLOADS[0]
    ingest = "atomwatch_ingest_duration_seconds_count"
    created = 'atomwatch_runs_stored_total{outcome="created"}'
    by_route = 'atomwatch_http_requests_total{route="%s",method="POST",status="%s"}'
    m0 = get("/metrics").body.decode()
    doc = h.make_doc(seed=40, commit_time="2026-11-28T12:00:00Z")
    before = S.db.counts()
    r = post(doc, path=runs)
    eq(r.status, 201, r)
    eq(sorted(r.json()), ["run_id", "seq", "status"])
    eq((r.json()["status"], r.json()["run_id"]), ("created", doc["run_id"]))
    seq = r.json()["seq"]
    check(r.headers["content-type"].startswith("application/json"), r.headers)
    after = S.db.counts()
    eq(after["runs"], before["runs"] + 1, "one run stored")
    eq(after["measurements"], before["measurements"] + 300, "300 measurements")
    stored = get("/api/v1/runs/" + doc["run_id"])
    eq(stored.status, 200, stored)
    eq(json.dumps(stored.json(), sort_keys=True), json.dumps(doc, sort_keys=True), "round trip")
    # The same run through either path: a duplicate, with the seq it was stored under.
    for path in (runs, results):
        r = post(doc, path=path)
        eq((r.status, r.json()["status"], r.json()["seq"]), (200, "duplicate", seq), path)
    # Other content under that run_id, through either path: 409, nothing changes.
    doc2 = copy.deepcopy(doc)
    doc2["cells"][4]["p50"] += 0.001
    for path in (runs, results):
        r = post(doc2, path=path)
        eq((r.status, r.error()["code"], r.error()["field"]), (409, "conflict", "run_id"), path)
    # A run stored through /results is a duplicate through /runs.
    doc3 = h.make_doc(seed=41)
    eq(post(doc3, path=results).status, 201)
    eq(post(doc3, path=runs).status, 200)
    eq(S.db.counts()["runs"], before["runs"] + 2, "two runs in all")
    # The same metrics: the ingest histogram and the outcomes count both paths, the requests
    # counter each under the path the client used. Both are counted once a reply has been
    # sent, so the last upload's may land a moment after its client read the reply.
    deadline = time.monotonic() + 10
    while True:
        m1 = get("/metrics").body.decode()
        if metric(m1, ingest) - metric(m0, ingest) >= 7 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    eq(metric(m1, ingest) - metric(m0, ingest), 7, "every upload timed")
    eq(metric(m1, created) - metric(m0, created), 2, "two runs created")
    eq(metric(m1, by_route % (runs, 201)) - metric(m0, by_route % (runs, 201)), 1)
    eq(metric(m1, by_route % (runs, 200)) - metric(m0, by_route % (runs, 200)), 2)
    eq(metric(m1, by_route % (runs, 409)) - metric(m0, by_route % (runs, 409)), 1)
    eq(metric(m1, by_route % (results, 201)) - metric(m0, by_route % (results, 201)), 1)
    # Reading runs is unchanged, and the path now allows both methods.
    eq(get("/api/v1/runs?limit=1").status, 200)
    r = S.col.request("PUT", "/api/v1/runs", doc)
    eq(r.status, 405)
    eq(r.headers["allow"], "GET, POST")


def test_runner_document():
    """A document from the real runner, when this build has it."""
    runner = os.path.join(h.BUILD_DIR, "runner", "atomwatch-run")
    if not os.access(runner, os.X_OK):
        print("  (no %s: skipped)" % runner)
        return
    out = subprocess.run([runner, "--profile", "quick", "--format", "json", "--quiet",
                          "--commit", "0123456789abcdef0123456789abcdef01234567",
                          "--project", "p", "--ref", "main", "--host", "runner-host"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    check(out.returncode in (0, 1), "atomwatch-run failed: %s" % out.stderr[-2000:])
    doc = json.loads(out.stdout)
    token = S.col.token("agent", "runner-host")
    r = post(out.stdout, token=token)
    eq(r.status, 201, r)
    r = get("/api/v1/runs/" + doc["run_id"])
    eq(r.status, 200, r)
    eq(json.dumps(r.json(), sort_keys=True), json.dumps(doc, sort_keys=True), "round trip")


# ---- authentication ----

def endpoints(job_id, run_id):
    """(method, path, body, expectation per token kind). Kinds: none, wrong, malformed,
    revoked, other (another host's agent), agent, ci, admin."""
    read = {"none": 200, "wrong": 401, "malformed": 401, "revoked": 401, "other": 200,
            "agent": 200, "ci": 200, "admin": 200}
    cell = q("op=stadd cpu=0")
    out = [("GET", p, None, read) for p in (
        "/api/v1/hosts", "/api/v1/hosts/" + HOST, "/api/v1/runs", "/api/v1/runs/" + run_id,
        "/api/v1/series?host=%s&cell=%s" % (HOST, cell), "/api/v1/jobs",
        "/api/v1/jobs/%d" % job_id, "/metrics")]
    out.append(("GET", "/healthz", None, dict(read, wrong=200, malformed=200, revoked=200)))
    for path in UPLOADS:
        out.append(("POST", path, "doc",
                    {"none": 401, "wrong": 401, "malformed": 401, "revoked": 401, "other": 403,
                     "agent": 201, "ci": 403, "admin": 201}))
    out.append(("POST", "/api/v1/jobs", {"project": "linux", "commit": "abcdef0",
                                          "ref": "main", "hosts": ["nobody"]},
                {"none": 401, "wrong": 401, "malformed": 401, "revoked": 401, "other": 403,
                 "agent": 403, "ci": 201, "admin": 201}))
    out.append(("GET", "/api/v1/jobs/next?host=" + HOST, None,
                {"none": 401, "wrong": 401, "malformed": 401, "revoked": 401, "other": 403,
                 "agent": 204, "ci": 403, "admin": 204}))
    out.append(("POST", "/api/v1/jobs/%d/status" % job_id,
                {"state": "running", "host": HOST},
                {"none": 401, "wrong": 401, "malformed": 401, "revoked": 401, "other": 403,
                 "agent": 200, "ci": 403, "admin": 200}))
    return out


def test_auth_matrix():
    # A job HOST has claimed, so that its status can be set.
    r = S.col.request("POST", "/api/v1/jobs", {"project": "linux", "commit": "abcdef0",
                                               "ref": "main", "hosts": [HOST]}, token=S.ci)
    eq(r.status, 201, r)
    job_id = r.json()["job"]["id"]
    r = get("/api/v1/jobs/next?host=" + HOST, token=S.agent)
    eq(r.status, 200, r)
    eq(r.json()["job"]["id"], job_id)
    doc = h.make_doc(seed=11)
    run_id = doc["run_id"]
    eq(post(doc).status, 201)
    tokens = {"none": None, "wrong": S.wrong, "revoked": S.revoked, "other": S.other,
              "agent": S.agent, "ci": S.ci, "admin": S.admin}
    for method, path, body, want in endpoints(job_id, run_id):
        for kind, expected in want.items():
            b = body
            if body == "doc":
                b = h.make_doc(seed=100 + len(kind))
                b["run_id"] = str(uuid.uuid4())
            if kind == "malformed":
                r = S.col.request(method, path, b, headers={"Authorization": "Token x"})
            else:
                r = S.col.request(method, path, b, token=tokens[kind])
            eq(r.status, expected, "%s %s with %s token: %r" % (method, path, kind, r))
            if r.status == 401:
                check(r.headers.get("www-authenticate", "").startswith("Bearer"), r.headers)
                eq(r.error()["code"], "unauthorized")
            if r.status == 403:
                eq(r.error()["code"], "forbidden")


def test_reads_need_token_when_configured():
    locked = h.Collector(S.db.url, config=NO_CONFIRM_JOBS + "auth:\n  read_requires_token: true\n"
                         ).start()
    try:
        for path in ("/api/v1/hosts", "/api/v1/runs", "/metrics", "/api/v1/jobs"):
            eq(get(path, col=locked).status, 401, path)
            eq(get(path, token=S.wrong, col=locked).status, 401, path)
            eq(get(path, token=S.revoked, col=locked).status, 401, path)
            for token in (S.agent, S.other, S.ci, S.admin):
                eq(get(path, token=token, col=locked).status, 200, path)
        eq(get("/healthz", col=locked).status, 200, "healthz stays open")
    finally:
        eq(locked.stop(), 0)


# ---- queries ----

def test_queries():
    host = "query-host"
    token = S.col.token("agent", host)
    ids = []
    # Three commits stored out of commit order; the series follows commit_time.
    for i, (commit, ctime, scale) in enumerate([
            ("c0000003", "2026-10-03T00:00:00Z", 3.0), ("c0000001", "2026-10-01T00:00:00Z", 1.0),
            ("c0000002", "2026-10-02T00:00:00Z", 2.0)]):
        doc = h.make_doc(host=host, commit=commit, commit_time=ctime, scale=scale, seed=20 + i,
                         cells=40)
        if commit == "c0000002":  # a cell without values: its point's value is null
            skipped = [c for c in doc["cells"] if c["key"] == "op=stadd cpu=0"][0]
            skipped.update({k: None for k in ("min", "p50", "p95", "p99", "max", "mean",
                                              "stddev", "ci_lo", "ci_hi")})
            skipped.update({"status": "skipped", "reason": "no such \"op\" here", "n": 0})
        ids.append(doc["run_id"])
        eq(post(doc, token=token).status, 201)
    r = get("/api/v1/runs?host=%s&limit=2" % host)
    eq(r.status, 200)
    page = r.json()
    eq([x["run_id"] for x in page["runs"]], [ids[2], ids[1]], "newest first")
    check(page["next_cursor"], "a next page")
    r = get("/api/v1/runs?host=%s&limit=2&cursor=%s" % (host, page["next_cursor"]))
    eq([x["run_id"] for x in r.json()["runs"]], [ids[0]])
    eq(r.json()["next_cursor"], None)
    eq(len(get("/api/v1/runs?host=%s&commit=c0000002" % host).json()["runs"]), 1)
    eq(len(get("/api/v1/runs?host=%s&ref=other" % host).json()["runs"]), 0)
    eq(len(get("/api/v1/runs?project=linux&host=%s" % host).json()["runs"]), 3)
    r = get("/api/v1/series?host=%s&cell=%s&metric=p50" % (host, q("op=stadd cpu=0")))
    eq(r.status, 200, r)
    points = r.json()["points"]
    eq([p["commit"] for p in points], ["c0000001", "c0000002", "c0000003"], "commit order")
    check(points[0]["value"] < points[2]["value"], points)
    eq((points[1]["value"], points[1]["status"]), (None, "skipped"), points)
    # the reply's fields in their order (written as text, not by jansson), each point's too
    eq(list(r.json()), ["host", "cell", "metric", "ref", "project", "points"])
    eq(list(points[0]), ["run_id", "seq", "commit", "order_time", "started_at", "matrix_hash",
                         "status", "value"])
    eq(r.body.count(b'"value":'), 3, r.body)
    check(b'"value":null,' not in r.body and b'"value":null}' in r.body, r.body)
    # an unknown cell: no points, its key given back escaped as JSON
    odd = 'x"y\\z/\t\u00e9\u20ac\x01'
    r = get("/api/v1/series?host=%s&cell=%s&project=linux" % (host, q(odd)))
    eq(r.status, 200, r)
    eq(r.json(), {"host": host, "cell": odd, "metric": "p50", "ref": "main", "project": "linux",
                  "points": []})
    check(b'"cell":"x\\"y\\\\z/\\t\xc3\xa9\xe2\x82\xac\\u0001"' in r.body, r.body)
    eq(len(get("/api/v1/series?host=%s&cell=%s&limit=1" % (host, q("op=stadd cpu=0")))
           .json()["points"]), 1)
    r = get("/api/v1/hosts")
    check(host in [x["name"] for x in r.json()["hosts"]], r)
    r = get("/api/v1/hosts/" + host)
    eq(r.status, 200)
    eq(r.json()["host"]["runs"], 3)
    eq(len(r.json()["fingerprints"]), 1)
    eq(r.json()["host"]["labels"]["cloud"], "aws")
    # Bad parameters: 400 naming the parameter; unknown things: 404.
    for path, status, field in [
            ("/api/v1/runs?limit=0", 400, "limit"), ("/api/v1/runs?limit=x", 400, "limit"),
            ("/api/v1/runs?host=a%20b", 400, "host"), ("/api/v1/runs?commit=zz", 400, "commit"),
            ("/api/v1/runs?cursor=-1", 400, "cursor"),
            ("/api/v1/runs/not-a-uuid", 400, "run_id"),
            ("/api/v1/runs/" + str(uuid.uuid4()), 404, "run_id"),
            ("/api/v1/hosts/nobody", 404, "name"), ("/api/v1/hosts/a%20b", 400, "name"),
            ("/api/v1/series?cell=x", 400, "host"), ("/api/v1/series?host=h", 400, "cell"),
            ("/api/v1/series?host=h&cell=x&metric=p42", 400, "metric"),
            ("/api/v1/jobs/0", 400, "id"), ("/api/v1/jobs/999999", 404, "id"),
            ("/api/v1/nothing", 404, "")]:
        r = get(path)
        eq(r.status, status, path)
        eq(r.error()["field"], field, path)
    r = get("/api/v1/hosts/" + "x" * 2000)
    eq((r.status, r.error()["code"]), (414, "too_long"))
    r = S.col.request("DELETE", "/api/v1/runs")
    eq(r.status, 405)
    eq(r.headers["allow"], "GET, POST")  # POST /api/v1/runs uploads (test_runs_is_results)
    r = S.col.request("DELETE", "/api/v1/results")
    eq(r.status, 405)
    eq(r.headers["allow"], "POST")


# ---- jobs ----

def post_job(body, token=None):
    return S.col.request("POST", "/api/v1/jobs", body, token=token or S.ci)


def poll(host, token, wait=0, col=None, timeout=60):
    return (col or S.col).request("GET", "/api/v1/jobs/next?host=%s&wait=%d" % (host, wait),
                                  token=token, timeout=timeout)


def test_job_validation():
    good = {"project": "linux", "commit": "abcdef0", "ref": "main", "hosts": "all"}
    for change, field in [({"project": "a b"}, "project"), ({"commit": "nothex!"}, "commit"),
                          ({"ref": "a b"}, "ref"), ({"subject": "x y"}, "subject"),
                          ({"hosts": "some"}, "hosts"), ({"hosts": []}, "hosts"),
                          ({"hosts": ["ok", "not ok"]}, "hosts[1]"), ({"ttl": 0}, "ttl"),
                          ({"ttl": "1h"}, "ttl"), ({"when": 1}, "when")]:
        body = dict(good)
        body.update(change)
        r = post_job(body)
        eq(r.status, 400, "%s: %r" % (change, r))
        eq(r.error()["field"], field, str(change))
    body = dict(good)
    del body["hosts"]
    eq(post_job(body).error()["field"], "hosts")
    eq(post_job(b"{").status, 400)


def test_long_poll():
    host = "poller-1"
    token = S.col.token("agent", host)
    eq(poll(host, token).status, 204, "nothing to do")
    # Times out with 204 after `wait`.
    t = time.time()
    r = poll(host, token, wait=1)
    took = time.time() - t
    eq(r.status, 204)
    check(0.9 <= took < 2.5, "204 after %.2fs" % took)
    # Returns as soon as a job is posted.
    result = {}

    def waiter():
        result["r"] = poll(host, token, wait=20)
        result["t"] = time.time()

    def jobs_waiting():  # the polls the collector holds
        return metric(get("/metrics").body.decode(), "atomwatch_jobs_waiting ")

    th = threading.Thread(target=waiter)
    waiting = jobs_waiting()
    th.start()
    # the job is posted once the collector holds the poll, so that it wakes a waiting poll
    deadline = time.time() + 10
    while jobs_waiting() <= waiting:
        check(time.time() < deadline, "the poll never reached the collector")
        time.sleep(0.01)
    check("r" not in result, "the poll waits")
    t_post = time.time()
    r = post_job({"project": "linux", "commit": "abcdef1", "ref": "main",
                  "hosts": [host], "subject": "mylib"})
    eq(r.status, 201, r)
    job = r.json()["job"]
    eq([x["state"] for x in job["hosts"]], ["pending"])
    th.join(30)
    eq(result["r"].status, 200, result["r"])
    eq(result["r"].json()["job"]["id"], job["id"])
    eq(result["r"].json()["job"]["subject"], "mylib")
    check(result["t"] - t_post < 0.5, "returned %.2fs after the post" % (result["t"] - t_post))
    # Claimed once: the next poll has nothing.
    eq(poll(host, token).status, 204, "each host claims a job once")
    # Progress.
    path = "/api/v1/jobs/%d/status" % job["id"]
    r = S.col.request("POST", path, {"state": "running"}, token=token)
    eq(r.status, 200, r)
    r = S.col.request("POST", path, {"state": "finished"}, token=token)
    eq((r.status, r.error()["field"]), (400, "state"))
    r = S.col.request("POST", path, {"state": "done", "run_id": "nope"}, token=token)
    eq((r.status, r.error()["field"]), (400, "run_id"))
    run_id = str(uuid.uuid4())
    r = S.col.request("POST", path, {"state": "done", "run_id": run_id, "message": "ok"},
                      token=token)
    eq(r.status, 200, r)
    eq(r.json()["job"]["hosts"][0]["state"], "done")
    eq(r.json()["job"]["hosts"][0]["run_id"], run_id)
    r = S.col.request("POST", path, {"state": "running"}, token=token)
    eq((r.status, r.error()["code"]), (409, "conflict"))
    # A job for listed hosts is not offered to others; "all" is offered to everyone once.
    other = "poller-2"
    other_token = S.col.token("agent", other)
    eq(poll(other, other_token).status, 204)
    r = post_job({"project": "linux", "commit": "abcdef2", "ref": "main", "hosts": "all"})
    all_id = r.json()["job"]["id"]
    for hst, tok in ((host, token), (other, other_token)):
        r = poll(hst, tok)
        eq(r.status, 200, r)
        eq(r.json()["job"]["id"], all_id)
        eq(poll(hst, tok).status, 204)
    eq(get("/api/v1/jobs?limit=1").json()["jobs"][0]["id"], all_id)


def test_long_poll_idle_cpu_and_no_blocking():
    host = "poller-3"
    token = S.col.token("agent", host)
    while poll(host, token).status == 200:  # earlier jobs for "all" hosts
        pass
    n = 24  # more long-polls than HTTP threads
    results = []
    threads = [threading.Thread(target=lambda: results.append(poll(host, token, wait=3)))
               for _ in range(n)]
    # What the collector spends with no request at all, measured now: the earlier tests'
    # post-ingest work done, then one quiet second (on a loaded CI machine that work lags).
    h.wait_for_postingest(S.col.port)
    cpu0, t0 = S.col.cpu_seconds(), time.time()
    time.sleep(1.0)
    quiet = (S.col.cpu_seconds() - cpu0) / (time.time() - t0)
    cpu0 = S.col.cpu_seconds()
    t0 = time.time()
    for th in threads:
        th.start()
    time.sleep(0.5)
    # Other requests are not blocked by the waiting polls.
    t = time.time()
    eq(get("/healthz").status, 200)
    eq(get("/api/v1/hosts").status, 200)
    check(time.time() - t < 0.5, "reads took %.2fs during long-polls" % (time.time() - t))
    for th in threads:
        th.join(30)
    wall = time.time() - t0
    cpu = S.col.cpu_seconds() - cpu0
    eq(sorted(r.status for r in results), [204] * n)
    # A waiting poll that spun would cost a whole CPU; 24 suspended ones cost nearly none.
    check(cpu < (0.15 + quiet) * wall, "idle long-polls used %.3fs CPU in %.1fs (%.3fs/s "
          "with no request)" % (cpu, wall, quiet))


# ---- service life ----

def test_sigterm_drains_in_flight_upload():
    col = h.Collector(S.db.url, config=NO_CONFIRM_JOBS).start()
    doc = h.make_doc(seed=31)
    body = json.dumps(doc).encode()
    s = socket.create_connection(("127.0.0.1", col.port), timeout=30)
    s.sendall(b"POST /api/v1/results HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
              b"Authorization: Bearer " + S.agent.encode() + b"\r\nContent-Length: %d\r\n\r\n"
              % len(body))
    s.sendall(body[:len(body) // 2])
    time.sleep(0.3)
    col.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    check(col.proc.poll() is None, "the collector waits for the upload in flight")
    # No new connections are accepted meanwhile.
    try:
        socket.create_connection(("127.0.0.1", col.port), timeout=2).close()
        refused = False
    except OSError:
        refused = True
    check(refused, "new connections refused while draining")
    s.sendall(body[len(body) // 2:])
    reply = b""
    while b"\r\n\r\n" not in reply:
        chunk = s.recv(4096)
        if not chunk:
            break
        reply += chunk
    s.close()
    eq(reply.split(b"\r\n")[0], b"HTTP/1.1 201 Created", "the in-flight upload completes")
    eq(col.proc.wait(timeout=30), 0, "clean exit")
    check("stopped" in col.logs(), col.logs())
    eq(get("/api/v1/runs/" + doc["run_id"]).status, 200, "stored")


def test_command_line():
    c = S.col
    for argv in (["frobnicate"], ["serve", "--port", "1"], ["migrate"], ["token"],
                 ["token", "create", "--db", S.db.url],
                 ["token", "create", "--db", S.db.url, "--role", "agent"],
                 ["token", "create", "--db", S.db.url, "--role", "ci", "--host", "x"],
                 ["token", "revoke", "--db", S.db.url], ["serve", "--listen", "nonsense"],
                 []):
        out = c.cli(*argv, check=False)
        eq(out.returncode, 2, "%s: %s" % (argv, out.stderr))
        eq(len(out.stderr.strip().splitlines()), 1, "one line for %s: %r" % (argv, out.stderr))
    out = c.cli("token", "revoke", "--db", S.db.url, "999999", check=False)
    eq(out.returncode, 1, out.stderr)
    check("no token 999999" in out.stderr, out.stderr)
    out = c.cli("migrate", "--db", "mysql://x", check=False)
    eq(out.returncode, 1)
    check("must start with 'sqlite:' or 'postgres://'" in out.stderr, out.stderr)
    cfg = os.path.join(h.tempdir(), "bad.yaml")
    with open(cfg, "w") as f:
        f.write("http:\n  threads: 4\n  treads: 2\n")
    out = c.cli("serve", "--config", cfg, "--db", S.db.url, check=False)
    eq(out.returncode, 1)
    check(cfg + ":3:3: unknown key 'http.treads'" in out.stderr, out.stderr)
    out = c.cli("token", "create", "--db", S.db.url, "--role", "ci")
    token = out.stdout.strip().splitlines()[-1]
    check(token.startswith("awt_") and len(token) == 68, "token alone on the last line")
    check(c.cli("--help").stdout.startswith("usage:"))
    out = c.cli("migrate", "--db", S.db.url)
    check("schema version" in out.stdout, out.stdout)


def test_metrics_count_uploads():
    text = get("/metrics").body.decode()
    lines = [l for l in text.splitlines()
             if l.startswith('atomwatch_http_requests_total{route="/api/v1/results",method="POST",'
                             'status="201"}')]
    eq(len(lines), 1, text)
    check(int(lines[0].split()[-1]) >= 3, lines)
    count = [l for l in text.splitlines()
             if l.startswith("atomwatch_ingest_duration_seconds_count")]
    check(int(count[0].split()[-1]) >= 3, count)
    created = [l for l in text.splitlines() if 'outcome="created"' in l]
    check(int(created[0].split()[-1]) >= 3, created)
    h.wait_for_postingest(S.col.port)  # the post-ingest tasks of those uploads drain to none


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=("sqlite", "postgres"), required=True)
    args = ap.parse_args()
    setup(args.backend)
    tests = [(name, fn) for name, fn in globals().items() if name.startswith("test_")]
    h.run(tests, "collector api (%s)" % args.backend)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Two collectors on different ports sharing one PostgreSQL (the scale-out setup behind a load
balancer): they migrate at the same time, an upload through one is read through the other, a
job posted through one is handed out by the other's long-poll, concurrent uploads of new cells
and hosts through both succeed, the same run uploaded through both is stored once, and a host
claims a job once even when it polls both."""

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402


class S:
    pass


def setup():
    S.pg = h.Postgres().start()
    S.db = h.Database("postgres", S.pg)
    # Both start (and migrate) at once.
    S.a = h.Collector(S.db.url)
    S.b = h.Collector(S.db.url)
    starters = [threading.Thread(target=c.start) for c in (S.a, S.b)]
    for t in starters:
        t.start()
    for t in starters:
        t.join(60)
    check(S.a.port and S.b.port and S.a.port != S.b.port, "both collectors listen")
    S.admin = S.a.token("admin")
    S.ci = S.a.token("ci")


def test_upload_here_read_there():
    doc = h.make_doc(host="cl-1", seed=1)
    eq(S.a.request("POST", "/api/v1/results", doc, token=S.admin).status, 201)
    r = S.b.request("GET", "/api/v1/runs/" + doc["run_id"])
    eq(r.status, 200, r)
    eq(json.dumps(r.json(), sort_keys=True), json.dumps(doc, sort_keys=True))
    check("cl-1" in [x["name"] for x in S.b.request("GET", "/api/v1/hosts").json()["hosts"]])
    # A token created through one database is valid on both collectors.
    eq(S.b.request("POST", "/api/v1/results", doc, token=S.admin).status, 200)


def test_concurrent_uploads_through_both():
    errors = []
    results = []

    def uploader(col, i):
        for k in range(6):
            # New hosts and new cells, each pair of uploaders (one per collector) racing
            # to create the same ones.
            doc = h.make_doc(host="cc-%d" % (i % 3), seed=1000 * i + k, cells=80 + i)
            for cell in doc["cells"]:
                cell["key"] += " d=%d" % (i // 2 + 1 + 10 * k)
                cell["d"] = i // 2 + 1 + 10 * k
            r = col.request("POST", "/api/v1/results", doc, token=S.admin)
            (results if r.status == 201 else errors).append(r)

    threads = [threading.Thread(target=uploader, args=(S.a if i % 2 else S.b, i))
               for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    eq(errors, [], "all uploads succeed")
    eq(len(results), 48)
    # The same run through both at once: one 201, one 200, stored once.
    doc = h.make_doc(host="cl-2", seed=7)
    replies = []
    threads = [threading.Thread(target=lambda c=c: replies.append(
        c.request("POST", "/api/v1/results", doc, token=S.admin).status)) for c in (S.a, S.b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    eq(sorted(replies), [200, 201])
    eq(S.db.count("runs", "WHERE run_id = '%s'" % doc["run_id"]), 1)
    eq(S.db.count("runs r", "WHERE r.n_cells <> (SELECT COUNT(*) FROM measurements m "
                            "WHERE m.run_seq = r.seq)"), 0)


def test_job_posted_here_claimed_there():
    host = "cl-agent"
    token = S.a.token("agent", host)
    result = {}

    def waiter():
        result["r"] = S.b.request("GET", "/api/v1/jobs/next?host=%s&wait=20" % host,
                                  token=token, timeout=60)
        result["t"] = time.time()

    th = threading.Thread(target=waiter)
    th.start()
    time.sleep(0.5)
    t_post = time.time()
    r = S.a.request("POST", "/api/v1/jobs", {"project": "linux", "commit": "abcdef0",
                                             "ref": "main", "hosts": [host]}, token=S.ci)
    eq(r.status, 201, r)
    th.join(30)
    eq(result["r"].status, 200, result["r"])
    eq(result["r"].json()["job"]["id"], r.json()["job"]["id"])
    # The other collector re-checks the database about once a second.
    check(result["t"] - t_post < 2.5, "claimed %.2fs after the post" % (result["t"] - t_post))
    # A host polling both collectors gets a job once.
    r = S.a.request("POST", "/api/v1/jobs", {"project": "linux", "commit": "abcdef1",
                                             "ref": "main", "hosts": "all"}, token=S.ci)
    replies = []
    threads = [threading.Thread(target=lambda c=c: replies.append(
        c.request("GET", "/api/v1/jobs/next?host=%s&wait=2" % host, token=token).status))
        for c in (S.a, S.b, S.a, S.b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    eq(sorted(replies), [200, 204, 204, 204])


def test_both_stop_cleanly():
    eq(S.a.stop(), 0)
    eq(S.b.stop(), 0)


def main():
    setup()
    tests = [(n, f) for n, f in globals().items() if n.startswith("test_")]
    h.run(tests, "collector cluster (postgres)")


if __name__ == "__main__":
    main()

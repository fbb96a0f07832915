#!/usr/bin/python3
"""atomwatch-agent against the real collector: a run is uploaded and readable; with the
collector down it is spooled (exit 3) and a later flush stores it exactly once; 500 three times
then success stores it once; Retry-After (seconds and HTTP-date) is waited for; a 400 or a 403
moves the document to rejected/ with the collector's answer and is never retried; a 401 keeps
it; kill -9 during an upload leaves it in the spool and the next flush stores it once; TLS to a
collector behind HTTPS with a self-signed certificate is refused unless the CA file is
configured; the token appears in no log and no document.

usage: test_agent_upload.py [--backend sqlite|postgres]"""

import argparse
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_helpers as a  # noqa: E402
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

HOST = "agent-e2e"
COMMIT = "a9e2e0000000000000000000000000000000c0de"


class Suite:
    pass


S = Suite()


def setup(backend):
    S.pg = h.Postgres().start() if backend == "postgres" else None
    S.db = h.Database(backend, S.pg)
    S.col = h.Collector(S.db.url).start()
    S.token = S.col.token("agent", HOST)
    S.other = S.col.token("agent", "someone-else")
    S.ci = S.col.token("ci")
    S.url = "http://127.0.0.1:%d" % S.col.port


def runs_with(run_id):
    return [r for r in a.runs_of(S.col, S.ci, HOST) if r["run_id"] == run_id]


def run(agent, commit=COMMIT, *extra, timeout=180):
    return agent.run("run", "--project", "e2e", "--commit", commit, "--ref", "main", "--quiet",
                     *extra, timeout=timeout)


def test_upload():
    ag = a.Agent(S.url, S.token, HOST)
    p = run(ag)
    eq(p.returncode, 0, "exit status: " + p.stderr)
    run_id = p.stdout.strip()
    doc = a.get_run(S.col, S.ci, run_id)
    eq(doc["run_id"], run_id)
    eq((doc["project"], doc["commit"], doc["ref"], doc["trigger"]), ("e2e", COMMIT, "main", "ci"))
    eq(doc["host"]["name"], HOST)
    eq(doc["host"]["labels"], {"rack": "e2e"})
    check(doc["meta"]["agent"].startswith("atomwatch-agent "), doc["meta"])
    check(len(doc["cells"]) >= 2, "cells")
    check(all(c["status"] in ("ok", "skipped") for c in doc["cells"]), doc["cells"])
    eq(ag.spooled(), [], "spool after a 2xx")
    check("HTTP 201" in p.stderr, p.stderr)
    eq(len(runs_with(run_id)), 1)


def test_down_then_flush():
    ag = a.Agent("http://127.0.0.1:%d" % h.free_port(), S.token, HOST)
    p = run(ag)
    eq(p.returncode, 3, "exit status with the collector down: " + p.stderr)
    run_id = p.stdout.strip()
    spooled = ag.spooled()
    eq(len(spooled), 1, "spooled documents")
    eq(a.read_json(spooled[0])["run_id"], run_id)
    check("stays in the spool" in p.stderr, p.stderr)
    eq(ag.temp_files(), [])
    eq(runs_with(run_id), [], "nothing reached the collector")
    ag.write(S.url)  # the collector is back
    p = ag.run("flush")
    eq(p.returncode, 0, "flush: " + p.stderr)
    eq(ag.spooled(), [])
    eq(len(runs_with(run_id)), 1, "stored exactly once")
    p = ag.run("flush")  # nothing left: nothing sent
    eq(p.returncode, 0, p.stderr)
    check("0 uploaded, 0 rejected, 0 left" in p.stderr, p.stderr)
    eq(len(runs_with(run_id)), 1)
    # something that is not a document (no agent writes one): set aside, not sent
    with open(os.path.join(ag.spool, "result-%s.json" % ("0" * 8 + "-0000-4000-8000-" +
                                                         "0" * 12)), "w") as f:
        f.write("{\"schema\": ")
    p = ag.run("flush")
    eq(p.returncode, 1, p.stderr)
    check("not a JSON document" in p.stderr, p.stderr)
    eq(ag.spooled(), [])
    eq(len(ag.rejected()), 2)


def test_500_three_times():
    proxy, port = a.start_proxy(S.col.port, "status:500:3")
    try:
        ag = a.Agent("http://127.0.0.1:%d" % port, S.token, HOST)
        p = run(ag)
        eq(p.returncode, 0, p.stderr)
        eq(a.proxy_stats(port)["uploads"], 4, "attempts")
        eq(a.proxy_stats(port)["answered"], {"500": 3, "201": 1})
        eq(p.stderr.count("answered 500; retry"), 3, p.stderr)
        eq(len(runs_with(p.stdout.strip())), 1)
        eq(ag.spooled(), [])
    finally:
        a.stop(proxy)


def test_retry_after():
    for after, least in (("1", 1.0), ("date+2", 1.0)):
        proxy, port = a.start_proxy(S.col.port, "status:503:1:" + after)
        try:
            ag = a.Agent("http://127.0.0.1:%d" % port, S.token, HOST)
            t0 = time.time()
            p = run(ag)
            eq(p.returncode, 0, p.stderr)
            took = time.time() - t0
            check(took >= least, "Retry-After %s honoured: the run took %.2fs" % (after, took))
            eq(a.proxy_stats(port)["answered"], {"503": 1, "201": 1})
        finally:
            a.stop(proxy)
    # longer than backoff_max (3s): no waiting, the document stays for a later flush
    proxy, port = a.start_proxy(S.col.port, "status:429:1:3600")
    try:
        ag = a.Agent("http://127.0.0.1:%d" % port, S.token, HOST)
        t0 = time.time()
        p = run(ag)
        eq(p.returncode, 3, p.stderr)
        check(time.time() - t0 < 60, "did not wait an hour")
        eq(len(ag.spooled()), 1)
        eq(a.proxy_stats(port)["uploads"], 1)
    finally:
        a.stop(proxy)


def test_400_rejected():
    proxy, port = a.start_proxy(S.col.port, "corrupt")
    try:
        ag = a.Agent("http://127.0.0.1:%d" % port, S.token, HOST)
        p = run(ag)
        eq(p.returncode, 1, "a rejected document is a failure: " + p.stderr)
        run_id = p.stdout.strip()
        eq(a.proxy_stats(port)["uploads"], 1, "never retried")
        eq(ag.spooled(), [], "no longer waiting in the spool")
        name = "result-%s.json" % run_id
        eq([os.path.basename(f) for f in ag.rejected()], [name, name + ".error"])
        with open(os.path.join(ag.spool, "rejected", name + ".error")) as f:
            error = f.read()
        check(error.startswith("HTTP 400\n"), error)
        check("invalid JSON" in error, error)
        eq(a.read_json(os.path.join(ag.spool, "rejected", name))["run_id"], run_id)
        eq(p.stderr.count("refused"), 1, "logged once: " + p.stderr)
        check("invalid JSON" in p.stderr, p.stderr)
        # a flush does not bring it back
        ag.write("http://127.0.0.1:%d" % port)
        p = ag.run("flush")
        eq(p.returncode, 0, p.stderr)
        eq(a.proxy_stats(port)["uploads"], 1)
    finally:
        a.stop(proxy)


def test_403_and_401():
    ag = a.Agent(S.url, S.other, HOST)  # a token of another host
    p = run(ag)
    eq(p.returncode, 1, p.stderr)
    eq(len(ag.rejected()), 2)
    with open([f for f in ag.rejected() if f.endswith(".error")][0]) as f:
        check(f.read().startswith("HTTP 403\n"), "403 kept")
    ag = a.Agent(S.url, "awt_" + "0" * 64, HOST)  # a token the collector does not know
    p = run(ag)
    eq(p.returncode, 3, p.stderr)
    eq(len(ag.spooled()), 1, "a 401 keeps the document")
    check("HTTP 401" in p.stderr and "token_file" in p.stderr, p.stderr)


def test_kill9_during_upload():
    proxy, port = a.start_proxy(S.col.port, "stall")
    try:
        ag = a.Agent("http://127.0.0.1:%d" % port, S.token, HOST)
        proc = ag.start("run", "--project", "e2e", "--commit", COMMIT, "--ref", "main",
                        "--quiet")
        a.wait_for(lambda: a.proxy_stats(port)["answered"].get("stalled"), 120,
                   "the upload to reach the collector")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        spooled = ag.spooled()
        eq(len(spooled), 1, "still in the spool")
        eq(ag.temp_files(), [])
        run_id = a.read_json(spooled[0])["run_id"]
        eq(len(runs_with(run_id)), 1, "the collector stored it before the kill")
        ag.write(S.url)
        p = ag.run("flush")
        eq(p.returncode, 0, p.stderr)
        check("already stored" in p.stderr, p.stderr)  # 200 duplicate: removed too
        eq(ag.spooled(), [])
        eq(len(runs_with(run_id)), 1, "stored once")
    finally:
        a.stop(proxy)


def test_tls():
    cert, key = a.self_signed_cert()
    proxy, port = a.start_proxy(S.col.port, "pass", cert, key)
    try:
        url = "https://127.0.0.1:%d" % port
        ag = a.Agent(url, S.token, HOST)
        p = run(ag)
        eq(p.returncode, 3, "an unknown CA is refused: " + p.stderr)
        check("certificate" in p.stderr.lower(), p.stderr)
        eq(a.proxy_stats(port, cert)["uploads"], 0, "nothing was sent over it")
        eq(len(ag.spooled()), 1)
        ag.write(url, collector_extra="  ca_file: %s\n" % cert)
        p = ag.run("flush")
        eq(p.returncode, 0, p.stderr)
        eq(a.proxy_stats(port, cert)["uploads"], 1)
        eq(ag.spooled(), [])
        p = run(ag, "b0b0b0b")
        eq(p.returncode, 0, p.stderr)
        eq(len(runs_with(p.stdout.strip())), 1)
    finally:
        a.stop(proxy)


def test_token_never_shown():
    ag = a.Agent("http://127.0.0.1:%d" % h.free_port(), S.token, HOST)
    p = run(ag)
    eq(p.returncode, 3)
    check(S.token not in p.stderr and S.token not in p.stdout, "token in the output")
    with open(ag.spooled()[0]) as f:
        check(S.token not in f.read(), "token in the document")
    p = ag.run("run", "--project", "e2e", "--commit", COMMIT, "--ref", "main", "--token", "x")
    eq(p.returncode, 2, "no --token option")


def test_usage_and_config_errors():
    ag = a.Agent(S.url, S.token, HOST)
    for args in (["run"], ["run", "--project", "e2e", "--commit", "nothex", "--ref", "main"],
                 ["run", "--project", "e2e", "--commit", COMMIT, "--ref", "main", "--subject",
                  "nosuch"],
                 ["run", "--project", "e2e", "--commit", COMMIT, "--ref", "main", "--profile",
                  "nosuch"]):
        p = ag.run(*args)
        eq(p.returncode, 2, "%s: %s" % (args, p.stderr))
        eq(p.stdout, "")
    with open(ag.config, "a") as f:
        f.write("bogus: 1\n")
    p = run(ag)
    eq(p.returncode, 2)
    check("agent.yaml:" in p.stderr and "unknown key 'bogus'" in p.stderr, p.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="sqlite", choices=("sqlite", "postgres"))
    args = ap.parse_args()
    a.agent_binary()
    setup(args.backend)
    h.run([(n, f) for n, f in sorted(globals().items()) if n.startswith("test_")],
          "agent upload (%s)" % args.backend)


if __name__ == "__main__":
    main()

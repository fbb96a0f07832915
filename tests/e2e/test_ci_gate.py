#!/usr/bin/python3
"""atomwatch-ci against the real collector: a commit much slower than main's history is
unconfirmed after one run (exit 0, 1 with --strict) and fails the gate (exit 1) once a second run
confirms it, and one like it passes (0); a host that never reports makes the gate incomplete
after the wait (exit 2, the host named, an <error> in the JUnit); a collector that is down is
exit 3; wait returns as soon as a late host uploads; trigger queues a job the collector lists;
the token reaches a collector whose reads need one, and a wrong one is exit 3.

usage: test_ci_gate.py [--backend sqlite|postgres]"""

import argparse
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_helpers as a  # noqa: E402
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

PROJECT = "gate-e2e"
HOST = "ci-e2e"
CELLS = 24


class Suite:
    pass


S = Suite()


def ci_binary():
    path = os.environ.get("AW_CI", os.path.join(h.BUILD_DIR, "ci", "atomwatch-ci"))
    if not os.access(path, os.X_OK):
        raise SystemExit("ci tests: no atomwatch-ci at %s (set AW_CI)" % path)
    return path


def ci(*args, token=None, timeout=120):
    env = {k: v for k, v in a.clean_env().items() if not k.startswith(("ATOMWATCH_", "GITHUB_"))}
    if token:
        env["ATOMWATCH_TOKEN"] = token
    return subprocess.run([ci_binary()] + list(args), capture_output=True, text=True,
                          timeout=timeout, env=env)


def commit(n):
    return "%040x" % (0xc1c1c1c1 * 1000 + n)


def upload(col, token, host, commit_id, ref, seed, scale=1.0, minute=0):
    doc = h.make_doc(host=host, project=PROJECT, commit=commit_id, ref=ref, cells=CELLS,
                     seed=seed, scale=scale,
                     started_at="2026-11-29T10:%02d:00.000000Z" % minute)
    r = col.request("POST", "/api/v1/results", doc, token=S.agent_token if token is None
                    else token)
    check(r.status in (200, 201), "upload: %r" % r)


def setup(backend):
    S.pg = h.Postgres().start() if backend == "postgres" else None
    S.db = h.Database(backend, S.pg)
    S.col = h.Collector(S.db.url).start()
    S.url = "http://127.0.0.1:%d" % S.col.port
    S.agent_token = S.col.token("agent", HOST)
    S.ci_token = S.col.token("ci")
    # main's history: five runs that differ only by the noise of the documents
    for i in range(5):
        upload(S.col, None, HOST, commit(i), "main", seed=1, minute=i)
    S.same = commit(10)
    upload(S.col, None, HOST, S.same, "refs/heads/same", seed=1, minute=10)
    S.slow = commit(11)
    upload(S.col, None, HOST, S.slow, "refs/heads/slow", seed=1, scale=3.0, minute=11)


def gate(commit_id, *extra):
    return ci("gate", "--collector", S.url, "--project", PROJECT, "--commit", commit_id,
              "--baseline-ref", "main", *extra)


def test_pass_and_fail():
    p = gate(S.same, "--hosts", HOST)
    eq(p.returncode, 0, p.stdout + p.stderr)
    check(p.stdout.startswith("atomwatch gate: pass: commit %s" % S.same[:12]), p.stdout)

    # one run of the slow commit only makes its cells suspect: unconfirmed, exit 0
    p = gate(S.slow, "--hosts", HOST)
    eq(p.returncode, 0, p.stdout + p.stderr)
    check(p.stdout.startswith("atomwatch gate: unconfirmed: commit %s" % S.slow[:12]), p.stdout)
    check("  suspect    %s  op=plain cpu=0 [p50]" % HOST in p.stdout, p.stdout)
    p = gate(S.slow, "--hosts", HOST, "--strict")
    eq(p.returncode, 1, p.stdout + p.stderr)
    # a second run of the commit (what --confirm measures) confirms it: fail
    upload(S.col, None, HOST, S.slow, "refs/heads/slow", seed=3, scale=3.0, minute=12)

    d = h.tempdir("aw-gate-")
    junit, md = os.path.join(d, "g.xml"), os.path.join(d, "g.md")
    p = gate(S.slow, "--hosts", HOST, "--junit", junit, "--markdown", md)
    eq(p.returncode, 1, p.stdout + p.stderr)
    root = ET.parse(junit).getroot()
    eq(int(root.get("tests")), 2 * CELLS, "a testcase per cell and metric (all=1)")
    failed = [c.get("name") for c in root.iter("testcase") if c.find("failure") is not None]
    check(len(failed) >= CELLS, "every cell got 3x slower: %d failures" % len(failed))
    check("op=plain cpu=0 [p50]" in failed, failed[:5])
    with open(md) as f:
        text = f.read()
    check(text.index("### Regressions") < text.index("### Hosts"), text[:300])
    check("[report](%s/commits/%s)" % (S.url, S.slow) in text, "report link")


def test_host_never_reports():
    d = h.tempdir("aw-gate-")
    junit = os.path.join(d, "g.xml")
    t = time.time()
    p = gate(S.same, "--hosts", "%s,never-here" % HOST, "--wait", "2s", "--poll", "200ms",
             "--junit", junit)
    eq(p.returncode, 2, p.stdout + p.stderr)
    check(time.time() - t < 30, "the wait ends")
    check("timed out after 2 s waiting for commit %s: no run from never-here" % S.same[:12]
          in p.stderr, p.stderr)
    check("incomplete never-here: " in p.stdout, p.stdout)
    errors = [c for c in ET.parse(junit).getroot().iter("testcase")
              if c.find("error") is not None]
    eq([c.get("classname") for c in errors], ["never-here"])
    # wait alone: the same answer, exit 2
    p = ci("wait", "--collector", S.url, "--project", PROJECT, "--commit", S.same, "--hosts",
           "never-here", "--timeout", "1s", "--poll", "200ms")
    eq(p.returncode, 2, p.stderr)


def test_wait_for_a_late_host():
    late = commit(20)
    token = S.col.token("agent", "late-host")
    proc = subprocess.Popen([ci_binary(), "wait", "--collector", S.url, "--project", PROJECT,
                             "--commit", late, "--hosts", "%s,late-host" % HOST, "--timeout",
                             "60s", "--poll", "200ms"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=a.clean_env())
    h._track(proc)
    upload(S.col, None, HOST, late, "refs/heads/late", seed=2, minute=20)
    time.sleep(1)
    check(proc.poll() is None, "still waiting for late-host")
    t = time.time()
    upload(S.col, token, "late-host", late, "refs/heads/late", seed=2, minute=20)
    out, err = proc.communicate(timeout=30)
    eq(proc.returncode, 0, err)
    check(time.time() - t < 5, "returns within a poll or two (%.1f s)" % (time.time() - t))
    check("waiting for 1 of 2 hosts to report %s: late-host" % late[:12] in err, err)


def test_collector_down():
    col = h.Collector(S.db.url).start()
    url = "http://127.0.0.1:%d" % col.port
    eq(col.stop(), 0)
    p = ci("gate", "--collector", url, "--project", PROJECT, "--commit", S.same)
    eq(p.returncode, 3, p.stderr)
    check("cannot reach the collector at %s for the gate query" % url in p.stderr, p.stderr)
    p = ci("trigger", "--collector", url, "--project", PROJECT, "--commit", S.same, "--ref",
           "main", token=S.ci_token)
    eq(p.returncode, 3, p.stderr)


def test_trigger():
    p = ci("trigger", "--collector", S.url, "--project", PROJECT, "--commit", S.slow, "--ref",
           "refs/heads/slow", "--hosts", "%s,other-host" % HOST, "--subject", "libpcpu",
           token=S.ci_token)
    eq(p.returncode, 0, p.stderr)
    job_id = int(p.stdout.strip())
    job = S.col.request("GET", "/api/v1/jobs/%d" % job_id).json()["job"]
    eq((job["project"], job["commit"], job["ref"], job["subject"]),
       (PROJECT, S.slow, "refs/heads/slow", "libpcpu"))
    eq(sorted(x["host"] for x in job["hosts"]), sorted([HOST, "other-host"]))
    p = ci("trigger", "--collector", S.url, "--project", PROJECT, "--commit", S.slow, "--ref",
           "main", "--hosts", "all", token=S.ci_token)
    eq(p.returncode, 0, p.stderr)
    eq(S.col.request("GET", "/api/v1/jobs/%s" % p.stdout.strip()).json()["job"]["all_hosts"],
       True)
    # an agent token may not queue jobs
    p = ci("trigger", "--collector", S.url, "--project", PROJECT, "--commit", S.slow, "--ref",
           "main", token=S.agent_token)
    eq(p.returncode, 3)
    check("the collector refused the job: 403" in p.stderr, p.stderr)
    check(S.agent_token not in p.stderr + p.stdout, "the token is never printed")


def test_token_for_reads():
    col = h.Collector(S.db.url, config="auth:\n  read_requires_token: true\n").start()
    url = "http://127.0.0.1:%d" % col.port
    args = ("gate", "--collector", url, "--project", PROJECT, "--commit", S.same, "--hosts",
            HOST)
    p = ci(*args)
    eq(p.returncode, 3, p.stderr)
    check("the collector refused the gate query: 401" in p.stderr, p.stderr)
    p = ci(*args, token=S.ci_token)
    eq(p.returncode, 0, p.stderr)
    tf = os.path.join(h.tempdir("aw-token-"), "ci.token")
    with open(tf, "w") as f:
        f.write(S.ci_token + "\n")
    os.chmod(tf, 0o600)
    p = ci(*(args + ("--token-file", tf)))
    eq(p.returncode, 0, p.stderr)
    p = ci(*args, token="awt_" + "0" * 64)
    eq(p.returncode, 3)
    check("401" in p.stderr, p.stderr)
    col.stop()


def test_ab_evidence():
    """The commit's interleaved A/B document decides the gate, whatever the history says, and
    the gate names which evidence decided; an inconclusive or A/A document leaves it to the
    history."""
    base = commit(0)
    # history passes, the A/B says regressed: fail
    same2 = commit(30)
    upload(S.col, None, HOST, same2, "refs/heads/same2", seed=1, minute=30)
    p = gate(same2, "--hosts", HOST)
    eq(p.returncode, 0, p.stdout + p.stderr)
    check("evidence: the history-based verdict (no interleaved A/B document" in p.stdout,
          p.stdout)
    doc = h.make_ab_doc(HOST, PROJECT, base, same2, ratio=1.05)
    r = S.col.request("POST", "/api/v1/results", doc, token=S.agent_token)
    eq((r.status, r.json()["verdict"]), (201, "regressed"), r)
    p = gate(same2, "--hosts", HOST)
    eq(p.returncode, 1, p.stdout + p.stderr)
    check("evidence: interleaved A/B %s (regressed against base %s): fail; the history-based "
          "verdict alone: pass" % (doc["ab_id"], base[:12]) in p.stdout, p.stdout)
    check("deciding cell: subject=subj op=op cpu=0 x1.05" in p.stdout, p.stdout)
    check("A/B report: %s/ab/%s" % (S.url, doc["ab_id"]) in p.stdout, p.stdout)
    g = S.col.request("GET", "/api/v1/gate?project=%s&commit=%s" % (PROJECT, same2),
                      token=S.ci_token).json()
    eq((g["status"], g["evidence"]["decided_by"], g["evidence"]["history_status"],
        g["evidence"]["ab_id"]), ("fail", "ab", "pass", doc["ab_id"]))
    g = S.col.request("GET", "/api/v1/gate?project=%s&commit=%s&evidence=history"
                      % (PROJECT, same2), token=S.ci_token).json()
    eq((g["status"], g["evidence"]["decided_by"]), ("pass", "history"))
    r = S.col.request("GET", "/api/v1/gate?project=%s&commit=%s&evidence=maybe"
                      % (PROJECT, same2), token=S.ci_token)
    eq((r.status, r.error()["field"]), (400, "evidence"), r)
    # history fails (3x slower), the A/B says unchanged: pass
    slow2 = commit(31)
    upload(S.col, None, HOST, slow2, "refs/heads/slow2", seed=1, scale=3.0, minute=31)
    # (a second run confirms the history's regression: one run only makes it suspect)
    upload(S.col, None, HOST, slow2, "refs/heads/slow2", seed=3, scale=3.0, minute=39)
    eq(gate(slow2, "--hosts", HOST).returncode, 1)
    # an A/A document of the commit is no A/B evidence
    aa = h.make_ab_doc(HOST, PROJECT, slow2, slow2, ratio=1.0, aa=True)
    eq(S.col.request("POST", "/api/v1/results", aa, token=S.agent_token).status, 201)
    p = gate(slow2, "--hosts", HOST)
    eq(p.returncode, 1, p.stdout + p.stderr)
    check("no interleaved A/B document" in p.stdout, p.stdout)
    doc = h.make_ab_doc(HOST, PROJECT, base, slow2, ratio=1.0)
    r = S.col.request("POST", "/api/v1/results", doc, token=S.agent_token)
    eq((r.status, r.json()["verdict"]), (201, "unchanged"), r)
    p = gate(slow2, "--hosts", HOST)
    eq(p.returncode, 0, p.stdout + p.stderr)
    check("evidence: interleaved A/B %s (unchanged against base %s): pass; the history-based "
          "verdict alone: fail" % (doc["ab_id"], base[:12]) in p.stdout, p.stdout)
    # too few rounds for an interval: inconclusive, the history decides
    slow3 = commit(32)
    upload(S.col, None, HOST, slow3, "refs/heads/slow3", seed=1, scale=3.0, minute=32)
    upload(S.col, None, HOST, slow3, "refs/heads/slow3", seed=3, scale=3.0, minute=38)
    doc = h.make_ab_doc(HOST, PROJECT, base, slow3, ratio=1.0, rounds=5)
    r = S.col.request("POST", "/api/v1/results", doc, token=S.agent_token)
    eq((r.status, r.json()["verdict"]), (201, "inconclusive"), r)
    p = gate(slow3, "--hosts", HOST)
    eq(p.returncode, 1, p.stdout + p.stderr)
    check("evidence: the history-based verdict (fail); the interleaved A/B %s was "
          "inconclusive" % doc["ab_id"] in p.stdout, p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="sqlite", choices=("sqlite", "postgres"))
    args = ap.parse_args()
    ci_binary()
    setup(args.backend)
    h.run([(n, f) for n, f in sorted(globals().items()) if n.startswith("test_")],
          "atomwatch-ci against the collector (%s)" % args.backend)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The bisection the collector starts, end to end on the real collector (SQLite or PostgreSQL)
and a real agent daemon: CI jobs measure the first commit of a subject repository six times
and its last once (16 commits, the culprit in the middle a real code change, the rest comments
only; tests/e2e/bisect_repo.py); the verdict of the last commit regresses on the daemon host
(confirmed by the re-measurement the collector asks of the daemon, as deployed), so the
collector queues a bisection for it (the daemon reported the subject when it polled); the
daemon bisects, reports its progress and its answer, and the culprit shows in
GET /api/v1/bisects (filters project, host, state), on the culprit's commit page, the overview
and the host's trend chart. A second host of the same platform that sees the same finding starts
no second bisection (one runs; a twin whose head the analysis left inconclusive, measured in a
memory state its baseline never saw, made no finding, and a fresh twin measures again; a head
the analysis left so on the daemon host is measured again, as CI re-runs a job); a bisection
cancelled while it runs stops before its next step's
runs are uploaded (no half-uploaded step) and its job is not claimed again. Bad requests to the
API get 400/404/409 naming the field.

usage: test_bisect_daemon.py [--backend sqlite|postgres]"""

import argparse
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_helpers as a  # noqa: E402
import bisect_repo  # noqa: E402
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

HOST = "bisect-daemon"
HOST2 = "bisect-twin"
# the detection's defaults, as deployed: a regression needs a re-measurement that agrees, which
# the collector asks of the daemon (a confirmation job); a head run of an unusual moment (a busy
# CI machine) is re-measured rather than left inconclusive, with no bisection
CONFIG = "log_level: debug\n"
# the daemon's re-measurements 3 s apart (30 s by default)
SCHEDULE = "schedule:\n  confirm_gap: 3s\n"


class Suite:
    pass


S = Suite()


def setup(backend):
    S.pg = h.Postgres().start() if backend == "postgres" else None
    S.db = h.Database(backend, S.pg)
    S.col = h.Collector(S.db.url, config=CONFIG).start()
    S.url = "http://127.0.0.1:%d" % S.col.port
    S.ci = S.col.token("ci")
    S.token = S.col.token("agent", HOST)
    S.repo = h.tempdir("aw-bisectd-repo-")
    S.shas = bisect_repo.make(S.repo, n=16, culprit=8, extra=40)
    S.slow = h.tempdir("aw-bisectd-slow-")
    S.slow_shas = bisect_repo.make(S.slow, n=16, culprit=12, extra=40)
    extra = (bisect_repo.subject_config(S.repo, "s", checkout=True)
             + bisect_repo.subject_config(S.slow, "slow", checkout=True,
                                          before="sleep 2").replace("subjects:\n", ""))
    S.ag = a.Agent(S.url, S.token, HOST, extra=extra + SCHEDULE,
                   matrix="matrix:\n  profile: quick\n  ops: [plain]\n  samples: 20\n",
                   collector_extra="  poll_wait: 2s\n")
    S.daemon = S.ag.start("daemon")


def api(method, path, body=None, token=None):
    return S.col.request(method, path, body=body, token=token or S.ci)


def queue(project, commit, subject):
    r = api("POST", "/api/v1/jobs", {"project": project, "commit": commit, "ref": "main",
                                     "subject": subject, "hosts": [HOST]})
    eq(r.status, 201, r)
    return r.json()["job"]["id"]


def wait_job(job, timeout=300):
    def done():
        hosts = api("GET", "/api/v1/jobs/%d" % job).json()["job"]["hosts"]
        return hosts[0] if hosts and hosts[0]["state"] in ("done", "failed") else None
    st = a.wait_for(done, timeout, "job %d" % job)
    return st


def bisects(**query):
    q = "&".join("%s=%s" % kv for kv in query.items())
    r = api("GET", "/api/v1/bisects?" + q)
    eq(r.status, 200, r)
    return r.json()["bisects"]


def measure_history(project, subject, shas):
    """CI's jobs on the daemon: the first commit six times (a history the verdict's test can
    tell +40% from with its few degrees of freedom), then the last."""
    for commit in [shas[0]] * 6 + [shas[-1]]:
        st = wait_job(queue(project, commit, subject))
        eq(st["state"], "done", "%r\n%s" % (st, S.ag.logs()))


def test_daemon_polls_with_subjects():
    # the daemon's poll names its subjects: the collector may give it bisections of them
    a.wait_for(lambda: "polling" in S.ag.logs(), 30, "the daemon's first poll")
    eq(bisects(), [])


def gate_summary(g):
    """A gate reply in a few lines: the status, each cell not unchanged (verdict, change, note)
    and each head run's reference ratios."""
    out = ["status %s" % g.get("status")]
    for host in g.get("hosts", []):
        for c in host.get("cells", []):
            p = c.get("p50") or {}
            if c.get("verdict") != "unchanged":
                out.append("  %s: %s %s (%s head runs) %s" % (
                    c["key"], c["verdict"], p.get("change"), c.get("head_runs"), p.get("note")))
        for r in host.get("runs", []):
            out.append("  run %s%s: %s" % (r["run_id"][:8], " disturbed" * bool(r["disturbed"]),
                                           {k: round(v, 2) for k, v in
                                            (r.get("references") or {}).items()}))
    return "\n".join(out)


def memory_inconclusive(g):
    """Whether a gate reply is inconclusive because the subject's head runs were measured in a
    memory state the history never saw (the analysis could vouch for none of them)."""
    notes = [c["p50"].get("note") or "" for hs in g.get("hosts", []) for c in hs["cells"]
             if c["key"].startswith("subject=")]
    return g.get("status") == "inconclusive" and any("memory state" in n for n in notes)


def no_bisection(e, seen, project="bd", commit=None):
    """Why no bisection ended: the bisections, the last commit's gate, the logs."""
    gate = api("GET", "/api/v1/gate?project=%s&commit=%s&hosts=%s&all=1"
               % (project, commit or S.shas[-1], HOST))
    logs = [x for x in S.col.logs().splitlines() if " GET " not in x]
    return ("%s: the bisections: %s\nthe last commit's gate (HTTP %s): %s\nthe collector's log "
            "(requests left out):\n%s\n%s"
            % (e, seen, gate.status, gate_summary(gate.json()) if gate.status == 200 else
               gate.body.decode(errors="replace")[:3000], "\n".join(logs[-80:]),
               S.ag.logs()[-6000:]))


def await_finding(project, subject, shas, tries=3):
    """Waits until the head commit's finding has a bisection. A head whose subject cell the
    analysis left other than regressed once its re-measurements were spent (its runs measured
    beside other work that moved the machine's state: CI's other tests loading it, the verdict
    honestly inconclusive or unconfirmed) made no finding: CI re-runs the job, at a calmer
    moment, `tries` - 1 times at most."""
    for k in range(tries):
        def settled():
            if bisects(project=project):
                return "bisect"
            if h.postingest_gauges(S.col.port)["tasks"]:
                return None
            g = api("GET", "/api/v1/gate?project=%s&commit=%s&hosts=%s"
                    % (project, shas[-1], HOST))
            if g.status != 200:
                return None
            cells = [c for hs in g.json().get("hosts", []) for c in hs["cells"]
                     if c["key"].startswith("subject=%s " % subject)]
            return g.json() if cells and all(c["verdict"] not in ("suspect", "regressed")
                                             for c in cells) else None
        try:
            first = a.wait_for(settled, 300, "a bisection or a head decided otherwise")
        except AssertionError as e:
            raise AssertionError(no_bisection(e, bisects(project=project), project, shas[-1]))
        if first == "bisect":
            return
        if k + 1 == tries:
            raise AssertionError(no_bisection("the head made no finding in %d tries" % tries,
                                              bisects(project=project), project, shas[-1]))
        print("     the head made no finding (%s): measured once more" % gate_summary(first))
        st = wait_job(queue(project, shas[-1], subject))
        eq(st["state"], "done", "%r\n%s" % (st, S.ag.logs()))


def test_finding_bisected():
    measure_history("bd", "s", S.shas)
    await_finding("bd", "s", S.shas)
    seen = []

    def done():
        seen[:] = bisects(project="bd")
        return [x for x in seen if x["state"] not in ("queued", "running")]
    try:
        b = a.wait_for(done, 300, "the bisection")[0]
    except AssertionError as e:
        raise AssertionError(no_bisection(e, seen))
    eq(b["state"], "done", b)
    eq((b["good"], b["bad"], b["subject"], b["host"], b["runner"], b["reason"]),
       (S.shas[0], S.shas[-1], "s", HOST, HOST, "verdict"), b)
    eq(b["culprit"], S.shas[8], b)
    eq(b["outcome"], "culprit")
    check(b["change"] > 1.1, b)
    eq(b["page"], "/commits/" + S.shas[8])
    p = b["progress"]
    check(1 <= p["steps_done"] <= p["expected_steps"] + 4, p)
    eq(p["expected_steps"], 5)  # 1 + log2(15 commits)
    eq(p["range"]["bad"], S.shas[8])
    eq(p["range"]["commits"], 1)
    eq(b["cells"], ["subject=s op=op cpu=0"])
    # the whole answer, with the steps
    one = api("GET", "/api/v1/bisects/%d" % b["id"]).json()["bisect"]
    eq(one["answer"]["culprit"], S.shas[8])
    check(len(one["answer"]["steps"]) == p["steps_done"], one["answer"])
    # its job: done, naming the culprit (the daemon reports the bisection's answer, then its
    # job's end: the two requests may land apart)
    def job_done():
        j = api("GET", "/api/v1/jobs/%d" % b["job_id"]).json()["job"]
        return j if j["hosts"][0]["state"] != "running" else None
    job = a.wait_for(job_done, 60, "the bisection's job to end")
    eq(job["bisect"]["id"], b["id"])
    eq(job["hosts"][0]["state"], "done")
    check(S.shas[8] in job["hosts"][0]["message"], job)
    # filters
    eq([x["id"] for x in bisects(project="bd", host=HOST, state="done")], [b["id"]])
    eq(bisects(project="bd", state="running"), [])
    eq(bisects(project="nope"), [])
    eq([x["id"] for x in bisects(commit=S.shas[8])], [b["id"]])
    # the runs the bisection measured: trigger bisect, under their commits on main
    runs = a.runs_of(S.col, S.ci, HOST, project="bd")
    bis = [r for r in runs if r["trigger"] == "bisect"]
    check(len(bis) >= 3 and S.shas[8] in {r["commit"] for r in bis}, bis)
    # the culprit on its commit page, the overview and the host's page
    page = S.col.request("GET", "/commits/" + S.shas[8])
    eq(page.status, 200)
    text = page.body.decode()
    check("Bisection" in text and "culprit" in text, text[:2000])
    page = S.col.request("GET", "/")
    check(S.shas[8][:12] in page.body.decode(), "the overview names the culprit")
    S.bisect_id = b["id"]


def test_trend_marks_culprit():
    # the host's trend charts: the change point labelled with the culprit
    seen = {}

    def drawn():
        r = S.col.request("GET", "/charts/hosts/%s/refs/main/trend-subject-s.svg" % HOST)
        seen["status"], seen["body"] = r.status, r.body.decode(errors="replace")
        return seen["body"] if r.status == 200 and ("culprit " + S.shas[8][:7]) in \
            seen["body"] else None
    try:
        svg = a.wait_for(drawn, 120, "a trend chart naming the culprit")
    except AssertionError as e:
        marks = re.findall(r">([^<]*(?:culprit|host)[^<]*)<", seen.get("body", ""))
        logs = [x for x in S.col.logs().splitlines() if " GET " not in x and (
            "trends" in x or "warn" in x or "bisect" in x)]
        raise AssertionError("%s: the chart (HTTP %s) marks %s; the post-ingest tasks: %s; "
                             "the bisections: %s; the collector's log of trends and "
                             "bisections:\n%s" % (e, seen.get("status"), marks,
                                                   h.postingest_gauges(S.col.port),
                                                   bisects(project="bd"),
                                                   "\n".join(logs[-60:])))
    check("culprit" in svg, svg[:200])


def twin_verdict(host):
    """A twin of the daemon host (the same machine, so the same platform): the first commit six
    times, the last re-measured until decided (as many times as the collector's budget allows),
    as CI jobs do. Returns the gate's reply for the last commit on the twin once the post-ingest
    work has decided it (fail, or after a last re-measurement if it was left unconfirmed), and
    the agent's log."""
    twin = a.Agent(S.url, S.col.token("agent", host), host,
                   extra=bisect_repo.subject_config(S.repo, "s", checkout=True),
                   matrix="matrix:\n  profile: quick\n  ops: [plain]\n  samples: 20\n")
    for commit in [S.shas[0]] * 6 + [S.shas[-1]]:
        confirm = ["--confirm", "10", "--confirm-gap-s", "2"] if commit == S.shas[-1] else []
        p = twin.run("run", "--project", "bd", "--commit", commit, "--ref", "main", "--subject",
                     "s", "--quiet", *confirm, timeout=300)
        eq(p.returncode, 0, p.stderr)
    log = p.stderr

    def decided():
        """The gate's reply once no post-ingest task is left."""
        a.wait_for(lambda: h.postingest_gauges(S.col.port)["tasks"] == 0, 60,
                   "the post-ingest work")
        r = api("GET", "/api/v1/gate?project=bd&commit=%s&hosts=%s" % (S.shas[-1], host))
        return r.json() if r.status == 200 else {"status": "HTTP %d" % r.status}
    # left unconfirmed (re-measurements beside other work read unlike the first run), measured
    # once more, as the gate asks of a CI job
    g = decided()
    if g["status"] == "unconfirmed":
        p = twin.run("run", "--project", "bd", "--commit", S.shas[-1], "--ref", "main",
                     "--subject", "s", "--quiet", "--confirm", "3", "--confirm-gap-s", "2",
                     timeout=300)
        eq(p.returncode, 0, p.stderr)
        log += p.stderr
        g = decided()
    return g, log


def test_one_finding_one_bisection():
    # twins of the same platform see the same finding: no second bisection. A twin whose head
    # runs the analysis could not vouch for (measured in a memory state its six baseline runs
    # never saw: CI's other tests loading the machine between them, the verdict honestly
    # inconclusive, CI once) made no finding: a fresh twin measures again, three at most
    tried = []
    for k in range(3):
        host = HOST2 if k == 0 else "%s-%d" % (HOST2, k + 1)
        g, log = twin_verdict(host)
        if g["status"] == "fail":
            break
        tried.append("%s:\n%s\nthe agent: %s" % (host, gate_summary(g), log[-1500:]))
        if not memory_inconclusive(g):
            break
    if g["status"] != "fail":
        raise AssertionError("the twin's verdict is not fail:\n" + "\n".join(tried))
    a.wait_for(lambda: h.postingest_gauges(S.col.port)["tasks"] == 0, 60,
               "the post-ingest work")
    eq([x["id"] for x in bisects(project="bd")], [S.bisect_id])
    jobs = api("GET", "/api/v1/jobs?limit=1000").json()["jobs"]
    eq(len([j for j in jobs if j.get("bisect")]), 1, jobs)
    if tried:
        print("(%d twin(s) before the last were left inconclusive by their memory states)"
              % len(tried))


def test_cancel_leaves_no_half_step():
    measure_history("slow", "slow", S.slow_shas)
    await_finding("slow", "slow", S.slow_shas)
    seen = []

    def running():
        seen[:] = bisects(project="slow")
        return [x for x in seen if x["state"] == "running" and x["progress"]["steps_done"] >= 1]
    try:
        b = a.wait_for(running, 300, "a running bisection")[0]
    except AssertionError as e:
        raise AssertionError(no_bisection(e, seen, "slow", S.slow_shas[-1]))
    r = api("POST", "/api/v1/bisects/%d/cancel" % b["id"])
    eq(r.status, 200, r)
    eq(r.json()["bisect"]["state"], "cancelled")
    st = wait_job(b["job_id"])
    eq(st["state"], "failed", st)
    check("cancelled" in st["message"], st)
    one = api("GET", "/api/v1/bisects/%d" % b["id"]).json()["bisect"]
    eq(one["state"], "cancelled")
    # every bisect run uploaded belongs to a step the collector was told of, and no step after
    # the cancel uploaded anything
    a.wait_for(lambda: S.ag.spooled() == [], what="the spool empty")
    runs = [r for r in a.runs_of(S.col, S.ci, HOST, project="slow") if r["trigger"] == "bisect"]
    steps = one["answer"]["steps"]
    told = {S.slow_shas[0], S.slow_shas[-1]} | {s["commit"] for s in steps if s["step"]}
    eq({r["commit"] for r in runs} <= told, True, (runs, steps))
    eq(len(runs), 2 + len([s for s in steps if s["step"] and s["kind"] == "probe"]),
       (runs, steps))
    # a cancelled bisection stays so: its agent's reports are refused, cancelling again is fine
    r = api("POST", "/api/v1/bisects/%d/progress" % b["id"], {"state": "running"},
            token=S.token)
    eq((r.status, r.error()["code"]), (409, "cancelled"), r)
    eq(api("POST", "/api/v1/bisects/%d/cancel" % b["id"]).status, 200)


def test_api_bad_requests():
    cases = [
        ("GET", "/api/v1/bisects?state=later", None, 400, "state"),
        ("GET", "/api/v1/bisects?project=a%20b", None, 400, "project"),
        ("GET", "/api/v1/bisects?commit=xyz", None, 400, "commit"),
        ("GET", "/api/v1/bisects?limit=0", None, 400, "limit"),
        ("GET", "/api/v1/bisects/abc", None, 400, "id"),
        ("GET", "/api/v1/bisects/999999", None, 404, "id"),
        ("POST", "/api/v1/bisects/999999/cancel", None, 404, "id"),
        ("POST", "/api/v1/bisects/%d/cancel" % S.bisect_id, None, 409, "state"),
    ]
    for method, path, body, status, field in cases:
        r = api(method, path, body)
        eq((r.status, r.error()["field"]), (status, field), (path, r))
    # progress: the runner's own token only, and a body that says what state
    r = api("POST", "/api/v1/bisects/%d/progress" % S.bisect_id, {"state": "running"})
    eq(r.status, 403, r)
    r = api("POST", "/api/v1/bisects/%d/progress" % S.bisect_id, {"state": "maybe"},
            token=S.token)
    eq((r.status, r.error()["field"]), (400, "state"), r)
    r = api("POST", "/api/v1/bisects/%d/progress" % S.bisect_id, {"state": "done"},
            token=S.token)
    eq((r.status, r.error()["field"]), (409, "state"), r)
    # an agent token may not cancel
    eq(api("POST", "/api/v1/bisects/%d/cancel" % S.bisect_id, token=S.token).status, 403)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="sqlite", choices=("sqlite", "postgres"))
    args = ap.parse_args()
    a.agent_binary()
    setup(args.backend)
    tests = [("test_daemon_polls_with_subjects", test_daemon_polls_with_subjects),
             ("test_finding_bisected", test_finding_bisected),
             ("test_trend_marks_culprit", test_trend_marks_culprit),
             ("test_one_finding_one_bisection", test_one_finding_one_bisection),
             ("test_cancel_leaves_no_half_step", test_cancel_leaves_no_half_step),
             ("test_api_bad_requests", test_api_bad_requests)]
    try:
        h.run(tests, "bisect daemon (%s)" % args.backend)
    finally:
        if S.daemon.poll() is None:
            S.daemon.send_signal(signal.SIGTERM)


if __name__ == "__main__":
    main()

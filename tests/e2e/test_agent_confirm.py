#!/usr/bin/python3
"""Confirmation before failing, with a real collector and a real agent: a subject library that
got slower (lock xadd + mfence instead of a plain increment) is only suspect after one head run
(the gate unconfirmed, exit 0; exit 1 with --strict); atomwatch-agent run --confirm 3 asks the
collector for the run's suspects (GET /api/v1/runs/{id}/suspects), re-measures only those, three
times with about 2/3 of the batches each, as runs marked confirmation_of the first with the
first run's matrix hash, and the gate then fails on the confirmed regression. The suspects
endpoint answers only the host's own agent token (or ci/admin); --confirm 0, -1 and x are
usage errors; a confirmation_of of the wrong type is refused naming the field. For a daemon host
(one that polls for jobs), the collector queues the confirmation job itself after the first run
(detection.confirm_jobs, for that host only) and the daemon runs it.

usage: test_agent_confirm.py [--backend sqlite|postgres]"""

import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_helpers as a  # noqa: E402
import harness as h  # noqa: E402
import test_agent_run as tr  # noqa: E402  (the subject library)
from harness import check, eq  # noqa: E402

HOST = "agent-confirm"
MAIN = ["%040x" % (0xa0a0a0 * 1000 + i) for i in range(11)]
# main's history: ten commits. The fast build's cell is noisy (a call through a pointer at
# about 1 ns, often bimodal): its noise is a MAD of the window's runs, worth 0.37 (w - 1)
# degrees of freedom. With six runs a slowdown of 2.3x against a 14% noise reached only
# p ~ 0.006, q ~ 0.06 over the run's ten cells, and the cell was noisy, not suspect, in about
# one run of ten; with three it reached only p ~ 0.05.
HISTORY = 10
SAMPLES = 60
KEY = "subject=subj op=inc cpu=0"
SLOW_A = "5104000000000000000000000000000000000a0a"  # the slow build, judged on one run
SLOW_B = "5104000000000000000000000000000000000b0b"  # the slow build, run with --confirm 3
SLOW_C = "5104000000000000000000000000000000000c0c"  # the slow build, a job for a daemon
DAEMON_HOST = "daemon-confirm"
BUILD = ('cc -O2 -shared -fPIC -I"$INC" -DABI=1 -o libsubj.so subj.c '
         '$(case "$ATOMWATCH_COMMIT" in 5104*) echo -DSLOW;; esac)')


def subjects_config(src):
    inc = os.path.join(h.SOURCE_DIR, "runner", "include")
    return ("subjects:\n  subj:\n    build: '%s'\n    dir: %s\n    library: %s/libsubj.so\n"
            "    env: {INC: %s}\n    timeout: 2m\n" % (BUILD, src, src, inc))


class Suite:
    pass


S = Suite()


def setup(backend):
    S.pg = h.Postgres().start() if backend == "postgres" else None
    S.db = h.Database(backend, S.pg)
    S.col = h.Collector(S.db.url).start()
    S.token = S.col.token("agent", HOST)
    S.ci = S.col.token("ci")
    S.url = "http://127.0.0.1:%d" % S.col.port
    S.src = h.tempdir("aw-subject-")
    with open(os.path.join(S.src, "subj.c"), "w") as f:
        f.write(tr.SUBJECT_C)
    matrix = "matrix:\n  profile: quick\n  ops: [plain]\n  samples: %d\n" % SAMPLES
    S.agent = a.Agent(S.url, S.token, HOST, extra=subjects_config(S.src), matrix=matrix)


def run(commit, ref, *extra):
    return S.agent.run("run", "--project", "e2e", "--commit", commit, "--ref", ref, "--quiet",
                       "--subject", "subj", *extra, timeout=300)


def ci(*args):
    path = os.environ.get("AW_CI", os.path.join(h.BUILD_DIR, "ci", "atomwatch-ci"))
    return subprocess.run([path] + list(args), capture_output=True, text=True, timeout=120,
                          env=a.clean_env())


def gate(commit, *extra):
    return ci("gate", "--collector", S.url, "--project", "e2e", "--commit", commit,
              "--hosts", HOST, *extra)


def test_bad_confirm():
    for bad in ("0", "-1", "x", "17", ""):
        p = run(MAIN[HISTORY], "refs/heads/dev", "--confirm", bad)
        eq(p.returncode, 2, "--confirm %r: %s" % (bad, p.stderr))
        check("bad --confirm '%s'" % bad in p.stderr, p.stderr)
    eq(a.runs_of(S.col, S.ci, HOST), [], "nothing measured")
    p = S.agent.run("daemon", "--confirm", "2")
    eq(p.returncode, 2, p.stderr)
    check("'daemon' does not take" in p.stderr, p.stderr)


def test_confirmation_fails_the_gate():
    # main's history: the fast build, HISTORY commits; a short history may make some cell
    # suspect, which --confirm then re-measures, and only those
    for sha in MAIN[:HISTORY]:
        p = run(sha, "main", "--confirm", "3")
        eq(p.returncode, 0, p.stderr)
    runs = a.runs_of(S.col, S.ci, HOST)
    firsts = [x for x in runs if not x.get("confirmation_of")]
    eq(len(firsts), HISTORY, "one first run per commit")
    for x in runs:
        if x.get("confirmation_of"):
            # (a history of one or two runs can make every cell of this small matrix
            # suspect, so a confirmation may measure as many cells as the first run)
            check(x["cells"] <= firsts[0]["cells"], "a confirmation measures the suspects: %r"
                  % x)
    # the slow build, one run: its subject cell is suspect, the gate unconfirmed
    p = run(SLOW_A, "refs/heads/slow")
    eq(p.returncode, 0, p.stderr)
    first = p.stdout.strip()
    r = S.col.request("GET", "/api/v1/runs/%s/suspects" % first, token=S.ci)
    eq(r.status, 200, r)
    if KEY not in r.json()["suspects"]:
        v = S.col.request("GET", "/api/v1/gate?project=e2e&commit=%s&all=1" % SLOW_A).json()
        raise AssertionError("%s is not a suspect: %r\nits verdict: %r" % (
            KEY, r.json(), [c for c in v["hosts"][0]["cells"] if c["key"] == KEY]))
    eq(r.json()["status"], "unconfirmed")
    g = gate(SLOW_A)
    eq(g.returncode, 0, g.stdout + g.stderr)
    check(g.stdout.startswith("atomwatch gate: unconfirmed:"), g.stdout)
    check("suspect    %s  %s [p50]" % (HOST, KEY) in g.stdout, g.stdout)
    eq(gate(SLOW_A, "--strict").returncode, 1)

    # --confirm 3: the run, then only its suspects, three times
    p = run(SLOW_B, "refs/heads/slow", "--confirm", "3")
    eq(p.returncode, 0, p.stderr)
    lines = p.stdout.split()
    eq(len(lines), 1, "stdout is the first run's id alone: %r" % p.stdout)
    head = lines[0]
    doc = a.get_run(S.col, S.ci, head)
    eq(doc.get("confirm"), 3, "the first run says its agent confirms it")
    check("confirmation_of" not in doc, doc.keys())
    runs = a.runs_of(S.col, S.ci, HOST, commit=SLOW_B)
    confirmations = [a.get_run(S.col, S.ci, x["run_id"]) for x in runs]
    confirmations = [d for d in confirmations if d.get("confirmation_of")]
    eq(len(confirmations), 3, [x["run_id"] for x in runs])
    for d in confirmations:
        eq(d["confirmation_of"], head)
        eq(d["matrix"]["hash"], doc["matrix"]["hash"], "comparable with the first run")
        eq((d["commit"], d["ref"], d["project"]), (SLOW_B, "refs/heads/slow", "e2e"))
        keys = [c["key"] for c in d["cells"]]
        check(KEY in keys, keys)
        check(len(keys) < len(doc["cells"]), "only the suspects: %r" % keys)
        for c in d["cells"]:
            eq(c["n"], 2 * SAMPLES // 3, "about 2/N of the batches: %r" % c)
        check("references" in d and all(len(ref["values"]) == len(d["cells"])
                                         for ref in d["references"]),
              "the reference kernels beside every re-measured cell")
    g = gate(SLOW_B)
    eq(g.returncode, 1, g.stdout + g.stderr)
    check("regressed  %s  %s [p50]" % (HOST, KEY) in g.stdout, g.stdout)
    v = S.col.request("GET", "/api/v1/gate?project=e2e&commit=%s&all=1" % SLOW_B).json()
    cell = [c for c in v["hosts"][0]["cells"] if c["key"] == KEY][0]
    eq(cell["verdict"], "regressed")
    eq(cell["head_runs"], 4, "the first run and three confirmations")


def test_suspects_endpoint():
    runs = a.runs_of(S.col, S.ci, HOST)
    rid = runs[0]["run_id"]
    eq(S.col.request("GET", "/api/v1/runs/%s/suspects" % rid, token=S.token).status, 200)
    other = S.col.token("agent", "another-host")
    r = S.col.request("GET", "/api/v1/runs/%s/suspects" % rid, token=other)
    eq((r.status, r.error()["code"]), (403, "forbidden"))
    eq(S.col.request("GET", "/api/v1/runs/%s/suspects" % rid).status, 401, "a token is needed")
    r = S.col.request("GET", "/api/v1/runs/not-a-uuid/suspects", token=S.ci)
    eq((r.status, r.error()["field"]), (400, "run_id"))
    r = S.col.request("GET", "/api/v1/runs/00000000-0000-4000-8000-000000000000/suspects",
                      token=S.ci)
    eq(r.status, 404)


def test_confirmation_of_validated():
    doc = h.make_doc(host=HOST, project="e2e", commit=SLOW_A, ref="refs/heads/slow", cells=4)
    for bad, code in ((42, "type"), ("not-a-uuid", "invalid"), (doc["run_id"], "invalid")):
        doc["confirmation_of"] = bad
        r = S.col.request("POST", "/api/v1/results", doc, token=S.token)
        eq((r.status, r.error()["field"], r.error()["code"]), (400, "confirmation_of", code))
    doc["confirmation_of"] = None
    doc["confirm"] = 0
    r = S.col.request("POST", "/api/v1/results", doc, token=S.token)
    eq((r.status, r.error()["field"], r.error()["code"]), (400, "confirm", "range"))


def test_daemon_confirmation_job():
    token = S.col.token("agent", DAEMON_HOST)
    matrix = "matrix:\n  profile: quick\n  ops: [plain]\n  samples: %d\n" % SAMPLES
    ag = a.Agent(S.url, token, DAEMON_HOST, matrix=matrix, collector_extra="  poll_wait: 5s\n",
                 extra=subjects_config(S.src) + "schedule:\n  check_every: 1h\n")
    # main's history, measured before the host ever polled: no confirmation job for those
    for sha in MAIN[:HISTORY]:
        p = ag.run("run", "--project", "e2e", "--commit", sha, "--ref", "main", "--quiet",
                   "--subject", "subj", timeout=300)
        eq(p.returncode, 0, p.stderr)
    proc = ag.start("daemon")
    try:
        a.wait_for(lambda: "daemon for host" in ag.logs() or proc.poll() is not None, 60,
                   "the daemon to start")
        check(proc.poll() is None, "the daemon exited: " + ag.logs())
        r = S.col.request("POST", "/api/v1/jobs", {"project": "e2e", "commit": SLOW_C,
                                                   "ref": "refs/heads/slow", "subject": "subj",
                                                   "hosts": [DAEMON_HOST]}, token=S.ci)
        eq(r.status, 201, r)

        def confirmations():
            runs = a.runs_of(S.col, S.ci, DAEMON_HOST, commit=SLOW_C)
            done = [x for x in runs if x.get("confirmation_of")]
            return runs if len(done) >= 3 else None
        try:
            runs = a.wait_for(confirmations, 240, "the collector's confirmation job to run")
        except AssertionError as e:
            raise AssertionError("%s\nruns: %r\njobs: %r\nverdict: %r\ndaemon log:\n%s\n"
                                 "collector log (tail):\n%s" % (
                                     e, a.runs_of(S.col, S.ci, DAEMON_HOST),
                                     S.col.request("GET", "/api/v1/jobs", token=S.ci).json(),
                                     S.col.request("GET", "/api/v1/gate?project=e2e&commit=%s"
                                                   "&all=1&hosts=%s" % (SLOW_C, DAEMON_HOST)
                                                   ).json(),
                                     ag.logs()[-6000:], S.col.logs()[-6000:]))
        firsts = [x for x in runs if not x.get("confirmation_of")]
        eq(len(firsts), 1, runs)
        eq(len(runs), 4, "the first run and three confirmations, nothing more")
        for x in runs:
            if x is not firsts[0]:
                eq(x["confirmation_of"], firsts[0]["run_id"])
                d = a.get_run(S.col, S.ci, x["run_id"])
                check(KEY in [c["key"] for c in d["cells"]], d["cells"])
                eq(d["matrix"]["hash"], a.get_run(S.col, S.ci, firsts[0]["run_id"])
                   ["matrix"]["hash"])
        jobs = S.col.request("GET", "/api/v1/jobs", token=S.ci).json()["jobs"]
        # (the daemon's own scheduled runs may get confirmation jobs too)
        conf = [j for j in jobs if j.get("confirm") and j["commit"] == SLOW_C]
        eq(len(conf), 1, "one confirmation job of the commit: %r" % jobs)
        eq(conf[0]["confirm"]["of"], firsts[0]["run_id"])
        eq(conf[0]["confirm"]["runs"], 3, "detection.confirm_jobs")
        check(KEY in conf[0]["confirm"]["cells"], conf[0])
        eq((conf[0]["commit"], conf[0]["subject"]), (SLOW_C, "subj"))
        job = S.col.request("GET", "/api/v1/jobs/%d" % conf[0]["id"], token=S.ci).json()["job"]
        eq([x["host"] for x in job["hosts"]], [DAEMON_HOST], "for that host only")
        a.wait_for(lambda: job_done(conf[0]["id"]), 60, "the confirmation job to be done")
        g = ci("gate", "--collector", S.url, "--project", "e2e", "--commit", SLOW_C, "--hosts",
               DAEMON_HOST)
        eq(g.returncode, 1, g.stdout + g.stderr)
        check("regressed  %s  %s [p50]" % (DAEMON_HOST, KEY) in g.stdout, g.stdout)
        # the agent of the CI host (which never polls) got no job of the collector's
        check(all(DAEMON_HOST in [x["host"] for x in S.col.request(
            "GET", "/api/v1/jobs/%d" % j["id"], token=S.ci).json()["job"]["hosts"]]
            for j in conf), conf)
    finally:
        proc.send_signal(15)
        try:
            proc.wait(timeout=20)
        except Exception:
            proc.kill()


def job_done(job_id):
    hosts = S.col.request("GET", "/api/v1/jobs/%d" % job_id, token=S.ci).json()["job"]["hosts"]
    return hosts and hosts[0]["state"] == "done"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="sqlite", choices=("sqlite", "postgres"))
    args = ap.parse_args()
    a.agent_binary()
    setup(args.backend)
    h.run([(n, f) for n, f in sorted(globals().items()) if n.startswith("test_")],
          "agent confirm (%s)" % args.backend)


if __name__ == "__main__":
    main()

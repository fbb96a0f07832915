#!/usr/bin/python3
"""Regression verdicts over real HTTP, against SQLite or a real PostgreSQL: GET /api/v1/gate
(pass, fail with the regressed cell first, incomplete for a host that never reported, the
thresholds file and its gate levels, the cells globs), GET /api/v1/compare of two commits,
GET /api/v1/changepoints, every bad parameter (status and field) and reads that require a
token. A daemon host's suspect is re-measured in rounds of confirmation jobs the collector
queues (detection.confirm_jobs runs each, within detection.confirm_budget), each round once the
last one's runs are in, and so is a suspect beside another cell's confirmed regression.

usage: test_gate_api.py --backend sqlite|postgres"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

HOSTS = ("grace", "altra")
HEAD = "feedface01"
ONLY_ALTRA = "feedface02"
WARN_ONLY = "feedface03"   # only a contended cell and an ungated reader regressed
CELLS = 60
CONTENDED = "op=stadd cpu=0 contender=1 c=10"
DUTY = "op=stadd cpu=0 contender=1 c=100 d=100"
UNGATED = "reader=srcu_nmisafe op=ldadd cpu=0"
# A host whose main history holds one step: STEP_CELL +20% from its STEP_AT-th run on, of
# STEP_RUNS (at least min_segment, 3, on each side, and more after it than a task could miss).
STEP_HOST = "grace-step"
STEP_CELL = "op=ldadd cpu=1"
STEP_AT = 6
STEP_RUNS = 11

THRESHOLDS = """\
p50: 5%
p99: 10%
rules:
  - op: plain        # ~1 cycle: tiny absolute changes are large relative ones
    p50: 50%
    p99: 100%
  - reader: srcu_nmisafe
    gate: off
"""


class Suite:
    pass


S = Suite()


def base_sha(i):
    return "c0ffee%02d" % i


def step_sha(i):
    return "da7a00%02d" % i


def scale_cell(cell, factor):
    for k in ("min", "p50", "p95", "p99", "max", "mean", "ci_lo", "ci_hi"):
        cell[k] = round(cell[k] * factor, 6)


def doc(host, commit, ref, day, seed, changes=None):
    d = h.make_doc(host=host, commit=commit, ref=ref, cells=CELLS, seed=seed,
                   commit_time="2026-10-%02dT12:00:00Z" % day)
    for c in d["cells"]:
        f = (changes or {}).get(c["key"])
        if f:
            scale_cell(c, f)
    return d


def upload(d):
    r = S.col.request("POST", "/api/v1/results", d, token=S.agent[d["host"]["name"]])
    eq(r.status, 201, r)


def setup(backend):
    S.pg = h.Postgres().start() if backend == "postgres" else None
    S.db = h.Database(backend, S.pg)
    S.dir = h.tempdir()
    path = os.path.join(S.dir, "thresholds.yaml")
    with open(path, "w") as f:
        f.write(THRESHOLDS)
    # one head run decides here: confirmation has its own test (test_gate_confirm.py)
    S.col = h.Collector(S.db.url, config="detection:\n  thresholds: %s\n  confirm_runs: 1\n"
                        % path).start()
    S.agent = {host: S.col.token("agent", host) for host in HOSTS + (STEP_HOST,)}
    S.ci = S.col.token("ci")
    for i in range(1, 9):
        for n, host in enumerate(HOSTS):
            upload(doc(host, base_sha(i), "main", i, seed=100 * i + n))
    regress = {"op=stadd cpu=0": 10.0,           # the Neoverse-V2 story
               "op=plain cpu=1": 1.2,            # within plain's 50% threshold
               "op=ldadd cpu=1": 1.2}            # beyond the default 5%
    # (one head run decides here, so a false discovery rate of 5% over the A/A cells can flag one
    # of them in some draws: this seed's draw has none, as test_gate_cells_globs expects)
    upload(doc("grace", HEAD, "pr-1", 20, seed=27, changes=regress))
    upload(doc("altra", HEAD, "pr-1", 20, seed=8))
    upload(doc("altra", ONLY_ALTRA, "pr-2", 21, seed=9))
    upload(doc("grace", WARN_ONLY, "pr-3", 22, seed=10,
               changes={CONTENDED: 10.0, DUTY: 10.0, UNGATED: 10.0}))
    S.step_runs = {}
    for i in range(1, STEP_RUNS + 1):
        d = doc(STEP_HOST, step_sha(i), "main", i, seed=1000 + i,
                changes={STEP_CELL: 1.2} if i >= STEP_AT else None)
        upload(d)
        S.step_runs[i] = d["run_id"]


def gate(query, token=None):
    return S.col.request("GET", "/api/v1/gate?" + query, token=token)


def host_of(reply, name):
    for x in reply["hosts"]:
        if x["host"] == name:
            return x
    raise AssertionError("no host %s in %r" % (name, [x["host"] for x in reply["hosts"]]))


def test_gate_fails_on_the_regression():
    r = gate("project=linux&commit=%s&baseline_ref=main&hosts=grace,altra" % HEAD)
    eq(r.status, 200, r)
    g = r.json()
    eq(g["status"], "fail")
    eq(g["baseline_ref"], "main")
    eq(g["report"], "/commits/" + HEAD)
    grace = host_of(g, "grace")
    eq(grace["status"], "fail")
    eq(grace["baseline_runs"], 8)
    eq(len(grace["head_runs"]), 1)
    first = grace["cells"][0]
    eq(first["key"], "op=stadd cpu=0", "the worst regression first")
    eq(first["verdict"], "regressed")
    check(8.5 < first["p50"]["change"] < 10.5, first["p50"])
    check(first["p50"]["qvalue"] < 0.05, first["p50"])
    verdicts = {c["key"]: c["verdict"] for c in grace["cells"]}
    eq(verdicts.get("op=ldadd cpu=1"), "regressed", "ldadd +20% against 5%")
    check(verdicts.get("op=plain cpu=1") in (None, "unchanged"),
          "plain +20%% is within its 50%% threshold: %r" % verdicts.get("op=plain cpu=1"))
    eq(grace["counts"]["regressed"], 2)
    eq(host_of(g, "altra")["status"], "pass")
    eq(host_of(g, "altra")["counts"]["regressed"], 0)
    eq(g["charts"]["heatmap"], "/charts/commits/%s/heatmap.svg" % HEAD)
    eq(grace["charts"]["compare"], "/charts/commits/%s/hosts/grace/compare-main.svg" % HEAD)
    for link in (g["charts"]["heatmap"], grace["charts"]["compare"]):
        h.wait_for_chart(S.col.port, link)
    g = gate("project=linux&commit=%s&baseline_ref=release&hosts=grace" % HEAD).json()
    check("charts" not in host_of(g, "grace"),
          "no link to a pair the post-ingest workers never draw (a ref it is not configured with)")


def test_gate_all_cells_and_default_hosts():
    g = gate("project=linux&commit=%s&all=1" % HEAD).json()
    eq(sorted(x["host"] for x in g["hosts"]), sorted(HOSTS), "hosts that ran the commit")
    eq(len(host_of(g, "altra")["cells"]), CELLS, "all=1 lists unchanged cells too")
    eq(g["baseline_ref"], "main", "the configured default")


def test_gate_incomplete_and_pass():
    g = gate("project=linux&commit=%s&hosts=grace,altra" % ONLY_ALTRA).json()
    eq(g["status"], "incomplete")
    grace = host_of(g, "grace")
    eq(grace["status"], "incomplete")
    check("no run of commit %s on host grace" % ONLY_ALTRA in grace["reason"], grace)
    eq(host_of(g, "altra")["status"], "pass")
    g = gate("project=linux&commit=%s&hosts=altra" % ONLY_ALTRA).json()
    eq(g["status"], "pass")
    g = gate("project=linux&commit=0123456789").json()
    eq(g["status"], "incomplete", "nothing reported that commit")
    eq(g["hosts"], [])


def test_compare():
    r = S.col.request("GET", "/api/v1/compare?project=linux&base=%s&head=%s&host=grace"
                      % (base_sha(8), HEAD))
    eq(r.status, 200, r)
    c = r.json()
    eq(c["status"], "fail")
    eq((c["base"], c["head"]), (base_sha(8), HEAD))
    grace = host_of(c, "grace")
    eq(grace["baseline_runs"], 1)
    eq(grace["cells"][0]["key"], "op=stadd cpu=0")
    eq(grace["charts"]["compare"], "/charts/commits/%s/hosts/grace/compare-%s.svg"
       % (HEAD, base_sha(8)))
    h.wait_for_chart(S.col.port, grace["charts"]["compare"])  # a pair asked for is drawn on its first ask
    c = S.col.request("GET", "/api/v1/compare?base=%s&head=%s" % (base_sha(7), base_sha(8)))
    eq(c.status, 200, c)
    eq(c.json()["status"], "pass", c.json())
    eq(sorted(x["host"] for x in c.json()["hosts"]), sorted(HOSTS))


def test_gate_levels():
    g = gate("project=linux&commit=%s&hosts=grace" % WARN_ONLY).json()
    grace = host_of(g, "grace")
    cells = {c["key"]: c for c in grace["cells"]}
    for key in (CONTENDED, DUTY, UNGATED):
        eq(cells[key]["verdict"], "regressed", key)
    eq(cells[CONTENDED]["gate"], "warn", "contended cells warn by default")
    eq(cells[DUTY]["gate"], "warn", "duty cells warn by default")
    eq(cells[UNGATED]["gate"], "off", "the rule's gate: off")
    # every warn-level regression is a warning (the two changed cells, and any tail that the
    # synthetic p99 noise of an unchanged contended cell pushed over), the off cell none
    warned = [c["key"] for c in grace["cells"]
              if c["gate"] == "warn" and c["verdict"] in ("regressed", "suspect")]
    check(CONTENDED in warned and DUTY in warned, warned)
    # and, thresholds.yaml's p99_gate being warn, every other p99 that regressed in a cell
    # that is not off: a warning that never changes the cell's verdict
    warned += [c["key"] for c in grace["cells"]
               if c["gate"] != "off" and c["key"] not in warned and
               c.get("p99", {}).get("verdict") == "regressed"]
    eq(grace["warnings"], len(warned), "the off cell is shown, not a warning: %s" % warned)
    eq(grace["status"], "pass", "warn and off cells never fail")
    eq(g["status"], "pass")
    g = gate("project=linux&commit=%s&hosts=grace" % HEAD).json()
    eq({c["key"]: c["gate"] for c in host_of(g, "grace")["cells"]}["op=stadd cpu=0"], "fail")


def test_gate_cells_globs():
    # only the matching cells are judged: stadd's regression is not among them
    g = gate("project=linux&commit=%s&hosts=grace&cells=op=ldadd%%20*&cells=reader=*&all=1"
             % HEAD).json()
    grace = host_of(g, "grace")
    keys = [c["key"] for c in grace["cells"]]
    check(keys and all(k.startswith("op=ldadd ") or k.startswith("reader=") for k in keys),
          keys)
    check("op=ldadd cpu=1" in keys, keys)
    eq(g["status"], "fail", "ldadd +20% is among them")
    g = gate("project=linux&commit=%s&cells=reader=*" % HEAD).json()
    eq(g["status"], "pass", g)
    c = S.col.request("GET", "/api/v1/compare?base=%s&head=%s&host=grace&cells=op=stadd%%20cpu=0"
                      % (base_sha(8), HEAD)).json()
    eq([x["key"] for x in host_of(c, "grace")["cells"]], ["op=stadd cpu=0"])
    # a glob that matches no cell of the commit on any host is refused, naming it
    for path in ("/api/v1/gate?project=linux&commit=%s&cells=op=*&cells=subject=*" % HEAD,
                 "/api/v1/compare?base=%s&head=%s&cells=subject=*" % (base_sha(8), HEAD)):
        r = S.col.request("GET", path)
        eq(r.status, 400, path)
        eq((r.error()["field"], r.error()["code"]), ("cells", "no_match"), path)
        check("'subject=*'" in r.error()["message"], r.error())
    # a commit nobody ran stays incomplete: there is nothing the glob could match yet
    eq(gate("project=linux&commit=0123456789&cells=subject=*").json()["status"], "incomplete")
    r = gate("project=linux&commit=%s&" % HEAD + "&".join(["cells=op=*"] * 33))
    eq((r.status, r.error()["field"], r.error()["code"]), (400, "cells", "too_many"))


def test_changepoints_endpoint():
    # each upload's post-ingest task recomputes its history's change points: once none is
    # left, the list is that of the whole history
    h.wait_for_postingest(S.col.port)
    r = S.col.request("GET", "/api/v1/changepoints?host=%s&ref=main" % STEP_HOST)
    eq(r.status, 200, r)
    eq((r.json()["host"], r.json()["ref"]), (STEP_HOST, "main"))
    points = r.json()["changepoints"]
    step = [p for p in points if p["cell"] == STEP_CELL and p["metric"] == "p50"]
    eq([(p["commit"], p["run_id"]) for p in step], [(step_sha(STEP_AT), S.step_runs[STEP_AT])],
       "one change point of %s's p50, at the first run of the new level: %s" % (STEP_CELL, step))
    p = step[0]
    check(1.15 < p["after"] / p["before"] < 1.25, "upwards, by about 20%%: %s" % p)
    check(p["pvalue"] < 0.001, p)
    # the other medians only wander with make_doc's +-3% noise, in which E-divisive may find
    # small splits: none is a step like the fixture's
    moved = [q for q in points if q["metric"] == "p50" and q["cell"] != STEP_CELL
             and abs(q["after"] / q["before"] - 1) >= 0.1]
    eq(moved, [], "no other median moved by 10% or more")
    # the cell filter keeps that cell's points alone
    r = S.col.request("GET", "/api/v1/changepoints?host=%s&cell=%s"
                      % (STEP_HOST, STEP_CELL.replace(" ", "%20").replace("=", "%3D")))
    eq(r.status, 200, r)
    eq(r.json()["ref"], "main", "the baseline ref by default")
    cell_points = r.json()["changepoints"]
    eq({q["cell"] for q in cell_points}, {STEP_CELL})
    check(p in cell_points, cell_points)


def test_bad_parameters():
    cases = [
        ("/api/v1/gate?commit=%s" % HEAD, "project", "required"),
        ("/api/v1/gate?project=linux", "commit", "required"),
        ("/api/v1/gate?project=linux&commit=xyz", "commit", "invalid"),
        ("/api/v1/gate?project=bad%20name&commit=" + HEAD, "project", "invalid"),
        ("/api/v1/gate?project=linux&commit=%s&baseline_ref=a..b" % HEAD, "baseline_ref",
         "invalid"),
        ("/api/v1/gate?project=linux&commit=%s&hosts=a,,b" % HEAD, "hosts", "invalid"),
        ("/api/v1/gate?project=linux&commit=%s&hosts=%%3Cscript%%3E" % HEAD, "hosts",
         "invalid"),
        ("/api/v1/compare?head=" + HEAD, "base", "required"),
        ("/api/v1/compare?base=%s&head=nothex" % HEAD, "head", "invalid"),
        ("/api/v1/changepoints?ref=main", "host", "required"),
        ("/api/v1/changepoints?host=grace&cell=", "cell", "invalid"),
        ("/api/v1/gate?project=linux&commit=%s&cells=" % HEAD, "cells", "invalid"),
        ("/api/v1/gate?project=linux&commit=%s&cells=a%%01b" % HEAD, "cells", "invalid"),
    ]
    for path, field, code in cases:
        r = S.col.request("GET", path)
        eq(r.status, 400, path)
        eq((r.error()["field"], r.error()["code"]), (field, code), path)


def test_reads_requiring_a_token():
    col = h.Collector(S.db.url, config="auth:\n  read_requires_token: true\n").start()
    try:
        path = "/api/v1/gate?project=linux&commit=" + HEAD
        eq(col.request("GET", path).status, 401, "no token")
        eq(col.request("GET", path, token="awt_" + "1" * 64).status, 401, "wrong token")
        eq(col.request("GET", path, token=S.ci).status, 200, "a CI token reads")
        eq(col.request("GET", "/api/v1/changepoints?host=grace").status, 401)
        eq(col.request("GET", "/api/v1/compare?base=%s&head=%s" % (base_sha(1), HEAD)).status,
           401)
    finally:
        eq(col.stop(), 0)


def test_confirmation_rounds():
    """A daemon host (it polled for jobs) whose suspect the first round of re-measurements left
    undecided gets a second round once the first round's runs are stored (before its daemon
    reports the job's end), asking only what the budget has left, and none after the budget."""
    with_confirm_jobs(confirmation_rounds)


def with_confirm_jobs(body):
    """Runs body(col) on a collector of its own that queues confirmation jobs of 2 runs within a
    budget of 3 re-measurements, stopped after."""
    db = h.Database(S.db.backend, S.pg)
    col = h.Collector(db.url, config="detection:\n  confirm_jobs: 2\n  confirm_budget: 3\n"
                      ).start()
    try:
        body(col)
    finally:
        col.stop()


class DaemonHost:
    """A host of collector `col` that uploads as its agent token and polls for jobs, with main's
    history of eight runs (seeds seed + 1 ...)."""

    def __init__(self, col, host, seed):
        self.col, self.host = col, host
        self.token, self.ci = col.token("agent", host), col.token("ci")
        for i in range(1, 9):
            self.up(doc(host, base_sha(i), "main", i, seed=seed + i))
        eq(self.confirmations(), [], "a CI host's runs: its agent confirms them itself")
        eq(self.poll().status, 204, "nothing to do; the host is a daemon host from now on")

    def up(self, d):
        r = self.col.request("POST", "/api/v1/results", d, token=self.token)
        eq(r.status, 201, r)

    def poll(self):
        return self.col.request("GET", "/api/v1/jobs/next?host=%s&wait=0" % self.host,
                                token=self.token)

    def confirmations(self):
        h.wait_for_postingest(self.col.port)
        jobs = self.col.request("GET", "/api/v1/jobs", token=self.ci).json()["jobs"]
        return sorted((j for j in jobs if j.get("confirm")), key=lambda j: j["id"])

    def remeasure(self, first, seed, changes):
        d = doc(self.host, first["commit"], first["ref"], 20, seed=seed, changes=changes)
        d["confirmation_of"] = first["run_id"]
        self.up(d)

    def host_verdict(self, commit):
        g = self.col.request("GET", "/api/v1/gate?project=linux&commit=%s&hosts=%s&all=1"
                             % (commit, self.host), token=self.ci).json()
        return host_of(g, self.host)


def confirmation_rounds(col):
    cell, head = "op=ldadd cpu=1", "5ec0de01"
    dh = DaemonHost(col, "rounds", 500)
    host, token, up, poll, confirmations = dh.host, dh.token, dh.up, dh.poll, dh.confirmations

    def remeasure(seed, factor):
        dh.remeasure(first, seed, {cell: factor})

    first = doc(host, head, "pr-r", 20, seed=520, changes={cell: 1.3})
    up(first)
    jobs = confirmations()
    eq(len(jobs), 1, jobs)
    eq((jobs[0]["confirm"]["of"], jobs[0]["confirm"]["runs"]), (first["run_id"], 2), jobs[0])
    check(cell in jobs[0]["confirm"]["cells"], jobs[0])
    claim = poll()
    eq((claim.status, claim.json()["job"]["id"]), (200, jobs[0]["id"]), claim)
    # the round's first re-measurement: the round still measures, no second job
    remeasure(521, 1.0)
    eq(len(confirmations()), 1, "a round at a time")
    # its second: still undecided (one agrees, one does not), a second round of the one run
    # the budget has left (the first run and three re-measurements), before the job's end
    remeasure(522, 1.3)
    jobs = confirmations()
    eq(len(jobs), 2, jobs)
    eq(jobs[1]["confirm"]["of"], first["run_id"], jobs[1])
    check(1 <= jobs[1]["confirm"]["runs"] <= 2, jobs[1])
    r = col.request("POST", "/api/v1/jobs/%d/status" % jobs[0]["id"],
                    {"host": host, "state": "done"}, token=token)
    eq(r.status, 200, r)
    claim = poll()
    eq((claim.status, claim.json()["job"]["id"]), (200, jobs[1]["id"]), claim)
    remeasure(523, 1.0)
    # the budget spent: the cell is decided one way or the other, no third round
    eq(len(confirmations()), 2, "no round past the budget")
    hv = dh.host_verdict(head)
    check(hv["status"] != "unconfirmed", hv)
    cv = [c for c in hv["cells"] if c["key"] == cell][0]
    eq(cv["head_runs"], 4, cv)


def test_confirmation_beside_a_regression():
    """A daemon host whose first round of re-measurements confirmed one cell's regression (the
    host fails) and left another cell suspect gets a round for that suspect, as an agent's own
    --confirm re-measures every fail-level suspect whatever the host's status: else the suspect
    is never decided, nor bisected (e2e.bisect.daemon under CI's load: the plain increment read
    regressed beside the subject's suspect, which then waited for re-measurements that never
    came)."""
    with_confirm_jobs(beside_a_regression)


def beside_a_regression(col):
    moved, other, head = "op=ldadd cpu=1", "op=cas cpu=0", "5ec0de02"
    dh = DaemonHost(col, "beside", 600)
    first = doc(dh.host, head, "pr-b", 20, seed=620, changes={moved: 1.5, other: 1.3})
    dh.up(first)
    jobs = dh.confirmations()
    eq(len(jobs), 1, jobs)
    check(moved in jobs[0]["confirm"]["cells"] and other in jobs[0]["confirm"]["cells"], jobs[0])
    claim = dh.poll()
    eq((claim.status, claim.json()["job"]["id"]), (200, jobs[0]["id"]), claim)
    # the round: `moved` agrees twice (regressed), `other` once of two (still suspect)
    dh.remeasure(first, 621, {moved: 1.5, other: 1.0})
    eq(len(dh.confirmations()), 1, "a round at a time")
    dh.remeasure(first, 622, {moved: 1.5, other: 1.3})
    jobs = dh.confirmations()
    hv = dh.host_verdict(head)
    cells = {c["key"]: c["verdict"] for c in hv["cells"]}
    eq((hv["status"], cells[moved], cells[other]), ("fail", "regressed", "suspect"), hv)
    eq(len(jobs), 2, jobs)
    eq(jobs[1]["confirm"]["of"], first["run_id"], jobs[1])
    check(1 <= jobs[1]["confirm"]["runs"] <= 2, jobs[1])
    check(other in jobs[1]["confirm"]["cells"] and moved not in jobs[1]["confirm"]["cells"],
          jobs[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=("sqlite", "postgres"), required=True)
    args = ap.parse_args()
    setup(args.backend)
    tests = [(n, f) for n, f in sorted(globals().items()) if n.startswith("test_")]
    h.run(tests, "gate api (%s)" % args.backend)


if __name__ == "__main__":
    main()

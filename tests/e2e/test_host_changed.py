#!/usr/bin/python3
"""The host's own changes (issue 33, collector/analysis/control.c), on the real collector: a
host's history of runs, each with the agent's control cell (subject=atomwatch-control op=chain)
and the family of reference kernels beside its cells, then a head run where one cell is 30%
slower.
- With the references and the control 30% slower too (a control shift, as a changed host
  gives): the cell is `host changed`, the verdict names what moved, the gate passes, and no
  bisection is queued although the host is a daemon host that could run one.
- The same head with a steady control: regressed, the gate fails, a bisection is queued.
- A head whose fingerprint changed (its kernel) from the last baseline run: `host changed`,
  naming the kernel's old and new release.
- A control a little slower (1.5%) under a large regression: still regressed (the control
  explains too little).
- A reference kernel that swings by half in the history itself, 51% above its median in the
  head: no shift (within its own noise), still regressed; one reference kernel alone 25% slower
  beside a steady history: no shift of the control as a whole, still regressed.

usage: test_host_changed.py [--backend sqlite|postgres]"""

import argparse
import copy
import os
import re
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_helpers as a  # noqa: E402
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

CONFIG = "detection:\n  confirm_runs: 1\n  confirm_jobs: 0\n"
KERNELS = ("mulchain-v1", "mulindep-v1", "atomicadd-v1", "memchase-v1")
KEY = "op=ldadd cpu=0"


class Suite:
    pass


S = Suite()


def sha(i, rebased=False):
    return "%040x" % ((0xbeef0000 if rebased else 0xc0ffee00) + i)


def doc(host, i, slow=1.0, control=1.0, kernel="6.12.0", chase=1.0, same_second=False):
    """Run i of `host` (commit i), `slow` on KEY, the control and references times `control`,
    the memory chase's reference times `chase` too; `same_second`: every commit made in one
    second, as a rebase leaves them (git's times are whole seconds), with commits of their own."""
    d = h.make_doc(host=host, project="hc", commit=sha(i, same_second), cells=40, seed=i,
                   commit_time="2026-11-01T10:00:00Z" if same_second
                   else "2026-11-%02dT10:00:00Z" % (1 + i))
    d["host"]["changing"]["kernel"] = kernel
    for c in d["cells"]:
        if c["key"] == KEY:
            for k in ("min", "p50", "p95", "p99", "max", "mean", "ci_lo", "ci_hi"):
                c[k] = round(c[k] * slow, 6)
    ctl = h.make_cell(__import__("random").Random(i), "chain", 0)
    ctl.update({"key": "subject=atomwatch-control op=chain cpu=0",
                "subject": "atomwatch-control"})
    for k in ("min", "p50", "p95", "p99", "max", "mean", "ci_lo", "ci_hi"):
        ctl[k] = round(ctl[k] * control, 6)
    d["cells"].append(ctl)
    n = len(d["cells"])
    d["references"] = [{"kernel": k, "unit": "ns",
                        "values": [round((1 + j) * 0.5 * control * (1 + 0.001 * (i % 3))
                                         * (chase if k == "memchase-v1" else 1), 6)
                                   for _ in range(n)]}
                       for j, k in enumerate(KERNELS)]
    return d


def upload(host, token, d):
    r = S.col.request("POST", "/api/v1/runs", d, token=token)
    eq(r.status, 201, r)


def history(host, chase=(1, 1, 1, 1, 1, 1), same_second=False, runs=6):
    token = S.col.token("agent", host)
    # a daemon host that could bisect a matrix cell (the step command's way)
    r = S.col.request("GET", "/api/v1/jobs/next?host=%s&subjects=&step=kernel" % host,
                      token=token)
    eq(r.status, 204, r)
    for i in range(runs):
        upload(host, token, doc(host, i, chase=chase[i % len(chase)], same_second=same_second))
    return token


def verdict(host, commit):
    def judged():
        r = S.col.request("GET", "/api/v1/gate?project=hc&commit=%s&hosts=%s&all=1"
                          % (commit, host))
        return r.json() if r.status == 200 else None
    a.wait_for(lambda: h.postingest_gauges(S.col.port)["tasks"] == 0, 60, "post-ingest")
    return a.wait_for(judged, 30, "the gate")


def cell_of(g, key):
    return [c for c in g["hosts"][0]["cells"] if c["key"] == key][0]


def setup(backend):
    S.pg = h.Postgres().start() if backend == "postgres" else None
    S.db = h.Database(backend, S.pg)
    S.col = h.Collector(S.db.url, config=CONFIG).start()


def test_control_shift_is_host_changed():
    token = history("h-shift")
    head = doc("h-shift", 6, slow=1.3, control=1.3)
    upload("h-shift", token, head)
    g = verdict("h-shift", head["commit"])
    host = g["hosts"][0]
    eq(g["status"], "pass", g)
    eq(cell_of(g, KEY)["verdict"], "host changed", cell_of(g, KEY))
    check("control moved" in host["host_changed"], host)
    check(host["counts"]["host changed"] >= 1, host["counts"])
    eq(host["counts"]["regressed"], 0, host["counts"])
    # the control cell never gates
    eq(cell_of(g, "subject=atomwatch-control op=chain cpu=0")["gate"], "off")
    # and no bisection of it although the host could run one (the synthetic history's own
    # noise may start some between earlier commits)
    r = S.col.request("GET", "/api/v1/bisects?host=h-shift&commit=" + head["commit"])
    eq(r.json()["bisects"], [])
    page = S.col.request("GET", "/commits/" + head["commit"]).body.decode()
    check("host changed" in page and "v-host-changed" in page, "the commit page")


def test_steady_control_regresses():
    token = history("h-steady")
    head = doc("h-steady", 6, slow=1.3)
    upload("h-steady", token, head)
    g = verdict("h-steady", head["commit"])
    eq(g["status"], "fail", g)
    eq(cell_of(g, KEY)["verdict"], "regressed")
    check(g["hosts"][0]["host_changed"] is None, g["hosts"][0])
    # the finding (the previous measured commit to this one) is queued for bisection
    bis = a.wait_for(lambda: S.col.request("GET", "/api/v1/bisects?host=h-steady&commit="
                                           + head["commit"]).json()["bisects"], 30,
                     "a bisection")
    eq((bis[0]["good"], bis[0]["bad"], bis[0]["subject"]),
       ("%040x" % (0xc0ffee00 + 5), head["commit"], None), bis[0])
    # its runner reports it done: the host's trend charts, drawn without it after the last run,
    # are drawn again with the culprit marked (no later run need come to redraw them)
    page = S.col.request("GET", "/hosts/h-steady").body.decode()
    charts = sorted(set(re.findall(r"/charts/hosts/h-steady/refs/main/trend-[A-Za-z0-9_.-]+\.svg",
                                   page)))
    check(charts, "the host page's trend charts")
    mark = "culprit " + head["commit"][:7]

    def drawn(marked):
        r = S.col.request("GET", charts[0])
        return r.status == 200 and (mark in r.body.decode()) == marked
    a.wait_for(lambda: drawn(False), 120, "the trend chart, no culprit yet")
    r = S.col.request("POST", "/api/v1/bisects/%d/progress" % bis[0]["id"], {
        "state": "done", "answer": {
            "culprit": head["commit"], "outcome": "culprit", "change": 1.3, "lo": 1.25,
            "hi": 1.35, "steps_done": 1, "expected_steps": 1,
            "range": {"good": bis[0]["good"], "bad": head["commit"], "commits": 1}}},
        token=token)
    eq(r.status, 200, r)
    try:
        a.wait_for(lambda: drawn(True), 240, "the trend chart naming the culprit")
    except AssertionError:
        # (it timed out twice in full parallel runs of the suite, never alone: say what the
        # chart marks, what post-ingest has left and what the collector logged of trends)
        svg = S.col.request("GET", charts[0]).body.decode(errors="replace")
        left = [x for x in S.col.request("GET", "/metrics").body.decode().splitlines()
                if x.startswith("atomwatch_postingest_tasks")]
        logs = [x for x in S.col.logs().splitlines() if "trend" in x or "bisect" in x]
        raise AssertionError("no culprit on %s: marks %s; %s; log: %s" % (
            charts[0], re.findall(r"(?:culprit|kernel|host)[^<]{0,60}", svg)[:10], left,
            logs[-20:]))


def test_commits_of_one_second():
    # a rebased series: every commit's time the same second. Its order ties, so the history is
    # the commits measured before the head (e2e.ci.demo's commits were judged 'new' before) and
    # the bisection starts from the commit measured just before it
    token = history("h-rebase", same_second=True)
    head = doc("h-rebase", 6, slow=1.3, same_second=True)
    upload("h-rebase", token, head)
    g = verdict("h-rebase", head["commit"])
    eq(g["hosts"][0]["baseline_runs"], 6, g["hosts"][0])
    eq(cell_of(g, KEY)["verdict"], "regressed")
    bis = a.wait_for(lambda: S.col.request("GET", "/api/v1/bisects?host=h-rebase&commit="
                                           + head["commit"]).json()["bisects"], 30,
                     "a bisection")
    eq((bis[0]["good"], bis[0]["bad"]), (sha(5, True), head["commit"]), bis[0])


def test_small_control_move_under_large_regression():
    token = history("h-small")
    head = doc("h-small", 6, slow=1.3, control=1.015)
    upload("h-small", token, head)
    g = verdict("h-small", head["commit"])
    eq(cell_of(g, KEY)["verdict"], "regressed")


def test_noisy_reference_is_no_shift():
    # a shared VM's memory chase swings by half between quiet runs (47 to 106 ns in six runs of
    # e2e.bisect.daemon on a loaded day); a head run where it is 51% above its median, within
    # that swing, is no control shift: the cell's own +30% stays a regression
    token = history("h-chase", chase=(0.55, 1.24, 1.19, 1.13, 0.87, 0.73))
    head = doc("h-chase", 6, slow=1.3, chase=1.51)
    upload("h-chase", token, head)
    g = verdict("h-chase", head["commit"])
    check(g["hosts"][0]["host_changed"] is None, g["hosts"][0])
    # (a head run whose memory state is 1.5x the baseline's usual one confirms no move, so
    # the regression waits for a re-measurement: docs/detection.md, part 8; it is never a pass)
    check(g["status"] in ("fail", "unconfirmed"), g["status"])
    check(cell_of(g, KEY)["verdict"] in ("regressed", "suspect"), cell_of(g, KEY)["verdict"])


def test_one_series_is_no_shift():
    # a steady history, then a head whose memory chase alone is 25% slower (another tenant's
    # memory traffic, as e2e.bisect.daemon saw on a loaded day) while the chains, the atomics
    # and the control cell held: the host did not change, the cell's +30% is the commit's
    token = history("h-one")
    head = doc("h-one", 6, slow=1.3, chase=1.25)
    upload("h-one", token, head)
    g = verdict("h-one", head["commit"])
    eq(g["status"], "fail", g["hosts"][0].get("host_changed"))
    eq(cell_of(g, KEY)["verdict"], "regressed")


def test_fingerprint_change_is_host_changed():
    token = history("h-kernel")
    head = doc("h-kernel", 6, slow=1.3, kernel="6.12.9")
    upload("h-kernel", token, head)
    g = verdict("h-kernel", head["commit"])
    eq(g["status"], "pass", g)
    eq(cell_of(g, KEY)["verdict"], "host changed")
    check("kernel 6.12.0 -> 6.12.9" in g["hosts"][0]["host_changed"], g["hosts"][0])
    eq(S.col.request("GET", "/api/v1/bisects?host=h-kernel&commit="
                     + head["commit"]).json()["bisects"], [])


def test_control_moment_measured_again():
    # with confirmation on (the default: two runs, here a budget of three re-measurements), a
    # control shift with the fingerprint unchanged is a moment of the host: the cell is
    # suspect and measured again, a regression that runs whose control held show fails the
    # gate, and the host is blamed only when the budget ends with every head run shifted (a
    # re-measurement beside kernels 30% slower than any of the history's confirms no slowdown
    # of the cell: detect_odd_state(); two others that held do)
    db = h.Database(S.db.backend, S.pg)
    col = h.Collector(db.url, config="detection:\n  confirm_runs: 2\n  confirm_budget: 3\n"
                      "  confirm_jobs: 0\n").start()
    saved, S.col = S.col, col
    # (host, the first run's control, the re-measurements' controls, the verdict at the end)
    cases = (("h-moment", 1.3, (1.0, 1.0, 1.0), "regressed"),
             ("h-moved", 1.3, (1.3, 1.3, 1.3), "host changed"),
             ("h-late", 1.0, (1.0, 1.3, 1.0), "regressed"))
    try:
        for host, first, later, want in cases:
            token = history(host, runs=20)
            # (the chains, the atomics and the control cell moved; the memory walk held, so the
            # runs' memory states are alike)
            head = doc(host, 20, slow=1.3, control=first, chase=1 / first)
            upload(host, token, head)
            g = verdict(host, head["commit"])
            eq(g["status"], "unconfirmed", g["hosts"][0]["counts"])
            cell = cell_of(g, KEY)
            eq(cell["verdict"], "suspect", cell)
            eq("control moved" in (cell["p50"].get("note") or ""), first != 1.0, cell)
            for control in later:  # the re-measurements, as the agent uploads them
                again = doc(host, 20, slow=1.3, control=control, chase=1 / control)
                again["run_id"] = str(uuid.uuid4())
                again["confirmation_of"] = head["run_id"]
                upload(host, token, again)
            g = verdict(host, head["commit"])
            cell = cell_of(g, KEY)
            eq((cell["head_runs"], cell["verdict"]), (1 + len(later), want), cell)
            if want == "regressed":
                eq(g["status"], "fail", g["hosts"][0]["counts"])
                check(g["hosts"][0]["host_changed"] is None, g["hosts"][0]["host_changed"])
            else:
                eq(g["status"], "pass", g["hosts"][0]["counts"])
                said = g["hosts"][0]["host_changed"]
                check("control moved" in said, said)
    finally:
        S.col = saved
        col.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="sqlite", choices=("sqlite", "postgres"))
    args = ap.parse_args()
    setup(args.backend)
    tests = [("test_control_shift_is_host_changed", test_control_shift_is_host_changed),
             ("test_steady_control_regresses", test_steady_control_regresses),
             ("test_small_control_move_under_large_regression",
              test_small_control_move_under_large_regression),
             ("test_noisy_reference_is_no_shift", test_noisy_reference_is_no_shift),
             ("test_one_series_is_no_shift", test_one_series_is_no_shift),
             ("test_fingerprint_change_is_host_changed", test_fingerprint_change_is_host_changed),
             ("test_control_moment_measured_again", test_control_moment_measured_again),
             ("test_commits_of_one_second", test_commits_of_one_second)]
    h.run(tests, "host changed (%s)" % args.backend)


if __name__ == "__main__":
    main()

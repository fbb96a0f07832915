#!/usr/bin/python3
"""atomwatch-agent bisect against the real collector, on a subject repository of 32 commits
(tests/e2e/bisect_repo.py) where one commit in the middle adds 10 adds to a chain of 32
multiplies (+10%) and every other commit changes a comment only; only the first and the last
are given. The bisection names that commit (a few tries here; the 10-try figures come from
bench/agents/bisect_bench.py), within 7 steps, with the JSON shape of the issue, a change that
carries the move the same bisection measured between the ends (not a figure of one CPU), uploads
every commit it measured as a run with "trigger": "bisect" under its commit on the ref, in
commit order. The same with +5% (the culprit or at most 3 candidates). A range without a
regression and a budget that runs out exit 4 saying which; a commit that does not build is
skipped with its reason and leaves the candidates. The owner's step command (bisect.step): a
script that stands in for build and boot and really measures (atomwatch-agent run of the
subject built at that commit), the verdicts read back from the collector; a step that exits
non-zero and one that uploads nothing skip their commits with the reason. Bad input: an unknown
SHA, --good not an ancestor of --bad, an empty range, a budget of 0 (exit 2 naming it, nothing
measured or uploaded).

usage: test_agent_bisect.py [--backend sqlite|postgres] [--tries N]"""

import argparse
import json
import math
import os
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_helpers as a  # noqa: E402
import bisect_repo  # noqa: E402
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

HOST = "agent-bisect"
STEP_HOST = "bisect-step"


class Suite:
    pass


S = Suite()


def setup(backend, tries):
    S.tries = tries
    S.pg = h.Postgres().start() if backend == "postgres" else None
    S.db = h.Database(backend, S.pg)
    S.col = h.Collector(S.db.url).start()
    S.token = S.col.token("agent", HOST)
    S.ci = S.col.token("ci")
    S.url = "http://127.0.0.1:%d" % S.col.port
    S.repo = h.tempdir("aw-bisect-repo-")
    S.shas = bisect_repo.make(S.repo, n=32, culprit=16, extra=10)
    S.repo5 = h.tempdir("aw-bisect-repo5-")
    S.shas5 = bisect_repo.make(S.repo5, n=32, culprit=16, extra=5)
    S.broken = h.tempdir("aw-bisect-broken-")
    # commit 4 does not build; commit 5 is the culprit
    S.shas_broken = bisect_repo.make(S.broken, n=8, culprit=5, extra=10, broken=(4,))
    extra = (bisect_repo.subject_config(S.repo, "s")
             + bisect_repo.subject_config(S.repo5, "s5").replace("subjects:\n", "")
             + bisect_repo.subject_config(S.broken, "sb").replace("subjects:\n", ""))
    S.ag = a.Agent(S.url, S.token, HOST, extra=extra,
                   matrix="matrix:\n  profile: quick\n  ops: [plain]\n  samples: 20\n")


def bisect(*args, subject="s", project="bisect-e2e", timeout=900):
    return S.ag.run("bisect", "--subject", subject, "--project", project, "--quiet", *args,
                    timeout=timeout)


def runs(project, host=HOST):
    r = S.col.request("GET", "/api/v1/runs?project=%s&host=%s&limit=1000" % (project, host),
                      token=S.ci)
    eq(r.status, 200, r)
    return r.json()["runs"]


def agrees_with_move(o):
    """The culprit's change against the move from good to bad the same bisection measured
    first (its range step): the culprit is the only code change, so it carries the move; a
    slowdown, within half to twice the move in log (this machine's noise between the steps;
    not a figure of this CPU, whose multiply latency sets how much the adds cost)."""
    move = o["steps"][0]["ratio"]
    check(move > 1.02 and o["change"] > 1.02, o)
    check(0.5 * math.log(move) <= math.log(o["change"]) <= 2 * math.log(move),
          "the culprit's change %.4f against the ends' move %.4f: %r" % (o["change"], move, o))


def test_culprit_10pct():
    for t in range(S.tries):
        project = "b10-%d" % t
        p = bisect("--good", S.shas[0], "--bad", S.shas[-1], "--format", "json",
                   project=project)
        eq(p.returncode, 0, p.stderr)
        o = json.loads(p.stdout)
        for k in ("culprit", "change", "lo", "hi", "steps", "builds", "seconds"):
            check(k in o, (k, o))
        eq(o["culprit"], S.shas[16], o)
        eq(o["outcome"], "culprit")
        check(o["lo"] <= o["change"] <= o["hi"], o)
        agrees_with_move(o)
        eq(o["cell"], "subject=s op=op cpu=0")
        measured = [s for s in o["steps"] if s["step"] is not None]
        check(len(measured) <= 7, measured)
        eq(o["steps_done"], len(measured))
        check(o["seconds"] < 600, o["seconds"])
        for s in o["steps"]:
            check(set(("commit", "verdict", "ratio")) <= set(s), s)
        eq(o["steps"][0]["kind"], "range")
        eq(o["steps"][0]["verdict"], "regressed")
        # never a comment-only commit: every probe before the culprit is good, after it bad
        for s in o["steps"][1:]:
            i = S.shas.index(s["commit"])
            eq(s["verdict"], "good" if i < 16 else "bad", s)
        # every commit measured is a run of its own, trigger bisect, under its commit on main
        eq(a.wait_for(lambda: S.ag.spooled() == [], what="spool empty"), True)
        rs = runs(project)
        want = {S.shas[0], S.shas[-1]} | {s["commit"] for s in o["steps"][1:]}
        eq({r["commit"] for r in rs}, want)
        eq(len(rs), len(want))
        for r in rs:
            eq((r["trigger"], r["ref"]), ("bisect", "main"), r)
            check(r["commit_time"], r)
        # in commit order on the ref, not in the order measured
        order = sorted(rs, key=lambda r: r["order_time"])
        eq([r["commit"] for r in order], [c for c in S.shas if c in want])
        doc = a.get_run(S.col, S.ci, rs[0]["run_id"])
        eq(doc["meta"]["bisect"]["good"], S.shas[0])
        keys = sorted(c["key"] for c in doc["cells"])
        eq(keys, ["subject=atomwatch-control op=chain cpu=0", "subject=s op=op cpu=0"])
        # the worktrees are gone
        eq(bisect_repo.git(S.repo, "worktree", "list").count("\n"), 0)


def test_culprit_5pct():
    p = bisect("--good", S.shas5[0], "--bad", S.shas5[-1], "--format", "json", subject="s5",
               project="b5")
    eq(p.returncode, 0, p.stderr)
    o = json.loads(p.stdout)
    if o["culprit"]:
        eq(o["culprit"], S.shas5[16], o)
    else:
        check(S.shas5[16] in o["candidates"] and len(o["candidates"]) <= 3, o)
    agrees_with_move(o)


def test_no_regression():
    before = len(runs("none"))
    p = bisect("--good", S.shas[0], "--bad", S.shas[10], "--format", "json", project="none")
    eq(p.returncode, 4, p.stderr)
    o = json.loads(p.stdout)
    eq((o["culprit"], o["outcome"], o["candidates"]), (None, "no regression", []), o)
    check("no regression" in o["message"], o)
    eq(o["steps"][0]["verdict"], "unchanged")
    # both ends measured, uploaded
    a.wait_for(lambda: S.ag.spooled() == [], what="spool empty")
    eq(len(runs("none")) - before, 2)


def test_budget_runs_out():
    p = bisect("--good", S.shas[0], "--bad", S.shas[-1], "--budget", "2", "--format", "json",
               project="budget")
    eq(p.returncode, 4, p.stderr)
    o = json.loads(p.stdout)
    eq((o["culprit"], o["outcome"], o["steps_done"]), (None, "budget", 2), o)
    check("budget" in o["message"], o)
    check(S.shas[16] in o["candidates"] and len(o["candidates"]) == 16, o)
    # text: says which, lists them
    p = bisect("--good", S.shas[0], "--bad", S.shas[-1], "--budget", "1", project="budget")
    eq(p.returncode, 4, p.stderr)
    check("budget" in p.stdout and "candidates:" in p.stdout, p.stdout)


def test_skipped_build():
    p = bisect("--good", S.shas_broken[0], "--bad", S.shas_broken[-1], "--format", "json",
               subject="sb", project="broken")
    eq(p.returncode, 0, p.stderr)
    o = json.loads(p.stdout)
    skipped = [s for s in o["steps"] if s["verdict"] == "skipped"]
    eq([s["commit"] for s in skipped], [S.shas_broken[4]])
    check("does not build" in skipped[0]["reason"], skipped)
    eq(skipped[0]["step"], None)
    eq(o["skipped"], [S.shas_broken[4]])
    # the skipped commit hides whether 4 or 5 is the culprit: both are candidates
    eq((o["culprit"], o["outcome"]), (None, "candidates"), o)
    eq(o["candidates"], [S.shas_broken[4], S.shas_broken[5]])
    check("candidates" in o["message"], o)
    p = bisect("--good", S.shas_broken[0], "--bad", S.shas_broken[-1], subject="sb",
               project="broken")
    eq(p.returncode, 0, p.stderr)
    check("skipped %s" % S.shas_broken[4][:12] in p.stdout, p.stdout)


def test_text_format():
    p = bisect("--good", S.shas[10], "--bad", S.shas[20], project="text")
    eq(p.returncode, 0, p.stderr)
    check(("culprit: %s" % S.shas[16]) in p.stdout, p.stdout)
    check("step 1:" in p.stdout and "steps," in p.stdout, p.stdout)


def test_bad_input():
    good, bad = S.shas[0], S.shas[-1]
    before = len(runs("bad-input"))
    cases = [
        (("--good", "deadbeef", "--bad", bad), "--good deadbeef: no such commit"),
        (("--good", good, "--bad", "c0ffee00"), "--bad c0ffee00: no such commit"),
        (("--good", bad, "--bad", good), "--good %s is not an ancestor of --bad %s" % (bad, good)),
        (("--good", good, "--bad", good), "is empty"),
        (("--good", good, "--bad", bad, "--budget", "0"), "bad --budget '0'"),
        (("--good", good, "--bad", bad, "--format", "yaml"), "bad --format 'yaml'"),
        (("--good", good), "bisect needs --subject, --good and --bad"),
        (("--good", "xyz", "--bad", bad), "bad --good 'xyz'"),
    ]
    for args, message in cases:
        p = bisect(*args, project="bad-input")
        eq(p.returncode, 2, (args, p.stderr))
        check(message in p.stderr, (args, p.stderr))
        eq(p.stdout, "", args)
    p = bisect("--good", good, "--bad", bad, subject="nope", project="bad-input")
    eq(p.returncode, 2, p.stderr)
    check("unknown subject 'nope'" in p.stderr, p.stderr)
    # nothing measured, nothing built, nothing uploaded
    eq(S.ag.spooled(), [])
    eq(len(runs("bad-input")), before)
    eq(bisect_repo.git(S.repo, "worktree", "list").count("\n"), 0)


# ---- the owner's step command ----

STEP = r"""#!/bin/sh
# stands in for a kernel's build and boot: builds the subject at $ATOMWATCH_COMMIT in a worktree
# of its own and measures it with the agent, which uploads under that commit
set -eu
case "$ATOMWATCH_COMMIT" in
%(fail)s) echo "the build of this kernel failed" >&2; exit 3 ;;
%(nothing)s) echo "booted, but the guest never reported"; exit 0 ;;
esac
wt=$(mktemp -d)
git -C "$PWD" worktree add -q --detach "$wt/src" "$ATOMWATCH_COMMIT"
(cd "$wt/src" && cc -O2 -shared -fPIC -I"%(inc)s" -DCHAIN=32 -o "%(lib)s" subject.c)
git -C "$PWD" worktree remove --force "$wt/src"
rm -rf "$wt"
"%(agent)s" run --config "%(config)s" --project "$ATOMWATCH_PROJECT" \
    --commit "$ATOMWATCH_COMMIT" --ref "$ATOMWATCH_REF" --subject stepsubj --quiet
"""


def test_step_command():
    repo = h.tempdir("aw-bisect-step-")
    shas = bisect_repo.make(repo, n=8, culprit=6, extra=40)
    d = h.tempdir("aw-bisect-stepdir-")
    lib = os.path.join(d, "libsubject.so")
    token = S.col.token("agent", STEP_HOST)
    # the "guest": an agent of its own, filed as STEP_HOST, measuring the library the step built
    guest = a.Agent(S.url, token, STEP_HOST,
                    extra="subjects:\n  stepsubj:\n    library: %s\n    cpus: first\n" % lib,
                    matrix="matrix:\n  profile: quick\n  ops: [plain]\n  samples: 20\n")
    script = os.path.join(d, "step.sh")
    with open(script, "w") as f:
        f.write(STEP % {"fail": shas[3], "nothing": shas[4], "agent": a.agent_binary(),
                        "config": guest.config, "lib": lib,
                        "inc": os.path.join(bisect_repo.SOURCE_DIR, "runner", "include")})
    os.chmod(script, os.stat(script).st_mode | stat.S_IXUSR)
    # the bisecting agent: no subject, a step
    ag = a.Agent(S.url, S.token, HOST,
                 extra="bisect:\n  step: %s\n  repo: %s\n  subject: kernel\n  host: %s\n"
                       "  timeout: 5m\n" % (script, repo, STEP_HOST))
    p = ag.run("bisect", "--subject", "kernel", "--project", "step", "--good", shas[0], "--bad",
               shas[-1], "--cells", "subject=stepsubj *", "--format", "json", "--quiet",
               timeout=900)
    eq(p.returncode, 0, p.stdout + p.stderr)
    o = json.loads(p.stdout)
    eq(o["culprit"], shas[6], o)
    eq(o["cell"], "subject=stepsubj op=op cpu=0")
    skipped = {s["commit"]: s["reason"] for s in o["steps"] if s["verdict"] == "skipped"}
    eq(sorted(skipped), sorted([shas[3], shas[4]]))
    check("exited with status 3" in skipped[shas[3]], skipped)
    check("the build of this kernel failed" in skipped[shas[3]], skipped)
    check("uploaded nothing" in skipped[shas[4]], skipped)
    # the runs are the step's (the guest's host), filed under their commits
    rs = runs("step", STEP_HOST)
    measured = {shas[0], shas[-1]} | {s["commit"] for s in o["steps"]
                                      if s["verdict"] in ("good", "bad")}
    eq({r["commit"] for r in rs}, measured)
    # a step that cannot measure an end fails the bisection
    p = ag.run("bisect", "--subject", "kernel", "--project", "step2", "--good", shas[3],
               "--bad", shas[-1], "--quiet", timeout=600)
    eq(p.returncode, 1, p.stderr)
    check("the good end %s cannot be measured" % shas[3] in p.stderr, p.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="sqlite", choices=("sqlite", "postgres"))
    ap.add_argument("--tries", type=int, default=2)
    args = ap.parse_args()
    a.agent_binary()
    setup(args.backend, args.tries)
    tests = [("test_bad_input", test_bad_input),
             ("test_culprit_10pct", test_culprit_10pct),
             ("test_culprit_5pct", test_culprit_5pct),
             ("test_no_regression", test_no_regression),
             ("test_budget_runs_out", test_budget_runs_out),
             ("test_skipped_build", test_skipped_build),
             ("test_text_format", test_text_format),
             ("test_step_command", test_step_command)]
    h.run(tests, "agent bisect (%s)" % args.backend)


if __name__ == "__main__":
    main()

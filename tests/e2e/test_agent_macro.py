#!/usr/bin/python3
"""The macro check and the control on a real agent and collector: `atomwatch-agent run` with the
matrix profile `macro` adds a cell per tool, hackbench from Debian's rt-tests and `perf bench
sched messaging` from linux-perf, in seconds per run (stored in ns), beside the control cell
every run carries; a host without the tools skips those cells with the reason and the run
succeeds; the commit page shows the macro check beside the host's micro verdict; the host page
draws the control's trend.

usage: test_agent_macro.py"""

import datetime
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_helpers as a  # noqa: E402
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

HOST = "agent-macro"
RUNS = 3


class Suite:
    pass


S = Suite()


def setup():
    S.col = h.Collector(h.Database("sqlite").url).start()
    S.token = S.col.token("agent", HOST)
    # the shipped matrix with a lighter macro check: a short test
    with open(os.path.join(h.SOURCE_DIR, "configs", "matrix.yaml")) as f:
        text = f.read()
    shipped = "macro: {runs: 5, groups: 4, loops: 200, tools: [hackbench, perf-messaging]}"
    check(shipped in text, "the shipped macro profile")
    path = os.path.join(h.tempdir("aw-macro-matrix-"), "matrix.yaml")
    with open(path, "w") as f:
        f.write(text.replace(shipped, "macro: {runs: %d, groups: 2, loops: 50, tools: "
                                      "[hackbench, perf-messaging]}" % RUNS))
    matrix = ("matrix:\n  file: %s\n  profile: macro\n  ops: [plain]\n  samples: 20\n" % path)
    S.ag = a.Agent("http://127.0.0.1:%d" % S.col.port, S.token, HOST, matrix=matrix)


def run(commit, env=None):
    argv = [a.agent_binary(), "run", "--config", S.ag.config, "--project", "macro", "--commit",
            commit, "--ref", "main", "--quiet"]
    import subprocess
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600,
                       env=a.clean_env(env))
    eq(p.returncode, 0, p.stderr)
    return a.get_run(S.col, S.token, p.stdout.strip())


def seconds(stamp):
    """A document's RFC 3339 time in seconds since the epoch."""
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def cells(doc):
    return {c["key"]: c for c in doc["cells"]}


def test_macro_cells():
    if not shutil.which("hackbench"):
        raise AssertionError("hackbench is missing: sh scripts/deps.sh test installs rt-tests")
    doc = run("aaaa0001")
    c = cells(doc)
    hb = c["subject=atomwatch-macro op=hackbench"]
    eq((hb["status"], hb["n"], hb["unit"]), ("ok", RUNS, "ns"), hb)
    # seconds per run, in ns: more than nothing, and its runs fit in the whole run's time
    took = seconds(doc["finished_at"]) - seconds(doc["started_at"])
    check(0 < hb["p50"] * RUNS <= took * 1e9, (hb, took))
    perf = c["subject=atomwatch-macro op=perf-messaging"]
    if shutil.which("perf"):
        check(perf["status"] in ("ok", "skipped"), perf)
    else:
        eq(perf["status"], "skipped")
    ctl = [k for k in c if k.startswith("subject=atomwatch-control op=chain cpu=")]
    eq(len(ctl), 1, sorted(c))
    eq(c[ctl[0]]["status"], "ok")
    eq(doc["matrix"]["profile"], "macro")


def test_without_the_tools():
    empty = h.tempdir("aw-macro-path-")
    doc = run("aaaa0002", {"PATH": empty})
    c = cells(doc)
    hb = c["subject=atomwatch-macro op=hackbench"]
    eq(hb["status"], "skipped")
    check("hackbench is not installed (Debian's rt-tests)" in hb["reason"], hb)
    perf = c["subject=atomwatch-macro op=perf-messaging"]
    eq(perf["status"], "skipped")
    check("perf is not installed" in perf["reason"], perf)


def test_commit_page_shows_the_macro_check():
    run("aaaa0003")
    doc = run("aaaa0004")
    h.wait_for_postingest(S.col.port)
    page = S.col.request("GET", "/commits/aaaa0004").body.decode()
    check("macro check: hackbench" in page, page[-3000:])
    host = S.col.request("GET", "/hosts/" + HOST).body.decode()
    check("trend-control" in host, "the host page lists the control's trend")
    eq(doc["commit"], "aaaa0004")


def main():
    a.agent_binary()
    setup()
    h.run([("test_macro_cells", test_macro_cells),
           ("test_without_the_tools", test_without_the_tools),
           ("test_commit_page_shows_the_macro_check", test_commit_page_shows_the_macro_check)],
          "agent macro")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Interleaved A/B against the history-based verdict on the same commits (docs/benchmarks.md
"Interleaved A/B", docs/detection.md). bench/detect/subject_chain.c in a git repository of its
own: `base` (EXTRA=0), `head` (EXTRA=1: one more dependent add, a real +1% slowdown of the op
on x86-64 and arm64), and `AA`: `atomwatch-agent ab --aa` of base against a second build of
base. Every document goes through a real collector (SQLite, started through
tests/e2e/harness.py) which judges it. Side by side: history runs (`atomwatch-agent run
--subject chain`) of base-code commits on main, then one run of head and one of an unchanged
commit per trial, judged by /api/v1/gate?evidence=history. Prints the detection rates, the
A/A false-alarm rate, one document's wall time with the builds' own time apart, and the load
average.

usage: ab_bench.py --agent BIN [--docs 60] [--rounds 20] [--history 8] [--trials 10]
                   [--profile default]"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import agent_helpers as a  # noqa: E402
import harness as h  # noqa: E402

HOST = "bench-ab"
SUBJECT = os.path.join(h.SOURCE_DIR, "bench", "detect", "subject_chain.c")
BUILD = 'cc -O2 -shared -fPIC -I"$INC" -DCHAIN=32 -DEXTRA=$(cat extra) -o libchain.so chain.c'


def git(repo, *args):
    env = a.clean_env({"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@bench",
                       "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@bench"})
    p = subprocess.run(["git", "-C", repo] + list(args), capture_output=True, text=True, env=env)
    if p.returncode:
        raise SystemExit("git %s: %s" % (" ".join(args), p.stderr))
    return p.stdout.strip()


def commit(repo, extra, msg):
    with open(os.path.join(repo, "extra"), "w") as f:
        f.write("%d\n" % extra)
    with open(os.path.join(repo, "note"), "a") as f:
        f.write(msg + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", msg)
    return git(repo, "rev-parse", "HEAD")


def pct(k, n):
    return "%d/%d (%.1f%%)" % (k, n, 100.0 * k / n if n else 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--docs", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--history", type=int, default=8)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--profile", default="default")
    ap.add_argument("--json", help="write the raw figures here")
    args = ap.parse_args()
    os.environ["AW_AGENT"] = args.agent

    repo = h.tempdir("aw-ab-bench-")
    subprocess.run(["git", "init", "-q", repo], check=True)
    with open(os.path.join(repo, "chain.c"), "w") as f, open(SUBJECT) as src:
        f.write(src.read())
    with open(os.path.join(repo, ".gitignore"), "w") as f:
        f.write("libchain.so\n")  # built in place by `run`
    base = commit(repo, 0, "base")
    head = commit(repo, 1, "head: one more add")

    col = h.Collector(h.Database("sqlite").url).start()
    token = col.token("agent", HOST)
    ci = col.token("ci")
    url = "http://127.0.0.1:%d" % col.port
    inc = os.path.join(h.SOURCE_DIR, "runner", "include")
    matrix = "matrix:\n  profile: %s\n  ops: [plain]\n" % args.profile
    extra = ("subjects:\n  chain:\n    build: '%s'\n    dir: %s\n    library: %s/libchain.so\n"
             "    env: {INC: %s}\n    cpus: first\n    timeout: 5m\n" % (BUILD, repo, repo, inc))
    ag = a.Agent(url, token, HOST, extra=extra, matrix=matrix)

    def ab(b, hd, *more):
        t = time.time()
        p = ag.run("ab", "--project", "bench", "--subject", "chain", "--base", b, "--head", hd,
                   "--rounds", str(args.rounds), "--quiet", *more, timeout=600)
        wall = time.time() - t
        if p.returncode != 0:
            raise SystemExit("ab failed: %s" % p.stderr)
        o = col.request("GET", "/api/v1/ab/" + p.stdout.strip(), token=ci).json()
        doc = o["document"]
        cell = o["judgment"]["cells"][0]
        return {"verdict": o["verdict"], "wall_s": wall,
                "build_s": doc["base"]["build_s"] + doc["head"]["build_s"],
                "ratio": cell.get("ratio"), "lo": cell.get("lo"), "hi": cell.get("hi"),
                "threshold": cell.get("threshold"), "aa_lo": cell.get("aa", {}).get("lo"),
                "aa_hi": cell.get("aa", {}).get("hi")}

    load0 = os.getloadavg()
    t0 = time.time()
    results = {"ab": [], "aa": []}
    for i in range(args.docs):
        results["ab"].append(ab(base, head))
        results["aa"].append(ab(base, base, "--aa"))
        if (i + 1) % 10 == 0:
            print("  %d/%d documents of each kind, load %.1f" % (i + 1, args.docs,
                                                                  os.getloadavg()[0]),
                  flush=True)
    ab_s = time.time() - t0

    # the history-based verdict on the same code: main's history of base-code commits, then
    # per trial a run of head's code and one of base's code on a branch of their own
    t1 = time.time()
    hist = {"head": [], "same": []}

    def run(sha, ref):
        p = ag.run("run", "--project", "bench", "--commit", sha, "--ref", ref, "--subject",
                   "chain", "--quiet", timeout=600)
        if p.returncode != 0:
            raise SystemExit("run failed: %s" % p.stderr)

    key = "subject=chain op=op cpu=0"
    git(repo, "checkout", "-q", "-b", "main-line", base)
    mains = []
    for i in range(args.history):
        sha = commit(repo, 0, "main %d" % i)
        mains.append(sha)
        git(repo, "checkout", "-q", sha)
        run(sha, "main")
    for i in range(args.trials):
        for kind, extra_adds in (("head", 1), ("same", 0)):
            git(repo, "checkout", "-q", mains[-1])
            sha = commit(repo, extra_adds, "%s trial %d" % (kind, i))
            git(repo, "checkout", "-q", sha)
            run(sha, "refs/heads/%s-%d" % (kind, i))
            g = col.request("GET", "/api/v1/gate?project=bench&commit=%s&evidence=history&all=1"
                            % sha, token=ci).json()
            verdict = "?"
            for host in g["hosts"]:
                for c in host["cells"]:
                    if c["key"] == key:
                        verdict = c["verdict"]
                        change = c["p50"]["change"]
            hist[kind].append({"verdict": verdict, "change": change})
    hist_s = time.time() - t1
    load1 = os.getloadavg()

    ab_hit = sum(r["verdict"] == "regressed" for r in results["ab"])
    aa_false = sum(r["verdict"] == "regressed" for r in results["aa"])
    aa_any = sum(r["verdict"] in ("regressed", "improved") for r in results["aa"])
    walls = sorted(r["wall_s"] for r in results["ab"])
    builds = sorted(r["build_s"] for r in results["ab"])
    ratios = sorted(r["ratio"] for r in results["ab"] if r["ratio"])
    thresholds = sorted(r["threshold"] for r in results["ab"] if r["threshold"] is not None)
    print("interleaved A/B, %d documents of each kind, %d rounds (+%d A/A) per document, "
          "profile %s, 1 op on 1 CPU" % (args.docs, args.rounds, args.rounds, args.profile))
    print("  +1%% (EXTRA=1) judged regressed:  %s" % pct(ab_hit, args.docs))
    print("  A/A (two builds of base) judged regressed: %s, regressed or improved: %s"
          % (pct(aa_false, args.docs), pct(aa_any, args.docs)))
    print("  verdicts of +1%%: %s" % {v: sum(r["verdict"] == v for r in results["ab"])
                                     for v in ("regressed", "unchanged", "inconclusive",
                                               "improved")})
    print("  verdicts of A/A: %s" % {v: sum(r["verdict"] == v for r in results["aa"])
                                    for v in ("regressed", "unchanged", "inconclusive",
                                              "improved")})
    print("  estimated head/base of +1%%: median %.4f, range %.4f..%.4f"
          % (ratios[len(ratios) // 2], ratios[0], ratios[-1]))
    print("  threshold applied (max(configured, A/A reach)): median %.2f%%, max %.2f%%"
          % (100 * thresholds[len(thresholds) // 2], 100 * thresholds[-1]))
    print("  one document, wall (agent start to upload, both builds included): median %.2f s, "
          "max %.2f s; the two builds alone: median %.2f s" % (walls[len(walls) // 2],
                                                               walls[-1],
                                                               builds[len(builds) // 2]))
    print("  %.0f s for all A/B and A/A documents" % ab_s)
    print("history-based verdict (gate, evidence=history), %d main runs, %d trials, %.0f s"
          % (args.history, args.trials, hist_s))
    for kind, label in (("head", "+1% head"), ("same", "unchanged commit")):
        vs = [r["verdict"] for r in hist[kind]]
        print("  %-17s %s; changes %s" % (label, {v: vs.count(v) for v in sorted(set(vs))},
                                          " ".join("%+.1f%%" % (100 * r["change"])
                                                   for r in hist[kind] if r["change"] is not None)))
    print("load average: %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end"
          % (load0 + load1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ab": results, "history": hist, "load": [load0, load1]}, f, indent=1)
    h._cleanup_all()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Interleaved A/B on real builds (docs/benchmarks.md "Interleaved A/B", docs/detection.md): a
subject in a git repository of its own, committed as `base`, as a README-only change of base (the
A/A: same code, a build of its own) and as heads with EXTRA more instructions, each a real code
change whose cost the A/B itself measures. Subjects: `chain` (bench/detect/subject_chain.c: a
serial chain, each add one more cycle of every call), `overlap` (bench/detect/
subject_overlap.c: lock xadd and a run of adds independent of the previous call, so calls overlap
and a change's cost depends on what the core shares), and the memory-bound `hash` and the
`branchy` op of bench/detect/subject_shapes.c (the recordings' subject: more steps of the hash
function, more adds in every arm), whose other three ops, their code unchanged, are reported as
an A/A of their own. Every try runs `atomwatch-agent ab` from
base to each variant in turn (the variants interleaved, so that the machine's moods fall on all
alike), and a real collector (SQLite, started through tests/e2e/harness.py) judges every
document. Prints per variant the verdicts, the estimated change, the rounds and seconds used and
the wall time of a whole A/B (both builds included), and the load average. The subject's build
takes $ATOMWATCH_LAYOUT_CFLAGS: --builds N builds each side N times with its code shifted
(docs/detection.md "Code layouts"); --builds 1,4 measures each variant both ways, interleaved. With --history N
--trials M it also runs the history-based verdict on the same code for comparison.

usage: ab_bench.py --agent BIN [--subject chain|overlap|hash|branchy] [--extras 2,5,11]
                   [--tries 30] [--rounds 400] [--layouts 4] [--builds 4|1,4] [--budget-s 20]
                   [--profile quick]
                   [--history 0 --trials 0] [--json FILE]"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import agent_helpers as a  # noqa: E402
import harness as h  # noqa: E402

HOST = "bench-ab"
SUBJECTS = {
    # name: (source, build flags of base, default heads' EXTRA, the macro EXTRA sets, the op)
    "chain": ("subject_chain.c", "-DCHAIN=32", "2,6,12", "EXTRA", "op"),
    "overlap": ("subject_overlap.c", "-DRUN=80", "1,4,6", "EXTRA", "op"),
    # bench/detect/subject_shapes.c, the recordings' subject: all four ops are measured, the
    # head changing one; the other three are an A/A of their own (same code, another build)
    "hash": ("subject_shapes.c", "-DCHAIN=32", "1,2,3", "EXTRA_HASH", "hash"),
    "branchy": ("subject_shapes.c", "-DCHAIN=32", "4,8,12", "EXTRA_BRANCHY", "branchy"),
}
VERDICTS = ("regressed", "improved", "unchanged", "inconclusive")


def git(repo, *args):
    env = a.clean_env({"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@bench",
                       "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@bench"})
    p = subprocess.run(["git", "-C", repo] + list(args), capture_output=True, text=True, env=env)
    if p.returncode:
        raise SystemExit("git %s: %s" % (" ".join(args), p.stderr))
    return p.stdout.strip()


def commit(repo, extra, msg, parent=None):
    if parent:
        git(repo, "checkout", "-q", parent)
    with open(os.path.join(repo, "extra"), "w") as f:
        f.write("%d\n" % extra)
    with open(os.path.join(repo, "README"), "a") as f:
        f.write(msg + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", msg)
    return git(repo, "rev-parse", "HEAD")


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def pct(r):
    return "%+.2f%%" % (100 * (r - 1)) if r == r else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--subject", default="chain", choices=sorted(SUBJECTS))
    ap.add_argument("--extras", help="the heads' EXTRA, comma-separated (default per subject)")
    ap.add_argument("--tries", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=400)
    ap.add_argument("--layouts", type=int, default=4)
    ap.add_argument("--builds", default="4",
                    help="code layouts of each side, or a comma-separated list to compare "
                         "(each variant measured with each, interleaved)")
    ap.add_argument("--budget-s", type=float, default=20)
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--history", type=int, default=0)
    ap.add_argument("--trials", type=int, default=0)
    ap.add_argument("--json", help="write the raw figures here")
    args = ap.parse_args()
    os.environ["AW_AGENT"] = args.agent
    source, flags, default_extras, macro, op = SUBJECTS[args.subject]
    extras = [int(e) for e in (args.extras or default_extras).split(",")]

    repo = h.tempdir("aw-ab-bench-")
    subprocess.run(["git", "init", "-q", repo], check=True)
    with open(os.path.join(repo, "subject.c"), "w") as f, \
            open(os.path.join(h.SOURCE_DIR, "bench", "detect", source)) as src:
        f.write(src.read())
    if source == "subject_shapes.c":  # (it includes the chain's op)
        with open(os.path.join(repo, "subject_chain.c"), "w") as f, \
                open(os.path.join(h.SOURCE_DIR, "bench", "detect", "subject_chain.c")) as src:
            f.write(src.read())
    with open(os.path.join(repo, ".gitignore"), "w") as f:
        f.write("libsubject.so\n")  # built in place by `run`
    base = commit(repo, 0, "base")
    variants = [("A/A", commit(repo, 0, "README only", base))]
    for e in extras:
        variants.append(("+%d" % e, commit(repo, e, "head: %d more" % e, base)))
    git(repo, "checkout", "-q", base)

    col = h.Collector(h.Database("sqlite").url).start()
    token = col.token("agent", HOST)
    ci = col.token("ci")
    inc = os.path.join(h.SOURCE_DIR, "runner", "include")
    # the code layouts' flags (empty for a plain build): docs/detection.md "Code layouts"
    build = ('cc -O2 -shared -fPIC -I"$INC" %s -D%s=$(cat extra) $ATOMWATCH_LAYOUT_CFLAGS '
             '-o libsubject.so subject.c' % (flags, macro))
    matrix = "matrix:\n  profile: %s\n  ops: [plain]\n" % args.profile
    extra = ("subjects:\n  s:\n    build: '%s'\n    dir: %s\n    library: %s/libsubject.so\n"
             "    env: {INC: %s}\n    cpus: first\n    timeout: 5m\n" % (build, repo, repo, inc))
    ag = a.Agent(col_url(col), token, HOST, extra=extra, matrix=matrix)

    def ab(head, builds):
        t = time.time()
        p = ag.run("ab", "--project", "bench", "--subject", "s", "--base", base, "--head",
                   head, "--rounds", str(args.rounds), "--layouts", str(args.layouts),
                   "--builds", str(builds), "--budget-s", str(args.budget_s), "--quiet",
                   timeout=900)
        wall = time.time() - t
        if p.returncode != 0:
            raise SystemExit("ab failed: %s" % p.stderr)
        o = col.request("GET", "/api/v1/ab/" + p.stdout.strip(), token=ci).json()
        doc, cells = o["document"], o["judgment"]["cells"]
        key = "subject=s op=%s cpu=0" % op
        cell = next(c for c in cells if c["key"] == key)
        dcell = next(c for c in doc["cells"] if c["key"] == key)
        others = [[c["key"].split()[1], c["verdict"], c.get("ratio")] for c in cells
                  if c["key"] != key]
        levels = cell.get("levels") or {}
        return {"verdict": cell["verdict"], "others": others, "wall_s": wall, "ab_id": o["ab_id"],
                "build_s": doc["base"]["build_s"] + doc["head"]["build_s"],
                "builds": doc.get("measure", {}).get("builds", 1),
                "distinct_builds": [doc[k].get("distinct_builds", 1) for k in ("base", "head")],
                "measure_s": doc.get("measure", {}).get("seconds"),
                "rounds": cell.get("rounds"), "slices": dcell.get("slices"),
                "set_aside": dcell.get("set_aside"), "stop": dcell.get("stop"),
                "ratio": cell.get("ratio"), "lo": cell.get("lo"), "hi": cell.get("hi"),
                "ab_ratio": (cell.get("ab") or {}).get("ratio"),
                "aa_ratio": (cell.get("aa") or {}).get("ratio"),
                "layout_spread": cell.get("layout_spread"), "reason": cell.get("reason"),
                "loads": cell.get("loads"), "doc_loads": dcell.get("loads"),
                "layouts": [{k: lay.get(k) for k in ("rounds", "ratio", "aa", "verdict")}
                            for lay in cell.get("layouts") or []],
                "levels": {k: {"ratio": v["ratio"], "rounds": v["rounds"],
                               "verdict": v["verdict"]} for k, v in levels.items()},
                "load": os.getloadavg()[0]}

    load0 = os.getloadavg()
    t0 = time.time()
    # with several --builds values, each variant is measured with each in every try
    builds = [int(b) for b in args.builds.split(",")]
    if len(builds) > 1:
        variants = [("%s b%d" % (name, b), sha, b) for name, sha in variants for b in builds]
    else:
        variants = [(name, sha, builds[0]) for name, sha in variants]
    results = {name: [] for name, _, _ in variants}
    for i in range(args.tries):
        for name, sha, b in variants:
            results[name].append(ab(sha, b))
        print("  try %d/%d, load %.1f" % (i + 1, args.tries, os.getloadavg()[0]), flush=True)
    ab_s = time.time() - t0
    load1 = os.getloadavg()

    print("interleaved A/B, subject %s (%s), %d tries, --rounds %d --layouts %d --builds %s "
          "--budget-s %g, profile %s, 1 op on 1 CPU"
          % (args.subject, flags, args.tries, args.rounds, args.layouts, args.builds,
             args.budget_s, args.profile))
    print("%-9s %-28s %-9s %-17s %-7s %-14s %-10s %-10s %s" % (
        "head", "verdicts (reg/imp/unch/inc)", "change", "change alone/shared", "rounds",
        "layout spread", "measure s", "wall s", "stops"))
    summary = {}
    for name, _, _ in variants:
        rs = results[name]
        counts = {v: sum(r["verdict"] == v for r in rs) for v in VERDICTS}
        alone = median([r["levels"].get("alone", {}).get("ratio") for r in rs])
        shared = median([r["levels"].get("shared", {}).get("ratio") for r in rs])
        stops = {}
        for r in rs:
            stops[r["stop"]] = stops.get(r["stop"], 0) + 1
        summary[name] = {"counts": counts, "ratio": median([r["ratio"] for r in rs]),
                         "alone": alone, "shared": shared,
                         "rounds": median([r["rounds"] for r in rs]),
                         "measure_s": median([r["measure_s"] for r in rs]),
                         "measure_s_max": max(r["measure_s"] or 0 for r in rs),
                         "wall_s": median([r["wall_s"] for r in rs]),
                         "wall_s_max": max(r["wall_s"] for r in rs), "stops": stops,
                         "layout_spread": median([r["layout_spread"] for r in rs]),
                         "layout_spread_max": max((r["layout_spread"] or 0) for r in rs)}
        s = summary[name]
        print("%-9s %-28s %-9s %-17s %-7g %-14s %-10s %-10s %s" % (
            name, "%d/%d/%d/%d" % tuple(counts[v] for v in VERDICTS), pct(s["ratio"]),
            "%s/%s" % (pct(alone), pct(shared)), s["rounds"],
            "%.2f%% (%.2f)" % (100 * s["layout_spread"], 100 * s["layout_spread_max"]),
            "%.2f (%.1f)" % (s["measure_s"], s["measure_s_max"]),
            "%.1f (%.1f)" % (s["wall_s"], s["wall_s_max"]),
            " ".join("%s %d" % kv for kv in sorted(stops.items()))))
    print("(change: the median over the tries of each A/B's estimate, A/A bias removed; "
          "layout spread, measure s and wall s: median (max))")
    if SUBJECTS[args.subject][0] == "subject_shapes.c":
        for name, _, _ in variants:
            vs = [o[1] for r in results[name] for o in r["others"]]
            summary[name]["others"] = {v: vs.count(v) for v in VERDICTS}
            moved = {}
            for r in results[name]:
                for o in r["others"]:
                    if o[1] in ("regressed", "improved"):
                        moved.setdefault(o[0], []).append(pct(o[2]))
            print("%-9s the other ops (their code unchanged): %s of %d%s" % (
                name, "/".join(str(vs.count(v)) for v in VERDICTS), len(vs),
                "".join("; %s %s" % (k, " ".join(v)) for k, v in sorted(moved.items()))))
    print("%.0f s for all A/Bs" % ab_s)
    hist = history(args, repo, ag, col, ci, base) if args.history and args.trials else None
    print("load average: %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end"
          % (load0 + load1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "summary": summary, "results": results,
                       "history": hist, "load": [load0, load1]}, f, indent=1)
    h._cleanup_all()


def col_url(col):
    return "http://127.0.0.1:%d" % col.port


def history(args, repo, ag, col, ci, base):
    """The history-based verdict on the same code: main's history of base-code commits, then per
    trial a run of the first head's code and one of base's code on branches of their own."""
    hist = {"head": [], "same": []}
    extra_head = int((args.extras or SUBJECTS[args.subject][2]).split(",")[0])

    def run(sha, ref):
        p = ag.run("run", "--project", "bench", "--commit", sha, "--ref", ref, "--subject", "s",
                   "--quiet", timeout=600)
        if p.returncode != 0:
            raise SystemExit("run failed: %s" % p.stderr)

    key = "subject=s op=%s cpu=0" % SUBJECTS[args.subject][4]
    git(repo, "checkout", "-q", "-b", "main-line", base)
    mains = []
    for i in range(args.history):
        sha = commit(repo, 0, "main %d" % i)
        mains.append(sha)
        git(repo, "checkout", "-q", sha)
        run(sha, "main")
    for i in range(args.trials):
        for kind, extra_adds in (("head", extra_head), ("same", 0)):
            sha = commit(repo, extra_adds, "%s trial %d" % (kind, i), mains[-1])
            git(repo, "checkout", "-q", sha)
            run(sha, "refs/heads/%s-%d" % (kind, i))
            g = col.request("GET", "/api/v1/gate?project=bench&commit=%s&evidence=history&all=1"
                            % sha, token=ci).json()
            verdict, change = "?", None
            for host in g["hosts"]:
                for c in host["cells"]:
                    if c["key"] == key:
                        verdict = c["verdict"]
                        change = c["p50"]["change"]
            hist[kind].append({"verdict": verdict, "change": change})
    for kind, label in (("head", "+%d head" % extra_head), ("same", "unchanged commit")):
        vs = [r["verdict"] for r in hist[kind]]
        print("history-based verdict, %-17s %s" % (label, {v: vs.count(v) for v in sorted(set(vs))}))
    return hist


if __name__ == "__main__":
    main()

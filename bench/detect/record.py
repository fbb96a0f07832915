#!/usr/bin/python3
"""Records real runs of this machine for the detection bench (docs/detection.md, "Recordings").

Each run is `atomwatch-agent run` of a matrix profile plus a one-op subject (bench/detect/
subject_chain.c: `lock xadd` followed by a chain of dependent multiplies), exactly as an agent
measures in production; the collector is left unreachable on purpose, so every document stays
in the agent's spool and is taken from there. The subject is built in variants that differ only
by extra dependent adds on the chain: `base`, and `plus2`, `plus5`, `plus10`, sized on this
machine to about +2%, +5% and +10% (a short calibration measures candidate counts here, unless
--extra gives them). Base runs and variant runs are interleaved in a seeded random order,
so that both see the same disturbances. Optionally two compiler jobs (or --load-jobs) run in the
background throughout, started and stopped by this script.

The recording is one compressed JSON Lines file (.jsonl.xz or .jsonl.gz, by the name given):
line 1 a header saying how it was made (host, CPU model, kernel, date, profile, load, the
subject's variants with their add counts and measured shifts, every command), then one line
per run in measuring order: {"seq", "variant", "wall_s", "doc"}, where doc is the result
document as the agent made it.

usage: record.py [--out FILE] [--runs N] [--variant-runs M] [--profile NAME] [--samples N]
                 [--load none|compilers] [--load-jobs J] [--extra A,B,C]
                 [--calibration-runs K] [--chain N] [--agent PATH] [--cc CC] [--seed S]
                 [--host NAME]
Exit status: 0 recorded, 1 a run or a build failed (nothing written), 2 bad usage."""

import argparse
import datetime
import glob
import gzip
import hashlib
import json
import lzma
import os
import platform
import random
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
SUBJECT_SRC = os.path.join(HERE, "subject_chain.c")
FORMAT = "atomwatch.recording/1"
SUBJECT = "chain"
SUBJECT_KEY_PREFIX = "subject=%s op=op " % SUBJECT
TARGETS = (("plus2", 0.02), ("plus5", 0.05), ("plus10", 0.10))
CANDIDATE_ADDS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48)
PROJECT = "recording"
REF = "refs/heads/main"


class Failure(Exception):
    pass


def log(msg):
    sys.stderr.write("record: %s\n" % msg)
    sys.stderr.flush()


def positive(text):
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1, got %s" % text)
    return n


def extra_counts(text):
    try:
        counts = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("--extra takes three integers, e.g. 2,5,10")
    if len(counts) != len(TARGETS) or min(counts) < 1:
        raise argparse.ArgumentTypeError("--extra takes three integers >= 1, e.g. 2,5,10")
    return counts


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Record real runs of this machine for the detection bench.")
    ap.add_argument("--out", help="the recording (.jsonl.xz or .jsonl.gz; default "
                    "bench/detect/recordings/HOST-PROFILE-LOAD.jsonl.xz)")
    ap.add_argument("--runs", type=positive, default=60, help="runs of the base subject")
    ap.add_argument("--variant-runs", type=positive, default=20, help="runs of each variant")
    ap.add_argument("--profile", default="quick", help="matrix profile (default quick)")
    ap.add_argument("--samples", type=positive, help="batches per cell (default: the profile's)")
    ap.add_argument("--load", choices=("none", "compilers"), default="none",
                    help="background load while recording")
    ap.add_argument("--load-jobs", type=positive, default=2, help="compiler jobs (default 2)")
    ap.add_argument("--extra", type=extra_counts,
                    help="adds of plus2,plus5,plus10 (default: calibrated here)")
    ap.add_argument("--calibration-runs", type=positive, default=5,
                    help="rounds of the calibration builds (default 5)")
    ap.add_argument("--chain", type=positive, default=32, help="multiplies of the chain")
    ap.add_argument("--agent", default=os.path.join(TOP, "build", "native", "agents",
                                                    "atomwatch-agent"))
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--seed", type=int, default=1, help="seed of the run order")
    ap.add_argument("--host", help="host name in the documents (default: this host's)")
    args = ap.parse_args(argv)
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", args.profile):
        ap.error("bad profile name '%s'" % args.profile)
    if args.host is None:
        args.host = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname())[:64] or "host"
    elif not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", args.host):
        ap.error("bad host name '%s' ([A-Za-z0-9._-]{1,64})" % args.host)
    if args.out is None:
        args.out = os.path.join(HERE, "recordings",
                                "%s-%s-%s.jsonl.xz" % (args.host, args.profile, args.load))
    if not args.out.endswith((".jsonl.xz", ".jsonl.gz")):
        ap.error("--out must end in .jsonl.xz or .jsonl.gz, got '%s'" % args.out)
    if not os.access(args.agent, os.X_OK):
        ap.error("no agent binary at '%s' (build it: sh scripts/build.sh native)" % args.agent)
    return args


def first_line(argv):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    lines = (p.stdout or p.stderr).splitlines()
    return lines[0].strip() if lines else None


def build_command(args, adds, lib):
    return [args.cc, "-O2", "-shared", "-fPIC", "-I", os.path.join(TOP, "runner", "include"),
            "-DCHAIN=%d" % args.chain, "-DEXTRA=%d" % adds, "-o", lib, SUBJECT_SRC]


def printable(argv):
    """A command as text, with the repository's own paths relative to its top."""
    return " ".join(shlex.quote(os.path.relpath(a, TOP) if a.startswith(TOP + os.sep) else a)
                    for a in argv)


class Variant:
    def __init__(self, name, adds, target=None):
        self.name, self.adds, self.target = name, adds, target
        self.build = None
        self.config = None
        self.spool = None


class Recorder:
    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.port = self.dead_port()
        self.token = os.path.join(work, "agent.token")
        with open(self.token, "w") as f:
            f.write("recording-never-uploads\n")
        os.chmod(self.token, 0o600)
        self.seq = 0

    @staticmethod
    def dead_port():
        """A port nobody listens on: the agent's upload fails at once and the run stays in
        its spool."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def prepare(self, v, ops=None):
        d = os.path.join(self.work, v.name)
        os.makedirs(d)
        lib = os.path.join(d, "libchain.so")
        v.build = build_command(self.args, v.adds, lib)
        p = subprocess.run(v.build, capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise Failure("cannot build variant %s: %s\n%s" % (v.name, printable(v.build),
                                                                p.stderr.strip()))
        v.spool = os.path.join(d, "spool")
        v.config = os.path.join(d, "agent.yaml")
        matrix = "matrix:\n  profile: %s\n" % self.args.profile
        if self.args.samples:
            matrix += "  samples: %d\n" % self.args.samples
        if ops:
            matrix += "  ops: %s\n" % ops
        with open(v.config, "w") as f:
            f.write("collector:\n  url: http://127.0.0.1:%d\n  token_file: %s\n"
                    "  retries: 0\n  connect_timeout: 1s\n  timeout: 5s\n"
                    % (self.port, self.token))
            f.write("host:\n  name: %s\nspool:\n  dir: %s\n" % (self.args.host, v.spool))
            f.write(matrix)
            f.write("subjects:\n  %s:\n    library: %s\n" % (SUBJECT, lib))

    def agent_command(self, v, commit):
        return [self.args.agent, "run", "--config", v.config, "--project", PROJECT,
                "--commit", commit, "--ref", REF, "--subject", SUBJECT, "--quiet"]

    def run(self, v):
        """One agent run of variant v: (wall seconds, the result document)."""
        self.seq += 1
        commit = hashlib.sha1(("%d:%d:%s" % (self.args.seed, self.seq, v.name))
                              .encode()).hexdigest()
        env = {k: val for k, val in os.environ.items() if "proxy" not in k.lower()}
        t0 = time.monotonic()
        p = subprocess.run(self.agent_command(v, commit), capture_output=True, text=True,
                           timeout=3600, env=env)
        wall = time.monotonic() - t0
        if p.returncode != 3:
            raise Failure("agent run of %s exited %d (expected 3, left in the spool):\n%s"
                          % (v.name, p.returncode, p.stderr.strip()))
        docs = sorted(glob.glob(os.path.join(v.spool, "result-*.json")))
        if len(docs) != 1:
            raise Failure("expected one document in %s, found %d" % (v.spool, len(docs)))
        with open(docs[0]) as f:
            doc = json.load(f)
        os.unlink(docs[0])
        if doc.get("commit") != commit:
            raise Failure("the spooled document is not the run's (commit %s)"
                          % doc.get("commit"))
        subject_p50(doc)  # fails unless the subject cell was measured
        return wall, doc


def subject_cell(doc):
    for i, c in enumerate(doc["cells"]):
        if c["key"].startswith(SUBJECT_KEY_PREFIX):
            return i, c
    raise Failure("no subject cell in run %s" % doc.get("run_id"))


def subject_p50(doc):
    _, c = subject_cell(doc)
    if c["status"] != "ok" or c["p50"] is None:
        raise Failure("subject cell %s: %s (%s)" % (c["key"], c["status"], c.get("reason")))
    return c["p50"]


def subject_over_reference(doc):
    """The subject's p50 in steps of the reference kernel measured beside it, or None."""
    i, c = subject_cell(doc)
    ref = (doc.get("reference") or {}).get("values") or []
    return c["p50"] / ref[i] if i < len(ref) and ref[i] else None


def calibrate(rec, args):
    """The adds of plus2, plus5 and plus10, found by measuring: an add is one cycle on the
    chain's serial path, but what a cycle is against the whole op depends on the core. Every
    candidate count is built and measured beside base (only the subject and the `plain` cells,
    in rounds), and each target takes the count whose shift comes nearest. The shift compares
    each round in steps of the reference kernel measured beside the subject (the median of the
    rounds), which moves with the host's clock: an Intel VM switched between two clocks 2.8%
    apart from run to run, and the fastest of five rounds landed on either. Without a
    reference in every round it compares the fastest round of each: a round that lands in a
    slow regime of the host (whole runs 1.5x slower on some VMs) would otherwise move the
    figure by more than the shift itself."""
    base = Variant("calib-0", 0)
    cands = [Variant("calib-%d" % n, n) for n in CANDIDATE_ADDS]
    for v in [base] + cands:
        rec.prepare(v, ops="[plain]")
    p50 = {v.name: [] for v in [base] + cands}
    steps = {v.name: [] for v in [base] + cands}
    for _ in range(args.calibration_runs):
        for v in [base] + cands:
            doc = rec.run(v)[1]
            p50[v.name].append(subject_p50(doc))
            steps[v.name].append(subject_over_reference(doc))
    if all(x is not None for xs in steps.values() for x in xs):
        mb = statistics.median(steps[base.name])
        shift = {v.adds: statistics.median(steps[v.name]) / mb - 1 for v in cands}
        by = "median round in reference steps"
    else:
        mb = min(p50[base.name])
        shift = {v.adds: min(p50[v.name]) / mb - 1 for v in cands}
        by = "fastest round"
    counts, last = [], 0
    for _, target in TARGETS:
        left = [n for n in CANDIDATE_ADDS if n > last]
        if not left:
            raise Failure("calibration: no add count left for the %+.0f%% variant"
                          % (100 * target))
        n = min(left, key=lambda c: abs(shift[c] - target))
        counts.append(n)
        last = n
    log("calibration (%s): shift by adds: %s -> adds %s" % (
        by, ", ".join("%d %+.1f%%" % (n, 100 * shift[n]) for n in CANDIDATE_ADDS), counts))
    return counts, {"rounds": args.calibration_runs, "matrix_ops": ["plain"], "by": by,
                    "base_p50": p50[base.name],
                    "shift_by_adds": {str(n): shift[n] for n in CANDIDATE_ADDS}}


LOAD_SOURCE_FUNCS = 400


def write_load_source(path):
    """A self-contained C file that takes cc -O2 about a second: many small functions."""
    with open(path, "w") as f:
        f.write("/* generated by bench/detect/record.py: compiler load */\n")
        for i in range(LOAD_SOURCE_FUNCS):
            f.write("double f%d(const double *v, int n)\n{\n\tdouble s = %d;\n"
                    "\tfor (int i = 0; i < n; i++)\n\t\ts += v[i] * (i %% %d) - s / %d.0;\n"
                    "\treturn s;\n}\n" % (i, i, i % 7 + 2, i + 3))


class Load:
    """Background compiler jobs, each in a process group of its own that stop() ends."""

    def __init__(self, args, work):
        self.jobs = []
        self.args = args
        self.src = os.path.join(work, "load.c")
        self.command = None

    def start(self):
        if self.args.load == "none":
            return
        write_load_source(self.src)
        self.command = "sh -c 'while :; do %s -O2 -c load.c -o load-J.o; done'" % self.args.cc
        for j in range(self.args.load_jobs):
            obj = os.path.join(os.path.dirname(self.src), "load-%d.o" % j)
            loop = "while :; do %s -O2 -c %s -o %s || exit 1; done" % (
                shlex.quote(self.args.cc), shlex.quote(self.src), shlex.quote(obj))
            self.jobs.append(subprocess.Popen(["sh", "-c", loop], start_new_session=True,
                                              stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL))
        time.sleep(1.0)  # let the compilers get going
        for p in self.jobs:
            if p.poll() is not None:
                raise Failure("a compiler job of the load stopped (exit %d)" % p.returncode)

    def pids(self):
        return [p.pid for p in self.jobs]

    def stop(self):
        for p in self.jobs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)  # the job's own group: sh and its cc
        for p in self.jobs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()

    def describe(self):
        if self.args.load == "none":
            return {"kind": "none"}
        return {"kind": "compilers", "jobs": self.args.load_jobs,
                "command": self.command + " (one per job, in a loop, for the whole recording)",
                "source": "a generated C file of %d small functions" % LOAD_SOURCE_FUNCS,
                "pids": self.pids()}


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:3]]
    except OSError:
        return None


def git_commit():
    p = subprocess.run(["git", "-C", TOP, "rev-parse", "HEAD"], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def summarise(variants, runs):
    """Per variant: its runs, the subject's median p50, and its shift against base (raw, and
    in steps of the reference kernel)."""
    by = {v.name: [r for r in runs if r["variant"] == v.name] for v in variants}
    med = {n: statistics.median(subject_p50(r["doc"]) for r in rs) for n, rs in by.items()}
    rel = {}
    for n, rs in by.items():
        vals = [x for x in (subject_over_reference(r["doc"]) for r in rs) if x is not None]
        rel[n] = statistics.median(vals) if vals else None
    out = {}
    for v in variants:
        build = printable(v.build[:-2] + ["libchain-%s.so" % v.name, v.build[-1]])
        e = {"extra_adds": v.adds, "runs": len(by[v.name]), "build": build,
             "subject_p50_median": med[v.name]}
        if v.target is not None:
            e["target_shift"] = v.target
            e["measured_shift"] = med[v.name] / med["base"] - 1
            if rel[v.name] is not None and rel["base"]:
                e["measured_shift_vs_reference"] = rel[v.name] / rel["base"] - 1
        out[v.name] = e
    return out


def write_recording(path, header, runs):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp.%d" % os.getpid()
    opener = lzma.open if path.endswith(".xz") else gzip.open
    try:
        with opener(tmp, "wt", encoding="utf-8") as f:
            f.write(json.dumps(header, sort_keys=True) + "\n")
            for r in runs:
                f.write(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def record(args):
    work = tempfile.mkdtemp(prefix="aw-record-")
    load = Load(args, work)
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.monotonic()
    try:
        rec = Recorder(args, work)
        load_before = loadavg()
        load.start()
        calibration = None
        if args.extra:
            counts = args.extra
        else:
            counts, calibration = calibrate(rec, args)
        variants = [Variant("base", 0)] + [Variant(name, n, target) for (name, target), n
                                           in zip(TARGETS, counts)]
        for v in variants:
            rec.prepare(v)
        order = ["base"] * args.runs + [n for n, _ in TARGETS for _ in range(args.variant_runs)]
        random.Random(args.seed).shuffle(order)
        named = {v.name: v for v in variants}
        runs = []
        for i, name in enumerate(order):
            wall, doc = rec.run(named[name])
            runs.append({"seq": i, "variant": name, "wall_s": round(wall, 3), "doc": doc})
            log("run %d/%d: %s, subject %.3f ns, %.1f s" % (i + 1, len(order), name,
                                                            subject_p50(doc), wall))
        load_after = loadavg()
    finally:
        load.stop()
        shutil.rmtree(work, ignore_errors=True)
    finished = datetime.datetime.now(datetime.timezone.utc)
    first = runs[0]["doc"]
    summary = summarise(variants, runs)
    header = {
        "format": FORMAT,
        "host": args.host,
        "cpu_model": first["host"].get("cpu_model"),
        "cpu_brand": (first["host"].get("stable") or {}).get("brand"),
        "cpu_stable": first["host"].get("stable"),
        "arch": first["host"].get("arch"),
        "platform_hash": first["host"].get("platform_hash"),
        "cpus_online": os.cpu_count(),
        "kernel": platform.release(),
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": finished.isoformat(timespec="seconds"),
        "duration_s": round(time.monotonic() - t0, 1),
        "profile": args.profile,
        "samples": args.samples,
        "load": dict(load.describe(), loadavg_before=load_before, loadavg_after=load_after),
        "runs": len(runs),
        "seed": args.seed,
        "subject": {"name": SUBJECT, "source": os.path.relpath(SUBJECT_SRC, TOP),
                    "chain": args.chain, "cell": SUBJECT_KEY_PREFIX.strip() + " cpu=N",
                    "compiler": first_line([args.cc, "--version"]),
                    "variants": summary},
        "calibration": calibration,
        "atomwatch": {"agent": first_line([args.agent, "--version"]), "commit": git_commit()},
        "commands": {
            "recorder": printable([sys.argv[0]] + sys.argv[1:]),
            "agent": printable([args.agent, "run", "--config", "VARIANT/agent.yaml",
                                "--project", PROJECT, "--commit", "SHA1(seed:seq:variant)",
                                "--ref", REF, "--subject", SUBJECT, "--quiet"]),
            "build": printable(build_command(args, 0, "libchain.so")).replace(
                "-DEXTRA=0", "-DEXTRA=<extra_adds>"),
            "load": load.describe().get("command"),
        },
    }
    write_recording(args.out, header, runs)
    for name, e in summary.items():
        shift = ("" if "measured_shift" not in e else
                 ", shift %+.2f%% (target %+.0f%%; %+.2f%% in reference steps)"
                 % (100 * e["measured_shift"], 100 * e["target_shift"],
                    100 * (e.get("measured_shift_vs_reference") or float("nan"))))
        log("%-6s %2d adds, %3d runs, subject p50 median %.3f ns%s"
            % (name, e["extra_adds"], e["runs"], e["subject_p50_median"], shift))
    log("wrote %s (%d runs, %.0f KiB)" % (args.out, len(runs), os.path.getsize(args.out) / 1024))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        record(args)
    except Failure as e:
        log(str(e))
        return 1
    except KeyboardInterrupt:
        log("interrupted; nothing written")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

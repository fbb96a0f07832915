#!/usr/bin/python3
"""Records real runs of this machine for the detection bench (docs/detection.md, "Recordings").

Each run is `atomwatch-agent run` of a matrix profile plus a subject of one op per shape of real
code (bench/detect/subject_shapes.c: `overlap`, a locked add followed by arithmetic that the
next call does not wait for; `hash`, a lookup in a 4 MiB hash table; `branchy`, unpredictable
branches; `chain`, subject_chain.c's serial chain), exactly as an agent measures in production;
the collector is left unreachable on purpose, so every document stays in the agent's spool and
is taken from there. The subject is built in variants that differ by a real code change of
each shape's kind (more independent adds, more hash rounds, more work in each branch arm, more
dependent adds on the chain): `base`, and `plus2`, `plus5`, `plus10`, each op sized on this
machine to about +2%, +5% and +10% of its own (a short calibration measures candidate counts
here, unless --extra gives them). Base runs and variant runs are interleaved in a seeded random
order, so that both see the same disturbances. Optionally two compiler jobs (or --load-jobs) run
in the background throughout, started and stopped by this script.

The recording is one compressed JSON Lines file (.jsonl.xz or .jsonl.gz, by the name given):
line 1 a header saying how it was made (host, CPU model, kernel, date, profile, load, the
subject's shapes and variants with each shape's extra count and measured shift, every command),
then one line per run in measuring order: {"seq", "variant", "wall_s", "doc"}, where doc is the
result document as the agent made it. Format atomwatch.recording/2; /1 (the chain alone, one
extra count and one measured shift per variant) is what the older recordings hold.

usage: record.py [--out FILE] [--runs N] [--variant-runs M] [--profile NAME] [--samples N]
                 [--load none|compilers] [--load-jobs J] [--extra [SHAPE=]A,B,C]...
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
SUBJECT_SRC = os.path.join(HERE, "subject_shapes.c")
FORMAT = "atomwatch.recording/2"
SUBJECT = "shapes"
SHAPES = ("overlap", "hash", "branchy", "chain")
TARGETS = (("plus2", 0.02), ("plus5", 0.05), ("plus10", 0.10))
# The calibration's candidate extra counts, as many for every shape (candidate library i has
# each shape's i-th count). An add that the core overlaps with the next call costs nothing until
# the slack is used up (overlap, and branchy's arms, whose work nothing waits for); how much
# slack there is depends on the core (on this Zen 5 VM 16 adds cost overlap 11%), so their
# lists reach far; a hash step or an add on the chain costs a cycle or a few.
CANDIDATES = {
    "overlap": (1, 2, 3, 4, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 96, 128, 192),
    "hash": (1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48),
    "branchy": (1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256, 320),
    "chain": (1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48),
}
# what an extra count adds, per shape (the header says it)
EXTRA_MEANS = {
    "overlap": "independent adds dealt to its four streams in turn",
    "hash": "steps of its hash function, a multiply and an xorshift in turn",
    "branchy": "adds in every arm of its three branches",
    "chain": "dependent adds on its chain",
}
CALIBRATION_KERNEL = "mulchain-v1"
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
    """[SHAPE=]A,B,C: (shape or None for every shape, [A, B, C])."""
    shape, _, counts = text.rpartition("=")
    if shape and shape not in SHAPES:
        raise argparse.ArgumentTypeError("--extra: unknown shape '%s' (%s)"
                                         % (shape, ", ".join(SHAPES)))
    try:
        counts = [int(x) for x in counts.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("--extra takes three integers, e.g. 2,5,10 or "
                                         "hash=2,5,10")
    if len(counts) != len(TARGETS) or min(counts) < 1:
        raise argparse.ArgumentTypeError("--extra takes three integers >= 1, e.g. 2,5,10")
    return shape or None, counts


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
    ap.add_argument("--extra", type=extra_counts, action="append", default=[],
                    help="extra counts of plus2,plus5,plus10 for every shape, or with SHAPE= "
                    "for one (repeatable; default: calibrated here)")
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
    given = {}
    for shape, counts in args.extra:
        for sh in (shape,) if shape else SHAPES:
            given[sh] = counts
    args.extra = given
    return args


def first_line(argv):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    lines = (p.stdout or p.stderr).splitlines()
    return lines[0].strip() if lines else None


def build_command(args, extra, lib):
    """The subject built with extra[shape] for each shape."""
    return ([args.cc, "-O2", "-shared", "-fPIC", "-I", os.path.join(TOP, "runner", "include"),
             "-DCHAIN=%d" % args.chain] +
            ["-DEXTRA_%s=%d" % (sh.upper(), extra[sh]) for sh in SHAPES] +
            ["-o", lib, SUBJECT_SRC])


def printable(argv):
    """A command as text, with the repository's own paths relative to its top."""
    return " ".join(shlex.quote(os.path.relpath(a, TOP) if a.startswith(TOP + os.sep) else a)
                    for a in argv)


class Variant:
    def __init__(self, name, extra, target=None):
        self.name, self.extra, self.target = name, extra, target
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
        lib = os.path.join(d, "libshapes.so")
        v.build = build_command(self.args, v.extra, lib)
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
        for sh in SHAPES:
            subject_p50(doc, sh)  # fails unless every shape's cell was measured
        return wall, doc


def subject_cell(doc, shape):
    prefix = "subject=%s op=%s " % (SUBJECT, shape)
    for i, c in enumerate(doc["cells"]):
        if c["key"].startswith(prefix):
            return i, c
    raise Failure("no cell of shape %s in run %s" % (shape, doc.get("run_id")))


def subject_p50(doc, shape):
    _, c = subject_cell(doc, shape)
    if c["status"] != "ok" or c["p50"] is None:
        raise Failure("subject cell %s: %s (%s)" % (c["key"], c["status"], c.get("reason")))
    return c["p50"]


def reference_values(doc):
    """{kernel: values} of the document's reference series, older "reference" included."""
    series = doc.get("references") or ([doc["reference"]] if doc.get("reference") else [])
    return {s["kernel"]: s["values"] for s in series}


def subject_over_reference(doc, shape, kernel=CALIBRATION_KERNEL):
    """The shape's p50 in steps of the reference kernel measured beside it, or None."""
    i, c = subject_cell(doc, shape)
    ref = reference_values(doc).get(kernel) or []
    return c["p50"] / ref[i] if i < len(ref) and ref[i] else None


def calibrate(rec, args):
    """The extra counts of plus2, plus5 and plus10 per shape, found by measuring: what an add
    or a hash round costs against the whole op depends on the core, and an add that the core
    overlaps with the next call costs nothing until the slack is used up. Candidate library i
    has every shape's i-th candidate count (CANDIDATES); each is built and measured beside base
    (only the subject and the `plain` cells, in rounds), and each target takes, per shape, the
    count whose shift comes nearest, more for each larger target. The shift compares each
    round in steps of mulchain-v1 measured beside the cell (the median of the rounds), which
    moves with the host's clock: an Intel VM switched between two clocks 2.8% apart from run to
    run, and the fastest of five rounds landed on either. Without that reference in every
    round it compares the fastest round of each: a round that lands in a slow regime of the
    host (whole runs 1.5x slower on some VMs) would otherwise move the figure by more than the
    shift itself. Shapes given with --extra keep their counts."""
    n_cands = len(CANDIDATES[SHAPES[0]])
    base = Variant("calib-0", {sh: 0 for sh in SHAPES})
    cands = [Variant("calib-%d" % (i + 1), {sh: CANDIDATES[sh][i] for sh in SHAPES})
             for i in range(n_cands)]
    for v in [base] + cands:
        rec.prepare(v, ops="[plain]")
    p50 = {(v.name, sh): [] for v in [base] + cands for sh in SHAPES}
    steps = {(v.name, sh): [] for v in [base] + cands for sh in SHAPES}
    for _ in range(args.calibration_runs):
        for v in [base] + cands:
            doc = rec.run(v)[1]
            for sh in SHAPES:
                p50[v.name, sh].append(subject_p50(doc, sh))
                steps[v.name, sh].append(subject_over_reference(doc, sh))
    counts, shifts, how = {}, {}, {}
    for sh in SHAPES:
        if all(x is not None for v in [base] + cands for x in steps[v.name, sh]):
            mb = statistics.median(steps[base.name, sh])
            shift = [statistics.median(steps[v.name, sh]) / mb - 1 for v in cands]
            how[sh] = "median round in %s steps" % CALIBRATION_KERNEL
        else:
            mb = min(p50[base.name, sh])
            shift = [min(p50[v.name, sh]) / mb - 1 for v in cands]
            how[sh] = "fastest round"
        shifts[sh] = {str(CANDIDATES[sh][i]): shift[i] for i in range(n_cands)}
        if sh in args.extra:
            continue
        picked, last = [], 0
        for _, target in TARGETS:
            left = [i for i in range(n_cands) if CANDIDATES[sh][i] > last]
            if not left:
                raise Failure("calibration: no %s count left for the %+.0f%% variant"
                              % (sh, 100 * target))
            i = min(left, key=lambda c: abs(shift[c] - target))
            picked.append(CANDIDATES[sh][i])
            last = CANDIDATES[sh][i]
        counts[sh] = picked
        log("calibration of %s (%s): shift by extra count: %s -> %s" % (
            sh, how[sh], ", ".join("%d %+.1f%%" % (CANDIDATES[sh][i], 100 * shift[i])
                                   for i in range(n_cands)), picked))
    return counts, {"rounds": args.calibration_runs, "matrix_ops": ["plain"], "by": how,
                    "base_p50": {sh: p50[base.name, sh] for sh in SHAPES},
                    "shift_by_extra": shifts}


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
    """Per variant: its runs, and per shape its extra count, its cell's median p50 and its shift
    against base (raw, and in steps of each reference kernel measured beside the cell)."""
    by = {v.name: [r for r in runs if r["variant"] == v.name] for v in variants}
    kernels = sorted({k for r in runs for k in reference_values(r["doc"])})
    med, rel = {}, {}
    for n, rs in by.items():
        for sh in SHAPES:
            med[n, sh] = statistics.median(subject_p50(r["doc"], sh) for r in rs)
            for k in kernels:
                vals = [x for x in (subject_over_reference(r["doc"], sh, k) for r in rs)
                        if x is not None]
                rel[n, sh, k] = statistics.median(vals) if vals else None
    out = {}
    for v in variants:
        build = printable(v.build[:-2] + ["libshapes-%s.so" % v.name, v.build[-1]])
        e = {"extra": dict(v.extra), "runs": len(by[v.name]), "build": build,
             "subject_p50_median": {sh: med[v.name, sh] for sh in SHAPES}}
        if v.target is not None:
            e["target_shift"] = v.target
            e["measured_shift"] = {sh: med[v.name, sh] / med["base", sh] - 1 for sh in SHAPES}
            e["measured_shift_vs_reference"] = {
                sh: {k: rel[v.name, sh, k] / rel["base", sh, k] - 1 for k in kernels
                     if rel[v.name, sh, k] is not None and rel["base", sh, k]}
                for sh in SHAPES}
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
        counts = dict(args.extra)
        if any(sh not in counts for sh in SHAPES):
            calibrated, calibration = calibrate(rec, args)
            counts.update(calibrated)
        variants = [Variant("base", {sh: 0 for sh in SHAPES})] + [
            Variant(name, {sh: counts[sh][i] for sh in SHAPES}, target)
            for i, (name, target) in enumerate(TARGETS)]
        for v in variants:
            rec.prepare(v)
        order = ["base"] * args.runs + [n for n, _ in TARGETS for _ in range(args.variant_runs)]
        random.Random(args.seed).shuffle(order)
        named = {v.name: v for v in variants}
        runs = []
        for i, name in enumerate(order):
            wall, doc = rec.run(named[name])
            runs.append({"seq": i, "variant": name, "wall_s": round(wall, 3), "doc": doc})
            log("run %d/%d: %s, %s, %.1f s" % (
                i + 1, len(order), name,
                ", ".join("%s %.3f ns" % (sh, subject_p50(doc, sh)) for sh in SHAPES), wall))
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
                    "shapes": list(SHAPES), "extra_means": EXTRA_MEANS,
                    "chain": args.chain, "cell": "subject=%s op=SHAPE cpu=N" % SUBJECT,
                    "compiler": first_line([args.cc, "--version"]),
                    "variants": summary},
        "calibration": calibration,
        "atomwatch": {"agent": first_line([args.agent, "--version"]), "commit": git_commit()},
        "commands": {
            "recorder": printable([sys.argv[0]] + sys.argv[1:]),
            "agent": printable([args.agent, "run", "--config", "VARIANT/agent.yaml",
                                "--project", PROJECT, "--commit", "SHA1(seed:seq:variant)",
                                "--ref", REF, "--subject", SUBJECT, "--quiet"]),
            "build": printable(build_command(args, {sh: 0 for sh in SHAPES}, "libshapes.so"))
            .replace("=0 ", "=<extra> "),
            "load": load.describe().get("command"),
        },
    }
    write_recording(args.out, header, runs)
    for name, e in summary.items():
        for sh in SHAPES:
            shift = ("" if "measured_shift" not in e else
                     ", shift %+.2f%% (target %+.0f%%; %+.2f%% in %s steps)"
                     % (100 * e["measured_shift"][sh], 100 * e["target_shift"],
                        100 * e["measured_shift_vs_reference"][sh].get(CALIBRATION_KERNEL,
                                                                       float("nan")),
                        CALIBRATION_KERNEL))
            log("%-6s %-7s %3d extra, %3d runs, p50 median %.3f ns%s"
                % (name, sh, e["extra"][sh], e["runs"], e["subject_p50_median"][sh], shift))
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

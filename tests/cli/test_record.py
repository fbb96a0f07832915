#!/usr/bin/python3
"""bench/detect/record.py end to end, with tiny recordings: the agent really measures the quick
profile (few samples) plus the subject of every shape (overlap, hash, branchy, chain) in its
variants, each shape's counts calibrated here or given with --extra, optionally under two
compiler jobs that are gone afterwards; the compressed recording holds a header saying how it
was made (each shape's extra counts and measured shifts) and one valid result document per run,
each with the reference series. Bad usage exits 2 and a failing build exits 1, writing
nothing.

usage: test_record.py --record bench/detect/record.py --agent PATH --schema FILE"""
import argparse
import gzip
import json
import lzma
import os
import subprocess
import sys
import tempfile
import unittest

import jsonschema

ARGS = None
VARIANTS = ["base", "plus2", "plus5", "plus10"]
SHAPES = ["overlap", "hash", "branchy", "chain"]
KERNELS = ["mulchain-v1", "mulindep-v1", "atomicadd-v1", "memchase-v1", "memgather-v1"]


def record(tmp, *args, timeout=600):
    env = dict(os.environ, TMPDIR=tmp)
    return subprocess.run([sys.executable, ARGS.record, "--agent", ARGS.agent, "--samples", "20",
                           "--host", "rec-test"] + list(args),
                          capture_output=True, text=True, timeout=timeout, env=env)


def read(path):
    opener = lzma.open if path.endswith(".xz") else gzip.open
    with opener(path, "rt") as f:
        lines = [json.loads(line) for line in f]
    return lines[0], lines[1:]


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class Recording(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.tmp = os.path.join(self.dir.name, "tmp")
        os.mkdir(self.tmp)
        with open(ARGS.schema) as f:
            self.schema = jsonschema.Draft202012Validator(json.load(f))

    def tearDown(self):
        self.dir.cleanup()

    def check_runs(self, header, runs, counts):
        self.assertEqual(len(runs), header["runs"])
        self.assertEqual([r["seq"] for r in runs], list(range(len(runs))))
        self.assertEqual({v: sum(r["variant"] == v for r in runs) for v in VARIANTS}, counts)
        commits = set()
        for r in runs:
            doc = r["doc"]
            self.schema.validate(doc)
            self.assertEqual((doc["project"], doc["host"]["name"]), ("recording", "rec-test"))
            self.assertEqual(doc["matrix"]["profile"], header["profile"])
            commits.add(doc["commit"])
            self.assertEqual([r["kernel"] for r in doc["references"]], KERNELS)
            for ref in doc["references"]:
                self.assertEqual(len(ref["values"]), len(doc["cells"]))
            subject = [c for c in doc["cells"] if c.get("subject") == "shapes"]
            self.assertEqual(sorted(c["op"] for c in subject), sorted(SHAPES),
                             [c["key"] for c in doc["cells"]])
            for c in subject:
                self.assertEqual(c["status"], "ok", c)
                self.assertTrue(c["key"].startswith("subject=shapes op=%s cpu=" % c["op"]))
            self.assertGreater(r["wall_s"], 0)
            # the matrix ran too, not only the subject
            self.assertTrue(any(c["key"].startswith("op=plain ") for c in doc["cells"]))
        self.assertEqual(len(commits), len(runs), "one commit per run")
        self.assertEqual(os.listdir(self.tmp), [], "the work directory is removed")

    def test_calibrated_under_load(self):
        out = os.path.join(self.dir.name, "rec.jsonl.xz")
        p = record(self.tmp, "--runs", "2", "--variant-runs", "1", "--calibration-runs", "1",
                   "--load", "compilers", "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        header, runs = read(out)
        self.assertEqual(header["format"], "atomwatch.recording/2")
        self.assertEqual((header["host"], header["profile"], header["samples"]),
                         ("rec-test", "quick", 20))
        for k in ("cpu_model", "arch", "kernel", "started_at", "finished_at", "cpu_stable"):
            self.assertTrue(header[k], k)
        self.assertEqual(header["arch"], runs[0]["doc"]["host"]["arch"])
        load = header["load"]
        self.assertEqual((load["kind"], load["jobs"]), ("compilers", 2))
        self.assertIn(" -O2 -c load.c", load["command"])
        self.assertEqual(len(load["pids"]), 2)
        for pid in load["pids"]:
            self.assertFalse(alive(pid), "compiler job %d still running" % pid)
        subject = header["subject"]
        self.assertEqual((subject["name"], subject["shapes"]), ("shapes", SHAPES))
        self.assertEqual(sorted(subject["extra_means"]), sorted(SHAPES))
        variants = subject["variants"]
        self.assertEqual(sorted(variants), sorted(VARIANTS))
        for sh in SHAPES:
            extra = [variants[v]["extra"][sh] for v in VARIANTS]
            self.assertEqual(extra[0], 0)
            self.assertEqual(extra, sorted(set(extra)), "more for each larger target: %s" % sh)
            self.assertEqual(len(header["calibration"]["shift_by_extra"][sh]), 17)
            self.assertIn(sh, header["calibration"]["by"])
        for v in VARIANTS[1:]:
            for sh in SHAPES:
                self.assertIsInstance(variants[v]["measured_shift"][sh], float)
                self.assertIn("-DEXTRA_%s=%d " % (sh.upper(), variants[v]["extra"][sh]),
                              variants[v]["build"])
                self.assertEqual(sorted(variants[v]["measured_shift_vs_reference"][sh]),
                                 sorted(KERNELS))
            self.assertIsInstance(variants[v]["subject_p50_median"]["hash"], float)
        self.assertEqual([variants[v]["target_shift"] for v in VARIANTS[1:]], [0.02, 0.05, 0.1])
        for k in ("recorder", "agent", "build", "load"):
            self.assertTrue(header["commands"][k], k)
        self.check_runs(header, runs, {"base": 2, "plus2": 1, "plus5": 1, "plus10": 1})

    def test_given_counts_gzip(self):
        out = os.path.join(self.dir.name, "sub", "rec.jsonl.gz")
        p = record(self.tmp, "--runs", "1", "--variant-runs", "1", "--extra", "1,2,3",
                   "--extra", "overlap=4,8,16", "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        header, runs = read(out)
        self.assertIsNone(header["calibration"])
        self.assertEqual(header["load"]["kind"], "none")
        variants = header["subject"]["variants"]
        for sh in SHAPES:
            self.assertEqual([variants[v]["extra"][sh] for v in VARIANTS],
                             [0, 4, 8, 16] if sh == "overlap" else [0, 1, 2, 3])
        self.assertIn("-DEXTRA_OVERLAP=<extra> ", header["commands"]["build"])
        self.check_runs(header, runs, {"base": 1, "plus2": 1, "plus5": 1, "plus10": 1})

    def test_bad_usage_writes_nothing(self):
        out = os.path.join(self.dir.name, "rec.jsonl.xz")
        for args, needle in ((["--runs", "0"], "must be at least 1"),
                             (["--extra", "1,2"], "three integers"),
                             (["--extra", "colour=1,2,3"], "unknown shape 'colour'"),
                             (["--extra", "hash=1,x,3"], "three integers"),
                             (["--load", "games"], "invalid choice"),
                             (["--profile", "a b"], "bad profile name")):
            p = record(self.tmp, *args, "--out", out)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(needle, p.stderr)
        p = record(self.tmp, "--out", os.path.join(self.dir.name, "rec.json"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("must end in .jsonl.xz or .jsonl.gz", p.stderr)
        p = record(self.tmp, "--cc", "false", "--extra", "1,2,3", "--out", out)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("cannot build variant base", p.stderr)
        self.assertEqual(os.listdir(self.dir.name), ["tmp"])
        self.assertEqual(os.listdir(self.tmp), [])


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--record", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--schema", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()

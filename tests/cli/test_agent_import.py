#!/usr/bin/python3
"""atomwatch-agent import, end to end: every real percpu_bench paste of
tests/fixtures/import/samples/percpu_bench gives exactly the cells an independent reading of the
file gives (CPU, op, c, d, p50, p95, p99); the messy pastes of tests/fixtures/import (mail
quoting, indentation, elided blocks, decorations, interleaved errors, several machines) give the
cells they hold and count what they skip; refscale logs with and without timestamps give
statistics of their samples; every document validates against docs/result-schema.json; bad
usage exits 2."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import unittest

import jsonschema

ARGS = None
COMMIT = "0123456789abcdef0123456789abcdef01234567"

LABELS = {"LL/SC": "llsc", "LSE": "stadd", "LSE (stadd)": "stadd", "STADD": "stadd",
          "LDADD": "ldadd", "PRFM_KEEP+STADD": "prfm_keep_stadd",
          "PFRM_KEEP+STADD": "prfm_keep_stadd", "PRFM_STRM+STADD": "prfm_strm_stadd",
          "PFRM_STRM+STADD": "prfm_strm_stadd"}
CPU_RE = re.compile(r"^\s*CPU: (\d+) - Latency Percentiles:")
RESULT_RE = re.compile(
    r"^\s*(LL/SC|LSE \(stadd\)|LSE|STADD|LDADD|PRFM_KEEP\+STADD|PRFM_STRM\+STADD|"
    r"PFRM_KEEP\+STADD|PFRM_STRM\+STADD)\s*(?:\(c\s+(\d+), d\s+(\d+)\)|\(\s*(\d+)\))?\s*:"
    r"\s+p50: ([\d.]+) ns\s+p95: ([\d.]+) ns\s+p99: ([\d.]+) ns\s*$")


def reference(path):
    """The cells of a canonical percpu_bench file, read with regular expressions."""
    cells, cpu = [], None
    with open(path) as f:
        for line in f:
            m = CPU_RE.match(line)
            if m:
                cpu = int(m.group(1))
                continue
            m = RESULT_RE.match(line)
            if m:
                c = int(m.group(2) or m.group(4) or 0)
                d = int(m.group(3) or 0)
                cells.append((cpu, LABELS[m.group(1)], c or None, d, float(m.group(5)),
                              float(m.group(6)), float(m.group(7))))
    return cells


def agent(*args, stdin=None):
    return subprocess.run([ARGS.agent] + list(args), capture_output=True, text=True,
                          timeout=60, input=stdin)


def import_file(path, fmt="percpu-bench", *extra):
    p = agent("import", fmt, path, "--host", "grace-1", "--project", "linux", "--commit",
              COMMIT, *extra)
    if p.returncode != 0:
        raise AssertionError("import of %s failed (%d): %s" % (path, p.returncode, p.stderr))
    doc = json.loads(p.stdout)
    return (doc if isinstance(doc, list) else [doc]), p.stderr


def as_tuples(doc):
    return [(c["cpu"], c["op"], c["c"], c["d"], c["p50"], c["p95"], c["p99"])
            for c in doc["cells"]]


def validate(test, doc):
    with open(ARGS.schema) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(
        doc)
    test.assertEqual(doc["trigger"], "import")
    test.assertEqual(doc["commit"], COMMIT)
    test.assertEqual(len({c["key"] for c in doc["cells"]}), len(doc["cells"]))
    for c in doc["cells"]:
        test.assertIsNone(c["contender_cpu"])
        test.assertEqual(c["status"], "ok")


def cell(doc, key):
    for c in doc["cells"]:
        if c["key"] == key:
            return c
    raise AssertionError("no cell '%s' in %s" % (key, [c["key"] for c in doc["cells"]]))


class Samples(unittest.TestCase):
    """The real pastes kept in tests/fixtures/import/samples/percpu_bench (its README says where
    each came from). A missing one is a failure: the project ships them."""

    def sample(self, name):
        path = os.path.join(ARGS.samples, name)
        self.assertTrue(os.path.isfile(path), "no sample %s" % path)
        return path

    def check_against_reference(self, name, count, skipped):
        path = self.sample(name)
        docs, err = import_file(path)
        self.assertEqual(len(docs), 1)
        doc = docs[0]
        validate(self, doc)
        want = reference(path)
        self.assertEqual(len(want), count)
        self.assertEqual(as_tuples(doc), want)
        self.assertEqual(doc["meta"]["skipped_lines"], skipped)
        self.assertIn("%d skipped" % skipped, err)
        self.assertIn("%d cells" % count, err)
        self.assertEqual(doc["host"], {"name": "grace-1", "arch": "aarch64",
                                       "cpu_model": "unknown", "labels": {}})
        self.assertEqual(doc["matrix"]["name"], "percpu_bench")
        self.assertEqual(doc["matrix"]["version"], 1)
        self.assertRegex(doc["matrix"]["hash"], "^[0-9a-f]{64}$")
        for c in doc["cells"]:
            self.assertEqual(c["n"], 100)
            self.assertIsNone(c["min"])
            self.assertIsNone(c["max"])
            self.assertIsNone(c["mean"])
        return doc

    def test_breno_2variant(self):
        doc = self.check_against_reference("breno-2variant-neoverse-v2.txt", 6, 1)
        self.assertEqual([c["key"] for c in doc["cells"]],
                         ["op=llsc cpu=47", "op=stadd cpu=47", "op=llsc cpu=48",
                          "op=stadd cpu=48", "op=llsc cpu=49", "op=stadd cpu=49"])
        c = cell(doc, "op=stadd cpu=48")
        self.assertEqual((c["p50"], c["p95"], c["p99"]), (4.02, 45.55, 54.93))
        self.assertEqual(doc["meta"]["formats"], ["2-variant"])

    def test_breno_5variant(self):
        doc = self.check_against_reference("breno-5variant-neoverse-v2.txt", 20, 1)
        self.assertEqual((cell(doc, "op=stadd cpu=1")["p99"], cell(doc, "op=ldadd cpu=3")["p99"]),
                         (137.12, 7.28))
        self.assertEqual(cell(doc, "op=prfm_strm_stadd cpu=1")["p95"], 8.75)
        self.assertEqual(cell(doc, "op=stadd cpu=2")["p50"], 63.30)
        self.assertEqual({c["cpu"] for c in doc["cells"]}, {0, 1, 2, 3})
        self.assertEqual(doc["meta"]["formats"], ["5-variant"])

    def test_palmer_contention_duty(self):
        doc = self.check_against_reference("palmer-contention-duty.txt", 43, 3)
        c = cell(doc, "op=llsc cpu=0 c=1000000 d=10")
        self.assertEqual((c["c"], c["d"], c["p50"], c["p95"], c["p99"]),
                         (1000000, 10, 17.57, 19.16, 19.47))
        c = cell(doc, "op=stadd cpu=0 d=300")  # c 0: no contender
        self.assertIsNone(c["c"])
        self.assertEqual(c["p50"], 98.96)
        c = cell(doc, "op=ldadd cpu=0 c=1 d=100")
        self.assertEqual(c["p99"], 72.38)
        self.assertEqual(cell(doc, "op=prfm_keep_stadd cpu=0 c=10")["p50"], 126.02)
        self.assertEqual(cell(doc, "op=prfm_strm_stadd cpu=0 c=1000000 d=200")["p99"], 92.46)
        self.assertEqual(sum(1 for c in doc["cells"] if c["op"] == "llsc"), 10)
        self.assertEqual(doc["meta"]["formats"], ["contention-duty"])


class MessyPastes(unittest.TestCase):
    """What people really paste: tests/fixtures/import."""

    def fixture(self, name):
        return os.path.join(ARGS.fixtures, name)

    def test_mail_quoted(self):
        docs, err = import_file(self.fixture("mail-quoted-5variant.txt"))
        self.assertEqual(len(docs), 1)
        doc = docs[0]
        validate(self, doc)
        self.assertEqual(len(doc["cells"]), 10)
        self.assertEqual(doc["meta"]["skipped_lines"], 5)
        c = cell(doc, "op=stadd cpu=1")  # ">>"-quoted, values >= 1000 unpadded
        self.assertEqual((c["p50"], c["p95"], c["p99"]), (103.81, 1127.60, 1537.12))
        self.assertEqual(cell(doc, "op=llsc cpu=0")["p50"], 5.73)
        self.assertEqual(cell(doc, "op=prfm_strm_stadd cpu=1")["p99"], 11.10)

    def test_indented_elided_decorated(self):
        docs, err = import_file(self.fixture("indented-elided-decorated.txt"))
        doc = docs[0]
        validate(self, doc)
        self.assertEqual([c["key"] for c in doc["cells"]],
                         ["op=llsc cpu=0", "op=stadd cpu=0", "op=llsc cpu=47",
                          "op=stadd cpu=47", "op=llsc cpu=71", "op=stadd cpu=71"])
        self.assertEqual(cell(doc, "op=llsc cpu=0")["p50"], 5.69)  # "~5.69ns"
        c = cell(doc, "op=stadd cpu=0")  # "**45.53** ns", "*54.06*"
        self.assertEqual((c["p50"], c["p95"], c["p99"]), (45.53, 54.06, 55.18))
        self.assertEqual(cell(doc, "op=stadd cpu=47")["p95"], 45.55)  # "`45.55`"
        self.assertEqual(cell(doc, "op=stadd cpu=71")["p95"], 50.32)  # tabs
        self.assertEqual(doc["meta"]["skipped_lines"], 3)  # prose and two elisions
        self.assertEqual((doc["meta"]["iterations"], doc["meta"]["detected_cpus"]), (100, 72))
        self.assertIn("3 skipped", err)

    def test_interleaved_errors_and_old_format(self):
        docs, err = import_file(self.fixture("interleaved-errors.txt"))
        doc = docs[0]
        validate(self, doc)
        self.assertEqual(len(doc["cells"]), 10)
        self.assertEqual(doc["meta"]["skipped_lines"], 7)
        self.assertEqual(cell(doc, "op=stadd cpu=2 c=10 d=300")["p99"], 121.68)
        self.assertEqual(cell(doc, "op=prfm_keep_stadd cpu=2 c=1000000 d=200")["p50"], 89.62)
        # the line whose p95 is an error message is not half-read
        self.assertFalse(any(c["key"] == "op=ldadd cpu=2 c=10" for c in doc["cells"]))
        # the older "(%16ld)" format: contention only
        self.assertIsNone(cell(doc, "op=stadd cpu=3")["c"])
        self.assertEqual(cell(doc, "op=stadd cpu=3 c=10")["p50"], 115.33)
        c = cell(doc, "op=llsc cpu=3 c=100")
        self.assertEqual((c["d"], c["p50"], c["p99"]), (0, 1164.16, 1580.92))
        self.assertEqual(cell(doc, "op=prfm_strm_stadd cpu=3 c=1000")["p95"], 23.75)
        self.assertEqual(doc["meta"]["formats"], ["contention-duty", "contention"])

    def test_two_machines(self):
        docs, err = import_file(self.fixture("two-machines.txt"))
        self.assertEqual(len(docs), 3)  # two banners, then CPU 0 again
        for doc in docs:
            validate(self, doc)
        self.assertEqual([len(d["cells"]) for d in docs], [4, 4, 1])
        self.assertEqual(cell(docs[0], "op=stadd cpu=0")["p99"], 27.70)
        self.assertEqual(cell(docs[1], "op=llsc cpu=1")["p50"], 7.31)
        self.assertEqual(cell(docs[2], "op=llsc cpu=0")["p50"], 7.32)
        self.assertEqual([d["meta"]["part"] for d in docs], [1, 2, 3])
        self.assertEqual(len({d["run_id"] for d in docs}), 3)
        self.assertIn("3 documents", err)


def stats_of(values):
    v = sorted(values)
    n = len(v)

    def q(p):  # type 7, as common/stats.c
        h = (n - 1) * p
        lo = int(h)
        return v[lo] + (h - lo) * (v[min(lo + 1, n - 1)] - v[lo])
    return {"n": n, "min": v[0], "max": v[-1], "p50": q(0.5), "p95": q(0.95), "p99": q(0.99),
            "mean": statistics.fmean(v)}


def refscale_samples(path):
    """type -> list of sample lists, read with regular expressions."""
    out, cur, table = {}, None, False
    with open(path) as f:
        for line in f:
            line = re.sub(r"^[> ]*(\[\s*\d+\.\d+\]\s*)?", "", line.rstrip("\n"))
            m = re.search(r"([\w-]+)-ref-scale: (--- Start of test|END OF TEST)", line)
            if m:
                if m.group(2).startswith("---"):
                    cur = []
                    out.setdefault(m.group(1), []).append(cur)
                table = False
                continue
            if line.startswith("Runs\tTime(ns)"):
                table = True
                continue
            m = re.match(r"^(\d+)\t(\d+\.\d+)$", line)
            if table and m:
                cur.append(float(m.group(2)))
    return out


class Refscale(unittest.TestCase):
    def fixture(self, name):
        return os.path.join(ARGS.fixtures, name)

    def check_log(self, name, skipped):
        path = self.fixture(name)
        docs, err = import_file(path, "refscale", "--arch", "aarch64", "--cpu-model",
                                "Neoverse-V2", "--label", "lab=b7")
        self.assertEqual(len(docs), 1)
        doc = docs[0]
        validate(self, doc)
        want = refscale_samples(path)
        self.assertEqual([c["key"] for c in doc["cells"]],
                         ["kernel=srcu-fast", "kernel=srcu", "kernel=rcu"])
        self.assertEqual([len(want[k][0]) for k in ("srcu-fast", "srcu", "rcu")], [30, 5, 5])
        for c in doc["cells"]:
            s = stats_of(want[c["kernel"]][0])
            self.assertEqual(c["op"], "refscale")
            self.assertIsNone(c["cpu"])
            for k in ("n", "min", "max", "p50", "p95", "p99"):
                self.assertAlmostEqual(c[k], s[k], places=9, msg="%s %s" % (c["key"], k))
            self.assertAlmostEqual(c["mean"], s["mean"], places=9)
            self.assertLessEqual(c["ci_lo"], c["p50"])
            self.assertGreaterEqual(c["ci_hi"], c["p50"])
        self.assertEqual(cell(doc, "kernel=srcu-fast")["batch"], 10000)
        self.assertEqual(doc["host"]["cpu_model"], "Neoverse-V2")
        self.assertEqual(doc["host"]["labels"], {"lab": "b7"})
        self.assertEqual(doc["matrix"]["name"], "refscale")
        self.assertEqual(doc["meta"]["skipped_lines"], skipped)
        return doc

    def test_with_timestamps(self):
        self.check_log("refscale-dmesg.log", 4)

    def test_without_timestamps_mail_quoted(self):
        self.check_log("refscale-plain.log", 6)

    def test_two_runs(self):
        docs, _ = import_file(self.fixture("refscale-two-runs.log"), "refscale")
        self.assertEqual(len(docs), 2)
        self.assertEqual([d["cells"][0]["p50"] for d in docs], [21.0, 26.0])
        self.assertEqual(docs[0]["host"]["arch"], "unknown")


class Usage(unittest.TestCase):
    def test_out_file_and_stdin(self):
        with open(os.path.join(ARGS.fixtures, "two-machines.txt")) as f:
            text = f.read()
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "docs.json")
            p = agent("import", "percpu-bench", "-", "--host", "h", "--project", "p",
                      "--commit", COMMIT, "--ref", "refs/heads/x", "--out", out, stdin=text)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout, "")
            with open(out) as f:
                docs = json.load(f)
            self.assertEqual(len(docs), 3)
            self.assertEqual(docs[0]["ref"], "refs/heads/x")
            self.assertEqual(os.listdir(d), ["docs.json"])  # no temp file left

    def test_bad_usage(self):
        sample = os.path.join(ARGS.fixtures, "two-machines.txt")
        for args in (["import"], ["import", "percpu-bench", sample],
                     ["import", "nosuch", sample, "--host", "h", "--project", "p", "--commit",
                      COMMIT],
                     ["import", "percpu-bench", sample, "--host", "bad host", "--project", "p",
                      "--commit", COMMIT],
                     ["import", "percpu-bench", sample, "--host", "h", "--project", "p",
                      "--commit", "xyz"],
                     ["import", "percpu-bench", sample, "--host", "h", "--project", "p",
                      "--commit", COMMIT, "--subject", "x"],
                     ["import", "percpu-bench", sample, "--host", "h", "--project", "p",
                      "--commit", COMMIT, "--upload", "--config", "/nonexistent.yaml"],
                     ["frobnicate"], []):
            p = agent(*args)
            self.assertEqual(p.returncode, 2, "%s: %s" % (args, p.stderr))
            self.assertEqual(p.stdout, "")

    def test_no_results_and_missing_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
            f.write("just prose\nnothing to see\n")
            f.flush()
            p = agent("import", "percpu-bench", f.name, "--host", "h", "--project", "p",
                      "--commit", COMMIT)
            self.assertEqual(p.returncode, 1)
            self.assertIn("no percpu_bench results", p.stderr)
            self.assertIn("2 skipped", p.stderr)
        p = agent("import", "refscale", "/nonexistent/log", "--host", "h", "--project", "p",
                  "--commit", COMMIT)
        self.assertEqual(p.returncode, 1)
        self.assertIn("/nonexistent/log", p.stderr)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--samples", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""atomwatch-run end to end: the quick profile's JSON validates against docs/result-schema.json
and holds every op of this architecture and the reference kernels beside every measured cell
(none with --no-reference); table and CSV forms; --list; every bad input exits 2
with a one-line error and writes nothing; SIGTERM stops between cells without output. Under
qemu without LSE the LSE cells are skipped with the reason and nothing crashes."""
import argparse
import csv
import io
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import jsonschema

ARGS = None

OPS = {
    "x86_64": ["plain", "lock_inc", "lock_xadd", "cas", "xchg", "prefetchw_lock_inc", "cmpxchg16b",
               "c11_relaxed", "c11_seqcst", "c11_cas"],
    "aarch64": ["plain", "llsc", "stadd", "ldadd", "ldadda", "ldaddl", "ldaddal", "prfm_keep_stadd",
                "prfm_strm_stadd", "cas", "icas", "swp", "casp", "ldxp_stxp", "c11_relaxed",
                "c11_seqcst", "c11_cas"],
}
LSE_OPS = {"stadd", "ldadd", "ldadda", "ldaddl", "ldaddal", "prfm_keep_stadd", "prfm_strm_stadd",
           "cas", "icas", "swp", "casp"}


def cmd(*args):
    return shlex.split(ARGS.emulator) + [ARGS.run] + list(args)


def run(*args, timeout=300):
    return subprocess.run(cmd(*args), capture_output=True, text=True, timeout=timeout)


class QuickProfile(unittest.TestCase):
    doc = None

    @classmethod
    def setUpClass(cls):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "q.json")
            p = run("--profile", "quick", "--format", "json", "--out", out, "--project", "demo",
                    "--commit", "0123abc", "--ref", "main", "--host", "cli-test", "--label",
                    "rack=b7")
            if p.returncode != 0:
                raise AssertionError("quick run failed (%d): %s" % (p.returncode, p.stderr))
            with open(out) as f:
                cls.doc = json.load(f)
            cls.stderr = p.stderr

    def test_validates_against_schema(self):
        with open(ARGS.schema) as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator(
            schema, format_checker=jsonschema.FormatChecker()).validate(self.doc)

    def test_identity_and_host(self):
        d = self.doc
        self.assertEqual(d["schema"], "atomwatch.result/1")
        self.assertEqual((d["project"], d["commit"], d["ref"]), ("demo", "0123abc", "main"))
        self.assertEqual(d["host"]["name"], "cli-test")
        self.assertEqual(d["host"]["labels"], {"rack": "b7"})
        self.assertEqual(d["host"]["arch"], ARGS.arch)
        self.assertEqual(d["matrix"]["profile"], "quick")
        self.assertRegex(d["host"]["platform_hash"], "^[0-9a-f]{16}$")
        self.assertRegex(d["matrix"]["hash"], "^[0-9a-f]{64}$")

    def test_every_op_of_this_arch(self):
        ops = {c["op"] for c in self.doc["cells"] if c["reader"] is None}
        for op in OPS[ARGS.arch]:
            self.assertIn(op, ops)
        for c in self.doc["cells"]:
            if c["reader"] is None and "contender" not in c["key"] and c["d"] == 0:
                self.assertEqual(c["key"], "op=%s cpu=%d" % (c["op"], c["cpu"]))

    def test_cells_are_consistent(self):
        lse = self.doc["host"]["stable"]["lse"]
        expect = os.environ.get("AW_EXPECT_LSE")
        if expect:
            self.assertEqual(lse, expect == "1")
        for c in self.doc["cells"]:
            if c["status"] == "ok":
                self.assertGreaterEqual(c["n"], 100)
                self.assertLessEqual(c["min"], c["p50"])
                self.assertLessEqual(c["p50"], c["p95"])
                self.assertLessEqual(c["p95"], c["p99"])
                self.assertLessEqual(c["p99"], c["max"])
                self.assertLessEqual(c["ci_lo"], c["p50"])
                self.assertGreaterEqual(c["ci_hi"], c["p50"])
                self.assertGreaterEqual(c["baseline_ns"], 0)
                if c["below_resolution"]:
                    self.assertEqual(c["p50"], 0)
            elif c["status"] == "skipped":
                self.assertTrue(c["reason"])
            else:
                self.fail("cell %s failed: %s" % (c["key"], c["reason"]))
            if c["op"] in LSE_OPS and ARGS.arch == "aarch64":
                if lse:
                    self.assertEqual(c["status"], "ok", c["key"])
                else:
                    self.assertEqual(c["status"], "skipped", c["key"])
                    self.assertIn("LSE", c["reason"])

    def test_atomic_costs_more_than_plain(self):
        # Not a timing assertion on a noisy machine: a locked RMW is never cheaper than nothing.
        if ARGS.emulator:
            self.skipTest("timings under an emulator mean nothing")
        cells = {c["key"]: c for c in self.doc["cells"]}
        cpu = min(c["cpu"] for c in self.doc["cells"])
        atomic = "lock_xadd" if ARGS.arch == "x86_64" else "llsc"
        self.assertGreater(cells["op=%s cpu=%d" % (atomic, cpu)]["p50"], 0)

    def test_reference_beside_every_cell(self):
        self.assertNotIn("reference", self.doc)
        refs = self.doc["references"]
        self.assertEqual([(r["kernel"], r["unit"]) for r in refs],
                         [("mulchain-v1", "ns"), ("mulindep-v1", "ns"), ("atomicadd-v1", "ns"),
                          ("memchase-v1", "ns"), ("memgather-v1", "ns")])
        for ref in refs:
            self.assertEqual(len(ref["values"]), len(self.doc["cells"]))
            for c, v in zip(self.doc["cells"], ref["values"]):
                if c["status"] == "ok":
                    self.assertGreater(v, 0, (ref["kernel"], c["key"]))
                else:
                    self.assertIsNone(v, (ref["kernel"], c["key"]))

    def test_progress_lines_when_not_a_tty(self):
        self.assertIn("measuring ops", self.stderr)


class Formats(unittest.TestCase):
    def test_table_and_csv(self):
        p = run("--profile", "quick", "--ops", "c11_relaxed", "--samples", "20", "--quiet")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("CPU: ", p.stdout)
        self.assertIn("Latency Percentiles", p.stdout)
        self.assertIn("op=c11_relaxed", p.stdout)
        self.assertIn("reference mulchain-v1 beside ", p.stdout)
        self.assertEqual(p.stderr, "")
        p = run("--profile", "quick", "--ops", "c11_relaxed", "--samples", "20", "--quiet",
                "--format", "csv")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        self.assertTrue(rows)
        self.assertIn("op=c11_relaxed cpu=0", [r["key"] for r in rows])
        for r in rows:
            self.assertIn(r["status"], ("ok", "skipped"))

    def test_no_reference(self):
        args = ("--profile", "quick", "--ops", "c11_relaxed", "--samples", "20", "--quiet",
                "--format", "json")
        p = run(*args, "--no-reference")
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertNotIn("reference", doc)
        self.assertNotIn("references", doc)
        self.assertTrue(doc["cells"])
        p = run(*args)
        self.assertEqual(p.returncode, 0, p.stderr)
        for ref in json.loads(p.stdout)["references"]:
            self.assertEqual(len(ref["values"]), len(doc["cells"]))

    def test_list(self):
        p = run("--list", "--profile", "default")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertTrue(any(l.startswith("ops ") for l in lines))
        self.assertTrue(any(l.startswith("readers ") for l in lines))
        self.assertTrue(any(l.startswith("contention ") for l in lines))
        for l in lines:
            self.assertTrue("supported" in l or "skipped: " in l, l)

    def test_help_and_version(self):
        p = run("--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("--profile", p.stdout)
        self.assertIn("--no-reference", p.stdout)
        p = run("--version")
        self.assertEqual(p.returncode, 0)
        self.assertRegex(p.stdout, r"^atomwatch-run \d+\.\d+\.\d+")


class BadInput(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.dir.name, "out.json")
        with open(self.out, "w") as f:
            f.write("previous\n")

    def tearDown(self):
        self.dir.cleanup()

    def expect_usage_error(self, args, needle):
        p = run(*args, "--out", self.out, "--quiet")
        self.assertEqual(p.returncode, 2, "%s: %s" % (args, p.stderr))
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn(needle, lines[0])
        with open(self.out) as f:
            self.assertEqual(f.read(), "previous\n", "output touched by %s" % (args,))
        left = [f for f in os.listdir(self.dir.name) if f.startswith("out.json")]
        self.assertEqual(left, ["out.json"], "temp files left behind")

    def test_unknown_option(self):
        self.expect_usage_error(["--bogus"], "unknown option '--bogus'")

    def test_bad_cpu_list(self):
        self.expect_usage_error(["--cpus", "1-0"], "bad CPU list '1-0'")
        self.expect_usage_error(["--cpus", "x"], "bad CPU list 'x'")

    def test_cpu_not_online(self):
        self.expect_usage_error(["--cpus", "4000"], "CPU 4000 is not online")

    def test_unknown_op(self):
        self.expect_usage_error(["--ops", "stad"], "unknown op 'stad'")
        other = "lock_xadd" if ARGS.arch == "aarch64" else "ldadd"
        self.expect_usage_error(["--ops", other], "does not exist on %s" % ARGS.arch)

    def test_bad_matrix(self):
        bad = os.path.join(self.dir.name, "m.yaml")
        with open(bad, "w") as f:
            f.write("name: m\nversion: 1\nprofiles:\n  default:\n    sampels: 3\n")
        self.expect_usage_error(["--matrix", bad], "m.yaml:5:5: unknown key 'sampels'")
        os.unlink(bad)
        self.expect_usage_error(["--matrix", bad], "cannot open '%s'" % bad)

    def test_bad_values(self):
        self.expect_usage_error(["--samples", "0"], "bad --samples '0'")
        self.expect_usage_error(["--format", "xml"], "unknown format 'xml'")
        self.expect_usage_error(["--profile", "fast"], "unknown profile 'fast'")
        self.expect_usage_error(["--commit", "zzz"], "bad commit 'zzz'")
        self.expect_usage_error(["--host", "a b"], "bad host name 'a b'")

    def test_unwritable_out(self):
        p = run("--out", "/nonexistent/dir/out.json", "--quiet")
        self.assertEqual(p.returncode, 2)
        self.assertIn("cannot write '/nonexistent/dir/out.json'", p.stderr)
        self.assertFalse(os.path.exists("/nonexistent/dir"))


class Interrupt(unittest.TestCase):
    def test_sigterm_stops_without_output(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "o.json")
            p = subprocess.Popen(cmd("--profile", "full", "--format", "json", "--out", out,
                                     "--quiet"), stderr=subprocess.PIPE, text=True)
            time.sleep(1.0)
            p.send_signal(signal.SIGTERM)
            _, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 1, err)
            self.assertIn("interrupted", err)
            self.assertEqual(os.listdir(d), [])


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--arch", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("--emulator", default="")
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()

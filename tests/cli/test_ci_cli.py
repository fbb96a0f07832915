#!/usr/bin/python3
"""atomwatch-ci as a process against a fake collector (a tiny HTTP server in this process that
serves the recorded gate replies of tests/fixtures/gate and records every request): the exit
status of each reply (0 pass, 1 regression, 2 incomplete, 3 infrastructure), the JUnit and
Markdown files (well-formed XML even for hostile names), GitHub annotations and the job summary,
retries of 5xx, a collector that is down, bad JSON, the token sent from the environment or a
file (never taken from the command line), trigger's job body, and wait's polling: a host that
reports late, and one that never does (exit 2 naming it, without a busy loop)."""
import argparse
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import xml.etree.ElementTree as ET

ARGS = None
SHA = "b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f80"


class Fake:
    """What the fake collector answers, and what it was asked."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.requests = []          # (method, path, headers, body)
        self.gate = ("fail.json", 200)
        self.gate_fail_first = 0     # answer 503 this many times first
        self.reported = {}           # host -> polls before it reports (0: at once)
        self.runs_status = 200
        self.job_status = 201
        self.lock = threading.Lock()


FAKE = Fake()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, body, ctype="application/json"):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def record(self, body=b""):
        with FAKE.lock:
            FAKE.requests.append((self.command, self.path, dict(self.headers), body))

    def do_GET(self):
        self.record()
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        if url.path in ("/api/v1/gate", "/api/v1/compare"):
            for glob in q.get("cells", []):
                if glob.startswith("nomatch"):
                    return self.reply(400, json.dumps({"error": {
                        "code": "no_match", "field": "cells",
                        "message": "the 'cells' glob '%s' matches no cell of commit %s on "
                                   "any host" % (glob, SHA)}}))
            with FAKE.lock:
                if FAKE.gate_fail_first:
                    FAKE.gate_fail_first -= 1
                    return self.reply(503, '{"error":{"code":"busy","message":"busy",'
                                           '"field":""}}')
            name, status = FAKE.gate
            if name.endswith(".json"):
                with open(os.path.join(ARGS.fixtures, name), "rb") as f:
                    return self.reply(status, f.read())
            return self.reply(status, name, "text/html")
        if url.path == "/api/v1/runs":
            if FAKE.runs_status != 200:
                return self.reply(FAKE.runs_status, '{"error":{"code":"invalid","message":'
                                                    '"bad host","field":"host"}}')
            host = q.get("host", [""])[0]
            with FAKE.lock:
                left = FAKE.reported.get(host)
                if left is not None and left > 0:
                    FAKE.reported[host] = left - 1
            runs = [{"run_id": "r", "host": host}] if left == 0 else []
            return self.reply(200, json.dumps({"runs": runs, "next_cursor": None}))
        self.reply(404, '{"error":{"code":"not_found","message":"no such path","field":""}}')

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.record(body)
        if self.path == "/api/v1/jobs":
            if FAKE.job_status == 201:
                return self.reply(201, json.dumps({"job": {"id": 42, "hosts": []}}))
            return self.reply(FAKE.job_status, json.dumps({"error": {
                "code": "invalid", "message": "'ref' is not a ref", "field": "ref"}}))
        self.reply(404, "{}")


def start_server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def ci(*args, env=None, timeout=60):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("ATOMWATCH_", "GITHUB_")) and "proxy" not in k.lower()}
    e.update(env or {})
    return subprocess.run([ARGS.ci] + list(args), capture_output=True, text=True,
                          timeout=timeout, env=e)


class CiCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = start_server()
        cls.url = "http://127.0.0.1:%d" % cls.srv.server_address[1]
        cls.dir = tempfile.mkdtemp(prefix="aw-ci-cli-")

    @classmethod
    def tearDownClass(cls):
        cls.srv.shutdown()
        subprocess.run(["rm", "-rf", cls.dir])

    def setUp(self):
        FAKE.reset()

    def gate(self, *extra, env=None, hosts="x86-ci"):
        args = ["gate", "--collector", self.url, "--project", "libpcpu", "--commit", SHA]
        if hosts:
            args += ["--hosts", hosts]
        return ci(*(args + list(extra)), env=env)

    def paths(self, prefix):
        return [p for m, p, h, b in FAKE.requests if p.startswith(prefix)]

    def test_exit_status_of_each_reply(self):
        for name, hosts, want in (("pass.json", "x86-ci", 0), ("fail.json", "x86-ci", 1),
                                  ("incomplete.json", "x86-ci,graviton4-a", 2),
                                  ("hostile.json", None, 1),
                                  ("inconclusive.json", "x86-ci,graviton4-a", 4)):
            FAKE.gate = (name, 200)
            p = self.gate(hosts=hosts)
            self.assertEqual(p.returncode, want, (name, p.stdout, p.stderr))
        FAKE.gate = ("fail.json", 200)
        p = self.gate()
        self.assertIn("atomwatch gate: fail: commit b7c8d9e0f1a2 of libpcpu against main: "
                      "2 regressed metrics on 1 of 2 hosts", p.stdout)
        self.assertIn("regressed  x86-ci  subject=libpcpu op=inc cpu=0 [p50]  1.02 ns -> "
                      "18.4 ns  +1706.9%", p.stdout)
        self.assertIn("report: %s/commits/%s" % (self.url, SHA), p.stdout)
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.paths("/api/v1/gate")[-1]).query)
        # evidence=history: the gate weighs the commit's A/B document itself (ci/evidence.c)
        self.assertEqual(q, {"project": ["libpcpu"], "commit": [SHA], "baseline_ref": ["main"],
                             "hosts": ["x86-ci"], "evidence": ["history"]})

    def test_inconclusive(self):
        # a cell of gate level fail the gate cannot vouch for: exit 4, listed right after the
        # regressions in every output, its levels told apart; a host without a run does not
        # lower it to 2
        junit = os.path.join(self.dir, "inconclusive.xml")
        md = os.path.join(self.dir, "inconclusive.md")
        FAKE.gate = ("inconclusive.json", 200)
        p = self.gate("--junit", junit, "--markdown", md, hosts="x86-ci,graviton4-a,epyc-1",
                      env={"GITHUB_ACTIONS": "true"})
        self.assertEqual(p.returncode, 4, (p.stdout, p.stderr))
        self.assertIn("atomwatch gate: inconclusive: commit d4e5f6a7b8c9 of libpcpu", p.stdout)
        self.assertIn("  inconclusive x86-ci  subject=libpcpu op=inc cpu=0 [p50]", p.stdout)
        self.assertIn("levels by mulblock-v1: L1 (60%) +0.3% unchanged", p.stdout)
        self.assertIn("incomplete epyc-1: the collector's reply does not name it", p.stdout)
        self.assertIn("::error title=atomwatch%3A x86-ci subject=libpcpu op=inc cpu=0", p.stdout)
        with open(md) as f:
            text = f.read()
        self.assertIn("## atomwatch gate: INCONCLUSIVE", text)
        self.assertLess(text.index("### Inconclusive"), text.index("### Hosts"))
        failures = [f for f in ET.parse(junit).getroot().iter("failure")]
        # the inconclusive cell of level fail alone: not the noisy one (its change under its
        # threshold), not the inconclusive one of level warn
        self.assertEqual([f.get("type") for f in failures], ["inconclusive"])
        self.assertNotIn("op=lock_xadd", p.stdout)
        errors = [e for e in ET.parse(junit).getroot().iter("error")]
        self.assertEqual(len(errors), 1)
        # and a regression on another host fails the gate whatever else holds
        FAKE.gate = ("fail.json", 200)
        self.assertEqual(self.gate(hosts="x86-ci").returncode, 1)

    def test_cells_and_strict(self):
        FAKE.gate = ("unconfirmed.json", 200)
        p = self.gate("--cells", "subject=*", "--cells", "op=lock_* cpu=0 *")
        self.assertEqual(p.returncode, 0, (p.stdout, p.stderr))
        self.assertIn("atomwatch gate: unconfirmed:", p.stdout)
        self.assertIn("suspect    x86-ci  subject=libpcpu op=inc cpu=0 [p50]", p.stdout)
        self.assertIn("warning    x86-ci  op=lock_inc cpu=0 contender=1 c=100 d=100", p.stdout)
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.paths("/api/v1/gate")[-1]).query)
        self.assertEqual(q["cells"], ["subject=*", "op=lock_* cpu=0 *"])
        p = self.gate("--strict")
        self.assertEqual(p.returncode, 1, (p.stdout, p.stderr))
        self.assertIn("atomwatch gate: unconfirmed:", p.stdout)
        p = ci("compare", "--collector", self.url, "--project", "libpcpu", "--base", SHA,
               "--head", SHA, "--cells", "subject=*")
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.paths("/api/v1/compare")[-1]).query)
        self.assertEqual(q["cells"], ["subject=*"])

    def test_cells_bad(self):
        # a glob that matches nothing is the collector's 400, named; a usage error, not a pass
        p = self.gate("--cells", "subject=*", "--cells", "nomatch=*")
        self.assertEqual(p.returncode, 3, (p.stdout, p.stderr))
        self.assertIn("the 'cells' glob 'nomatch=*' matches no cell of commit", p.stderr)
        self.assertIn("(field 'cells')", p.stderr)
        self.assertEqual(len(self.paths("/api/v1/gate")), 1, "a 4xx is not retried")
        for bad, msg in (("", "--cells needs a glob"), ("a\tb", "holds a control character")):
            p = self.gate("--cells", bad)
            self.assertEqual(p.returncode, 3, p.stderr)
            self.assertIn(msg, p.stderr)
        p = ci("wait", "--collector", self.url, "--project", "libpcpu", "--commit", SHA,
               "--hosts", "a", "--cells", "x")
        self.assertEqual(p.returncode, 3)
        self.assertIn("'wait' does not take --cells", p.stderr)

    def test_host_missing_from_reply(self):
        FAKE.gate = ("pass.json", 200)
        p = self.gate(hosts="x86-ci,graviton4-a")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("incomplete graviton4-a: the collector's reply does not name it", p.stdout)

    def test_files_and_github(self):
        junit = os.path.join(self.dir, "gate.xml")
        md = os.path.join(self.dir, "gate.md")
        summary = os.path.join(self.dir, "summary.md")
        with open(summary, "w") as f:
            f.write("earlier step\n")
        p = self.gate("--junit", junit, "--markdown", md, "--baseline-ref", "refs/heads/a+b",
                      env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": summary})
        self.assertEqual(p.returncode, 1, p.stderr)
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.paths("/api/v1/gate")[-1]).query)
        self.assertEqual(q["all"], ["1"], "the JUnit needs every cell")
        self.assertEqual(q["baseline_ref"], ["refs/heads/a+b"])
        self.assertIn("baseline_ref=refs%2Fheads%2Fa%2Bb", self.paths("/api/v1/gate")[-1])
        errors = [l for l in p.stdout.splitlines() if l.startswith("::error ")]
        self.assertEqual(len(errors), 2, p.stdout)
        self.assertTrue(errors[0].startswith(
            "::error title=atomwatch%3A x86-ci subject=libpcpu op=inc cpu=0 [p50] +1706.9%25::"))
        root = ET.parse(junit).getroot()
        self.assertEqual(root.tag, "testsuites")
        cases = root.findall("./testsuite/testcase")
        self.assertEqual(len(cases), 10)
        failed = [c for c in cases if c.find("failure") is not None]
        self.assertEqual([(c.get("classname"), c.get("name")) for c in failed],
                         [("x86-ci", "subject=libpcpu op=inc cpu=0 [p50]"),
                          ("x86-ci", "subject=libpcpu op=inc cpu=0 [p99]")])
        self.assertEqual(len([c for c in cases if c.find("skipped") is not None]), 4)
        with open(md) as f:
            text = f.read()
        self.assertLess(text.index("### Regressions"), text.index("### Hosts"))
        with open(summary) as f:
            self.assertEqual(f.read(), "earlier step\n" + text)
        self.assertEqual([n for n in os.listdir(self.dir) if ".tmp." in n], [])

    def test_hostile_junit_is_well_formed(self):
        FAKE.gate = ("hostile.json", 200)
        junit = os.path.join(self.dir, "hostile.xml")
        p = self.gate("--junit", junit, hosts=None)
        self.assertEqual(p.returncode, 1, p.stderr)
        root = ET.parse(junit).getroot()
        names = [c.get("classname") for c in root.iter("testcase")]
        self.assertIn("evil<host>&\"]]>|`x` \ufffd@team #1", names)  # attribute newline: space
        self.assertIn("gone&<away>", names)
        self.assertNotIn("\x07", p.stdout)

    def test_junit_not_written(self):
        p = self.gate("--junit", os.path.join(self.dir, "no", "such", "dir.xml"))
        self.assertEqual(p.returncode, 3, p.stdout)
        self.assertIn("cannot write '", p.stderr)

    def test_retries_and_errors(self):
        FAKE.gate_fail_first = 2
        p = self.gate()
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(len(self.paths("/api/v1/gate")), 3)

        FAKE.reset()
        FAKE.gate = ("fail.json", 500)
        p = self.gate()
        self.assertEqual(p.returncode, 3)
        self.assertEqual(len(self.paths("/api/v1/gate")), 3)

        FAKE.reset()
        FAKE.gate = ("<html>bad gateway</html>", 200)
        p = self.gate()
        self.assertEqual(p.returncode, 3)
        self.assertIn("bad reply from the collector: not JSON", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)

        FAKE.reset()
        FAKE.gate = ("pass.json", 404)
        p = self.gate()
        self.assertEqual(p.returncode, 3)
        self.assertEqual(len(self.paths("/api/v1/gate")), 1, "a 4xx is not retried")

    def test_collector_down(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        t = time.time()
        p = ci("gate", "--collector", "http://127.0.0.1:%d" % port, "--project", "p",
               "--commit", SHA)
        self.assertEqual(p.returncode, 3)
        self.assertIn("cannot reach the collector at http://127.0.0.1:%d" % port, p.stderr)
        self.assertLess(time.time() - t, 20)

    def test_token(self):
        FAKE.gate = ("pass.json", 200)
        self.gate(env={"ATOMWATCH_TOKEN": "awt_env"})
        self.assertEqual(FAKE.requests[-1][2].get("Authorization"), "Bearer awt_env")
        tf = os.path.join(self.dir, "token")
        with open(tf, "w") as f:
            f.write("awt_file\n")
        os.chmod(tf, 0o600)
        p = self.gate("--token-file", tf, env={"ATOMWATCH_TOKEN": "awt_env"})
        self.assertEqual(FAKE.requests[-1][2].get("Authorization"), "Bearer awt_file")
        self.assertNotIn("awt_file", p.stdout + p.stderr)
        self.gate()
        self.assertNotIn("Authorization", FAKE.requests[-1][2])
        n = len(FAKE.requests)
        p = self.gate("--token", "awt_cmdline")
        self.assertEqual(p.returncode, 3)
        self.assertNotIn("awt_cmdline", p.stderr)
        self.assertEqual(len(FAKE.requests), n, "nothing sent")
        # the environment names the collector too
        p = ci("gate", "--project", "libpcpu", "--commit", SHA,
               env={"ATOMWATCH_COLLECTOR": self.url + "/"})
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_trigger(self):
        env = {"ATOMWATCH_TOKEN": "awt_ci"}
        p = ci("trigger", "--collector", self.url, "--project", "libpcpu", "--commit", SHA,
               "--ref", "refs/heads/main", "--hosts", "a,b", "--subject", "libpcpu", env=env)
        self.assertEqual((p.returncode, p.stdout), (0, "42\n"), p.stderr)
        m, path, headers, body = FAKE.requests[-1]
        self.assertEqual((m, path, headers["Authorization"]), ("POST", "/api/v1/jobs",
                                                               "Bearer awt_ci"))
        self.assertEqual(json.loads(body), {"project": "libpcpu", "commit": SHA,
                                            "ref": "refs/heads/main", "subject": "libpcpu",
                                            "hosts": ["a", "b"]})
        p = ci("trigger", "--collector", self.url, "--project", "libpcpu", "--commit", SHA,
               "--ref", "main", "--hosts", "all", env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(FAKE.requests[-1][3])["hosts"], "all")
        FAKE.job_status = 400
        p = ci("trigger", "--collector", self.url, "--project", "libpcpu", "--commit", SHA,
               "--ref", "main", env=env)
        self.assertEqual(p.returncode, 3)
        self.assertIn("the collector refused the job: 400: 'ref' is not a ref (field 'ref')",
                      p.stderr)

    def test_wait(self):
        FAKE.reported = {"a": 0, "b": 2}
        t = time.time()
        p = ci("wait", "--collector", self.url, "--project", "libpcpu", "--commit", SHA,
               "--hosts", "a,b", "--timeout", "30s", "--poll", "100ms")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertLess(time.time() - t, 10)
        polls_a = [x for x in self.paths("/api/v1/runs") if "host=a&" in x]
        self.assertEqual(len(polls_a), 1, "a reported host is not asked again")
        self.assertIn("waiting for 1 of 2 hosts to report b7c8d9e0f1a2: b", p.stderr)
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(polls_a[0]).query)
        self.assertEqual(q, {"project": ["libpcpu"], "commit": [SHA], "host": ["a"],
                             "limit": ["1"]})

    def test_wait_timeout(self):
        FAKE.reported = {"a": 0}
        t = time.time()
        p = ci("wait", "--collector", self.url, "--project", "libpcpu", "--commit", SHA,
               "--hosts", "a,never-1,never-2", "--timeout", "2s", "--poll", "200ms")
        took = time.time() - t
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("timed out after 2 s waiting for commit b7c8d9e0f1a2: no run from "
                      "never-1, never-2", p.stderr)
        self.assertTrue(1.8 < took < 8, took)
        # 200, 400, 800 ms, then the deadline: a handful of rounds, not a busy loop
        rounds = len([x for x in self.paths("/api/v1/runs") if "host=never-1" in x])
        self.assertTrue(3 <= rounds <= 6, rounds)

    def test_wait_refused(self):
        FAKE.runs_status = 400
        p = ci("wait", "--collector", self.url, "--project", "libpcpu", "--commit", SHA,
               "--hosts", "a", "--timeout", "30s")
        self.assertEqual(p.returncode, 3)
        self.assertIn("the collector refused the runs query: 400: bad host (field 'host')",
                      p.stderr)

    def test_gate_wait_then_incomplete(self):
        FAKE.gate = ("incomplete.json", 200)
        FAKE.reported = {"x86-ci": 0}
        p = self.gate("--wait", "1s", "--poll", "200ms", hosts="x86-ci,graviton4-a")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("no run from graviton4-a", p.stderr)
        self.assertIn("incomplete graviton4-a: no run of b7c8d9e0f1a2 on graviton4-a", p.stdout)
        self.assertEqual(len(self.paths("/api/v1/gate")), 1, "the gate is asked after the wait")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--ci", required=True)
    ap.add_argument("--fixtures", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()

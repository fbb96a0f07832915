#!/usr/bin/python3
"""The CI definitions shipped in ci/ (GitHub Actions workflow, GitLab CI include): valid YAML
(PyYAML when installed, else a structural check of the text), the shape each CI system needs
(self-hosted runners per arch measuring with atomwatch-agent, a final gate job after them that
writes and keeps the JUnit report, the token from a secret and never on a command line), and
every atomwatch-ci command line in them accepted by the real binary (it gets as far as
contacting the collector, a closed port here: exit 3 "cannot reach", never a usage error)."""
import argparse
import http.server
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.parse

try:
    import yaml
except ImportError:  # Debian without python3-yaml: the structural check below still runs
    yaml = None

ARGS = None


def read(name):
    with open(os.path.join(ARGS.source, "ci", name)) as f:
        return f.read()


def structural_check(text):
    """What YAML would refuse that a text check can see: tabs in indentation, odd indentation,
    unbalanced quotes or brackets on a line."""
    for n, line in enumerate(text.splitlines(), 1):
        body = line.split(" #")[0] if not line.lstrip().startswith("#") else ""
        assert "\t" not in line[:len(line) - len(line.lstrip())], "tab at line %d" % n
        assert (len(line) - len(line.lstrip())) % 2 == 0, "odd indentation at line %d" % n
        assert body.count('"') % 2 == 0, "unbalanced quote at line %d" % n
        assert body.count("[") == body.count("]"), "unbalanced bracket at line %d" % n


def load(name):
    text = read(name)
    structural_check(text)
    if yaml is None:
        return None, text
    return yaml.safe_load(text), text


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SAMPLE = {"github.sha": "b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f80",
          "github.head_ref || github.ref_name": "main"}
ENV = {"ATOMWATCH_PROJECT": "libpcpu", "ATOMWATCH_SUBJECT": "libpcpu",
       "ATOMWATCH_HOSTS": "graviton4-a,x86-ci-1", "CI_COMMIT_SHA": SAMPLE["github.sha"],
       "CI_DEFAULT_BRANCH": "main"}


def ci_commands(text):
    """The atomwatch-ci command lines of a definition, folded (>-) lines joined."""
    out, cur = [], None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("atomwatch-ci "):
            cur = [s]
            out.append(cur)
        elif cur is not None and s.startswith("--"):
            cur.append(s)
        else:
            cur = None
    return [" ".join(c) for c in out]


def run_ci_command(cmd):
    """Runs a definition's atomwatch-ci line against a closed port, its variables filled in."""
    cmd = re.sub(r"\$\{\{ ([^}]*) \}\}", lambda m: SAMPLE[m.group(1)], cmd)
    argv = [re.sub(r"\$(\w+)", lambda m: ENV[m.group(1)], a) for a in shlex.split(cmd)]
    if "--wait" in argv:  # the collector is down: do not wait half an hour for it
        argv[argv.index("--wait") + 1] = "1s"
    argv[0] = ARGS.ci
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATOMWATCH_", "GITHUB_"))}
    env["ATOMWATCH_COLLECTOR"] = "http://127.0.0.1:%d" % closed_port()
    env["ATOMWATCH_TOKEN"] = "awt_test"
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)


class Definitions(unittest.TestCase):
    def check_ci_lines(self, text):
        cmds = ci_commands(text)
        self.assertEqual(len(cmds), 1, cmds)
        self.assertIn("atomwatch-ci gate", cmds[0])
        for flag in ("--junit", "--markdown", "--hosts", "--baseline-ref", "--wait"):
            self.assertIn(flag, cmds[0])
        p = run_ci_command(cmds[0])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("cannot reach the collector", p.stderr)
        self.assertNotIn("see --help", p.stderr)
        self.assertNotRegex(text, r"--token[ =]", "a token on a command line")

    def test_github(self):
        doc, text = load("github/atomwatch.yml")
        self.check_ci_lines(text)
        self.assertIn("--commit \"${{ github.sha }}\"", text)
        if doc is None:
            return
        on = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as true
        self.assertIn("pull_request", on)
        self.assertEqual(on["push"]["branches"], ["main"])
        jobs = doc["jobs"]
        m = jobs["measure"]
        self.assertEqual(m["runs-on"][:2], ["self-hosted", "linux"])
        self.assertEqual(m["runs-on"][2], "${{ matrix.arch }}")
        self.assertEqual(sorted(m["strategy"]["matrix"]["arch"]), ["arm64", "x64"])
        self.assertFalse(m["strategy"]["fail-fast"])
        runs = [s.get("run", "") for s in m["steps"]]
        self.assertTrue(any(r.startswith("atomwatch-agent run") and "--subject" in r
                            for r in runs), runs)
        # pull requests: the interleaved A/B against the merge base; pushes: history
        steps = {s.get("name"): s for s in m["steps"]}
        ab = steps["interleaved A/B against the merge base"]
        self.assertIn("pull_request", ab["if"])
        self.assertIn("atomwatch-agent ab", ab["run"])
        self.assertIn("git merge-base", ab["run"])
        self.assertIn("!= 'pull_request'", steps["measure this commit"]["if"])
        self.assertEqual(m["steps"][0]["with"]["fetch-depth"], 0)
        g = jobs["gate"]
        self.assertEqual(g["needs"], "measure")
        self.assertIn("cancelled()", g["if"])
        gate_step = [s for s in g["steps"] if "atomwatch-ci gate" in s.get("run", "")][0]
        self.assertEqual(gate_step["env"]["ATOMWATCH_TOKEN"], "${{ secrets.ATOMWATCH_CI_TOKEN }}")
        up = [s for s in g["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
        self.assertEqual(len(up), 1)
        self.assertIn("atomwatch-junit.xml", up[0]["with"]["path"])
        self.assertIn("always()", up[0]["if"])
        self.assertIn("--junit atomwatch-junit.xml", gate_step["run"])

    def test_gitlab(self):
        doc, text = load("gitlab/atomwatch.gitlab-ci.yml")
        self.check_ci_lines(text)
        self.assertIn('--commit "$CI_COMMIT_SHA"', text)
        if doc is None:
            return
        self.assertEqual(doc["stages"], ["measure", "gate"])
        tmpl = doc[".atomwatch-measure"]
        self.assertTrue(any(s.startswith("atomwatch-agent run") for s in tmpl["script"]))
        # merge requests: the interleaved A/B against the merge base
        self.assertIn("atomwatch-agent ab", tmpl["script"][0])
        self.assertIn("$CI_MERGE_REQUEST_DIFF_BASE_SHA", tmpl["script"][0])
        self.assertEqual(tmpl["variables"]["GIT_DEPTH"], 0)
        archs = {}
        for name, job in doc.items():
            if isinstance(job, dict) and job.get("extends") == ".atomwatch-measure":
                archs[name] = job["tags"]
        self.assertEqual(sorted(t[-1] for t in archs.values()), ["arm64", "x64"])
        g = doc["atomwatch:gate"]
        self.assertEqual(g["stage"], "gate")
        self.assertEqual(sorted(g["needs"]), sorted(archs))
        self.assertEqual(g["when"], "always")
        self.assertEqual(g["artifacts"]["reports"]["junit"], "atomwatch-junit.xml")
        self.assertEqual(g["artifacts"]["when"], "always")
        self.assertIn("--junit atomwatch-junit.xml", g["script"][0])

    def test_github_comment(self):
        doc, text = load("github/atomwatch.yml")
        if doc is None:
            self.assertIn("gh pr comment", text)
            return
        g = doc["jobs"]["gate"]
        self.assertEqual(g["permissions"]["pull-requests"], "write")
        steps = [s for s in g["steps"] if "gh pr comment" in s.get("run", "")]
        self.assertEqual(len(steps), 1)
        self.assertIn("failure()", steps[0]["if"])
        self.assertIn("pull_request", steps[0]["if"])
        self.assertIn("--body-file atomwatch-summary.md", steps[0]["run"])
        self.assertEqual(steps[0]["env"]["GH_TOKEN"], "${{ github.token }}")

    def test_gitlab_comment(self):
        """The gate job's after_script, run by sh against a stand-in for GitLab's API: a failed
        gate in a merge request posts the summary as a note, token in a header; a passed gate,
        or a pipeline without a merge request, posts nothing."""
        doc, text = load("gitlab/atomwatch.gitlab-ci.yml")
        self.assertIsNotNone(doc, "python3-yaml is needed (scripts/deps.sh installs it)")
        script = "\n".join(doc["atomwatch:gate"]["after_script"])
        self.assertNotIn("-H \"PRIVATE-TOKEN", script, "the token in curl's arguments")
        seen = []

        class Api(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                seen.append((self.path, self.headers.get("PRIVATE-TOKEN"),
                             urllib.parse.parse_qs(body.decode())))
                self.send_response(201)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Api)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        summary = "## atomwatch gate: FAIL\n\n| host | cell |\n|---|---|\n| a & b | x=1 |\n"
        try:
            with tempfile.TemporaryDirectory() as work:
                with open(os.path.join(work, "atomwatch-summary.md"), "w") as f:
                    f.write(summary)
                env = {"PATH": os.environ["PATH"], "CI_MERGE_REQUEST_IID": "7",
                       "CI_PROJECT_ID": "42", "ATOMWATCH_GITLAB_TOKEN": "glpat-secret",
                       "CI_API_V4_URL": "http://127.0.0.1:%d/api/v4" % server.server_port}
                for status, iid in (("success", "7"), ("failed", ""), ("failed", "7")):
                    env.update(CI_JOB_STATUS=status, CI_MERGE_REQUEST_IID=iid)
                    p = subprocess.run(["sh", "-ec", script], cwd=work, env=env,
                                       capture_output=True, text=True, timeout=60)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    self.assertFalse(os.path.exists(os.path.join(work,
                                                                 ".atomwatch-gitlab-header")))
        finally:
            server.shutdown()
        self.assertEqual(len(seen), 1, "one note, for the failed gate of the merge request")
        path, token, form = seen[0]
        self.assertEqual(path, "/api/v4/projects/42/merge_requests/7/notes")
        self.assertEqual(token, "glpat-secret")
        self.assertEqual(form["body"], [summary])

    def test_structural_check_catches(self):
        for bad in ("a:\n\tb: 1\n", "a:\n   b: 1\n", 'a: "x\n', "a: [x, y\n"):
            with self.assertRaises(AssertionError):
                structural_check(bad)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--ci", required=True)
    ARGS, rest = ap.parse_known_args()
    if yaml is None:
        print("note: python3-yaml is not installed: structural checks only", file=sys.stderr)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()

"""What the agent's end-to-end tests share on top of harness.py: the agent binary, its config
and token files, running it (to completion or in the background), the fault-injecting proxy
(agent_proxy.py) as a real process, a self-signed certificate, and spool inspection. Every
process started here is registered with the harness, which kills it at exit."""

import glob
import http.client
import json
import os
import ssl
import subprocess
import sys
import time

import harness as h

HERE = os.path.dirname(os.path.abspath(__file__))


def agent_binary():
    path = os.environ.get("AW_AGENT", os.path.join(h.BUILD_DIR, "agents", "atomwatch-agent"))
    if not os.access(path, os.X_OK):
        raise SystemExit("agent tests: no agent binary at %s (set AW_AGENT)" % path)
    return path


def clean_env(extra=None):
    """Our environment without proxies (they would divert 127.0.0.1) plus `extra`."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(extra or {})
    return env


class Agent:
    """One agent configuration in a directory of its own (config, token, spool)."""

    def __init__(self, url, token, host, extra="", matrix=None, collector_extra=""):
        self.dir = h.tempdir("aw-agent-")
        self.spool = os.path.join(self.dir, "spool")
        self.token = token
        self.host = host
        self.config = os.path.join(self.dir, "agent.yaml")
        self.log_path = os.path.join(self.dir, "agent.log")
        with open(os.path.join(self.dir, "agent.token"), "w") as f:
            f.write(token + "\n")
        os.chmod(os.path.join(self.dir, "agent.token"), 0o600)
        self.write(url, extra, matrix, collector_extra)

    def write(self, url, extra="", matrix=None, collector_extra=""):
        matrix = matrix if matrix is not None else (
            "matrix:\n  profile: quick\n  ops: [plain, c11_relaxed]\n  samples: 20\n")
        with open(self.config, "w") as f:
            f.write("collector:\n  url: %s\n  token_file: agent.token\n  retries: 4\n"
                    "  backoff: 100ms\n  backoff_max: 3s\n  connect_timeout: 2s\n"
                    "  timeout: 20s\n%s" % (url, collector_extra))
            f.write("host:\n  name: %s\n  labels: {rack: e2e}\nspool:\n  dir: spool\n"
                    % self.host)
            f.write(matrix)
            f.write(extra)

    def run(self, *args, timeout=180):
        argv = [agent_binary()] + list(args[:1]) + ["--config", self.config] + list(args[1:])
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              env=clean_env())

    def start(self, *args):
        """The agent in the background, its stderr in self.log_path."""
        argv = [agent_binary()] + list(args[:1]) + ["--config", self.config] + list(args[1:])
        log = open(self.log_path, "ab")
        return h._track(subprocess.Popen(argv, stdout=log, stderr=log, env=clean_env()))

    def logs(self):
        if not os.path.exists(self.log_path):
            return ""
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def spooled(self):
        return sorted(glob.glob(os.path.join(self.spool, "result-*.json")))

    def temp_files(self):
        return glob.glob(os.path.join(self.spool, "*.tmp.*"))

    def rejected(self):
        return sorted(glob.glob(os.path.join(self.spool, "rejected", "*")))


def start_proxy(upstream_port, mode="pass", cert=None, key=None, port=0):
    """agent_proxy.py as a process (on `port`, 0: any); returns (process, port)."""
    argv = [sys.executable, os.path.join(HERE, "agent_proxy.py"), "--upstream",
            str(upstream_port), "--mode", mode, "--port", str(port)]
    if cert:
        argv += ["--cert", cert, "--key", key]
    log = open(os.path.join(h.tempdir("aw-proxy-"), "proxy.log"), "wb")
    proc = h._track(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log))
    line = proc.stdout.readline().decode()
    if not line.startswith("listening on "):
        raise AssertionError("the proxy did not start: %r" % line)
    return proc, int(line.split()[-1])


def proxy_stats(port, cafile=None):
    """The proxy's counters; `cafile` for a proxy speaking HTTPS."""
    if not cafile:
        return h.request(port, "GET", "/__proxy/stats").json()
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=30,
                                       context=ssl.create_default_context(cafile=cafile))
    try:
        conn.request("GET", "/__proxy/stats")
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def stop(proc):
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def self_signed_cert():
    """A certificate for 127.0.0.1 made with openssl at test time: (cert, key) paths."""
    d = h.tempdir("aw-tls-")
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True, timeout=60)
    return cert, key


def wait_for(fn, timeout=60, what="condition", interval=0.1):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError("timed out waiting for " + what)


def runs_of(col, token, host, **query):
    q = "&".join("%s=%s" % kv for kv in dict(host=host, limit=1000, **query).items())
    r = col.request("GET", "/api/v1/runs?" + q, token=token)
    h.eq(r.status, 200, "GET runs")
    return r.json()["runs"]


def get_run(col, token, run_id):
    r = col.request("GET", "/api/v1/runs/" + run_id, token=token)
    h.eq(r.status, 200, "GET run %s: %r" % (run_id, r))
    return r.json()


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def read_json(path):
    with open(path) as f:
        return json.load(f)

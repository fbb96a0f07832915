#!/usr/bin/python3
"""The agent's own costs (docs/benchmarks.md, "Agent"): the stripped binary's size, the daemon's
memory and CPU while idle (long-polling a real collector), and the time `atomwatch-agent run`
adds around the runner (fingerprint, config, spool with fsync, upload) compared with
`atomwatch-run` measuring the same profile. Starts its own collector (SQLite) through
tests/e2e/harness.py and kills everything it started.

usage: agent_bench.py --agent BIN --run BIN [--idle-seconds 60] [--reps 7]"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
import agent_helpers as a  # noqa: E402
import harness as h  # noqa: E402

HOST = "bench-agent"
PROFILE = "quick"


def stripped_size(binary):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "agent")
        subprocess.run(["strip", "-o", out, binary], check=True)
        return os.path.getsize(out)


def libraries(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    libs = set()
    for line in out.splitlines():
        parts = line.split("=>")
        path = (parts[1] if len(parts) > 1 else parts[0]).split("(")[0].strip()
        if path.startswith("/"):
            libs.add(os.path.realpath(path))
    return libs


def memory(pid, curl_only):
    """VmRSS, its anonymous and file parts, PSS, and the RSS of libraries only libcurl needs."""
    out = {"curl_libs_kib": 0, "curl_ssl_kib": 0}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k = line.split(":")[0]
            if k in ("VmRSS", "RssAnon", "RssFile"):
                out[k] = int(line.split()[1])
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith("Pss:"):
                out["Pss"] = int(line.split()[1])
    path = None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" not in fields[0]:
                path = os.path.realpath(fields[5]) if len(fields) > 5 else None
            elif fields[0] == "Rss:" and path in curl_only:
                out["curl_libs_kib"] += int(fields[1])
                if os.path.basename(path).startswith(("libcurl.", "libssl.")):
                    out["curl_ssl_kib"] += int(fields[1])
    return out


def timed(argv, env):
    t0 = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    took = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit("%s failed (%d): %s" % (argv[:2], p.returncode, p.stderr))
    return took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--idle-seconds", type=float, default=60)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    os.environ["AW_AGENT"] = os.path.abspath(args.agent)
    os.environ.setdefault("AW_COLLECTOR", os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(args.agent))), "collector",
        "atomwatch-collector"))

    size = stripped_size(args.agent)
    print("binary: %s stripped %.0f KiB (%d bytes; target <= 1024 KiB)"
          % (os.path.basename(args.agent), size / 1024, size))

    db = h.Database("sqlite")
    col = h.Collector(db.url).start()
    token = col.token("agent", HOST)
    url = "http://127.0.0.1:%d" % col.port
    ag = a.Agent(url, token, HOST, matrix="matrix:\n  profile: %s\n" % PROFILE,
                 extra="schedule:\n  check_every: 1h\n", collector_extra="  poll_wait: 60s\n")

    # the time around the runner: the same profile, alternating, medians
    env = a.clean_env()
    out = os.path.join(ag.dir, "run.json")
    runner = [args.run, "--profile", PROFILE, "--format", "json", "--out", out, "--quiet",
              "--host", HOST]
    agent = [args.agent, "run", "--config", ag.config, "--project", "bench", "--commit",
             "be4c400", "--ref", "main", "--quiet"]
    timed(runner, env)  # warm the page cache
    timed(agent, env)
    t_run, t_agent = [], []
    for _ in range(args.reps):
        t_run.append(timed(runner, env))
        t_agent.append(timed(agent, env))
    m_run, m_agent = statistics.median(t_run), statistics.median(t_agent)
    print("profile %s: atomwatch-run %.3f s, atomwatch-agent run (upload included) %.3f s: "
          "the agent adds %.3f s (median of %d; target < 1 s)"
          % (PROFILE, m_run, m_agent, m_agent - m_run, args.reps))

    # the idle daemon
    proc = ag.start("daemon")
    a.wait_for(lambda: "daemon for host" in ag.logs(), 60, "the daemon")
    time.sleep(2)
    c0, t0 = a.cpu_seconds(proc.pid), time.time()
    time.sleep(args.idle_seconds)
    used, span = a.cpu_seconds(proc.pid) - c0, time.time() - t0
    curl_only = libraries(args.agent) - libraries(args.run)
    mem = memory(proc.pid, curl_only)
    print("idle daemon: %.3f s CPU over %.0f s (%.4f%%; target ~0)"
          % (used, span, 100 * used / span))
    print("idle daemon: VmRSS %d KiB (target <= 8192): anonymous %d KiB, file-backed %d KiB "
          "(of which %d KiB in the %d libraries only libcurl brings: %d KiB libcurl and libssl "
          "themselves, %d KiB the %d others); PSS %d KiB"
          % (mem["VmRSS"], mem["RssAnon"], mem["RssFile"], mem["curl_libs_kib"],
             len(curl_only), mem["curl_ssl_kib"], mem["curl_libs_kib"] - mem["curl_ssl_kib"],
             len(curl_only) - 2, mem["Pss"]))
    proc.terminate()
    proc.wait(timeout=30)
    col.stop()
    shutil.rmtree(ag.dir, ignore_errors=True)


if __name__ == "__main__":
    main()

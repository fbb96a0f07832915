#!/usr/bin/python3
"""atomwatch-agent daemon against the real collector: it flushes its spool at start, picks up a
job posted with a CI token, runs it and reports it done with the run id; a job naming a subject
its config does not define fails with a clear message and runs nothing; idle, it uses no CPU;
SIGTERM stops it (between cells during a job: the job is reported failed, nothing is left
half-written) with exit status 0; a changed fingerprint (kernel) triggers a run with trigger
schedule and what changed in meta.changed; the schedule runs a first run at start; while the
collector is unreachable it says so once and backs off without spinning, and takes jobs again
once it is back.

usage: test_agent_daemon.py [--backend sqlite|postgres]"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_helpers as a  # noqa: E402
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

DAEMON = "  poll_wait: 5s\n"  # appended to the collector section
QUIET = "schedule:\n  check_every: 1h\n"


class Suite:
    pass


S = Suite()


def setup(backend):
    S.pg = h.Postgres().start() if backend == "postgres" else None
    S.db = h.Database(backend, S.pg)
    # these daemons' runs must not bring confirmation jobs of their own (counted runs):
    # test_agent_confirm.py tests those
    S.col = h.Collector(S.db.url, config="detection:\n  confirm_jobs: 0\n").start()
    S.ci = S.col.token("ci")
    S.url = "http://127.0.0.1:%d" % S.col.port


def post_job(host, commit, subject=None):
    body = {"project": "e2e", "commit": commit, "ref": "main", "hosts": [host]}
    if subject:
        body["subject"] = subject
    r = S.col.request("POST", "/api/v1/jobs", body, token=S.ci)
    eq(r.status, 201, "POST /api/v1/jobs: %r" % r)
    return r.json()["job"]["id"]


def job_host(job_id):
    r = S.col.request("GET", "/api/v1/jobs/%d" % job_id, token=S.ci)
    eq(r.status, 200)
    hosts = r.json()["job"]["hosts"]
    return hosts[0] if hosts else None


def wait_job(job_id, states, timeout=120):
    return a.wait_for(lambda: (lambda x: x if x and x["state"] in states else None)(
        job_host(job_id)), timeout, "job %d to be %s" % (job_id, "/".join(states)))


def start_daemon(ag):
    proc = ag.start("daemon")
    a.wait_for(lambda: "daemon for host" in ag.logs() or proc.poll() is not None, 60,
               "the daemon to start")
    check(proc.poll() is None, "the daemon exited: " + ag.logs())
    return proc


def stop_daemon(proc, timeout=10):
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("the daemon did not stop within %ds of SIGTERM" % timeout)


def jobs_waiting():
    """The collector's atomwatch_jobs_waiting gauge: the polls for jobs it holds."""
    text = S.col.request("GET", "/metrics").body.decode()
    m = re.search(r"^atomwatch_jobs_waiting (\d+)$", text, re.M)
    check(m, "the jobs gauge in /metrics:\n" + text)
    return int(m.group(1))


def wait_poll_released():
    """After a daemon stopped, until the collector has let its last poll go: it learns that the
    agent went away only when the poll's wait (poll_wait, 5 s) ends, and a job posted before
    that would be handed to that poll, its reply lost in a closed connection."""
    a.wait_for(lambda: jobs_waiting() == 0, 30, "the stopped daemon's poll to end")


def takes_a_job_and_no_run(ag, host, runs):
    """Proves that the daemon decided against every run it could have started so far: it is
    given a job it can only fail (a subject its config lacks: nothing is measured) and the job
    is waited for until failed. The daemon takes jobs only in its poll for them, which comes
    after its decisions to run (the fingerprint at start, the schedule in its loop), and a run
    it decides on is measured and uploaded before it polls again. Then the host still has the
    runs `runs` (ids) alone."""
    job = post_job(host, "0b5e55ed", subject="nosuch")
    try:
        st = wait_job(job, ("done", "failed"))
    except AssertionError as e:
        raise AssertionError("%s; the agent's log:\n%s" % (e, ag.logs()))
    eq((st["state"], st["run_id"]), ("failed", None), "%r\n%s" % (st, ag.logs()))
    eq(sorted(r["run_id"] for r in a.runs_of(S.col, S.ci, host)), sorted(runs), ag.logs())
    eq(ag.spooled(), [], "no run waiting in the spool either")


def test_jobs_idle_and_sigterm():
    host = "daemon-jobs"
    ag = a.Agent("http://127.0.0.1:%d" % h.free_port(), S.col.token("agent", host), host,
                 extra=QUIET)
    p = ag.run("run", "--project", "e2e", "--commit", "5b001ed", "--ref", "main", "--quiet")
    eq(p.returncode, 3, "spooled while the collector is unreachable")
    spooled_id = p.stdout.strip()
    ag.write(S.url, extra=QUIET, collector_extra=DAEMON)
    proc = start_daemon(ag)
    try:
        # the spool is flushed at start
        a.wait_for(lambda: not ag.spooled(), 30, "the spool to be flushed")
        eq([r["run_id"] for r in a.runs_of(S.col, S.ci, host)], [spooled_id])

        job = post_job(host, "feedc0de")
        st = wait_job(job, ("done", "failed"))
        eq(st["state"], "done", "job state: %r\n%s" % (st, ag.logs()))
        doc = a.get_run(S.col, S.ci, st["run_id"])
        eq((doc["commit"], doc["ref"], doc["trigger"]), ("feedc0de", "main", "ci"))
        eq(doc["meta"]["job"], job)
        eq(ag.spooled(), [])

        job = post_job(host, "feedc0de", subject="nosuch")
        st = wait_job(job, ("done", "failed"))
        eq(st["state"], "failed")
        check("unknown subject 'nosuch'" in st["message"], st)
        check("this agent's config defines: none" in st["message"], st)
        eq(st["run_id"], None)
        eq(len(a.runs_of(S.col, S.ci, host)), 2, "nothing ran for the unknown subject")

        # idle: long-polling, no CPU
        time.sleep(0.5)
        c0 = a.cpu_seconds(proc.pid)
        time.sleep(4)
        used = a.cpu_seconds(proc.pid) - c0
        print("     idle daemon: %.3f s CPU over 4 s, RSS %d KiB" % (used, a.rss_kib(proc.pid)))
        check(used <= 0.05, "idle CPU %.3f s over 4 s" % used)

        t0 = time.time()
        eq(stop_daemon(proc), 0, "exit status after SIGTERM")
        check(time.time() - t0 < 5, "stopped quickly")
        check("stopping" in ag.logs(), ag.logs())
    finally:
        if proc.poll() is None:
            proc.kill()


def test_sigterm_during_a_job():
    host = "daemon-sigterm"
    slow = "matrix:\n  profile: quick\n  ops: [plain, c11_relaxed]\n  samples: 20000\n"
    ag = a.Agent(S.url, S.col.token("agent", host), host, extra=QUIET, matrix=slow,
                 collector_extra=DAEMON)
    proc = start_daemon(ag)
    try:
        job = post_job(host, "deadbeef")
        wait_job(job, ("running",))
        time.sleep(0.7)
        t0 = time.time()
        eq(stop_daemon(proc, 30), 0, "exit status after SIGTERM mid-run")
        print("     stopped %.2f s after SIGTERM" % (time.time() - t0))
        st = job_host(job)
        eq(st["state"], "failed", "job state after SIGTERM: %r" % st)
        check("stopped" in st["message"], st)
        eq(ag.spooled(), [], "no partial result kept")
        eq(ag.temp_files(), [], "nothing half-written")
        eq(a.runs_of(S.col, S.ci, host), [])
    finally:
        if proc.poll() is None:
            proc.kill()


def test_fingerprint_change():
    host = "daemon-fp"
    ag = a.Agent(S.url, S.col.token("agent", host), host, extra=QUIET, collector_extra=DAEMON)
    p = ag.run("fingerprint")
    eq(p.returncode, 0, p.stderr)
    fp = json.loads(p.stdout)
    eq(fp["name"], host)
    kernel = fp["changing"]["kernel"]
    fp["changing"]["kernel"] = "0.0.0-old"
    os.makedirs(ag.spool, exist_ok=True)
    with open(os.path.join(ag.spool, "state.json"), "w") as f:
        json.dump({"fingerprint": fp}, f)
    proc = start_daemon(ag)
    try:
        runs = a.wait_for(lambda: a.runs_of(S.col, S.ci, host), 120, "the scheduled run")
        eq(len(runs), 1)
        doc = a.get_run(S.col, S.ci, runs[0]["run_id"])
        eq((doc["trigger"], doc["project"], doc["ref"]), ("schedule", "platform", "schedule"))
        eq(doc["meta"]["reason"], "fingerprint changed")
        eq(doc["meta"]["changed"]["kernel"], {"from": "0.0.0-old", "to": kernel})
        check("timer_hz" not in doc["meta"]["changed"], doc["meta"]["changed"])
        check(len(doc["commit"]) == 40, doc["commit"])
        eq(a.read_json(os.path.join(ag.spool, "state.json"))["fingerprint"]["changing"]
           ["kernel"], kernel)
        check("the fingerprint changed (kernel)" in ag.logs(), ag.logs())
        eq(stop_daemon(proc), 0)
    finally:
        if proc.poll() is None:
            proc.kill()
    # the same platform again: no run
    wait_poll_released()
    proc = start_daemon(ag)
    try:
        takes_a_job_and_no_run(ag, host, [runs[0]["run_id"]])
        eq(ag.logs().count("the fingerprint changed"), 1, "no change seen: " + ag.logs())
        eq(stop_daemon(proc), 0)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_schedule():
    host = "daemon-sched"
    sched = "schedule:\n  every: 1h\n  check_every: 1h\n  project: nightly\n  ref: nightly\n" \
            "  commit: 0000000000000000000000000000000000000abc\n"
    ag = a.Agent(S.url, S.col.token("agent", host), host, extra=sched, collector_extra=DAEMON)
    proc = start_daemon(ag)
    try:
        runs = a.wait_for(lambda: a.runs_of(S.col, S.ci, host), 120, "the first scheduled run")
        doc = a.get_run(S.col, S.ci, runs[0]["run_id"])
        eq((doc["trigger"], doc["project"], doc["ref"], doc["commit"]),
           ("schedule", "nightly", "nightly", "0000000000000000000000000000000000000abc"))
        eq(doc["meta"]["reason"], "first scheduled run")
        state = a.read_json(os.path.join(ag.spool, "state.json"))
        check(state.get("last_scheduled_run"), state)
        # one run per period: the daemon goes on to poll for jobs without a second
        takes_a_job_and_no_run(ag, host, [runs[0]["run_id"]])
        eq(stop_daemon(proc), 0)
    finally:
        if proc.poll() is None:
            proc.kill()
    wait_poll_released()
    proc = start_daemon(ag)  # restarted within the hour: no run
    try:
        takes_a_job_and_no_run(ag, host, [runs[0]["run_id"]])
        eq(ag.logs().count("scheduled run ("), 1, "the period survives a restart: " + ag.logs())
        eq(stop_daemon(proc), 0)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_schedule_kernel_commit():
    """schedule.commit: kernel files scheduled runs under the kernel's commit where it names
    one, else (this host's kernel, most likely) under the platform commit, with a warning."""
    host = "daemon-kcommit"
    sched = "schedule:\n  every: 1h\n  check_every: 1h\n  project: linux\n  commit: kernel\n"
    ag = a.Agent(S.url, S.col.token("agent", host), host, extra=sched, collector_extra=DAEMON)
    proc = start_daemon(ag)
    try:
        runs = a.wait_for(lambda: a.runs_of(S.col, S.ci, host), 120, "the first scheduled run")
        doc = a.get_run(S.col, S.ci, runs[0]["run_id"])
        eq((doc["trigger"], doc["project"]), ("schedule", "linux"))
        m = re.search(r"-g([0-9a-f]{7,40})(?![0-9a-zA-Z])", os.uname().release)
        if m:
            eq(doc["commit"], m.group(1))
        else:
            check(len(doc["commit"]) == 40, doc["commit"])
            check("schedule.commit is 'kernel', but the running kernel" in ag.logs(),
                  ag.logs())
        eq(stop_daemon(proc), 0)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_collector_back():
    host = "daemon-back"
    port = h.free_port()
    ag = a.Agent("http://127.0.0.1:%d" % port, S.col.token("agent", host), host, extra=QUIET,
                 collector_extra=DAEMON)
    proc = start_daemon(ag)
    proxy = None
    try:
        a.wait_for(lambda: "cannot reach the collector" in ag.logs(), 30, "the warning")
        time.sleep(1.5)
        eq(ag.logs().count("cannot reach the collector"), 1, "said once: " + ag.logs())
        c0 = a.cpu_seconds(proc.pid)
        time.sleep(2)
        check(a.cpu_seconds(proc.pid) - c0 <= 0.05, "no busy retrying while it is down")
        proxy, _ = a.start_proxy(S.col.port, port=port)  # the collector is back, same address
        job = post_job(host, "ba5eba11")
        st = wait_job(job, ("done", "failed"), timeout=60)
        eq(st["state"], "done", "%r\n%s" % (st, ag.logs()))
        check("the collector answers again" in ag.logs(), ag.logs())
        eq(stop_daemon(proc), 0)
    finally:
        if proc.poll() is None:
            proc.kill()
        if proxy:
            a.stop(proxy)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="sqlite", choices=("sqlite", "postgres"))
    args = ap.parse_args()
    a.agent_binary()
    setup(args.backend)
    h.run([(n, f) for n, f in sorted(globals().items()) if n.startswith("test_")],
          "agent daemon (%s)" % args.backend)


if __name__ == "__main__":
    main()

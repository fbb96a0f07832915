#!/usr/bin/python3
"""The work after an upload, shared by two collectors on one PostgreSQL (the scale-out setup
behind a load balancer): 20 uploads through A, then every page and chart of those commits
through B in headless Chromium (no failed image, no failed request); a chart A redraws is
served anew by B; an upload's task survives the collector that stored it being killed with
SIGKILL right after its 2xx, before any worker ran it (a collector that only ingests,
postingest.workers 0), and another collector's workers do it; a task whose worker hung in
gnuplot when its collector was killed is taken over by another collector once the claim is
older than that collector's postingest.lease.

usage: test_postingest_cluster.py --node NODE --modules DIR --out DIR [--chromium PATH]"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "browser"))
import harness as h  # noqa: E402
import reports_helpers as rh  # noqa: E402
import live_site  # noqa: E402
from harness import check, eq  # noqa: E402

CELLS = 60
FAKE_GNUPLOT = os.path.join(HERE, "fake_gnuplot.py")


class S:
    pass


def setup(args):
    S.args = args
    S.pg = h.Postgres().start()
    S.db = h.Database("postgres", S.pg)
    S.a = h.Collector(S.db.url, config=rh.ONE_RUN_DECIDES).start()
    S.b = h.Collector(S.db.url, config=rh.ONE_RUN_DECIDES).start()
    S.admin = S.a.token("admin")


def get(col, path, **kw):
    return col.request("GET", path, **kw)


def page(col, path):
    r = get(col, path)
    eq(r.status, 200, "%s: %r" % (path, r))
    return r.body.decode()


def section(text, host):
    at = text.find('<section class="host"><h2><a href="/hosts/%s">' % host)
    check(at >= 0, "no section of %s" % host)
    return text[at:text.find("</section>", at)]


def row_verdict(text, host, cell):
    sec = section(text, host)
    at = sec.find("<tr><td><code>%s</code>" % cell)
    check(at >= 0, "no row %s on %s" % (cell, host))
    m = re.search(r'class="verdict v-([a-z]+)"', sec[at:sec.find("</tr>", at)])
    return m.group(1) if m else None


def check_chart(col, path):
    """GETs a chart file: 200 with the type of its extension."""
    r = get(col, path)
    eq(r.status, 200, "%s on :%d: %r" % (path, col.port, r))
    if path.endswith(".svg"):
        eq(r.headers.get("content-type"), "image/svg+xml", path)
        check(b"<svg" in r.body[:2000], "an SVG: %s" % path)
    else:
        eq(r.headers.get("content-type"), "image/png", path)
        check(r.body.startswith(b"\x89PNG\r\n\x1a\n"), "a PNG: %s" % path)
    return r.body


def chart_files(site, sha):
    return [p for svg in rh.commit_charts(site, sha) for p in (svg, svg[:-4] + ".png")]


def wait_for(what, fn, timeout=60):
    deadline = time.time() + timeout
    while not fn():
        check(time.time() < deadline, "%s: not within %d s" % (what, timeout))
        time.sleep(0.1)


def upload(col, doc, token):
    r = col.request("POST", "/api/v1/results", doc, token=token)
    eq(r.status, 201, r)


def regressed_doc(host, sha, seed):
    doc = h.make_doc(host=host, commit=sha, cells=CELLS, seed=seed,
                     commit_time="2026-11-27T09:00:00Z",
                     started_at="2026-11-27T10:00:00.000000Z")
    rh.regress(doc)
    return doc


# ---- 20 uploads through A, every page and chart through B ----

def test_uploads_through_a_pages_through_b():
    S.site = rh.load(S.a, n_hosts=4, n_commits=5, cells=CELLS)
    h.wait_for_postingest(S.b.port, timeout=120)  # every task, whichever collector ran it
    gauges = h.postingest_gauges(S.b.port)
    eq(gauges["tasks_dead"], 0, "no task given up")
    # every chart file of every commit, and every host's trends, served by B
    paths = [p for sha in S.site.commits for p in chart_files(S.site, sha)]
    paths += [p for svg in rh.trend_charts(S.site) for p in (svg, svg[:-4] + ".png")]
    for p in paths:
        check_chart(S.b, "/" + p)
    print("     %d chart files served by B" % len(paths))
    # B's pages show every chart (none pending) and the cached verdicts
    newest = S.site.commits[-1]
    text = page(S.b, "/commits/" + newest)
    check("chart not drawn yet" not in text, "a chart pending on B")
    eq(row_verdict(text, S.site.hosts[0], rh.REGRESSED_CELL), "regressed", "cached verdict")
    # the same pages in Chromium: every image loads, every link resolves, nothing fails
    path = os.path.join(h.tempdir(), "manifest.json")
    with open(path, "w") as f:
        json.dump(live_site.manifest(S.b, S.site), f, indent=1)
    rc = subprocess.run([S.args.node, os.path.join(HERE, "..", "browser", "check_pages.js"),
                         "--modules", S.args.modules, "--live-manifest", path, "--out",
                         os.path.join(S.args.out, "b"), "--chromium", S.args.chromium],
                        timeout=600).returncode
    eq(rc, 0, "check_pages.js on collector B")
    cache = [l for l in get(S.b, "/metrics").body.decode().splitlines()
             if l.startswith("atomwatch_chart_cache_files ")]
    check(cache and int(cache[0].split()[1]) > 0, "B serves from its cache: %s" % cache)


def test_chart_redrawn_elsewhere_is_served_anew():
    # B has served the trend of host-0 (cached); a new upload through A redraws it
    trend = "/" + rh.trend_charts(S.site)[0]
    before = check_chart(S.b, trend)
    sha = rh.commit_sha(0xa11ce, len(S.site.commits))
    doc = h.make_doc(host=S.site.hosts[0], commit=sha, cells=CELLS, seed=777,
                     commit_time="2026-11-20T09:00:00Z",
                     started_at="2026-11-20T10:00:00.000000Z")
    upload(S.a, doc, S.admin)
    h.wait_for_postingest(S.b.port, timeout=120)
    after = check_chart(S.b, trend)
    check(after != before, "B still serves the trend drawn before the upload")
    eq(after, check_chart(S.a, trend), "A and B serve the same trend")


# ---- a collector killed right after its 2xx ----

def test_task_survives_a_killed_collector():
    # Nothing but the ingesting collector runs: no worker anywhere can run the task before
    # the kill.
    eq(S.a.stop(), 0)
    eq(S.b.stop(), 0)
    ingest = h.Collector(S.db.url,
                         config=rh.ONE_RUN_DECIDES + "postingest:\n  workers: 0\n").start()
    sha = rh.commit_sha(0xdead, 1)
    host = S.site.hosts[2]  # one whose baseline holds no regression (host 0's newest has one)
    upload(ingest, regressed_doc(host, sha, 4242), S.admin)
    ingest.kill9()
    # the task outlived it, waiting in the database
    idle = h.Collector(S.db.url, config=rh.ONE_RUN_DECIDES + "postingest:\n  workers: 0\n").start()
    eq(h.postingest_gauges(idle.port)["tasks"], 1, "the task of the killed collector's upload")
    eq(idle.stop(), 0)
    # another collector's workers do it: verdict cached, every chart drawn and served by it
    S.b = h.Collector(S.db.url, config=rh.ONE_RUN_DECIDES).start()
    h.wait_for_postingest(S.b.port, timeout=120)
    text = page(S.b, "/commits/" + sha)
    eq(row_verdict(text, host, rh.REGRESSED_CELL), "regressed", "cached verdict")
    check("v-fail" in section(text, host), "the host fails")
    check("chart not drawn yet" not in text, "a chart pending")
    srcs = re.findall(r'<img src="([^"]+)"', text)
    eq(len(srcs), 2, "heat map and the host's compare chart")
    for src in srcs:
        check_chart(S.b, src)
    d = "/charts/commits/%s/hosts/%s/" % (sha, host)
    for name in ("percpu.svg", "percpu.png", "contention-stadd.svg", "compare-main.png"):
        check_chart(S.b, d + name)


def test_hung_worker_taken_over_after_its_lease():
    # A collector whose only worker hangs in gnuplot while it holds the task is killed; the
    # next collector takes the task over once the claim is older than its lease.
    eq(S.b.stop(), 0)
    hung = h.Collector(S.db.url, config=rh.ONE_RUN_DECIDES
                       + "postingest:\n  workers: 1\n  gnuplot: %s\n"
                       "  timeout: 600s\n" % FAKE_GNUPLOT).start()
    sha = rh.commit_sha(0xdead, 2)
    host = S.site.hosts[1]
    upload(hung, regressed_doc(host, sha, 4343), S.admin)
    wait_for("the hung collector claims the task",
             lambda: h.postingest_gauges(hung.port)["tasks_running"] == 1)
    t_claim = time.time()
    time.sleep(0.5)
    eq(h.postingest_gauges(hung.port)["tasks_running"], 1, "still hung")
    drawn = [f for _, _, files in os.walk(os.path.join(hung.dir, "data", "charts"))
             for f in files if f.endswith((".svg", ".png"))]
    eq(drawn, [], "the hung worker drew nothing")
    hung.kill9()
    S.b = h.Collector(S.db.url, config=rh.ONE_RUN_DECIDES + "postingest:\n  lease: 2s\n").start()
    path = "/charts/commits/%s/hosts/%s/compare-main.svg" % (sha, host)
    h.wait_for_chart(S.b.port, path, timeout=60)
    took = time.time() - t_claim
    h.wait_for_postingest(S.b.port, timeout=120)
    check(took >= 1.9, "taken over %.1fs after the claim, before the lease ran out" % took)
    text = page(S.b, "/commits/" + sha)
    eq(row_verdict(text, host, rh.REGRESSED_CELL), "regressed", "cached verdict")
    check("chart not drawn yet" not in text, "a chart pending")
    for src in re.findall(r'<img src="([^"]+)"', text):
        check_chart(S.b, src)
    m = re.search(r'atomwatch_postingest_tasks_total\{outcome="done"\} (\d+)',
                  get(S.b, "/metrics").body.decode())
    check(m and int(m.group(1)) >= 1, "B ran it")
    print("     taken over %.1fs after the hung worker's claim (lease 2s)" % took)


def test_stops_cleanly():
    eq(S.b.stop(), 0)
    check("stopped" in S.b.logs(), S.b.logs())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--node", default="node")
    ap.add_argument("--modules", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    setup(args)
    tests = [(n, f) for n, f in globals().items() if n.startswith("test_")]
    h.run(tests, "post-ingest cluster (postgres)")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The reports served by a real collector, against SQLite or a real PostgreSQL: charts drawn
by the post-ingest workers after uploads (polled, with a bound; every waiting verdict cached
before the first chart is drawn), the HTML pages with their security
headers and tables, chart files with the right types, refused paths and names (traversal,
sidecars, symlinks, FIFOs, bad hosts and commits), hostile labels shown as text, a commit page
that shows its first run's every cell after a re-measurement of two of them, and the `render`
and `export` commands (every link of the export resolves to a file).

usage: test_reports_web.py --backend sqlite|postgres"""

import argparse
import datetime
import json
import os
import re
import signal
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import reports_helpers as rh  # noqa: E402
from harness import check, eq  # noqa: E402

CELLS = 60  # every op on CPUs 0-2, the readers and the contention grid on CPU 0


class Suite:
    pass


S = Suite()


def setup(backend):
    S.backend = backend
    S.pg = h.Postgres().start() if backend == "postgres" else None
    S.db = h.Database(backend, S.pg)
    S.col = h.Collector(S.db.url, config=rh.ONE_RUN_DECIDES).start()
    S.data = os.path.join(S.col.dir, "data")
    # four commits: the newest judged against three runs per host, the fewest from which one
    # run's regression is significant over the host's cells (from two it is inconclusive)
    S.site = rh.load(S.col, n_hosts=4, n_commits=4, cells=CELLS)


def get(path, **kw):
    return S.col.request("GET", path, **kw)


def q(s):
    return urllib.parse.quote(s, safe="")


def check_html(r, what):
    eq(r.status, 200, "%s: %r" % (what, r))
    eq(r.headers.get("content-type"), "text/html; charset=utf-8", what)
    csp = r.headers.get("content-security-policy", "")
    check("default-src 'none'" in csp and "script-src" not in csp, "%s: CSP %r" % (what, csp))
    eq(r.headers.get("x-content-type-options"), "nosniff", what)
    check(r.body.startswith(b"<!DOCTYPE html>"), what)
    return r.body.decode()


def rows(text, table):
    """Rows in the body of the first <table class="table">."""
    at = text.find('<table class="%s">' % table)
    check(at >= 0, "no table %s" % table)
    body = text[at:text.find("</table>", at)]
    body = body[body.find("<tbody>"):]
    return body.count("<tr>")


def section(text, host):
    at = text.find('<section class="host"><h2><a href="/hosts/%s">' % host)
    check(at >= 0, "no section of %s" % host)
    return text[at:text.find("</section>", at)]


def row(text, host, cell):
    """The row of `cell` in the table of `host` on a commit page."""
    sec = section(text, host)
    at = sec.find("<tr><td><code>%s</code>" % cell)
    check(at >= 0, "no row %s on %s" % (cell, host))
    return sec[at:sec.find("</tr>", at)]


def row_verdict(text, host, cell):
    """The verdict shown for `cell` in the table of `host` on a commit page."""
    m = re.search(r'class="verdict v-([a-z-]+)"', row(text, host, cell))
    return m.group(1) if m else None


def row_numbers(text, host, cell):
    """The baseline and head p50 shown for `cell` (None for a dash)."""
    tds = re.findall(r'<td class="num">([^<]*)</td>', row(text, host, cell))
    return [None if v == "&ndash;" else float(v) for v in tds[:2]]


# ---- charts after uploads ----

def test_charts_follow_uploads():
    paths = [p for sha in S.site.commits for p in rh.commit_charts(S.site, sha)]
    waited = rh.wait_for_files(S.data, paths + rh.trend_charts(S.site), timeout=60)
    print("     %d charts and their trends ready %.2fs after the wait began"
          % (len(paths), waited))
    # nothing half-written is left behind
    for d, _, files in os.walk(os.path.join(S.data, "charts")):
        for f in files:
            check(not f.endswith(".tmp"), "temp file left: %s" % os.path.join(d, f))


def test_pages():
    site = S.site
    text = check_html(get("/"), "overview")
    eq(rows(text, "hosts"), len(site.hosts), "hosts on the overview")
    eq(rows(text, "commits"), len(site.commits), "commits on the overview")
    for sha in site.commits[1:]:
        check("/compare?base=%s&amp;head=%s" % (site.commits[site.commits.index(sha) - 1], sha)
              in text, "compare link of %s" % sha)
    for host in site.hosts:
        text = check_html(get("/hosts/" + host), host)
        eq(rows(text, "runs"), len(site.commits), "runs of %s" % host)
        check("chart not drawn yet" not in text, "%s: a chart is pending" % host)
        eq(text.count("<img "), len(rh.TREND_GROUPS) + 2, "charts of %s" % host)
    for sha in site.commits:
        text = check_html(get("/commits/" + sha), sha)
        eq(rows(text, "cells"), CELLS, "cells of the first host of %s" % sha)
        eq(text.count('<section class="host">'), len(site.hosts), "hosts of %s" % sha)
        eq(text.count("<tr><td><code>"), CELLS * len(site.hosts), "cells of %s" % sha)
        check("chart not drawn yet" not in text, "%s: a chart is pending" % sha)
        eq(text.count("<img "), 1 + len(site.hosts), "charts of %s" % sha)
    eq(row_verdict(text, site.hosts[0], rh.REGRESSED_CELL), "regressed", "the regressed cell")
    # every cell shows its baseline and head, listed by the verdict or not
    for host in site.hosts:
        for cell in ("op=plain cpu=0", "op=stadd cpu=2", rh.REGRESSED_CELL):
            base, head = row_numbers(text, host, cell)
            check(base and head, "%s %s: baseline %s, head %s" % (host, cell, base, head))
    base, head = row_numbers(text, site.hosts[0], rh.REGRESSED_CELL)
    check(head > 2.5 * base, "the regression shows: %s -> %s" % (base, head))
    # a duty cell's gross time per iteration: its head plus the duty's own time (the
    # documents' baseline_ns, 0.312), in a column the table has for it; other cells a dash
    sec = section(text, site.hosts[0])
    check("Head gross per iteration (ns)</th>" in sec, "no gross column")
    duty = re.findall(r'<td class="num">([^<]*)</td>',
                      row(text, site.hosts[0], "op=stadd cpu=0 contender=1 c=10 d=100"))
    plain = re.findall(r'<td class="num">([^<]*)</td>', row(text, site.hosts[0], "op=plain cpu=0"))
    eq(plain[-1], "&ndash;", "no gross time for a cell without duty")
    head, gross = float(duty[1]), float(duty[-1])
    check(abs(gross - (head + 0.312)) <= 0.01 * gross, "gross %s = head %s + 0.312" % (gross, head))
    check("v-fail" in section(text, site.hosts[0]), "the host with the regression fails")
    text = check_html(get("/compare?base=%s&head=%s" % (site.commits[0], site.commits[2])),
                      "compare")
    eq(text.count("<tr><td><code>"), CELLS * len(site.hosts), "cells compared")
    # HEAD is GET without the body
    r = S.col.request("HEAD", "/commits/" + site.commits[0])
    eq(r.status, 200, "HEAD")
    eq(r.body, b"", "HEAD body")


def test_compare_pair_drawn_on_request():
    # a pair nobody linked or asked for (backwards in time): the page asks the workers for
    # its charts
    site = S.site
    path = "/compare?base=%s&head=%s" % (site.commits[2], site.commits[0])
    charts = ["charts/commits/%s/hosts/%s/compare-%s.svg" % (site.commits[0], host,
                                                           site.commits[2])
              for host in site.hosts]
    check(not os.path.exists(os.path.join(S.data, charts[0])), "drawn before anyone asked")
    check("chart not drawn yet" in check_html(get(path), "compare"), "pending at first")
    rh.wait_for_files(S.data, charts, timeout=30)
    text = check_html(get(path), "compare")
    check("chart not drawn yet" not in text, "pending chart after drawing")
    h.wait_for_postingest(S.col.port)
    eq(h.postingest_gauges(S.col.port)["charts_asked"], 0, "every chart asked for drawn")


def test_hostile_label_is_text():
    text = check_html(get("/"), "overview")
    check(rh.HOSTILE_ESCAPED in text, "escaped label")
    check(rh.HOSTILE_LABEL not in text and "<script" not in text, "raw label")
    check("<img src=x" not in text and "&lt;img src=x onerror" in text, "escaped CPU model")
    text = check_html(get("/hosts/" + S.site.hosts[2]), "host")
    check(rh.HOSTILE_ESCAPED in text and "<script" not in text, "host page label")
    text = check_html(get("/hosts/" + S.site.hosts[3]), "host")
    check("<img src=x" not in text and "&lt;img src=x onerror" in text, "host page model")


def test_chart_files():
    sha, host = S.site.commits[1], S.site.hosts[1]
    base = "/charts/commits/%s/hosts/%s/" % (sha, host)
    r = get(base + "compare-main.svg")
    eq(r.status, 200, r)
    eq(r.headers.get("content-type"), "image/svg+xml")
    check("sandbox" in r.headers.get("content-security-policy", ""), r.headers)
    eq(r.headers.get("x-content-type-options"), "nosniff")
    check(b"<svg" in r.body[:2000], "an SVG")
    r = get(base + "percpu.png")
    eq(r.status, 200, r)
    eq(r.headers.get("content-type"), "image/png")
    check(r.body.startswith(b"\x89PNG\r\n\x1a\n"), "a PNG")
    eq(get("/favicon.svg").headers.get("content-type"), "image/svg+xml")
    # every <img> of a commit page is served
    text = get("/commits/" + sha).body.decode()
    srcs = re.findall(r'<img src="([^"]+)"', text)
    eq(len(srcs), 1 + len(S.site.hosts), "images")
    for src in srcs:
        eq(get(src).status, 200, src)


def test_refused_paths():
    sha = S.site.commits[0]
    os.symlink("/etc/passwd", os.path.join(S.data, "charts", "commits", sha, "evil.svg"))
    os.mkfifo(os.path.join(S.data, "charts", "commits", sha, "fifo.svg"))
    for path, want in [
            ("/charts/../atomwatch.db", (400, 404)),
            ("/charts/commits/%2e%2e/%2e%2e/atomwatch.db", (400, 404)),
            ("/charts/commits/..%2F..%2Fetc/passwd.svg", (400, 404)),
            ("/charts/commits/%s/heatmap.hash" % sha, (404,)),
            ("/charts/commits/%s/hosts/%s/compare-main.cells.json" % (sha, S.site.hosts[0]),
             (404,)),
            ("/charts/commits/%s/.heatmap.svg" % sha, (404,)),
            ("/charts/commits/%s/evil.svg" % sha, (404,)),
            ("/charts/commits/%s/fifo.svg" % sha, (404,)),
            ("/charts/commits/%s/heatmap.svg%%00.png" % sha, (404,)),
            ("/charts/heatmap.svg", (404,)),
            ("/charts/", (404,)),
            ("/charts/commits/%s/nothing.svg" % sha, (404,)),
            ("/hosts/..", (400,)),
            ("/hosts/%3Cscript%3E", (400,)),
            ("/hosts/" + "x" * 65, (400,)),
            ("/hosts/no-such-host", (404,)),
            ("/commits/not-a-sha", (400,)),
            ("/commits/" + "0" * 40, (404,)),
            ("/compare?base=%s" % sha, (400,)),
            ("/compare?base=zz&head=%s" % sha, (400,)),
            ("/compare?base=%s&head=%s" % ("0" * 40, sha), (404,))]:
        r = get(path, timeout=10)
        check(r.status in want, "%s: got %d, want %s" % (path, r.status, want))
    eq(get("/", headers={"Authorization": "Bearer nonsense"}).status, 401, "bad token")
    eq(S.col.request("POST", "/").status, 405, "POST /")


def test_render_command():
    out = os.path.join(h.tempdir(), "render")
    sha = S.site.commits[1]
    r = S.col.cli("render", "--db", S.db.url, "--data-dir", out, "--commit", sha)
    check("4 host(s)" in r.stdout and "0 failed" in r.stdout, r.stdout)
    rh.wait_for_files(out, rh.commit_charts(S.site, sha) + rh.trend_charts(S.site), timeout=0)
    r = S.col.cli("render", "--db", S.db.url, "--data-dir", out, "--commit", "0" * 40,
                  check=False)
    eq(r.returncode, 1, r.stderr)
    check("no run of commit" in r.stderr, r.stderr)
    eq(S.col.cli("render", "--db", S.db.url, "--commit", sha, check=False).returncode, 2)
    eq(S.col.cli("render", "--db", S.db.url, "--data-dir", out, "--commit", "xyz",
                 check=False).returncode, 2)


def test_export_command():
    out = os.path.join(h.tempdir(), "site")
    r = S.col.cli("export", "--db", S.db.url, "--out", out)
    check(" 0 failed" in r.stdout, r.stdout)
    for rel in ["index.html", "favicon.svg"] + ["hosts/%s/index.html" % x for x in S.site.hosts] \
            + ["commits/%s/index.html" % c for c in S.site.commits]:
        check(os.path.isfile(os.path.join(out, rel)), rel)
    pages, links = rh.check_export(out)
    eq(pages, 1 + len(S.site.hosts) + 2 * len(S.site.commits) - 1, "pages")
    print("     export: %d pages, %d links, all resolve" % (pages, links))
    with open(os.path.join(out, "index.html"), encoding="utf-8") as f:
        text = f.read()
    check('http-equiv="Content-Security-Policy"' in text, "CSP in the export")
    check(rh.HOSTILE_ESCAPED in text and "<script" not in text, "escaped in the export")
    eq(S.col.cli("export", "--db", S.db.url, check=False).returncode, 2)


def test_no_workers():
    # render.workers 0 (the name of postingest.workers before it, still read, with a warning
    # naming file:line:col): pages still work, charts show as pending, nothing is drawn; the
    # upload's task waits in the database for a worker. A database of its own: on S.db, the
    # charts S.col drew are stored for every collector to serve.
    db = h.Database(S.backend, S.pg)
    col = h.Collector(db.url, config="render:\n  workers: 0\n").start()
    doc = h.make_doc(host="idle-host", commit=S.site.commits[0], cells=CELLS)
    eq(col.request("POST", "/api/v1/results", doc, token=col.token("admin")).status, 201)
    text = check_html(col.request("GET", "/commits/" + S.site.commits[0]), "no workers")
    check("chart not drawn yet" in text, "pending without workers")
    eq(h.postingest_gauges(col.port)["tasks"], 1, "the task waits for a worker")
    check("collector.yaml:2:3: 'render.workers' is deprecated; use 'postingest.workers'"
          in col.logs(), col.logs())
    eq(col.stop(), 0)
    check(not os.path.exists(os.path.join(col.dir, "data", "charts")), "nothing drawn")


def test_charts_off_keeps_verdicts():
    # postingest.charts off: the workers still cache each commit's verdict and the change
    # points, and draw nothing
    db = h.Database(S.backend, S.pg)
    col = h.Collector(db.url, config=rh.ONE_RUN_DECIDES + "postingest:\n  charts: off\n").start()
    site = rh.load(col, n_hosts=2, n_commits=4, cells=CELLS, tag=0xc4a27, hostile=False)
    h.wait_for_postingest(col.port)
    eq(db.count("verdicts"), 2 * 4, "a verdict per commit and host")
    newest = site.commits[-1]
    text = check_html(col.request("GET", "/commits/" + newest), "charts off")
    eq(row_verdict(text, site.hosts[0], rh.REGRESSED_CELL), "regressed", "the cached verdict")
    check("v-fail" in section(text, site.hosts[0]), "the host with the regression fails")
    check("chart not drawn yet" in text, "no charts")
    check("charts off" in col.logs(), col.logs())
    eq(col.stop(), 0)
    check(not os.path.exists(os.path.join(col.dir, "data", "charts")), "nothing drawn")


def test_verdicts_before_charts():
    # a flood of uploads is judged first and drawn after: with eight uploads' tasks waiting (a
    # collector without workers took them), one worker caches every verdict before it stores
    # a chart
    db = h.Database(S.backend, S.pg)
    ingest = h.Collector(db.url,
                         config=rh.ONE_RUN_DECIDES + "postingest:\n  workers: 0\n").start()
    site = rh.load(ingest, n_hosts=2, n_commits=4, cells=CELLS, tag=0xf100d, hostile=False)
    eq(ingest.stop(), 0)
    eq(db.count("verdicts"), 0, "nothing judged without workers")
    col = h.Collector(db.url,
                      config=rh.ONE_RUN_DECIDES + "postingest:\n  workers: 1\n").start()
    h.wait_for_postingest(col.port)
    eq(db.count("verdicts"), 2 * 4, "a verdict per commit and host")
    check(db.count("charts", "WHERE path LIKE '%%/trend-%%'") > 0, "the trends drawn")
    check(db.count("charts", "WHERE path LIKE 'charts/commits/%s/%%'" % site.commits[0]) > 0,
          "the first commit's charts drawn")
    eq(db.count("verdicts", "WHERE computed_at > (SELECT MIN(updated_at) FROM charts)"), 0,
       "verdicts cached after the first chart was stored")
    eq(col.stop(), 0)


def test_trends_rest():
    # postingest.trends_interval: a host's trends are drawn at once after a quiet spell, then
    # at most once per interval however many uploads arrive; the uploads' verdicts and their
    # commits' charts are not held up
    rest = 8.0  # longer than three verdicts take on any machine this runs on
    db = h.Database(S.backend, S.pg)
    col = h.Collector(db.url, config=rh.ONE_RUN_DECIDES
                      + "postingest:\n  workers: 1\n  trends_interval: 8s\n").start()
    host = "resting-0"
    token = col.token("agent", host)
    trend = "charts/hosts/%s/refs/main/trend-llsc.svg" % host
    stored = "SELECT updated_at FROM charts WHERE path = '%s'" % trend

    def upload(k):
        doc = h.make_doc(host=host, commit=rh.commit_sha(0x7e57, k), cells=CELLS, seed=900 + k,
                         commit_time="2026-11-%02dT09:00:00Z" % (k + 1),
                         started_at="2026-11-%02dT10:00:00.000000Z" % (k + 1))
        eq(col.request("POST", "/api/v1/results", doc, token=token).status, 201)

    def when(stamp):  # the store's UTC time, e.g. 2026-12-05T00:50:00.123456Z
        return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=datetime.timezone.utc).timestamp()

    upload(0)
    h.wait_for_postingest(col.port)
    first = db.value(stored)
    check(first is not None, "the trends drawn at once after the first upload")
    for k in (1, 2, 3):
        upload(k)
    seen, judged_at, judged_trend = [first], None, None
    deadline = time.time() + 60
    while h.postingest_gauges(col.port)["tasks"] != 0:
        now = db.value(stored)
        if now != seen[-1]:
            seen.append(now)
        if judged_at is None and db.count("verdicts") == 4:
            judged_at, judged_trend = time.time(), now
        check(time.time() < deadline, "post-ingest not done in 60 s: %s" % seen)
        time.sleep(0.05)
    if db.value(stored) != seen[-1]:
        seen.append(db.value(stored))
    eq(db.count("verdicts"), 4, "every upload judged")
    eq(len(seen), 2, "one redraw of the trends for the three uploads: %s" % seen)
    check(when(seen[1]) >= when(first) + rest,
          "redrawn %.2f s after the first drawing, within the %.0f s rest"
          % (when(seen[1]) - when(first), rest))
    if judged_at is not None and judged_at < when(first) + rest - 0.5:
        eq(judged_trend, first, "the verdicts cached while the trends rest")
    eq(db.count("tasks", "WHERE kind = 'trends' AND idle = 1"), 1, "the trends rest, idle")
    eq(col.stop(), 0)


def test_disturbed_run_shown():
    # a head run 1.5 times slower in every cell and in its reference kernel (a host's slow
    # spell, nothing changed) on a host whose history had two such spells, its cells keeping
    # time with the reference: its commit page names the run and the reference's factor, and
    # no cell of it is regressed (the reference adjusts a cell only where the history shows
    # the cell following it: after a history without a spell, the same head regresses)
    db = h.Database(S.backend, S.pg)
    col = h.Collector(db.url, config=rh.ONE_RUN_DECIDES + "postingest:\n  charts: off\n").start()
    host = "disturbed-0"

    def upload(k, scale, host=host, tag=0xd15):
        doc = h.make_doc(host=host, commit=rh.commit_sha(tag, k), cells=CELLS, seed=500 + k,
                         scale=scale, commit_time="2026-11-%02dT09:00:00Z" % (k + 1),
                         started_at="2026-11-%02dT10:00:00.000000Z" % (k + 1))
        rng = h.random.Random(k)
        doc["reference"] = {"kernel": "mulchain-v1", "unit": "ns",
                            "values": [round(0.95 * scale * rng.uniform(0.997, 1.003), 6)
                                       for _ in doc["cells"]]}
        r = col.request("POST", "/api/v1/results", doc, token=col.token("agent", host))
        eq(r.status, 201, "upload %d: %r" % (k, r))
        return doc

    for k in range(8):
        upload(k, 1.5 if k in (2, 5) else 1.0)
        upload(k, 1.0, host="steady-0", tag=0xd16)
    head = upload(8, 1.5)
    steady = upload(8, 1.5, host="steady-0", tag=0xd16)
    h.wait_for_postingest(col.port)
    sha = head["commit"]
    text = check_html(col.request("GET", "/commits/" + sha), "disturbed commit")
    sec = section(text, host)
    gate = col.request("GET", "/api/v1/gate?project=linux&commit=%s" % sha).json()
    m = re.search(r'<p class="disturbed"><strong>Disturbed run:</strong> head run '
                  r'<code>([^<]*)</code> \(reference mulchain-v1 &times;([0-9.]+)\) measured '
                  r'while the machine itself was unusually slow or fast', sec)
    check(m, "no disturbed run on the page: %s\ngate: %s" % (sec[:1500], gate))
    eq(m.group(1), head["run_id"], "the disturbed run")
    check(1.4 < float(m.group(2)) < 1.6, "a factor of about 1.5: %s" % m.group(0))
    eq(sec.count('<p class="disturbed">'), 1, "the run named once")
    g = gate["hosts"][0]
    check(g["disturbed"] and g["runs"][0]["disturbed"], "the gate says so too: %s" % g["runs"])
    regressed = [c for c in re.findall(r"<tr><td><code>([^<]*)</code>", sec)
                 if row_verdict(text, host, c) == "regressed"]
    eq(regressed, [], "a change the reference explains is no regression (gate: %s)"
       % json.dumps([c for hh in gate.get("hosts", []) for c in hh.get("cells", [])
                     if c.get("verdict") == "regressed"])[:3000])
    check("v-fail" not in sec[:sec.find("</h2>")], "the host does not fail")
    # the same head on a host that never had a spell: named as disturbed, and every cell
    # slower by as much as the reference kernel, the agent's own code that no commit changes,
    # is the host's change, not the commit's (docs/detection.md, part 12): host changed
    text = check_html(col.request("GET", "/commits/" + steady["commit"]), "steady commit")
    sec = section(text, "steady-0")
    check("head run <code>%s</code> (reference mulchain-v1 &times;1.5" % steady["run_id"] in sec,
          "no disturbed run on the page: %s" % sec[:1500])
    moved = [c for c in re.findall(r"<tr><td><code>([^<]*)</code>", sec)
             if row_verdict(text, "steady-0", c) == "host-changed"]
    eq(len(moved), CELLS, "every cell the host's without a spell in the history")
    g = col.request("GET", "/api/v1/gate?project=linux&commit=%s" % steady["commit"]).json()
    check("the control moved +50" in (g["hosts"][0]["host_changed"] or ""), g["hosts"][0])
    check("v-fail" not in sec[:sec.find("</h2>")], "the host does not fail")
    eq(col.stop(), 0)


def test_confirmation_keeps_the_table():
    # a commit's first run and then a re-measurement of two of its cells (confirmation_of the
    # first, as `atomwatch-agent run --confirm` uploads): the commit page still shows every cell
    # of the first run with its verdict, not the two cells the newest run holds
    db = h.Database(S.backend, S.pg)
    col = h.Collector(db.url, config=rh.ONE_RUN_DECIDES + "postingest:\n  charts: off\n").start()
    site = rh.load(col, n_hosts=1, n_commits=4, cells=CELLS, tag=0xc0f, hostile=False,
                   prefix="confirmed")
    host, sha = site.hosts[0], site.commits[-1]
    first = col.request("GET", "/api/v1/runs?host=%s&commit=%s" % (host, sha),
                        token=col.token("ci")).json()["runs"]
    eq(len(first), 1, first)
    doc = h.make_doc(host=host, commit=sha, cells=CELLS, seed=4242,
                     commit_time="2026-11-04T09:00:00Z",
                     started_at="2026-11-04T11:00:00.000000Z")
    rh.regress(doc)
    doc["cells"] = [c for c in doc["cells"] if c["key"] in (rh.REGRESSED_CELL, "op=plain cpu=0")]
    eq(len(doc["cells"]), 2, "the re-measured cells")
    doc["confirmation_of"] = first[0]["run_id"]
    r = col.request("POST", "/api/v1/results", doc, token=col.token("agent", host))
    eq(r.status, 201, r)
    h.wait_for_postingest(col.port)
    text = check_html(col.request("GET", "/commits/" + sha), "a confirmed commit")
    sec = section(text, host)
    eq(sec.count("<tr><td><code>"), CELLS, "every cell of the first run")
    gate = col.request("GET", "/api/v1/gate?project=linux&commit=%s&all=1" % sha).json()
    cell = [c for c in gate["hosts"][0]["cells"] if c["key"] == rh.REGRESSED_CELL][0]
    eq(cell["head_runs"], 2, "the regressed cell judged on both runs: %s" % cell)
    # (one re-measurement against a history of three confirms nothing: each run is as likely
    # as one in five to lie beyond the history's furthest; the page says what the gate says)
    eq(row_verdict(text, host, rh.REGRESSED_CELL), cell["verdict"].replace("_", "-"),
       "the page's verdict of the re-measured cell: %s" % cell)
    check("op=stadd cpu=2" in sec, "a cell the re-measurement did not measure")
    eq(col.stop(), 0)


def test_shutdown():
    eq(S.col.stop(signal.SIGTERM), 0, "exit status")
    check("stopped" in S.col.logs(), S.col.logs())
    check("chart queue full" not in S.col.logs(), "no task was dropped")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=("sqlite", "postgres"), required=True)
    args = ap.parse_args()
    setup(args.backend)
    tests = [(name, fn) for name, fn in globals().items() if name.startswith("test_")]
    h.run(tests, "reports web (%s)" % args.backend)


if __name__ == "__main__":
    main()

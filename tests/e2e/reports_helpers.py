"""Helpers of the report tests and benches: a running collector loaded with several hosts and
commits (a host label and a CPU model hostile, one cell of the newest commit regressed on one
host), the chart
files that must follow, waiting for them, and a check that every link of an exported site
resolves to a file."""

import html.parser
import os
import time
import urllib.parse

import harness as h

HOSTILE_LABEL = "<script>alert(1)</script>\"'"
HOSTILE_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;"
HOSTILE_MODEL = "Neoverse-V2 \"><img src=x onerror=window.__awPwned=1>"
REGRESSED_CELL = "op=llsc cpu=0"
TREND_GROUPS = ("llsc", "lse", "prefetch", "cas", "c11", "reader-srcu", "reader-srcu_fast",
                "reader-srcu_nmisafe")


class Site:
    """What load() uploaded: hosts, commits (oldest first) and cells per run."""

    def __init__(self, hosts, commits, cells):
        self.hosts = hosts
        self.commits = commits
        self.cells = cells
        self.last_201 = None  # time.monotonic() of the last upload's reply


def commit_sha(tag, k):
    return "%08x%032x" % (tag, k + 1)


# The pages' tests judge the newest commit from one run per host: one run decides there
# (detection.confirm_runs: 1), as before confirmation; test_agent_confirm.py and test_ci_gate.py test the default.
ONE_RUN_DECIDES = "detection:\n  confirm_runs: 1\n"


def regress(doc, factor=3.0):
    """Makes REGRESSED_CELL `factor` times slower in doc."""
    for cell in doc["cells"]:
        if cell["key"] == REGRESSED_CELL:
            for stat in ("min", "p50", "p95", "p99", "max", "mean", "stddev", "ci_lo",
                         "ci_hi"):
                cell[stat] = round(cell[stat] * factor, 6)


def load(col, n_hosts=4, n_commits=3, cells=60, tag=0xa11ce, hostile=True, runs_per_commit=1,
         prefix="host"):
    """Uploads n_commits commits on main, each measured on every host; host 2 carries the
    hostile label, host 3 the hostile CPU model; the newest commit regresses REGRESSED_CELL on
    the first host."""
    hosts = ["%s-%d" % (prefix, i) for i in range(n_hosts)]
    commits = [commit_sha(tag, k) for k in range(n_commits)]
    site = Site(hosts, commits, cells)
    tokens = {host: col.token("agent", host) for host in hosts}
    for k, sha in enumerate(commits):
        for i, host in enumerate(hosts):
            for r in range(runs_per_commit):
                doc = h.make_doc(host=host, commit=sha, cells=cells,
                                 seed=k * 1000 + i * 10 + r,
                                 commit_time="2026-11-%02dT09:00:00Z" % (k % 28 + 1),
                                 started_at="2026-11-%02dT10:%02d:00.000000Z"
                                 % (k % 28 + 1, r))
                if hostile and i == 2:
                    doc["host"]["labels"]["rack"] = HOSTILE_LABEL
                if hostile and i == 3:
                    doc["host"]["cpu_model"] = HOSTILE_MODEL
                if k == n_commits - 1 and i == 0:
                    regress(doc)
                resp = col.request("POST", "/api/v1/results", doc, token=tokens[host])
                if resp.status != 201:
                    raise AssertionError("upload %s on %s: %r" % (sha, host, resp))
                site.last_201 = time.monotonic()
    return site


def commit_charts(site, sha, base_ref="main", contention=True):
    """The chart files (SVG) of one commit: heat map, and per host compare, per-CPU and
    contention, plus the compare against the commit before it (as the overview lists them)."""
    paths = ["charts/commits/%s/heatmap.svg" % sha]
    k = site.commits.index(sha)
    for host in site.hosts:
        d = "charts/commits/%s/hosts/%s/" % (sha, host)
        paths += [d + "compare-%s.svg" % base_ref, d + "percpu.svg"]
        if contention:
            paths.append(d + "contention-stadd.svg")
        if k > 0:
            paths.append(d + "compare-%s.svg" % site.commits[k - 1])
    return paths


def trend_charts(site, ref="main"):
    return ["charts/hosts/%s/refs/%s/trend-%s.svg" % (host, ref, g)
            for host in site.hosts for g in TREND_GROUPS]


def wait_for_files(root, paths, timeout):
    """Polls until every path (and its PNG twin) exists under root; returns the time waited.
    Raises with the missing files after `timeout` seconds."""
    t0 = time.monotonic()
    while True:
        missing = [p for p in paths for q in (p, p[:-4] + ".png")
                   if not os.path.exists(os.path.join(root, q))]
        if not missing:
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise AssertionError("after %.0fs, %d chart files missing, e.g. %s"
                                 % (timeout, len(missing), missing[:5]))
        time.sleep(0.02)


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value is not None:
                self.links.append(value)


def page_links(text):
    p = _Links()
    p.feed(text)
    return p.links


def check_export(root):
    """Every href and src of every exported page resolves to a file of the export; returns
    (pages, links checked)."""
    root = os.path.abspath(root)
    pages, checked, broken = 0, 0, []
    for d, _, files in os.walk(root):
        for name in files:
            if not name.endswith(".html"):
                continue
            pages += 1
            page = os.path.join(d, name)
            with open(page, encoding="utf-8") as f:
                links = page_links(f.read())
            for link in links:
                url = urllib.parse.urlsplit(link)
                if url.scheme or url.netloc or link.startswith("/"):
                    broken.append("%s: leaves the export: %s" % (page, link))
                    continue
                target = os.path.normpath(os.path.join(d, urllib.parse.unquote(url.path)))
                if not target.startswith(root + os.sep):
                    broken.append("%s: outside the export: %s" % (page, link))
                elif os.path.isdir(target):
                    target = os.path.join(target, "index.html")
                checked += 1
                if not os.path.isfile(target):
                    broken.append("%s: %s -> no file %s" % (page, link, target))
    if broken:
        raise AssertionError("%d broken links:\n%s" % (len(broken), "\n".join(broken[:20])))
    return pages, checked

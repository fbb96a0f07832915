#!/usr/bin/python3
"""The reports of a LIVE collector in headless Chromium: starts the real collector (SQLite, temp
data dir, ephemeral port) through the e2e harness, uploads four hosts x four commits on main
(a hostile host label and CPU model; the newest commit regresses one cell on one host), waits
for the post-ingest workers' charts, writes the manifest of what each page must show, and runs
check_pages.js on it. Screenshots land in --out/screenshots.

usage: live_site.py --node NODE --modules DIR --out DIR [--chromium PATH]"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import harness as h  # noqa: E402
import reports_helpers as rh  # noqa: E402

CELLS = 60


def manifest(col, site, ab_id=None):
    hosts, commits = site.hosts, site.commits
    pages = [{
        "path": "", "images": 0,
        "rows": {"table.hosts tbody tr": len(hosts), "table.commits tbody tr": len(commits)},
        "texts": ["rack=" + rh.HOSTILE_LABEL, rh.HOSTILE_MODEL],
        "clicks": [{"selector": "table.hosts tbody a[href^='/hosts/']",
                    "h1": "Host " + hosts[0]},
                   {"selector": "table.commits tbody a[href^='/commits/']",
                    "h1": "Commit " + commits[-1]},
                   {"selector": "table.commits tbody a[href^='/compare']", "h1": "Compare"}],
    }]
    for host in hosts:
        pages.append({
            "path": "hosts/" + host,
            "images": len(rh.TREND_GROUPS) + 2,  # trends, per CPU, contention
            "rows": {"table.runs tbody tr": len(commits)},
            "texts": [host] + (["rack=" + rh.HOSTILE_LABEL] if host == hosts[2] else []),
            "clicks": [{"selector": "table.runs tbody a[href^='/commits/']",
                        "h1": "Commit " + commits[-1]}],
        })
    for k, sha in enumerate(commits):
        page = {
            "path": "commits/" + sha,
            "images": 1 + len(hosts),  # heat map, one compare chart per host
            "rows": {"table.cells tbody tr": CELLS * len(hosts), "section.host": len(hosts)},
            "texts": [rh.REGRESSED_CELL],
            "clicks": [{"selector": "section.host h2 a", "h1": "Host " + hosts[0]}],
        }
        if k == len(commits) - 1:
            page["verdicts"] = [{"host": hosts[0], "cell": rh.REGRESSED_CELL,
                                 "verdict": "regressed"}]
            if ab_id:
                page["rows"]["ul.ab li"] = 1
                page["clicks"].append({"selector": "ul.ab a[href^='/ab/']", "h1": "A/B"})
        pages.append(page)
        if k:
            pages.append({
                "path": "compare?base=%s&head=%s" % (commits[k - 1], sha),
                "images": 1 + len(hosts),
                "rows": {"table.cells tbody tr": CELLS * len(hosts),
                         "section.host": len(hosts)},
                "texts": [rh.REGRESSED_CELL],
            })
    # the newest commit's interleaved A/B document: its chart and table of two cells
    if not ab_id:
        return {"base": "http://127.0.0.1:%d/" % col.port, "pages": pages}
    pages.append({
        "path": "ab/" + ab_id,
        "images": 1,
        "rows": {"table.cells tbody tr": 2},
        "texts": ["regressed", "subject=subj op=op cpu=0", "A/A interval"],
        "clicks": [{"selector": "h1 a[href^='/commits/%s']" % commits[-1],
                    "h1": "Commit " + commits[-1]}],
    })
    return {"base": "http://127.0.0.1:%d/" % col.port, "pages": pages}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--node", default="node")
    ap.add_argument("--modules", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()

    db = h.Database("sqlite")
    col = h.Collector(db.url, config=rh.ONE_RUN_DECIDES).start()  # one run decides here
    site = rh.load(col, n_hosts=4, n_commits=4, cells=CELLS)
    doc = h.make_ab_doc(site.hosts[0], "linux", site.commits[-2], site.commits[-1], ratio=1.05,
                        ops=("op", "op2"))
    r = col.request("POST", "/api/v1/results", doc, token=col.token("agent", site.hosts[0]))
    if r.status != 201:
        raise AssertionError("A/B upload: %r" % r)
    data = os.path.join(col.dir, "data")
    charts = [p for sha in site.commits for p in rh.commit_charts(site, sha)]
    charts += ["charts/ab/%s/ratios.svg" % doc["ab_id"], "charts/ab/%s/ratios.png" % doc["ab_id"]]
    waited = rh.wait_for_files(data, charts + rh.trend_charts(site), timeout=120)
    print("live_site: %d hosts x %d commits, charts ready after %.1fs"
          % (len(site.hosts), len(site.commits), waited), flush=True)
    path = os.path.join(h.tempdir(), "manifest.json")
    with open(path, "w") as f:
        json.dump(manifest(col, site, doc["ab_id"]), f, indent=1)
    rc = subprocess.run([args.node, os.path.join(HERE, "check_pages.js"), "--modules",
                         args.modules, "--live-manifest", path, "--out", args.out,
                         "--chromium", args.chromium], timeout=600).returncode
    if col.stop() != 0:
        print("live_site: the collector did not stop cleanly:\n" + col.logs())
        rc = rc or 1
    sys.exit(rc)


if __name__ == "__main__":
    main()

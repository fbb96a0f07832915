#!/usr/bin/python3
"""atomwatch-agent ab against the real collector: a subject in a git repository built at two
commits in worktrees of their own, each library loaded once per layout and measured in short
interleaved slices until the sequential test decides; the document is uploaded, judged (a head 40
adds slower is regressed, a head with an extra op reports it `new` and one without an op
`missing`) and served by GET /api/v1/ab/{id} and GET /api/v1/ab?project=&head=. Rounds carry
their level and layout; --layouts N spreads them over N layouts; the rounds and seconds stay
within --rounds and --budget-s. A document of the first shape (rounds without levels, layouts or
`measure`) is still accepted and judged. Fresh loads replace the live ones every few rounds, each
a layout of its own (--keep-loads keeps the first; a library that allows no more loads keeps
them and says so). --builds N (or the subject's ab_builds) builds each side N times with its code
shifted by $ATOMWATCH_LAYOUT_CFLAGS; a build that ignores them is warned of. Bad input: base ==
head without --aa, --rounds below 10, --builds 0, above 8 or above --layouts (from the option or
the config), --layouts 0 or above 16 or more than the library can be loaded (static TLS), --budget-s 0,
negative or not a number, a commit that does not exist or does not build, a library of another
ABI (exit status and the log's end; nothing uploaded), and A/B bodies with a bad field (400
naming it).

usage: test_agent_ab.py [--backend sqlite|postgres]"""

import argparse
import copy
import json

import jsonschema
import os
import platform
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_helpers as a  # noqa: E402
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

HOST = "agent-ab"

# One op whose serial chain is EXTRA adds longer per call (as bench/detect/subject_chain.c),
# optionally a second op, and the ABI it declares.
SUBJECT_C = r"""
#include <stdint.h>
#include "atomwatch/subject.h"
#define STR_(x) #x
#define STR(x) STR_(x)
static uint64_t carry = 1;
static void op(uint64_t *counter)
{
	uint64_t x = __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED) + carry, k = 3;
	__asm__ __volatile__(".rept 8\n\timul %1, %0\n\t.endr\n\t.rept " STR(EXTRA)
	                     "\n\tadd %1, %0\n\t.endr" : "+r"(x) : "r"(k) : "cc");
	carry = x;
}
static void op2(uint64_t *counter) { (*counter)++; }
#ifdef TLS
/* initial-exec TLS comes from the static TLS block, which holds only a few loads of this */
__thread char tls_block[256] __attribute__((tls_model("initial-exec")));
char *tls_use(void) { return tls_block; }
#endif
static const struct atomwatch_subject_op ops[] = {{"op", op},
#ifdef SECOND
	{"op2", op2},
#endif
	{0, 0}};
static const struct atomwatch_subject desc = {ABI, "ab-subject", ops, 0};
const struct atomwatch_subject *atomwatch_subject(void) { return &desc; }
"""

BUILD = ('cc -O2 -shared -fPIC -I"$INC" $(cat flags) -o libsubj.so subj.c')
# the same, taking the code layout's flags (docs/detection.md "Code layouts") and saying them
BUILD_LAYOUTS = ('echo "layout=$ATOMWATCH_LAYOUT cflags=$ATOMWATCH_LAYOUT_CFLAGS" && '
                 'cc -O2 -shared -fPIC -I"$INC" $(cat flags) $ATOMWATCH_LAYOUT_CFLAGS '
                 '-o libsubj.so subj.c')


class Suite:
    pass


S = Suite()


def git(*args):
    return subprocess.run(["git", "-C", S.repo] + list(args), check=True, capture_output=True,
                          text=True, env=a.clean_env({"GIT_AUTHOR_NAME": "t",
                                                      "GIT_AUTHOR_EMAIL": "t@e2e",
                                                      "GIT_COMMITTER_NAME": "t",
                                                      "GIT_COMMITTER_EMAIL": "t@e2e"})).stdout


def commit(flags, msg, extra_file=None):
    with open(os.path.join(S.repo, "flags"), "w") as f:
        f.write(flags + "\n")
    if extra_file:
        with open(os.path.join(S.repo, extra_file[0]), "w") as f:
            f.write(extra_file[1])
    git("add", "-A")
    git("commit", "-q", "-m", msg)
    return git("rev-parse", "HEAD").strip()


def setup(backend):
    S.pg = h.Postgres().start() if backend == "postgres" else None
    S.db = h.Database(backend, S.pg)
    S.col = h.Collector(S.db.url).start()
    S.token = S.col.token("agent", HOST)
    S.ci = S.col.token("ci")
    S.url = "http://127.0.0.1:%d" % S.col.port
    S.repo = h.tempdir("aw-ab-repo-")
    subprocess.run(["git", "init", "-q", S.repo], check=True)
    with open(os.path.join(S.repo, "subj.c"), "w") as f:
        f.write(SUBJECT_C)
    S.base = commit("-DEXTRA=0 -DABI=1", "base")
    S.slow = commit("-DEXTRA=40 -DABI=1", "slow")
    S.second = commit("-DEXTRA=0 -DABI=1 -DSECOND", "second op")
    S.abi2 = commit("-DEXTRA=0 -DABI=2", "abi 2")
    S.broken = commit("-DEXTRA=0 -DABI=1 -DBROKEN", "broken",
                      ("subj.c", SUBJECT_C + "\n#ifdef BROKEN\n#error boom\n#endif\n"))
    S.tls = commit("-DEXTRA=0 -DABI=1 -DTLS", "static TLS", ("subj.c", SUBJECT_C))
    S.tls2 = commit("-DEXTRA=1 -DABI=1 -DTLS", "static TLS, one add more")
    inc = os.path.join(h.SOURCE_DIR, "runner", "include")
    extra = ("subjects:\n  subj:\n    build: '%s'\n    dir: %s\n    library: %s/libsubj.so\n"
             "    env: {INC: %s}\n    cpus: first\n    timeout: 2m\n"
             "  subjl:\n    build: '%s'\n    dir: %s\n    library: %s/libsubj.so\n"
             "    env: {INC: %s}\n    cpus: first\n    timeout: 2m\n    ab_builds: 2\n"
             % (BUILD, S.repo, S.repo, inc, BUILD_LAYOUTS, S.repo, S.repo, inc))
    S.ag = a.Agent(S.url, S.token, HOST, extra=extra)


def ab(*args, timeout=300, subject="subj"):
    return S.ag.run("ab", "--project", "e2e", "--subject", subject, "--quiet", *args,
                    timeout=timeout)


def get_ab(ab_id):
    r = S.col.request("GET", "/api/v1/ab/" + ab_id, token=S.ci)
    eq(r.status, 200, r)
    return r.json()


def listed(**query):
    q = "&".join("%s=%s" % kv for kv in query.items())
    r = S.col.request("GET", "/api/v1/ab?" + q, token=S.ci)
    eq(r.status, 200, r)
    return r.json()["items"]


def test_regression_judged():
    p = ab("--base", S.base, "--head", S.slow, "--rounds", "48", "--ref", "refs/pull/7/head",
           "--layouts", "3")
    eq(p.returncode, 0, p.stderr)
    ab_id = p.stdout.strip()
    eq(a.wait_for(lambda: S.ag.spooled() == [], what="spool empty"), True)
    o = get_ab(ab_id)
    eq((o["project"], o["host"], o["subject"], o["base"], o["head"], o["aa"]),
       ("e2e", HOST, "subj", S.base, S.slow, False))
    eq(o["page"], "/ab/" + ab_id)
    doc = o["document"]
    valid_against_schema(doc)
    eq(doc["schema"], "atomwatch.ab/1")
    eq(doc["ref"], "refs/pull/7/head")
    eq(doc["reference_kernel"], "throughput12-v1")
    eq((doc["rounds"], doc["aa_rounds"]), (48, 48))
    m = doc["measure"]
    eq((m["layouts"], m["slices_per_round"], m["fresh_loads"]), (3, 64, True))
    # the agent stops at the error rate the collector judges at: 1% (docs/detection.md)
    eq((m["threshold"], m["alpha"]), (0.005, 0.01))
    check(0 < m["seconds"] <= m["budget_s"] + 1, m)
    eq(len(doc["cells"]), 1)
    c = doc["cells"][0]
    eq((c["key"], c["status"]), ("subject=subj op=op cpu=0", "ok"))
    # the sequential test stops at the first look that decides, within the rounds asked for:
    # the slow build (40 more adds) stands out of the rounds' scatter and the three loads' at once
    # (common/ab_decide.c)
    n = len(c["rounds"])
    check(12 <= n <= 48, n)
    eq(len(c["aa_rounds"]), n)
    eq(c["stop"], "decided")
    check(c["slices"] >= n * 32 and c["set_aside"] < c["slices"], c)
    check(0 < c["seconds"] <= m["seconds"], (c["seconds"], m))
    eq(m["rounds"], n)
    # three loads of each side live at once, fresh ones replacing them every few rounds
    check(3 <= c["loads"] <= 128 and c["loads"] % 3 == 0, c["loads"])
    for r, aa in zip(c["rounds"], c["aa_rounds"]):
        check(r["base"] > 0 and r["head"] > 0 and r["base_ref"] > 0 and r["head_ref"] > 0, r)
        check(r["first"] in ("base", "head") and aa["first"] in ("base", "head"), r)
        check(r["level"] in ("alone", "shared") and 0 <= r["layout"] < c["loads"], r)
        # an A/B round and its A/A round are the same slices: one base load, two others
        eq((aa["base"], aa["level"], aa["layout"], aa["slices"]),
           (r["base"], r["level"], r["layout"], r["slices"]))
        check(r["slices"] >= 32, r)
    # the layouts take turns: more than one of the three has rounds
    check(len({r["layout"] for r in c["rounds"]}) >= 2, c["rounds"])
    # both builds' identities and logs, the builds' time apart
    for side, sha in (("base", S.base), ("head", S.slow)):
        eq(doc[side]["commit"], sha)
        check(doc[side]["build_s"] > 0, doc[side])
        check(os.path.exists(doc[side]["build_log"]), doc[side])
    j = o["judgment"]
    # 40 dependent adds on a chain of 8 multiplies: several times slower, whatever the load
    eq(j["verdict"], "regressed", j)
    check(j["looks"] > 1, j)
    jc = j["cells"][0]
    eq(jc["verdict"], "regressed", jc)
    check(jc["lo"] > 1 and jc["ratio"] > 1.2 and jc["hi"] >= jc["ratio"], jc)
    eq(jc["rounds"], n)
    check(jc["aa"]["lo"] <= jc["aa"]["hi"], jc)
    # the decision is the A/B less the A/A: compare with what this document measured
    check(abs(jc["ratio"] / (jc["ab"]["ratio"] / jc["aa"]["ratio"]) - 1) < 0.05, jc)
    eq(sorted(jc["levels"]), ["alone", "shared"])
    eq(sum(lv["rounds"] for lv in jc["levels"].values()), n)
    eq(sum(lay["rounds"] for lay in jc["layouts"]), n)
    # each layout judged on its own rounds; none says the opposite of a decided cell
    opposite = {"regressed": "improved", "improved": "regressed"}.get(jc["verdict"])
    check(all(lay["verdict"] in ("regressed", "improved", "unchanged", "inconclusive")
              and lay["verdict"] != opposite for lay in jc["layouts"]), jc)
    eq(j["alpha"], 0.01)
    check(0 < jc["alpha_each"] < j["alpha"], jc)
    # the three loads' own spread, and the interval at least as wide as it makes it
    ld = jc["loads"]
    check(ld["sd"] >= 0 and ld["half_width"] >= 0, jc)
    check(jc["lo"] <= jc["ratio"] / (1 + ld["half_width"]) * 1.0001, jc)
    # the worktrees are gone, the repository is as it was
    eq(git("worktree", "list").count("\n"), 1)
    items = listed(project="e2e", head=S.slow)
    eq(sorted(i["ab_id"] for i in items), sorted([ab_id]))
    check("document" not in items[0], items[0])
    eq(items[0]["verdict"], "regressed")
    eq(listed(project="e2e", head="0" * 40), [])
    # an upload again of the same document: 200, stored once
    doc2 = copy.deepcopy(doc)
    r = S.col.request("POST", "/api/v1/results", body=doc2, token=S.token)
    eq((r.status, r.json()["status"]), (200, "duplicate"), r)
    doc2["cells"][0]["rounds"][0]["head"] *= 2
    r = S.col.request("POST", "/api/v1/results", body=doc2, token=S.token)
    eq((r.status, r.error()["code"], r.error()["field"]), (409, "conflict", "ab_id"), r)
    S.doc = doc
    # an A/B document of the first shape (no levels, layouts, measure or stop) is judged
    first = copy.deepcopy(doc)
    first["ab_id"] = "00000000-0000-4000-8000-0000000000a1"
    first.pop("measure")
    first["rounds"] = first["aa_rounds"] = n
    for key in ("seconds", "slices", "set_aside", "stop"):
        first["cells"][0].pop(key)
    for r in first["cells"][0]["rounds"] + first["cells"][0]["aa_rounds"]:
        for key in ("level", "layout", "slices"):
            r.pop(key)
    r = S.col.request("POST", "/api/v1/results", body=first, token=S.token)
    eq((r.status, r.json()["verdict"]), (201, "regressed"), r)
    jf = get_ab(first["ab_id"])["judgment"]
    eq(jf["looks"], 1)
    check("levels" not in jf["cells"][0], jf)
    # the page: the table, the verdict and the chart (drawn by the post-ingest workers)
    r = S.col.request("GET", "/ab/" + ab_id, token=S.ci)
    eq(r.status, 200, r)
    page = r.body.decode()
    check("<table class=\"cells\">" in page and "subject=subj op=op cpu=0" in page, page[:300])
    check("v-regressed" in page and 'href="/commits/%s"' % S.slow in page, page[:300])
    svg = h.wait_for_chart(S.col.port, "/charts/ab/%s/ratios.svg" % ab_id)
    check("<svg" in svg, svg[:100])
    for path, status in (("/ab/not-a-uuid", 400),
                         ("/ab/00000000-0000-4000-8000-000000000000", 404)):
        eq(S.col.request("GET", path, token=S.ci).status, status, path)
    # the commit page links it once the commit has a run
    run = h.make_doc(host=HOST, project="e2e", commit=S.slow, ref="refs/pull/7/head", cells=4)
    eq(S.col.request("POST", "/api/v1/results", body=run, token=S.token).status, 201)
    page = S.col.request("GET", "/commits/" + S.slow, token=S.ci).body.decode()
    check('<ul class="ab">' in page and 'href="/ab/%s"' % ab_id in page, page[-2000:])


def test_ops_on_one_side():
    p = ab("--base", S.base, "--head", S.second, "--rounds", "10")
    eq(p.returncode, 0, p.stderr)
    o = get_ab(p.stdout.strip())
    by_key = {c["key"]: c for c in o["document"]["cells"]}
    eq(sorted(by_key), ["subject=subj op=op cpu=0", "subject=subj op=op2 cpu=0"])
    eq(by_key["subject=subj op=op2 cpu=0"]["status"], "new")
    eq(by_key["subject=subj op=op cpu=0"]["status"], "ok")
    verdicts = {c["key"]: c["verdict"] for c in o["judgment"]["cells"]}
    eq(verdicts["subject=subj op=op2 cpu=0"], "new")
    check(verdicts["subject=subj op=op cpu=0"] in ("unchanged", "inconclusive", "improved",
                                                  "regressed"), verdicts)
    p = ab("--base", S.second, "--head", S.base, "--rounds", "10")
    eq(p.returncode, 0, p.stderr)
    o = get_ab(p.stdout.strip())
    verdicts = {c["key"]: c["verdict"] for c in o["judgment"]["cells"]}
    eq(verdicts["subject=subj op=op2 cpu=0"], "missing")


def test_aa():
    p = ab("--base", S.base, "--head", S.base, "--rounds", "10")
    eq(p.returncode, 2, p.stderr)
    check("same commit" in p.stderr and "--aa" in p.stderr, p.stderr)
    p = ab("--base", S.base, "--head", S.base, "--rounds", "10", "--aa")
    eq(p.returncode, 0, p.stderr)
    o = get_ab(p.stdout.strip())
    eq((o["aa"], o["base"], o["head"]), (True, S.base, S.base))
    check(o["verdict"] in ("unchanged", "inconclusive", "improved", "regressed"), o)


def test_fresh_loads():
    # an A/A takes more rounds than the first loads last (four turns of two layouts: eight
    # rounds' worth of slices, before the first look at 12): the rounds come from fresh loads,
    # each a layout of its own, and every counter still reads the calls made (the cell is ok)
    p = ab("--base", S.base, "--head", S.base, "--aa", "--rounds", "24", "--layouts", "2")
    eq(p.returncode, 0, p.stderr)
    doc = get_ab(p.stdout.strip())["document"]
    c = doc["cells"][0]
    eq((c["status"], doc["measure"]["fresh_loads"]), ("ok", True))
    check(c["loads"] >= 4 and c["loads"] % 2 == 0, c)
    used = {r["layout"] for r in c["rounds"]}
    check(len(used) >= 3 and max(used) >= 2 and max(used) < c["loads"], (used, c["loads"]))
    # --keep-loads: the first two loads throughout
    p = ab("--base", S.base, "--head", S.base, "--aa", "--rounds", "24", "--layouts", "2",
           "--keep-loads")
    eq(p.returncode, 0, p.stderr)
    doc = get_ab(p.stdout.strip())["document"]
    c = doc["cells"][0]
    eq((c["status"], c["loads"], doc["measure"]["fresh_loads"]), ("ok", 2, False))
    check({r["layout"] for r in c["rounds"]} <= {0, 1}, c["rounds"])
    # a library that allows no load beyond --layouts (static TLS): the A/B goes on with the
    # loads it has, and says so
    p = ab("--base", S.tls, "--head", S.tls2, "--layouts", "16")
    fit = int(p.stderr.split("enough for --layouts ")[1].split()[0])
    p = S.ag.run("ab", "--project", "e2e", "--subject", "subj", "--base", S.tls, "--head",
                 S.tls2, "--layouts", str(fit), "--rounds", "48", timeout=300)
    eq(p.returncode, 0, p.stderr)
    check("a fresh copy of its libraries does not load beside the live ones" in p.stderr and
          "static TLS" in p.stderr, p.stderr)
    doc = get_ab(p.stdout.strip())["document"]
    c = doc["cells"][0]
    eq((c["status"], c["loads"], doc["measure"]["fresh_loads"]), ("ok", fit, False))
    # no copy is left behind in the spool
    eq([f for _, _, fs in os.walk(S.ag.spool) for f in fs if f.endswith(".so")], [])


def valid_against_schema(doc):
    """The document the agent wrote is what docs/ab-schema.json describes."""
    with open(os.path.join(h.SOURCE_DIR, "docs", "ab-schema.json")) as f:
        schema = json.load(f)
    errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)]
    eq(errors, [])


def test_code_layouts():
    # subjl's config asks for two builds of each side (ab_builds: 2), its build takes the
    # layout's flags: build k starts every function 40k mod 64 bytes past a 64-byte line by NOPs
    # before the entry (one byte each on x86, four on arm64), layout k loads build k mod 2
    p = ab("--base", S.base, "--head", S.slow, "--rounds", "48", "--layouts", "2",
           subject="subjl")
    eq(p.returncode, 0, p.stderr)
    check("byte-identical" not in p.stderr, p.stderr)
    eq(a.wait_for(lambda: S.ag.spooled() == [], what="spool empty"), True)
    o = get_ab(p.stdout.strip())
    doc = o["document"]
    valid_against_schema(doc)
    eq((doc["measure"]["builds"], doc["measure"]["code_shifts"]), (2, [0, 40]))
    nops = 40 // (4 if platform.machine() in ("aarch64", "arm64") else 1)
    for side, sha in (("base", S.base), ("head", S.slow)):
        # the two builds differ (their code sits elsewhere), each build's log says its flags
        eq(doc[side]["distinct_builds"], 2, doc[side])
        with open(doc[side]["build_log"]) as f:
            check("layout=0 cflags=-falign-functions=64 -fpatchable-function-entry=0,0"
                  in f.read(), doc[side]["build_log"])
        with open(doc[side]["build_log"].replace(".log", "-layout1.log")) as f:
            check("layout=1 cflags=-falign-functions=64 -fpatchable-function-entry=%d,%d"
                  % (nops, nops) in f.read(), doc[side]["build_log"])
    c = doc["cells"][0]
    # both code layouts have rounds, each round's A/A its own (same slices, same build)
    eq({r["build"] for r in c["rounds"]}, {0, 1})
    for r, aa in zip(c["rounds"], c["aa_rounds"]):
        eq((aa["layout"], aa["build"]), (r["layout"], r["build"]))
    eq(o["judgment"]["verdict"], "regressed", o["judgment"])
    # a build that ignores the flags builds the same library twice: the A/B goes on, and says so
    p = ab("--base", S.base, "--head", S.slow, "--rounds", "24", "--layouts", "2", "--builds",
           "2")
    eq(p.returncode, 0, p.stderr)
    check("the 2 builds of the base are byte-identical" in p.stderr and
          "ATOMWATCH_LAYOUT_CFLAGS" in p.stderr, p.stderr)
    eq(a.wait_for(lambda: S.ag.spooled() == [], what="spool empty"), True)
    doc = get_ab(p.stdout.strip())["document"]
    eq((doc["base"]["distinct_builds"], doc["head"]["distinct_builds"]), (1, 1))
    eq(doc["measure"]["builds"], 2)
    # more builds than the default 4 layouts raise the layouts to them
    p = ab("--base", S.base, "--head", S.slow, "--rounds", "12", "--builds", "6",
           subject="subjl")
    eq(p.returncode, 0, p.stderr)
    eq(a.wait_for(lambda: S.ag.spooled() == [], what="spool empty"), True)
    m = get_ab(p.stdout.strip())["document"]["measure"]
    eq((m["layouts"], m["builds"], m["code_shifts"]), (6, 6, [0, 40, 16, 56, 32, 8]))
    # --builds 1 overrides the subject's ab_builds: one plain build, no code shifts
    p = ab("--base", S.base, "--head", S.slow, "--rounds", "24", "--layouts", "2", "--builds",
           "1", subject="subjl")
    eq(p.returncode, 0, p.stderr)
    eq(a.wait_for(lambda: S.ag.spooled() == [], what="spool empty"), True)
    doc = get_ab(p.stdout.strip())["document"]
    eq(doc["measure"]["builds"], 1)
    check("code_shifts" not in doc["measure"] and "distinct_builds" not in doc["base"], doc)
    with open(doc["base"]["build_log"]) as f:
        check("layout= cflags=\n" in f.read(), doc["base"]["build_log"])
    eq({r["build"] for r in doc["cells"][0]["rounds"]}, {0})


def test_bad_requests():
    before = len(listed(project="e2e"))
    p = ab("--base", S.base, "--head", S.slow, "--rounds", "9")
    eq(p.returncode, 2, p.stderr)
    check("--rounds '9'" in p.stderr and "10" in p.stderr and "Wilcoxon" in p.stderr, p.stderr)
    # --help quotes the limits the option is checked against
    p = subprocess.run([a.agent_binary(), "--help"], capture_output=True, text=True, timeout=30)
    check("(default\n        400, 10 to 1000)" in p.stdout + p.stderr, p.stdout + p.stderr)
    p = ab("--base", "zz", "--head", S.slow)
    eq(p.returncode, 2, p.stderr)
    check("bad --base 'zz'" in p.stderr, p.stderr)
    for value in ("0", "17", "x", "-1", "2.5", ""):
        p = ab("--base", S.base, "--head", S.slow, "--layouts", value)
        eq(p.returncode, 2, (value, p.stderr))
        check("bad --layouts '%s'" % value in p.stderr and "1 to 16" in p.stderr, p.stderr)
    for value in ("0", "-1", "abc", "nan", "inf", "1e9", "5s", ""):
        p = ab("--base", S.base, "--head", S.slow, "--budget-s", value)
        eq(p.returncode, 2, (value, p.stderr))
        check("bad --budget-s '%s'" % value in p.stderr and "more than 0" in p.stderr,
              p.stderr)
    p = S.ag.run("run", "--project", "e2e", "--commit", S.base, "--ref", "main", "--layouts",
                 "2")
    eq(p.returncode, 2, p.stderr)
    check("'run' does not take --layouts" in p.stderr, p.stderr)
    for value in ("0", "9", "x", "-1", "1.5", ""):
        p = ab("--base", S.base, "--head", S.slow, "--builds", value)
        eq(p.returncode, 2, (value, p.stderr))
        check("bad --builds '%s'" % value in p.stderr and "1 to 8" in p.stderr, p.stderr)
    # each code layout needs a layout of its own: from the option and from the config
    p = ab("--base", S.base, "--head", S.slow, "--builds", "3", "--layouts", "2")
    eq(p.returncode, 2, p.stderr)
    check("--builds 3 is more than --layouts 2" in p.stderr, p.stderr)
    p = ab("--base", S.base, "--head", S.slow, "--layouts", "1", subject="subjl")
    eq(p.returncode, 2, p.stderr)
    check("the subject's ab_builds 2 is more than --layouts 1" in p.stderr, p.stderr)
    p = S.ag.run("run", "--project", "e2e", "--commit", S.base, "--ref", "main", "--builds",
                 "2")
    eq(p.returncode, 2, p.stderr)
    check("'run' does not take --builds" in p.stderr, p.stderr)
    # more layouts than the library can be loaded: its initial-exec TLS fills the static TLS
    # block after a few loads (the message names the option and how many fit)
    p = ab("--base", S.tls, "--head", S.tls2, "--layouts", "16")
    eq(p.returncode, 2, p.stderr)
    check("--layouts 16 is more than subject 'subj' allows" in p.stderr and
          "enough for --layouts" in p.stderr and "static TLS" in p.stderr, p.stderr)
    p = ab("--base", S.base, "--head", "ab" * 20, "--rounds", "10")
    eq(p.returncode, 1, p.stderr)
    check("cannot check out the head commit " + "ab" * 20 in p.stderr, p.stderr)
    p = ab("--base", S.base, "--head", S.broken, "--rounds", "10")
    eq(p.returncode, 1, p.stderr)
    check("the head commit %s" % S.broken in p.stderr and "the build failed" in p.stderr and
          "#error boom" in p.stderr, p.stderr)
    p = ab("--base", S.abi2, "--head", S.base, "--rounds", "10")
    eq(p.returncode, 1, p.stderr)
    check("speaks subject ABI 2; this agent speaks 1" in p.stderr, p.stderr)
    p = S.ag.run("ab", "--project", "e2e", "--subject", "nosuch", "--base", S.base, "--head",
                 S.slow, "--quiet")
    eq(p.returncode, 2, p.stderr)
    check("unknown subject 'nosuch'" in p.stderr, p.stderr)
    # nothing was uploaded or left behind
    eq(len(listed(project="e2e")), before)
    eq(S.ag.spooled(), [])
    eq(git("worktree", "list").count("\n"), 1)


def test_api_bad_bodies():
    doc = S.doc
    cases = [
        (lambda d: d["cells"][0]["rounds"][0].update(head=-1.0),
         "cells[0].rounds[0].head"),
        (lambda d: d["cells"][0]["rounds"][1].update(first="left"),
         "cells[0].rounds[1].first"),
        (lambda d: d.update(colour="red"), "colour"),
        (lambda d: d["base"].update(commit="xyz"), "base.commit"),
        (lambda d: d["cells"][0].update(status="great"), "cells[0].status"),
        (lambda d: d.update(ab_id="NOT-A-UUID"), "ab_id"),
        (lambda d: d["head"].update(commit=d["base"]["commit"]), "head.commit"),
        (lambda d: d.pop("rounds"), "rounds"),
        (lambda d: d.update(schema="atomwatch.ab/9"), "schema"),
        (lambda d: d["cells"][0]["rounds"][0].update(build=8), "cells[0].rounds[0].build"),
        (lambda d: d["measure"].update(builds=0), "measure.builds"),
        (lambda d: d["measure"].update(builds=2, code_shifts=[0]), "measure.code_shifts"),
        (lambda d: d["measure"].update(builds=2, code_shifts=[0, 64]),
         "measure.code_shifts[1]"),
        (lambda d: d["base"].update(distinct_builds=9), "base.distinct_builds"),
    ]
    for change, field in cases:
        d = copy.deepcopy(doc)
        change(d)
        r = S.col.request("POST", "/api/v1/results", body=d, token=S.token)
        eq(r.status, 400, (field, r))
        eq(r.error()["field"], field, r)
    d = copy.deepcopy(doc)
    d["host"]["name"] = "someone-else"
    r = S.col.request("POST", "/api/v1/results", body=d, token=S.token)
    eq((r.status, r.error()["field"]), (403, "host.name"), r)
    for path, field in (("/api/v1/ab/nope", "ab_id"), ("/api/v1/ab?head=xyz", "head"),
                        ("/api/v1/ab?project=a%20b", "project"), ("/api/v1/ab?limit=0", "limit")):
        r = S.col.request("GET", path, token=S.ci)
        eq((r.status, r.error()["field"]), (400, field), (path, r))
    r = S.col.request("GET", "/api/v1/ab/00000000-0000-4000-8000-000000000000", token=S.ci)
    eq(r.status, 404, r)


def ci(*args):
    path = os.environ.get("AW_CI", os.path.join(h.BUILD_DIR, "ci", "atomwatch-ci"))
    env = {k: v for k, v in a.clean_env().items() if not k.startswith(("ATOMWATCH_", "GITHUB_"))}
    env["ATOMWATCH_TOKEN"] = S.ci
    return subprocess.run([path] + list(args), capture_output=True, text=True, timeout=120,
                          env=env)


def test_trigger_ab_daemon():
    """atomwatch-ci trigger --ab queues an A/B job; a daemon agent runs `ab` for it and reports
    the document's id; bad triggers are refused naming the problem."""
    for argv, msg in (
            (["--base", S.base, "--head", S.slow, "--ref", "main"], "needs --subject"),
            (["--base", S.base, "--head", S.base, "--subject", "subj", "--ref", "main"],
             "same commit"),
            (["--head", S.slow, "--subject", "subj", "--ref", "main"], "needs --base")):
        p = ci("trigger", "--ab", "--collector", S.url, "--project", "e2e", *argv)
        eq(p.returncode, 3, p.stderr)
        check(msg in p.stderr, p.stderr)
    r = S.col.request("POST", "/api/v1/jobs", {"project": "e2e", "commit": S.slow, "ref": "main",
                                               "hosts": [HOST], "ab_base": S.base},
                      token=S.ci)
    eq((r.status, r.error()["field"]), (400, "subject"), r)
    r = S.col.request("POST", "/api/v1/jobs", {"project": "e2e", "commit": S.slow, "ref": "main",
                                               "hosts": [HOST], "ab_base": "xyz",
                                               "subject": "subj"}, token=S.ci)
    eq((r.status, r.error()["field"]), (400, "ab_base"), r)
    p = ci("trigger", "--ab", "--collector", S.url, "--project", "e2e", "--base", S.base,
           "--head", S.slow, "--subject", "subj", "--ref", "refs/pull/9/head", "--hosts", HOST)
    eq(p.returncode, 0, p.stderr)
    job = int(p.stdout.strip())
    r = S.col.request("GET", "/api/v1/jobs/%d" % job, token=S.ci).json()["job"]
    eq((r["ab_base"], r["commit"], r["subject"]), (S.base, S.slow, "subj"))
    with open(S.ag.config, "a") as f:
        f.write("schedule:\n  check_every: 1h\n")
    text = open(S.ag.config).read().replace("  timeout: 20s\n", "  timeout: 20s\n  poll_wait: 5s\n", 1)
    with open(S.ag.config, "w") as f:
        f.write(text)
    proc = S.ag.start("daemon")
    try:
        def done():
            hosts = S.col.request("GET", "/api/v1/jobs/%d" % job,
                                  token=S.ci).json()["job"]["hosts"]
            return hosts[0] if hosts and hosts[0]["state"] in ("done", "failed") else None
        st = a.wait_for(done, 180, "the A/B job")
        eq(st["state"], "done", "%r\n%s" % (st, S.ag.logs()))
        o = get_ab(st["run_id"])
        eq((o["base"], o["head"], o["ref"], o["verdict"]),
           (S.base, S.slow, "refs/pull/9/head", "regressed"))
    finally:
        proc.send_signal(15)
        proc.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="sqlite", choices=("sqlite", "postgres"))
    args = ap.parse_args()
    a.agent_binary()
    setup(args.backend)
    tests = [("test_regression_judged", test_regression_judged),
             ("test_ops_on_one_side", test_ops_on_one_side), ("test_aa", test_aa),
             ("test_fresh_loads", test_fresh_loads),
             ("test_code_layouts", test_code_layouts),
             ("test_bad_requests", test_bad_requests),
             ("test_api_bad_bodies", test_api_bad_bodies),
             ("test_trigger_ab_daemon", test_trigger_ab_daemon)]
    h.run(tests, "agent ab (%s)" % args.backend)


if __name__ == "__main__":
    main()

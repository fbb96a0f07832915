#!/usr/bin/python3
"""atomwatch-agent run with subjects and kernel readers, against the real collector: a subject
library built by the agent at two commits (a plain increment, then lock xadd + mfence) shows the
slower one clearly slower, with the commit, ref and project in the build's environment and the
build's output in the spool's log directory; a failing build fails the run with the log's tail;
a library of another ABI is refused. The agent's document carries the reference kernels beside
every measured cell, the collector refuses a series of the wrong length or of an unknown kernel
and keeps the whole family. The refscale
readers run through fake modprobe/modinfo/rmmod and a fake kernel log (as root), old kernel
messages are ignored, and every way refscale cannot run (not root, no module, modprobe failing,
no output) gives a skipped or failed cell with the reason.

usage: test_agent_run.py [--backend sqlite|postgres]"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_helpers as a  # noqa: E402
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

HOST = "agent-run"
FAST = "fa57000000000000000000000000000000000001"
SLOW = "5104000000000000000000000000000000000002"

SUBJECT_C = r"""
/* e2e subject: one op (a plain increment, or lock xadd + mfence with -DSLOW) and one reader */
#include <stdint.h>
#include "atomwatch/subject.h"

static void inc(uint64_t *counter)
{
#ifdef SLOW
	__atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#else
	(*counter)++;
#endif
}

static uint64_t depth;
static void lock(void) { depth++; __asm__ __volatile__("" ::: "memory"); }
static void unlock(void) { __asm__ __volatile__("" ::: "memory"); depth--; }

static const struct atomwatch_subject_op ops[] = {{"inc", inc}, {0, 0}};
static const struct atomwatch_subject_reader readers[] = {{"nest", lock, unlock}, {0, 0, 0}};
static const struct atomwatch_subject desc = {ABI, "e2e-subject", ops, readers};

const struct atomwatch_subject *atomwatch_subject(void)
{
	return &desc;
}
"""

BUILD = ('env | grep ^ATOMWATCH_ | sort > build-env.txt && '
         'cc -O2 -shared -fPIC -I"$INC" -DABI=$ABI -o libsubj.so subj.c '
         '$( [ "$ATOMWATCH_COMMIT" = "$SLOW_COMMIT" ] && echo -DSLOW )')


class Suite:
    pass


S = Suite()


def setup(backend):
    S.pg = h.Postgres().start() if backend == "postgres" else None
    S.db = h.Database(backend, S.pg)
    S.col = h.Collector(S.db.url).start()
    S.token = S.col.token("agent", HOST)
    S.ci = S.col.token("ci")
    S.url = "http://127.0.0.1:%d" % S.col.port


def subjects_config(src, abi="1"):
    inc = os.path.join(h.SOURCE_DIR, "runner", "include")
    return ("subjects:\n"
            "  subj:\n"
            "    build: '%s'\n"
            "    dir: %s\n"
            "    library: %s/libsubj.so\n"
            "    env: {INC: %s, SLOW_COMMIT: %s, ABI: '%s'}\n"
            "    timeout: 2m\n"
            "  broken:\n"
            "    build: \"echo compiling; echo 'error: boom' >&2; exit 3\"\n"
            "    dir: %s\n"
            "    library: %s/nothing.so\n" % (BUILD, src, src, inc, SLOW, abi, src, src))


def run(ag, commit, *extra):
    return ag.run("run", "--project", "e2e", "--commit", commit, "--ref", "refs/heads/dev",
                  "--quiet", *extra, timeout=300)


def cell(doc, key):
    for c in doc["cells"]:
        if c["key"] == key:
            return c
    raise AssertionError("no cell '%s' in %s" % (key, [c["key"] for c in doc["cells"]]))


def test_subject_two_versions():
    src = h.tempdir("aw-subject-")
    with open(os.path.join(src, "subj.c"), "w") as f:
        f.write(SUBJECT_C)
    # c11_seqcst (what the slow build's __atomic_fetch_add compiles to, on every architecture)
    # is the yardstick the slow build is held to, measured in the same run.
    matrix = "matrix:\n  profile: quick\n  ops: [plain, c11_seqcst]\n  samples: 101\n"
    ag = a.Agent(S.url, S.token, HOST, extra=subjects_config(src), matrix=matrix)
    docs = {}
    for commit in (FAST, SLOW):
        p = run(ag, commit, "--subject", "subj")
        eq(p.returncode, 0, "run at %s: %s" % (commit, p.stderr))
        docs[commit] = a.get_run(S.col, S.ci, p.stdout.strip())
        with open(os.path.join(src, "build-env.txt")) as f:
            # a plain build: the code layout's variables are there, empty (only an A/B's
            # code layouts set them)
            eq(f.read().splitlines(), ["ATOMWATCH_COMMIT=" + commit, "ATOMWATCH_LAYOUT=",
                                       "ATOMWATCH_LAYOUT_CFLAGS=", "ATOMWATCH_PROJECT=e2e",
                                       "ATOMWATCH_REF=refs/heads/dev"])
    fast, slow = docs[FAST], docs[SLOW]
    key = "subject=subj op=inc cpu=0"
    f, s = cell(fast, key), cell(slow, key)
    for c in (f, s):
        eq((c["subject"], c["op"], c["cpu"], c["status"]), ("subj", "inc", 0, "ok"))
        check(c["n"] == 101 and c["baseline_ns"] is not None, c)
    # What "clearly slower" means comes from the same run, never from a number of ns seen on
    # one CPU: the slow build adds a seq_cst atomic (and a fence) to the plain increment, so
    # it must cost at least half of the matrix's own c11_seqcst cell more than the plain one
    # (and be half as slow again: the plain increment's p50 itself ranged from 0.3 ns here to
    # 1.08 ns under ASan on a loaded machine, so no larger ratio holds everywhere).
    atomic = cell(slow, "op=c11_seqcst cpu=0")
    eq(atomic["status"], "ok")
    check(not atomic["below_resolution"] and atomic["p50"] > 0, atomic)
    print("     subject inc p50: plain %.2f ns, lock xadd + mfence %.2f ns (c11_seqcst %.2f ns)"
          % (f["p50"], s["p50"], atomic["p50"]))
    check(s["p50"] > 1.5 * f["p50"] and s["p50"] - f["p50"] > 0.5 * atomic["p50"],
          "the slow build is clearly slower: %.2f vs %.2f ns (c11_seqcst %.2f ns)"
          % (s["p50"], f["p50"], atomic["p50"]))
    r = cell(fast, "subject=subj reader=nest op=subj cpu=0")
    eq((r["reader"], r["status"]), ("nest", "ok"))
    eq(fast["meta"]["subject"]["name"], "subj")
    log = fast["meta"]["subject"]["build_log"]
    check(log.startswith(os.path.join(ag.spool, "logs", "subj-")), log)
    with open(log) as fh:
        check("cc -O2 -shared" in fh.read(), "the build log holds the command")
    # the matrix ran too
    check(any(c["key"].startswith("op=plain") for c in fast["cells"]), "matrix cells")


def test_reference_series():
    """The agent's document carries the reference kernels beside every measured cell, the
    subject's included; the collector takes it and gives the family back, and refuses a series
    of the wrong length or of a kernel it does not know with 400 naming the field, storing
    nothing."""
    src = h.tempdir("aw-subject-")
    with open(os.path.join(src, "subj.c"), "w") as f:
        f.write(SUBJECT_C)
    down = "http://127.0.0.1:%d" % h.free_port()
    ag = a.Agent(down, S.token, HOST, extra=subjects_config(src))
    p = run(ag, FAST, "--subject", "subj")
    eq(p.returncode, 3, "measured, left in the spool: " + p.stderr)
    spooled = ag.spooled()
    eq(len(spooled), 1)
    doc = a.read_json(spooled[0])
    refs = doc["references"]
    eq([(ref["kernel"], ref["unit"]) for ref in refs],
       [(k, "ns") for k in ("mulchain-v1", "mulindep-v1", "atomicadd-v1", "memchase-v1",
                         "memgather-v1")])
    for ref in refs:
        eq(len(ref["values"]), len(doc["cells"]))
        for c, v in zip(doc["cells"], ref["values"]):
            if c["status"] == "ok":
                check(v is not None and v > 0, (ref["kernel"], c["key"], v))
    check(any(c.get("subject") == "subj" for c in doc["cells"]), "subject cells")

    bad = dict(doc, references=[refs[0], dict(refs[1], values=refs[1]["values"][:-1])])
    r = S.col.request("POST", "/api/v1/results", bad, token=S.token)
    eq(r.status, 400, r)
    eq(r.error()["field"], "references[1].values")
    bad = dict(doc, references=refs[:2] + [dict(refs[2], kernel="mulfast-v9")])
    r = S.col.request("POST", "/api/v1/results", bad, token=S.token)
    eq(r.status, 400, r)
    eq((r.error()["code"], r.error()["field"]), ("unknown_kernel", "references[2].kernel"))
    eq(S.col.request("GET", "/api/v1/runs/" + doc["run_id"], token=S.ci).status, 404,
       "a refused document stores nothing")
    r = S.col.request("POST", "/api/v1/results", doc, token=S.token)
    check(r.status in (200, 201), r)
    eq(S.col.request("GET", "/api/v1/runs/" + doc["run_id"], token=S.ci).status, 200)
    got = a.get_run(S.col, S.ci, doc["run_id"])
    eq(got.get("references"), refs, "the store keeps the whole family")


def test_subject_failures():
    src = h.tempdir("aw-subject-")
    with open(os.path.join(src, "subj.c"), "w") as f:
        f.write(SUBJECT_C)
    ag = a.Agent(S.url, S.token, HOST, extra=subjects_config(src))
    p = run(ag, FAST, "--subject", "broken")
    eq(p.returncode, 1, p.stderr)
    check("subject 'broken': the build failed (exit status 3)" in p.stderr, p.stderr)
    check("error: boom" in p.stderr and "compiling" in p.stderr, "the log's tail: " + p.stderr)
    eq(ag.spooled(), [], "a failed build leaves no result")
    logs = os.listdir(os.path.join(ag.spool, "logs"))
    check(any(n.startswith("broken-") for n in logs), logs)

    p = run(ag, FAST, "--subject", "nosuch")
    eq(p.returncode, 2, p.stderr)
    check("unknown subject 'nosuch' (this agent's config defines: subj, broken)" in p.stderr,
          p.stderr)

    ag = a.Agent(S.url, S.token, HOST, extra=subjects_config(src, abi="99"))
    p = run(ag, FAST, "--subject", "subj")
    eq(p.returncode, 1, p.stderr)
    check("speaks subject ABI 99; this agent speaks 1" in p.stderr, p.stderr)


FAKE_MODPROBE = r"""#!/bin/sh
# fake modprobe for the e2e test: prints what refscale would print, as /dev/kmsg records
t=; l=; n=
for arg in "$@"; do
	case $arg in
	scale_type=*) t=${arg#scale_type=} ;;
	loops=*) l=${arg#loops=} ;;
	nruns=*) n=${arg#nruns=} ;;
	esac
done
echo "modprobe $*" >> "%(calls)s"
if [ "$t" = broken ]; then
	echo "modprobe: ERROR: could not insert 'refscale': Invalid argument" >&2
	exit 1
fi
[ "$t" = silent ] && exit 0
(
	sleep 0.3
	printf '5,101,100000,-;%%s-ref-scale: --- Start of test:  verbose=1 loops=%%s nreaders=1 nruns=%%s\n' "$t" "$l" "$n"
	printf ' SUBSYSTEM=refscale\n'
	printf '4,102,100100,-;clocksource: timekeeping watchdog on CPU1: noise\n'
	printf '5,103,200000,-;%%s-ref-scale: END OF TEST. Calculating average duration per loop (nanoseconds)...\n' "$t"
	body='Runs\x09Time(ns)\x0a'
	i=1
	while [ "$i" -le "$n" ]; do
		body="$body$i\x09$((10 + i)).500\x0a"
		i=$((i + 1))
	done
	printf '1,104,200001,-;%%s\n' "$body"
) >> "%(kmsg)s" &
exit 0
"""


def write_script(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


def refscale_agent(types, modinfo_ok=True, timeout="20s"):
    d = h.tempdir("aw-refscale-")
    kmsg, calls = os.path.join(d, "kmsg"), os.path.join(d, "calls")
    # an old, finished run already in the log: must not be taken for ours
    with open(kmsg, "w") as f:
        f.write("5,1,1,-;srcu-fast-ref-scale: --- Start of test: loops=9 nreaders=1 nruns=5\n"
                "5,2,2,-;srcu-fast-ref-scale: END OF TEST.\n"
                "1,3,3,-;Runs\\x09Time(ns)\\x0a1\\x0999.000\\x0a2\\x0999.000\\x0a3\\x0999.000"
                "\\x0a4\\x0999.000\\x0a5\\x0999.000\\x0a\n")
    write_script(os.path.join(d, "modprobe"), FAKE_MODPROBE % {"kmsg": kmsg, "calls": calls})
    write_script(os.path.join(d, "modinfo"),
                 "#!/bin/sh\necho 'filename: /lib/modules/x/refscale.ko'\nexit 0\n"
                 if modinfo_ok else
                 "#!/bin/sh\necho 'modinfo: ERROR: Module refscale not found.' >&2\nexit 1\n")
    write_script(os.path.join(d, "rmmod"), "#!/bin/sh\necho \"rmmod $*\" >> '%s'\n" % calls)
    extra = ("kernel:\n  refscale:\n    types: [%s]\n    loops: 100\n    nruns: 5\n"
             "    timeout: %s\n    kmsg: %s\n    modprobe: %s/modprobe\n    modinfo: %s/modinfo\n"
             "    rmmod: %s/rmmod\n" % (", ".join(types), timeout, kmsg, d, d, d))
    matrix = "matrix:\n  profile: quick\n  ops: [plain]\n  samples: 20\n"
    return a.Agent(S.url, S.token, HOST, extra=extra, matrix=matrix), calls


def calls_of(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().splitlines()


def test_refscale():
    ag, calls = refscale_agent(["srcu-fast", "rcu"])
    p = run(ag, FAST)
    eq(p.returncode, 0, p.stderr)
    doc = a.get_run(S.col, S.ci, p.stdout.strip())
    if os.geteuid() != 0:
        for k in ("kernel=srcu-fast", "kernel=rcu"):
            c = cell(doc, k)
            eq(c["status"], "skipped")
            check(c["reason"].startswith("not root"), c)
        eq(calls_of(calls), [])
        return
    values = [11.5, 12.5, 13.5, 14.5, 15.5]
    for k in ("kernel=srcu-fast", "kernel=rcu"):
        c = cell(doc, k)
        eq((c["status"], c["op"], c["cpu"], c["n"], c["batch"]), ("ok", "refscale", None, 5, 100))
        eq((c["min"], c["p50"], c["max"]), (11.5, 13.5, 15.5))
        check(abs(c["mean"] - statistics.fmean(values)) < 1e-9, c)
        check(abs(c["stddev"] - statistics.stdev(values)) < 1e-9, c)
    eq(calls_of(calls), ["modprobe refscale scale_type=srcu-fast loops=100 nruns=5",
                         "rmmod refscale",
                         "modprobe refscale scale_type=rcu loops=100 nruns=5",
                         "rmmod refscale"])


def test_refscale_cannot_run():
    if os.geteuid() != 0:
        return  # every cell is "not root" there, as test_refscale checks
    ag, calls = refscale_agent(["broken", "silent"], timeout="1s")
    p = run(ag, FAST)
    eq(p.returncode, 0, p.stderr)
    doc = a.get_run(S.col, S.ci, p.stdout.strip())
    c = cell(doc, "kernel=broken")
    eq(c["status"], "skipped")
    eq(c["reason"], "modprobe failed: modprobe: ERROR: could not insert 'refscale': Invalid "
                    "argument")
    c = cell(doc, "kernel=silent")
    eq(c["status"], "failed")
    eq(c["reason"], "refscale printed no results within 1 s")
    eq(calls_of(calls)[-1], "rmmod refscale", "unloaded after the timeout")

    ag, calls = refscale_agent(["srcu"], modinfo_ok=False)
    p = run(ag, FAST)
    eq(p.returncode, 0, p.stderr)
    c = cell(a.get_run(S.col, S.ci, p.stdout.strip()), "kernel=srcu")
    eq(c["status"], "skipped")
    check(c["reason"].startswith("module missing: ") and "not found" in c["reason"], c)
    eq(calls_of(calls), [], "no modprobe without the module")

    # the real system's tools: on this machine without the module (or its modinfo)
    ag, _ = refscale_agent(["srcu"])
    with open(ag.config) as f:
        text = f.read()
    with open(ag.config, "w") as f:
        f.write("\n".join(line for line in text.splitlines()
                          if "modinfo:" not in line and "modprobe:" not in line) + "\n")
    p = run(ag, FAST)
    eq(p.returncode, 0, p.stderr)
    c = cell(a.get_run(S.col, S.ci, p.stdout.strip()), "kernel=srcu")
    check(c["status"] in ("skipped", "ok", "failed"), c)
    if c["status"] == "skipped":
        check(c["reason"].startswith(("module missing", "modprobe failed", "the refscale")), c)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="sqlite", choices=("sqlite", "postgres"))
    args = ap.parse_args()
    a.agent_binary()
    setup(args.backend)
    h.run([(n, f) for n, f in sorted(globals().items()) if n.startswith("test_")],
          "agent run (%s)" % args.backend)


if __name__ == "__main__":
    main()

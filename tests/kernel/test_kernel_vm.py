#!/usr/bin/env python3
"""The kernel's own ops measured on real Debian kernels under QEMU (see kvm_harness.py): the
agent runs in the guest with `kernel.module` (the prebuilt atomwatch.ko) and refscale built out
of tree, its result document leaves through the share, and every primitive must be there on
every CPU with its counts, the kernel's identity and its LSE decision in the document. In the
same boot: `--commit kernel` on a kernel that names no commit, and a module that does not load
(exit 1, nothing spooled, nothing left loaded). arm64 boots twice, -cpu cortex-a57 (no LSE) and
-cpu max,pauth-impdef=on (LSE): the LSE flag and the instructions differ, every cell is measured
on both. Timings are emulated: only behaviour is checked; the figures are printed for
docs/benchmarks.md.

Usage: test_kernel_vm.py --arch x86_64|arm64"""

import argparse
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvm_harness as kh  # noqa: E402

SAMPLES = 30
NRUNS = 10
REFSCALE = ["srcu", "refcnt", "rcu"]
COMMIT = "0123456789abcdef0123456789abcdef01234567"
# primitives that came with a kernel version: cells of older kernels are skipped, the reason
# naming the version
SINCE = {"srcu_read_lock_fast": (6, 15), "srcu_read_lock_nmisafe": (6, 2)}


def missing(k):
    return {p: "%d.%d" % v for p, v in SINCE.items() if k.version_tuple < v}


def prims():
    """The agent's primitive list (agents/kmod.c), the one the module must report."""
    with open(os.path.join(kh.SRC, "agents/kmod.c")) as f:
        text = f.read()
    body = re.search(r"aw_kmod_prims\[\] = \{(.*?)\};", text, re.S).group(1)
    return re.findall(r'"([a-z0-9_]+)"', body)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def guest_steps(b, agent):
    s = b.share
    return """S=%(s)s
A=%(agent)s
run() { n=$1; shift; TMPDIR=$S/tmp chroot $R "$@" > /share/$n.out 2> /share/$n.err; echo $? > /share/$n.rc; }
run nocommit $A run --config $S/good.yaml --project linux --commit kernel --ref master --quiet
run badload $A run --config $S/badload.yaml --project linux --commit %(commit)s --ref master --quiet
cat /proc/modules > /share/modules.badload
t0=$(date +%%s)
run good $A run --config $S/good.yaml --project linux --commit %(commit)s --ref master --quiet
echo $(( $(date +%%s) - t0 )) > /share/good.seconds
cat /proc/modules > /share/modules.after
ls $R/sys/kernel/debug > /share/debugfs.after 2>&1
""" % {"s": s, "agent": agent, "commit": COMMIT}


def write_configs(b, k, name):
    common = ("collector: {url: 'http://127.0.0.1:9', token_file: token, retries: 0, "
              "connect_timeout: 1s}\nhost: {name: %s}\n"
              "matrix: {profile: quick, cpus: first, ops: [plain], samples: 5}\n" % name)
    b.write("token", "guest-token\n", 0o600)
    b.write("good.yaml", common + """spool: {dir: spool-good}
kernel:
  module: true
  module_file: %(kmod)s/atomwatch/atomwatch.ko
  samples: %(samples)d
  timeout: 3m
  refscale:
    types: [%(types)s]
    loops: 10000
    nruns: %(nruns)d
    timeout: 2m
    modules: %(kmod)s/refscale
""" % {"kmod": k.kmod, "samples": SAMPLES, "nruns": NRUNS, "types": ", ".join(REFSCALE)})
    b.write("not-a-module.ko", "this is no kernel module\n")
    b.write("badload.yaml", common + """spool: {dir: spool-bad}
kernel:
  module: true
  module_file: not-a-module.ko
""")


def check_boot(b, k, arch, lse):
    """Everything one boot must show; returns the result document."""
    rc = {n: b.read(n + ".rc", "missing").strip() for n in ("nocommit", "badload", "good")}
    err = {n: b.read(n + ".err", "") for n in rc}
    # --commit kernel on Debian's kernel, which names no commit
    check(rc["nocommit"] == "2", "--commit kernel: exit %s, want 2; stderr: %s"
          % (rc["nocommit"], err["nocommit"]))
    check("names no commit" in err["nocommit"] and k.release in err["nocommit"],
          "--commit kernel: unclear error: %s" % err["nocommit"])
    # a module that does not load: exit 1, nothing spooled, nothing left loaded
    check(rc["badload"] == "1", "bad module: exit %s, want 1; stderr: %s"
          % (rc["badload"], err["badload"]))
    check("cannot load" in err["badload"] and "not-a-module.ko" in err["badload"],
          "bad module: unclear error: %s" % err["badload"])
    check(not glob.glob(b.path("spool-bad", "result-*.json")), "bad module: something spooled")
    check("atomwatch" not in b.read("modules.badload"), "bad module: left loaded")
    # the real run: measured, spooled (no collector in the guest: exit 3)
    check(rc["good"] == "3", "run: exit %s, want 3 (spooled); stderr: %s"
          % (rc["good"], err["good"][-3000:]))
    after = b.read("modules.after")
    for m in ("atomwatch", "refscale", "torture"):
        check(not re.search(r"^%s " % m, after, re.M), "%s left loaded: %s" % (m, after))
    check("atomwatch" not in b.read("debugfs.after"), "debugfs/atomwatch left behind")
    docs = glob.glob(b.path("spool-good", "result-*.json"))
    check(len(docs) == 1, "one document in the spool, got %d" % len(docs))
    with open(docs[0]) as f:
        doc = json.load(f)
    schema_check(doc)
    check(doc["project"] == "linux" and doc["commit"] == COMMIT, "project/commit")
    host = doc["host"]
    check(host["arch"] == ("x86_64" if arch == "x86_64" else "aarch64"), "arch %s" % host["arch"])
    check(host["changing"]["kernel"] == k.release, "fingerprint kernel")
    with open(os.path.join(k.dir, "boot/config"), "rb") as f:
        want_hash = hashlib.sha256(f.read()).hexdigest()[:16]
    check(host["changing"].get("kernel_config_hash") == want_hash,
          "kernel_config_hash %r, want %r" % (host["changing"].get("kernel_config_hash"),
                                             want_hash))
    kinfo = doc["meta"]["kernel"]
    check(kinfo["release"] == k.release, "meta.kernel.release %r" % kinfo.get("release"))
    check(kinfo["version"].startswith("#1 SMP"), "meta.kernel.version %r" % kinfo["version"])
    check(kinfo["lse"] is lse, "meta.kernel.lse %r, want %r" % (kinfo["lse"], lse))
    check(kinfo["samples"] == SAMPLES and kinfo["cpus"] == "0-1", "samples/cpus %r" % kinfo)
    cells = {c["key"]: c for c in doc["cells"]}
    for p in prims():
        for cpu in (0, 1):
            c = cells.get("kernel=%s cpu=%d" % (p, cpu))
            check(c is not None, "no cell kernel=%s cpu=%d" % (p, cpu))
            check(c["op"] == "kmod" and c["cpu"] == cpu, "cell identity %r" % c)
            if p in missing(k):
                check(c["status"] == "skipped" and missing(k)[p] in (c["reason"] or ""),
                      "%s on %s: %r" % (p, k.release, c))
                continue
            check(c["status"] == "ok", "kernel=%s cpu=%d: %s %s" % (p, cpu, c["status"],
                                                                   c["reason"]))
            check(c["n"] == SAMPLES and c["batch"] > 0, "counts of %s: %r" % (p, c))
            check(c["min"] <= c["p50"] <= c["p95"] <= c["p99"] <= c["max"], "order %r" % c)
            check(c["baseline_ns"] >= 0, "baseline %r" % c)
    for t in REFSCALE:
        c = cells.get("kernel=" + t)
        check(c is not None and c["status"] == "ok", "refscale %s: %r" % (t, c))
        check(c["op"] == "refscale" and c["n"] == NRUNS, "refscale %s counts: %r" % (t, c))
    # the module's own statistics agree with the agent's, recomputed from its samples
    kept = glob.glob(b.path("spool-good", "logs", "kmod-*.results"))
    check(len(kept) == 1, "the module's results kept beside the logs")
    with open(kept[0]) as f:
        for line in f:
            m = re.match(r"cell (\S+) cpu=(\d+) status=ok .*?p50_ps=(\d+)", line)
            if not m:
                continue
            c = cells["kernel=%s cpu=%s" % (m.group(1), m.group(2))]
            want = int(m.group(3)) / 1000.0
            check(abs(c["p50"] - want) <= 0.005 + 0.002 * want,
                  "p50 of %s: the module says %.3f ns, the agent %.3f" % (c["key"], want,
                                                                       c["p50"]))
    return doc


def schema_check(doc):
    try:
        import jsonschema
    except ImportError:
        return
    with open(os.path.join(kh.SRC, "docs/result-schema.json")) as f:
        jsonschema.validate(doc, json.load(f))


def figures(doc, label):
    cells = {c["key"]: c for c in doc["cells"]}

    def p50(key):
        c = cells.get(key)
        return "%.2f" % c["p50"] if c and c["status"] == "ok" else "-"
    rows = ["this_cpu_inc", "this_cpu_inc_dec", "atomic_long_inc", "srcu_read_lock",
            "local_irq_save_inc", "preempt_disable_inc"]
    print("figures (%s, emulated by TCG: behaviour, not speed): module cpu0 p50 ns: %s; "
          "refscale p50 ns: %s" % (label, ", ".join("%s %s" % (r, p50("kernel=%s cpu=0" % r))
                                                     for r in rows),
                                   ", ".join("%s %s" % (t, p50("kernel=" + t)) for t in REFSCALE)),
          flush=True)


def boot_and_check(k, arch, cpu, lse, label, boots):
    b = kh.Boot(k, cpu=cpu)
    boots.append(b)
    write_configs(b, k, "guest-" + label)
    b.run(guest_steps(b, kh.agent(arch)))
    doc = check_boot(b, k, arch, lse)
    print("%s: booted, measured and powered off in %.0f s (the agent's run: %s s)"
          % (label, b.seconds, b.read("good.seconds", "?").strip()), flush=True)
    figures(doc, label)
    b.doc = doc
    return doc


def check_reports(k, boots):
    """The guests' documents, flushed from their spools to a real collector by the agent:
    the module's cells get their own trend groups and their rows in the cross-host heat map,
    labelled by primitive."""
    sys.path.insert(0, os.path.join(kh.SRC, "tests", "e2e"))
    import harness as h
    path = os.environ.get("AW_COLLECTOR") or os.path.join(kh.BUILD, "collector",
                                                          "atomwatch-collector")
    if not os.access(path, os.X_OK):
        print("(no collector in this build: the reports are left out)")
        return
    os.environ["AW_COLLECTOR"] = path
    col = h.Collector(h.Database("sqlite").url).start()
    for b in boots:
        host = b.doc["host"]["name"]
        b.write("collector.token", col.token("agent", host) + "\n", 0o600)
        b.write("flush.yaml", "collector: {url: 'http://127.0.0.1:%d', token_file: "
                "collector.token, retries: 0}\nspool: {dir: spool-good}\n" % col.port)
        p = subprocess.run([kh.agent("x86_64" if os.uname().machine == "x86_64" else "arm64"),
                            "flush", "--config", b.path("flush.yaml")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        check(p.returncode == 0, "flush of %s: %s" % (host, p.stdout.decode()))
    heat = h.wait_for_chart(col.port, "/charts/commits/%s/heatmap.svg" % COMMIT, timeout=120)
    measured = [p for p in prims() if p not in missing(k)]
    for p in measured:
        check(">%s<" % p in heat, "heat map row %s" % p)
    for b in boots:
        host = b.doc["host"]["name"]
        check(">%s<" % host in heat, "heat map column %s" % host)
        for group, members in (("kernel-percpu", ["this_cpu_inc", "this_cpu_inc_dec"]),
                               ("kernel-srcu", ["srcu_read_lock"]),
                               ("kernel-sync", ["atomic_long_inc", "preempt_disable_inc"]),
                               ("kernel", REFSCALE)):
            trend = h.wait_for_chart(col.port, "/charts/hosts/%s/refs/master/trend-%s.svg"
                                     % (host, group), timeout=120)
            for m in members:
                check(">%s<" % m in trend, "trend %s of %s names %s" % (group, host, m))
    print("reports: the heat map has a row per measured primitive across %s; each host has "
          "the trends kernel-percpu, kernel-srcu, kernel-sync and kernel"
          % ", ".join(b.doc["host"]["name"] for b in boots), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", choices=sorted(kh.ARCHES), required=True)
    ap.add_argument("--series", help="another kernel series Debian ships, e.g. 6.12 "
                    "(default: bookworm's current kernel)")
    args = ap.parse_args()
    t0 = time.time()
    k = kh.Kernel(args.arch, args.series).prepare()
    kh.agent(args.arch)  # a Skip (no cross libcurl) before any boot
    boots = []
    try:
        run_arch(k, args.arch, boots)
        check_reports(k, boots)
    except BaseException:
        if os.environ.get("AW_KEEP"):
            print("kept " + " ".join(b.share for b in boots))
            boots = []
        raise
    finally:
        for b in boots:
            b.cleanup()
    print("kernel test %s passed in %.0f s" % (args.arch, time.time() - t0))


def run_arch(k, arch, boots):
    if arch == "x86_64":
        boot_and_check(k, arch, None, None, "x86_64", boots)
    else:
        a57 = boot_and_check(k, arch, "cortex-a57", False, "arm64-cortex-a57", boots)
        mx = boot_and_check(k, arch, "max,pauth-impdef=on", True, "arm64-max", boots)
        ka, km = a57["meta"]["kernel"], mx["meta"]["kernel"]
        check(ka["lse"] is False and km["lse"] is True, "LSE flags %r %r" % (ka["lse"],
                                                                         km["lse"]))
        check(ka["insn"]["this_cpu_inc"] == "ldxr+stxr", "a57 this_cpu_inc: %r" % ka["insn"])
        # the per-CPU ops use STADD, or LDADD where the kernel has 535fdfc5a228 (v6.18-rc6,
        # and Debian's 6.12 as a backport)
        check(km["insn"]["this_cpu_inc"] in ("stadd", "ldadd"),
              "max this_cpu_inc: %r" % km["insn"])
        check(ka["insn"]["atomic_long_inc"] == "ldxr+stxr" and
              km["insn"]["atomic_long_inc"] == "stadd",
              "atomic_long_inc: %r, %r" % (ka["insn"], km["insn"]))
        print("arm64 per-CPU ops: %s without LSE, %s with (this_cpu_inc: %s)"
              % (ka["percpu_ops"], km["percpu_ops"], km["insn"]["this_cpu_inc"]))
        check(ka["percpu_ops"].startswith("llsc") and km["percpu_ops"].startswith("lse"),
              "percpu_ops %r %r" % (ka["percpu_ops"], km["percpu_ops"]))
        keys = [sorted(c["key"] for c in d["cells"] if c["key"].startswith("kernel="))
                for d in (a57, mx)]
        check(keys[0] == keys[1], "both CPUs have the same kernel cells")
        status = [{c["key"]: c["status"] for c in d["cells"]} for d in (a57, mx)]
        check(status[0] == status[1], "every cell measured (or skipped) alike on both")


if __name__ == "__main__":
    kh.main(main)

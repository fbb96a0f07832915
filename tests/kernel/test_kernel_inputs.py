#!/usr/bin/env python3
"""The kernel keys' bad input, on this host (no VM; the VM cases are test_kernel_vm.py's):
no headers for the running kernel, the atomwatch module or refscale failing to build against a
real Debian tree (the build log's end, exit 1, nothing spooled), not root (every kernel cell
skipped with the reason), `--commit kernel` on a kernel that names no commit, and the
kernel-build command's usage."""

import glob
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvm_harness as kh  # noqa: E402

AGENT = os.environ.get("AW_AGENT") or os.path.join(kh.BUILD, "agents/atomwatch-agent")
failed = []


def check(cond, what):
    if not cond:
        raise AssertionError(what)


class Agent:
    def __init__(self, kernel_yaml, owner=None):
        self.dir = tempfile.mkdtemp(prefix="aw-kinputs-")
        self.spool = os.path.join(self.dir, "spool")
        with open(os.path.join(self.dir, "token"), "w") as f:
            f.write("t\n")
        os.chmod(os.path.join(self.dir, "token"), 0o600)
        with open(os.path.join(self.dir, "agent.yaml"), "w") as f:
            f.write("collector: {url: 'http://127.0.0.1:9', token_file: token, retries: 0, "
                    "connect_timeout: 1s}\nspool: {dir: spool}\n"
                    "matrix: {profile: quick, cpus: first, ops: [plain], samples: 5}\n"
                    + kernel_yaml)
        if owner:
            os.chmod(self.dir, 0o755)
            for root, dirs, files in os.walk(self.dir):
                for n in dirs + files + [""]:
                    os.chown(os.path.join(root, n), owner.pw_uid, owner.pw_gid)

    def run(self, *args, prefix=(), commit="0123456789ab"):
        cmd = list(prefix) + [AGENT, args[0], "--config", os.path.join(self.dir, "agent.yaml")]
        cmd += list(args[1:])
        if args[0] == "run":
            cmd += ["--project", "linux", "--commit", commit, "--ref", "master", "--quiet"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600,
                           cwd=self.dir)
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    def spooled(self):
        return glob.glob(os.path.join(self.spool, "result-*.json"))

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def online_cpus():
    cpus = []
    with open("/sys/devices/system/cpu/online") as f:
        for part in f.read().strip().split(","):
            lo, _, hi = part.partition("-")
            cpus += range(int(lo), int(hi or lo) + 1)
    return cpus


def test_no_headers():
    ag = Agent("kernel: {module: true, build: /nonexistent/tree}\n")
    try:
        rc, _, err = ag.run("run")
        check(rc == 1, "exit %d, want 1: %s" % (rc, err))
        check("no kernel build tree at '/nonexistent/tree'" in err and "linux-headers-" in err,
              "unclear: " + err)
        check(not ag.spooled(), "nothing may be spooled")
    finally:
        ag.cleanup()
    default = "/lib/modules/%s/build" % os.uname().release
    if os.path.exists(default):
        print("     (this host has %s: the default tree's case is left out)" % default)
        return
    ag = Agent("kernel: {module: true}\n")
    try:
        rc, _, err = ag.run("run")
        check(rc == 1 and "no kernel build tree at '%s'" % default in err, "default: " + err)
        check(not ag.spooled(), "nothing may be spooled")
    finally:
        ag.cleanup()


def test_module_does_not_build(k):
    src = tempfile.mkdtemp(prefix="aw-kbroken-")
    try:
        shutil.copy(os.path.join(kh.SRC, "runner/kmod/Kbuild"), src)
        with open(os.path.join(kh.SRC, "runner/kmod/atomwatch.c")) as f:
            text = f.read()
        with open(os.path.join(src, "atomwatch.c"), "w") as f:
            f.write(text.replace("static int __init aw_init(void)\n{",
                                 "static int __init aw_init(void)\n{\n\tthis_is_no_c;", 1))
        ag = Agent("kernel: {module: true, build: %s, source: %s}\n" % (k.tree, src))
        try:
            rc, _, err = ag.run("run")
            check(rc == 1, "exit %d, want 1: %s" % (rc, err))
            check("make failed" in err and "this_is_no_c" in err,
                  "the build log's end must be in the error: " + err)
            check(not ag.spooled(), "nothing may be spooled")
            check(glob.glob(os.path.join(ag.spool, "logs", "kmod-*.log")), "the build log")
        finally:
            ag.cleanup()
    finally:
        shutil.rmtree(src, ignore_errors=True)


def test_refscale_does_not_build(k):
    ag = Agent("kernel:\n  build: %s\n  refscale:\n    types: [srcu]\n    modinfo: /bin/false\n"
               "    source: /nonexistent/linux\n" % k.tree)
    try:
        rc, _, err = ag.run("run")
        check(rc == 1, "exit %d, want 1: %s" % (rc, err))
        check("cannot build refscale and torture" in err and "/nonexistent/linux" in err,
              "unclear: " + err)
        check(not ag.spooled(), "nothing may be spooled")
    finally:
        ag.cleanup()


def test_not_root():
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        print("     (needs root and setpriv to become another user: left out)")
        return
    nobody = pwd.getpwnam("nobody")
    ag = Agent("kernel:\n  module: true\n  cpus: all\n  refscale: {types: [srcu]}\n",
               owner=nobody)
    try:
        rc, _, err = ag.run("run", prefix=["setpriv", "--reuid=%d" % nobody.pw_uid,
                                           "--regid=%d" % nobody.pw_gid, "--clear-groups"])
        check(rc == 3, "exit %d, want 3 (measured, spooled): %s" % (rc, err))
        docs = ag.spooled()
        check(len(docs) == 1, "one document")
        with open(docs[0]) as f:
            doc = json.load(f)
        kcells = [c for c in doc["cells"] if c["op"] == "kmod"]
        check(len(kcells) == 12 * len(online_cpus()), "cells %d" % len(kcells))
        for c in kcells:
            check(c["status"] == "skipped" and c["reason"].startswith("not root"), c)
            check(c["key"] == "kernel=%s cpu=%d" % (c["kernel"], c["cpu"]), c["key"])
        r = [c for c in doc["cells"] if c["op"] == "refscale"]
        check(len(r) == 1 and r[0]["status"] == "skipped" and "not root" in r[0]["reason"], r)
        check(doc["meta"]["kernel"]["module"] == "skipped: not root", doc["meta"])
    finally:
        ag.cleanup()


def test_commit_kernel():
    ag = Agent("")
    try:
        rc, out, err = ag.run("run", commit="kernel")
        release = os.uname().release
        if "-g" in release:
            print("     (this host's kernel %s names a commit: only the other case is "
                  "checked)" % release)
            check(rc != 2 or "names no commit" not in err, err)
            return
        check(rc == 2, "exit %d, want 2: %s" % (rc, err))
        check("names no commit" in err and release in err, "unclear: " + err)
        check(not os.path.exists(ag.spool) or not ag.spooled(), "nothing measured")
        rc, _, err = ag.run("import", "refscale", "/dev/null", "--host", "h", "--project", "p",
                            "--commit", "kernel")
        check(rc == 2 and "--commit kernel is for 'run' only" in err, err)
    finally:
        ag.cleanup()


def test_kernel_build_usage():
    ag = Agent("")
    try:
        rc, _, err = ag.run("kernel-build")
        check(rc == 2 and "kernel-build needs --out DIR" in err, err)
    finally:
        ag.cleanup()


def test_skips_with_reason():
    """Without QEMU the VM test is skipped (exit 77) and says why; it never passes."""
    env = dict(os.environ, PATH="/nonexistent")
    p = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__),
                                                     "test_kernel_vm.py"), "--arch", "x86_64"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=120)
    out = p.stdout.decode()
    check(p.returncode == kh.SKIP, "exit %d, want %d: %s" % (p.returncode, kh.SKIP, out))
    check("SKIPPED: qemu-system-x86_64 is missing" in out, out)


def test_ci_kernel_files():
    """ci/kernel/: the script parses and answers --help, names the commit as setlocalversion
    does, its gate command line reaches atomwatch-ci (which cannot reach a closed port: exit 3,
    never a usage error); the pipeline is YAML; the unit passes systemd-analyze."""
    ci = os.path.join(kh.SRC, "ci", "kernel")
    script = os.path.join(ci, "atomwatch-kernel.sh")
    subprocess.run(["sh", "-n", script], check=True)
    p = subprocess.run([script, "--help"], stdout=subprocess.PIPE, timeout=30)
    check(p.returncode == 0 and b"kexec OUT SSH_HOST HOST" in p.stdout
          and b"bisect-step SSH_HOST" in p.stdout, p.stdout)
    p = subprocess.run([script, "nonsense"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(p.returncode == 2, "unknown step: exit %d" % p.returncode)
    repo = tempfile.mkdtemp(prefix="aw-kgit-")
    try:
        git = ["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run(git[:3] + ["init", "-q"], check=True)
        subprocess.run(git + ["commit", "-q", "--allow-empty", "-m", "x"], check=True)
        want = subprocess.run(git[:3] + ["rev-parse", "HEAD"], stdout=subprocess.PIPE,
                              check=True).stdout.decode().strip()
        got = subprocess.run([script, "commit", repo], stdout=subprocess.PIPE,
                             check=True).stdout.decode().strip()
        check(len(got) == 12 and want.startswith(got), "commit %r of %r" % (got, want))
        # bisect-step (bisect.step's worked example): without the agent's ATOMWATCH_COMMIT
        # it says so; a commit whose kernel does not build (no kconfig scripts in this tree)
        # exits non-zero, so that the bisection skips it, and leaves no temporary tree
        p = subprocess.run([script, "bisect-step", "root@nowhere"], cwd=repo,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        check(p.returncode == 3 and b"ATOMWATCH_COMMIT is not set" in p.stderr, p.stderr)
        tmp = tempfile.mkdtemp(prefix="aw-kstep-")
        with open(os.path.join(repo, ".config"), "w") as f:
            f.write("# CONFIG_X is not set\n")
        p = subprocess.run([script, "bisect-step", "root@nowhere"], cwd=repo,
                           env=dict(os.environ, ATOMWATCH_COMMIT=want, TMPDIR=tmp),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        check(p.returncode != 0 and b"merge_config.sh" in p.stdout, p.stdout)
        check(os.listdir(tmp) == [], os.listdir(tmp))
        os.rmdir(tmp)
        ci_bin = os.path.join(kh.BUILD, "ci")
        if os.path.exists(os.path.join(ci_bin, "atomwatch-ci")):
            tok = os.path.join(repo, "tok")
            with open(tok, "w") as f:
                f.write("t\n")
            env = dict(os.environ, PATH=ci_bin + ":" + os.environ["PATH"],
                       ATOMWATCH_COLLECTOR="http://127.0.0.1:1", ATOMWATCH_TOKEN=tok)
            p = subprocess.run([script, "gate", repo, "h1,h2"], env=env, cwd=repo,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
            out = p.stdout.decode()
            check(p.returncode == 3 and "usage" not in out and "--help" not in out,
                  "gate: exit %d: %s" % (p.returncode, out))
    finally:
        shutil.rmtree(repo, ignore_errors=True)
    try:
        import yaml
        with open(os.path.join(ci, "linux.gitlab-ci.yml")) as f:
            doc = yaml.safe_load(f)
        check("atomwatch:gate" in doc and doc["atomwatch:gate"]["needs"], "the gate job")
    except ImportError:
        pass
    if shutil.which("systemd-analyze"):
        p = subprocess.run(["systemd-analyze", "verify",
                            os.path.join(ci, "atomwatch-kernel-run.service")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        check(p.returncode == 0 and not p.stdout.strip(), p.stdout.decode())


def main():
    tests = [("no_headers", test_no_headers), ("not_root", test_not_root),
             ("commit_kernel", test_commit_kernel), ("kernel_build_usage", test_kernel_build_usage),
             ("skips_with_reason", test_skips_with_reason),
             ("ci_kernel_files", test_ci_kernel_files)]
    k = None
    try:
        k = kh.Kernel("x86_64" if os.uname().machine == "x86_64" else "arm64").prepare()
    except kh.Skip as e:
        print("     (no Debian kernel tree: the build failures are left out: %s)" % e)
    if k:
        tests += [("module_does_not_build", lambda: test_module_does_not_build(k)),
                  ("refscale_does_not_build", lambda: test_refscale_does_not_build(k))]
    for name, fn in tests:
        try:
            fn()
            print("ok   %s" % name, flush=True)
        except Exception as e:  # noqa: BLE001
            failed.append(name)
            print("FAIL %s: %s" % (name, e), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

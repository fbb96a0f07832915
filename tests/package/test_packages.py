#!/usr/bin/python3
"""The Debian packages (debian/): builds them for amd64 on this machine and for arm64 by
cross-building in a container (Containerfile.cross), runs lintian on both, installs the amd64
ones into a fresh Debian 12 container (podman; the base image from
scripts/container-setup.sh) where in_container.sh starts the collector from the
installed files, creates a token and uploads a run with the installed agent, and checks the
arm64 ones with dpkg-deb --info/--contents and by running their binaries under qemu-aarch64.

Cached under <build dir>/package-cache: the packages of the last source tree (by the hash of
its files: an unchanged tree is not rebuilt), the apt downloads of the install container, and
podman's layers of the cross-build image."""

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(h.BUILD_DIR, "package-cache")
CROSS_IMAGE = "localhost/atomwatch-crossbuild-arm64:bookworm"
BASE_IMAGE = "docker.io/library/debian:bookworm"  # made by CONTAINER_SETUP, never pulled
CONTAINER_SETUP = os.path.join(h.SOURCE_DIR, "scripts", "container-setup.sh")
JOBS = os.cpu_count() or 2

PACKAGES = ["atomwatch-agent", "atomwatch-collector", "atomwatch-ci", "atomwatch-subject-dev"]
# what each package must hold (dpkg-deb --contents), and the libraries its binaries link
FILES = {
    "atomwatch-agent": ["./usr/bin/atomwatch-agent", "./usr/bin/atomwatch-run",
                        "./lib/systemd/system/atomwatch-agent.service",
                        "./etc/atomwatch/agent.yaml", "./usr/share/atomwatch/matrix.yaml",
                        "./usr/share/man/man1/atomwatch-agent.1.gz",
                        "./usr/share/man/man1/atomwatch-run.1.gz",
                        "./usr/share/doc/atomwatch-agent/copyright"],
    "atomwatch-collector": ["./usr/bin/atomwatch-collector",
                            "./lib/systemd/system/atomwatch-collector.service",
                            "./etc/atomwatch/collector.yaml", "./etc/atomwatch/thresholds.yaml",
                            "./usr/share/man/man8/atomwatch-collector.8.gz",
                            "./usr/share/doc/atomwatch-collector/copyright"],
    "atomwatch-ci": ["./usr/bin/atomwatch-ci", "./usr/share/man/man1/atomwatch-ci.1.gz",
                     "./usr/share/atomwatch/ci/github/atomwatch.yml",
                     "./usr/share/atomwatch/ci/gitlab/atomwatch.gitlab-ci.yml"],
    "atomwatch-subject-dev": ["./usr/include/atomwatch/subject.h",
                              "./usr/share/pkgconfig/atomwatch-subject.pc"],
}
DEPENDS = {
    "atomwatch-agent": ["adduser", "libc6", "libcurl4", "libjansson4", "libssl3", "libyaml-0-2"],
    "atomwatch-collector": ["adduser", "gnuplot-nox | gnuplot", "libc6", "libjansson4",
                            "libmicrohttpd12", "libpq5", "libsqlite3-0", "libyaml-0-2"],
    "atomwatch-ci": ["libc6", "libcurl4", "libjansson4"],
    "atomwatch-subject-dev": [],
}


def sh(*argv, cwd=None, env=None, timeout=1800, check_rc=True):
    t = time.time()
    out = subprocess.run(list(argv), cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=timeout)
    if check_rc and out.returncode != 0:
        raise AssertionError("%s failed (%d) after %.0fs:\n%s" % (
            " ".join(argv), out.returncode, time.time() - t, out.stdout[-6000:]))
    return out.stdout


def need(*programs):
    missing = [p for p in programs if not shutil.which(p)]
    check(not missing, "missing %s: sh scripts/deps.sh test" % " ".join(missing))


def source_files():
    out = subprocess.run(["git", "-C", h.SOURCE_DIR, "ls-files", "-co", "--exclude-standard",
                          "-z"], stdout=subprocess.PIPE, check=True).stdout.decode()
    return sorted(n for n in out.split("\0")
                  if n and os.path.isfile(os.path.join(h.SOURCE_DIR, n)))


def tree_hash(names):
    d = hashlib.sha256()
    for n in names:
        path = os.path.join(h.SOURCE_DIR, n)
        d.update(n.encode() + b"\0" + (b"x" if os.access(path, os.X_OK) else b"-"))
        with open(path, "rb") as f:
            d.update(hashlib.sha256(f.read()).digest())
    return d.hexdigest()[:16]


def copy_tree(names, dest):
    for n in names:
        os.makedirs(os.path.join(dest, os.path.dirname(n)), exist_ok=True)
        shutil.copy2(os.path.join(h.SOURCE_DIR, n), os.path.join(dest, n))


def version():
    with open(os.path.join(h.SOURCE_DIR, "debian", "changelog")) as f:
        return re.match(r"\S+ \(([^)]+)\)", f.readline()).group(1)


class Build:
    """The packages of this source tree, built once per tree."""

    def __init__(self):
        names = source_files()
        self.key = tree_hash(names)
        self.dir = os.path.join(CACHE, "debs-" + self.key)
        self.version = version()
        self.src = None
        if os.path.isdir(self.dir):
            print("packages of tree %s: cached in %s" % (self.key, self.dir), flush=True)
            return
        os.makedirs(CACHE, exist_ok=True)
        for old in os.listdir(CACHE):
            if old.startswith("debs-"):
                shutil.rmtree(os.path.join(CACHE, old), ignore_errors=True)
        work = h.tempdir("aw-package-")
        self.src = os.path.join(work, "atomwatch-" + self.version)
        copy_tree(names, self.src)

    def debs(self, arch):
        d = os.path.join(self.dir, arch)
        return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".deb"))

    def changes(self, arch):
        return os.path.join(self.dir, arch, "atomwatch_%s_%s.changes" % (self.version, arch))

    def keep(self, arch, built_in):
        """Moves what dpkg-buildpackage wrote beside the source into the cache."""
        d = os.path.join(self.dir + ".new", arch)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(built_in):
            if re.search(r"\.(deb|changes|buildinfo)$", f):
                shutil.move(os.path.join(built_in, f), os.path.join(d, f))


def test_build_amd64(b):
    if not b.src:
        return
    need("dpkg-buildpackage", "dh", "lintian")
    env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck parallel=%d" % JOBS)
    # the unit tests ran in the suite already: nocheck
    sh("dpkg-buildpackage", "-b", "-us", "-uc", "-Pnocheck", cwd=b.src, env=env)
    b.keep("amd64", os.path.dirname(b.src))


def test_build_arm64(b):
    if not b.src:
        return
    need("podman")
    sh("sh", CONTAINER_SETUP)
    ctx = h.tempdir("aw-cross-ctx-")
    shutil.copy(os.path.join(b.src, "debian", "control"), ctx)
    sh("podman", "build", "--pull=never", "--layers", "-t", CROSS_IMAGE, "-f",
       os.path.join(HERE, "Containerfile.cross"), ctx)
    out = os.path.dirname(b.src)
    script = ("cp -a /src /build && cd /build && "
              "DEB_BUILD_OPTIONS='nocheck parallel=%d' dpkg-buildpackage -aarm64 -Pcross,nocheck "
              "-B -us -uc && cp ../*.deb ../*.changes ../*.buildinfo /out/" % JOBS)
    sh("podman", "run", "--pull=never", "--rm", "--network=none", "-v", "%s:/src:ro" % b.src,
       "-v", "%s:/out" % out, CROSS_IMAGE, "sh", "-c", script)
    b.keep("arm64", out)
    os.rename(b.dir + ".new", b.dir)


def lintian(changes):
    # Errors and warnings fail; each tag left (info) is explained in debian/*.lintian-overrides.
    out = sh("lintian", "--fail-on", "error,warning", "--info", "--display-info", changes,
             check_rc=False)
    tags = [line for line in out.splitlines() if re.match(r"^[EWIPX]: ", line)]
    print("lintian %s: %s" % (os.path.basename(changes), "; ".join(tags) or "clean"))
    check(not any(t.startswith(("E:", "W:")) for t in tags), out)
    return tags


def exec_ranges(path):
    """The file offsets [start, end) of an ELF64 little-endian file's executable sections."""
    with open(path, "rb") as f:
        data = f.read()
    eq(data[:6], b"\x7fELF\x02\x01", "%s: ELF64 little-endian" % path)
    shoff = int.from_bytes(data[0x28:0x30], "little")
    shentsize = int.from_bytes(data[0x3A:0x3C], "little")
    shnum = int.from_bytes(data[0x3C:0x3E], "little")
    ranges = []
    for i in range(shnum):
        sh_ = data[shoff + i * shentsize:shoff + (i + 1) * shentsize]
        flags = int.from_bytes(sh_[8:16], "little")
        offset = int.from_bytes(sh_[24:32], "little")
        size = int.from_bytes(sh_[32:40], "little")
        if flags & 0x4:  # SHF_EXECINSTR
            ranges.append((offset, offset + size))
    return data, ranges


def instruction_bytes(path, word):
    """True when every place the word's bytes occur in the ELF file is inside an executable
    section: lintian's spelling check reads `strings --all`, which includes machine code, and
    four bytes of an arm64 instruction stream can spell a word (0x54000001 0xf9456761 holds
    "TagE"). A word in .rodata or .data is text the program prints and stays unexplained."""
    data, ranges = exec_ranges(path)
    at = [m.start() for m in re.finditer(re.escape(word.encode()), data)]
    return bool(at) and all(any(s <= i and i + len(word) <= e for s, e in ranges) for i in at)


def unpacked(b, arch, package, root):
    d = os.path.join(root, arch, package)
    if not os.path.isdir(d):
        os.makedirs(d)
        sh("dpkg-deb", "-x", deb_of(b, arch, package), d)
    return d


def explained(b, arch, tag, root):
    """A spelling-error-in-binary tag whose word lies only in machine code is explained."""
    m = re.match(r"^I: (\S+): spelling-error-in-binary (\S+) \S+ \[(\S+)\]$", tag)
    if not m:
        return False
    package, word, installed = m.groups()
    d = unpacked(b, arch, package, root)
    if not instruction_bytes(os.path.join(d, installed), word):
        return False
    print("lintian %s: %s: the word's bytes are machine code only" % (arch, tag))
    return True


def test_lintian(b):
    root = h.tempdir("aw-lintian-")
    for arch in ("amd64", "arm64"):
        tags = [t for t in lintian(b.changes(arch)) if not explained(b, arch, t, root)]
        eq(tags, [], "lintian tags of %s left unexplained" % arch)
    # the rule above can refuse: a word the collector prints lies in .rodata, not in code
    binary = os.path.join(unpacked(b, "arm64", "atomwatch-collector", root), "usr", "bin",
                          "atomwatch-collector")
    check(not instruction_bytes(binary, "atomwatch-collector"),
          "a string of .rodata was taken for machine code")
    check(not explained(b, "arm64", "I: atomwatch-collector: spelling-error-in-binary "
                        "atomwatch-collector Stage [usr/bin/atomwatch-collector]", root),
          "a tag on a word of .rodata was explained away")


def deb_of(b, arch, package):
    want = "%s_%s_%s.deb" % (package, b.version, "all" if package.endswith("-dev") else arch)
    path = os.path.join(b.dir, "amd64" if want.endswith("_all.deb") else arch, want)
    check(os.path.exists(path), "no %s among %s" % (want, b.debs(arch)))
    return path


def check_deb(path, arch, package):
    info = sh("dpkg-deb", "--info", path)
    fields = dict(re.findall(r"^ ([A-Za-z-]+): (.*)$", info, re.M))
    eq(fields.get("Package"), package, path)
    eq(fields.get("Architecture"), "all" if package.endswith("-dev") else arch, path)
    depends = [d.strip() for d in fields.get("Depends", "").split(",") if d.strip()]
    for dep in DEPENDS[package]:
        check(any(d == dep or d.startswith(dep + " ") for d in depends),
              "%s: Depends lacks %s: %s" % (path, dep, depends))
    contents = sh("dpkg-deb", "--contents", path)
    names = {line.split()[5] for line in contents.splitlines()}
    for f in FILES[package]:
        check(f in names, "%s lacks %s:\n%s" % (path, f, contents))
    return fields


def test_amd64_contents(b):
    for p in PACKAGES:
        check_deb(deb_of(b, "amd64", p), "amd64", p)


def test_arm64_packages(b):
    need("qemu-aarch64")
    root = h.tempdir("aw-arm64-")
    for p in PACKAGES:
        path = deb_of(b, "arm64", p)
        check_deb(path, "arm64", p)
        sh("dpkg-deb", "-x", path, root)
    for prog in ("atomwatch-agent", "atomwatch-run", "atomwatch-collector", "atomwatch-ci"):
        path = os.path.join(root, "usr", "bin", prog)
        with open(path, "rb") as f:
            head = f.read(20)
        eq(head[:4], b"\x7fELF", path)
        eq(int.from_bytes(head[18:20], "little"), 183, "%s: e_machine (183: AArch64)" % prog)
        # the multiarch arm64 libraries of scripts/deps.sh; no QEMU_LD_PREFIX
        env = {k: v for k, v in os.environ.items() if k not in ("QEMU_LD_PREFIX", "QEMU_CPU")}
        out = sh("qemu-aarch64", "-cpu", "max", path, "--version", env=env, timeout=60)
        check(prog in out, "%s --version: %s" % (prog, out))
    out = sh("qemu-aarch64", "-cpu", "max", os.path.join(root, "usr", "bin", "atomwatch-run"),
             "--profile", "quick", "--list", timeout=120)
    for cell in ("op=ldadd cpu=0", "op=stadd cpu=0", "op=llsc cpu=0"):
        check(cell in out, "atomwatch-run --list under qemu -cpu max lacks %s:\n%s" % (cell, out))


def test_install_amd64(b):
    need("podman")
    sh("sh", CONTAINER_SETUP)
    debs = h.tempdir("aw-debs-")
    for p in PACKAGES:
        shutil.copy(deb_of(b, "amd64", p), debs)
    apt = os.path.join(CACHE, "apt")
    for d in ("archives/partial", "lists/partial"):
        os.makedirs(os.path.join(apt, d), exist_ok=True)
    name = "aw-package-test-%d" % os.getpid()
    h.on_exit(lambda: subprocess.run(["podman", "rm", "-f", name], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL))
    out = sh("podman", "run", "--pull=never", "--rm", "--name", name, "-v", "%s:/debs:ro" % debs,
             "-v", "%s:/var/cache/apt/archives" % os.path.join(apt, "archives"),
             "-v", "%s:/var/lib/apt/lists" % os.path.join(apt, "lists"),
             "-v", "%s:/test.sh:ro" % os.path.join(HERE, "in_container.sh"),
             BASE_IMAGE, "sh", "/test.sh", check_rc=False, timeout=900)
    print(out.rstrip())
    eq(out.rstrip().splitlines()[-1:], ["PASS"], "in_container.sh")


def main():
    b = Build()
    h.run([("amd64: dpkg-buildpackage", lambda: test_build_amd64(b)),
           ("arm64: dpkg-buildpackage -aarm64 (in a container)", lambda: test_build_arm64(b)),
           ("lintian, amd64 and arm64", lambda: test_lintian(b)),
           ("amd64: dpkg-deb --info/--contents", lambda: test_amd64_contents(b)),
           ("arm64: dpkg-deb --info/--contents, binaries under qemu", lambda: test_arm64_packages(b)),
           ("amd64: installed in Debian 12, collector, token, agent upload, gate",
            lambda: test_install_amd64(b))], "Debian packages")


if __name__ == "__main__":
    main()

"""Real Debian kernels for the kernel tests: fetched with `apt-get download` (never installed on
this host), unpacked into a cache keyed by package versions, the atomwatch module and refscale
built for them with the agent's own `kernel-build`, and booted under QEMU (TCG: timings are
emulated, so the tests check behaviour, never nanoseconds) with a busybox initramfs. The guest
mounts this host's / read-only over 9p and chroots into it to run the agent (its dynamic
libraries included; arm64 binaries find theirs through Debian multiarch), and a second,
writable 9p share carries configs in and results out.

A test calls prepare(arch) and boot(...); missing tools or packages raise Skip with the reason
(the test exits 77, which CTest reports as skipped). The cache is
$AW_KERNEL_CACHE, else /var/cache/atomwatch-kernel-test (root), else
~/.cache/atomwatch-kernel-test; a lock file serialises tests that prepare at the same time."""

import fcntl
import glob
import gzip
import hashlib
import io
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

SKIP = 77
SRC = os.environ.get("AW_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("AW_BUILD_DIR") or os.path.join(SRC, "build", "native")

# Debian's names: the image's flavour, QEMU's binary, accelerator and machine, the console.
# An x86_64 guest's vCPUs share one TCG thread: Linux patches its own code at boot (static
# keys: an int3 written first, then the instruction) while the other vCPU runs, and QEMU 7.2's
# multi-threaded TCG let a vCPU run the stale int3 after the patch was done ("Oops: int3" in
# sched_clock_cpu, 6.12, once in CI). One thread makes the other vCPU see each write at once.
ARCHES = {
    "x86_64": {"deb": "amd64", "qemu": "qemu-system-x86_64", "accel": "tcg,thread=single",
               "machine": [], "console": "ttyS0"},
    "arm64": {"deb": "arm64", "qemu": "qemu-system-aarch64", "accel": "tcg",
              "machine": ["-M", "virt"], "console": "ttyAMA0"},
}
# what the guest needs to mount 9p over virtio-pci (built in or modules, by architecture)
NINEP = ["virtio_pci", "9pnet_virtio", "9p"]
MODULE_DIRS = ("kernel/fs/9p/", "kernel/net/9p/", "kernel/fs/netfs/", "kernel/fs/fscache/",
               "kernel/drivers/virtio/")


class Skip(Exception):
    pass


def log(msg):
    print("kernel-test: " + msg, file=sys.stderr, flush=True)


def cache_root():
    if os.environ.get("AW_KERNEL_CACHE"):
        return os.environ["AW_KERNEL_CACHE"]
    if os.geteuid() == 0:
        return "/var/cache/atomwatch-kernel-test"
    return os.path.join(os.path.expanduser("~"), ".cache", "atomwatch-kernel-test")


def sh(args, cwd=None, env=None, timeout=1200, what=None):
    p = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout)
    if p.returncode:
        raise RuntimeError("%s failed (exit %d):\n%s" % (what or " ".join(args), p.returncode,
                                                         p.stdout.decode(errors="replace")[-3000:]))
    return p.stdout.decode(errors="replace")


def require_tools(arch):
    for tool in (ARCHES[arch]["qemu"], "apt-get", "apt-cache", "dpkg-deb", "make"):
        if not shutil.which(tool):
            raise Skip("%s is missing (scripts/deps.sh test installs it)" % tool)


def apt_show(pkg):
    """(name, version) of the candidate of `pkg` ("name" or "name:arch"), or Skip."""
    try:
        out = subprocess.run(["apt-cache", "show", "--no-all-versions", pkg],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    except OSError as e:
        raise Skip("apt-cache: %s" % e)
    m = re.search(rb"^Version: (\S+)", out.stdout, re.M)
    if out.returncode or not m:
        raise Skip("package %s is not known to apt (%s)" %
                   (pkg, out.stderr.decode(errors="replace").strip()[-300:] or "no candidate"))
    return m.group(1).decode()


def image_abi(deb, series=None):
    """The release Debian's meta package points at, e.g. 6.1.0-57-amd64 (linux-image-amd64),
    or 6.12.117+deb12-amd64 for series 6.12 (linux-image-6.12-amd64)."""
    pkg = "linux-image-%s%s" % (series + "-" if series else "", deb) + \
        ("" if deb == "amd64" else ":" + deb)
    out = subprocess.run(["apt-cache", "depends", pkg], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, timeout=60).stdout.decode()
    m = re.search(r"Depends: linux-image-(\S+?-%s)(:\S+)?$" % deb, out, re.M)
    if not m:
        raise Skip("apt cannot name the kernel behind %s (is the %s architecture added? "
                   "scripts/deps.sh test adds it)" % (pkg, deb))
    return m.group(1)


def native_arch():
    return subprocess.run(["dpkg", "--print-architecture"], stdout=subprocess.PIPE,
                          check=True).stdout.decode().strip()


def download(debs_dir, pkgs):
    """apt-get download of the packages not in debs_dir yet; the .deb path of each."""
    os.makedirs(debs_dir, exist_ok=True)
    paths = {}
    missing = []
    for pkg, version in pkgs:
        name, _, arch = pkg.partition(":")
        pat = os.path.join(debs_dir, "%s_%s_*.deb" % (name, version.replace(":", "%3a")))
        found = [f for f in glob.glob(pat)
                 if f.endswith("_%s.deb" % (arch or native_arch())) or f.endswith("_all.deb")]
        if found:
            paths[pkg] = found[0]
        else:
            missing.append((pkg, version))
    if missing:
        log("apt-get download " + " ".join("%s=%s" % m for m in missing))
        p = subprocess.run(["apt-get", "download", "-q"] + ["%s=%s" % m for m in missing],
                           cwd=debs_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=1800)
        if p.returncode:
            raise Skip("apt-get download failed: %s" % p.stdout.decode(errors="replace")[-500:])
        return download(debs_dir, pkgs)
    return paths


def deb_members(deb, want):
    """Extracts the members of `deb` for which want(name) is true; yields (name, TarInfo,
    bytes)."""
    p = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE)
    try:
        with tarfile.open(fileobj=p.stdout, mode="r|") as t:
            for m in t:
                name = m.name[2:] if m.name.startswith("./") else m.name
                if want(name):
                    data = t.extractfile(m).read() if m.isfile() else None
                    yield name, m, data
    finally:
        p.stdout.close()
        p.wait()


def modinfo_depends(data):
    m = re.search(rb"\0depends=([^\0]*)\0", data) or re.match(rb"depends=([^\0]*)\0", data)
    return [d for d in m.group(1).decode().split(",") if d] if m else []


class Kernel:
    """One architecture's Debian kernel in the cache, ready to boot and build against: the
    current bookworm kernel, or the newest of another series Debian ships (series="6.12")."""

    def __init__(self, arch, series=None):
        self.arch = arch
        self.series = series
        self.a = ARCHES[arch]
        self.deb = self.a["deb"]

    def _resolve(self):
        self.release = image_abi(self.deb, self.series)  # 6.1.0-57-amd64
        abi = self.release[: -len(self.deb) - 1]        # 6.1.0-57
        q = "" if self.deb == "amd64" else ":" + self.deb
        self.pkgs = {
            "image": ("linux-image-%s%s" % (self.release, q), None),
            "headers": ("linux-headers-%s%s" % (self.release, q), None),
            "common": ("linux-headers-%s-common" % abi, None),
            "kbuild": (None, None),
            "source": (None, None),
            "busybox": ("busybox-static%s" % q, None),
        }
        version = apt_show(self.pkgs["image"][0])
        series = ".".join(re.split(r"[.+-]", abi)[:2])  # 6.1
        # the host's build tools, as the headers name them (linux-kbuild-6.1,
        # linux-kbuild-6.12.117+deb12)
        out = subprocess.run(["apt-cache", "show", "--no-all-versions", self.pkgs["headers"][0]],
                             stdout=subprocess.PIPE, timeout=60).stdout.decode()
        m = re.search(r"\b(linux-kbuild-[^\s,:(]+)", out)
        self.pkgs["kbuild"] = (m.group(1) if m else "linux-kbuild-%s" % series, None)
        self.pkgs["source"] = ("linux-source-%s" % series, None)
        self.version_tuple = tuple(int(x) for x in series.split("."))
        self.pkgs = {k: (n, version if k in ("image", "headers", "common", "kbuild", "source")
                         else apt_show(n)) for k, (n, _) in self.pkgs.items()}
        self.version = version
        self.key = "%s_%s" % (self.release, version)
        self.dir = os.path.join(cache_root(), self.key)

    def prepare(self):
        require_tools(self.arch)
        self._resolve()
        os.makedirs(cache_root(), exist_ok=True)
        with open(os.path.join(cache_root(), "lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            t0 = time.time()
            if not os.path.exists(os.path.join(self.dir, "ready")):
                self._unpack()
            self._build_modules()
            took = time.time() - t0
        if took > 2:
            log("prepared %s in %.0f s (cache %s)" % (self.key, took, self.dir))
        return self

    def _unpack(self):
        debs = download(os.path.join(cache_root(), "debs"), list(self.pkgs.values()))
        shutil.rmtree(self.dir, ignore_errors=True)
        root = os.path.join(self.dir, "root")
        os.makedirs(root)
        log("unpacking %s" % self.key)
        for part in ("headers", "common", "kbuild"):
            sh(["dpkg-deb", "-x", debs[self.pkgs[part][0]], root])
        # the headers' Makefile includes the common tree by its installed path
        mk = os.path.join(root, "usr/src/linux-headers-%s/Makefile" % self.release)
        with open(mk) as f:
            text = f.read()
        with open(mk, "w") as f:
            f.write(text.replace("include /usr/src/", "include %s/usr/src/" % root))
        # the image: the kernel, its config and the modules 9p needs
        boot = os.path.join(self.dir, "boot")
        mods = os.path.join(self.dir, "modules")
        os.makedirs(boot)
        os.makedirs(mods)
        names = {}
        prefix = "lib/modules/%s/" % self.release
        for name, m, data in deb_members(
                debs[self.pkgs["image"][0]],
                lambda n: n in ("boot/vmlinuz-" + self.release, "boot/config-" + self.release)
                or (n.startswith(prefix) and n[len(prefix):].startswith(MODULE_DIRS)
                    and n.endswith((".ko", ".ko.xz"))) or n == prefix + "modules.builtin"):
            if name.startswith("boot/"):
                out = os.path.join(boot, os.path.basename(name).split("-")[0])
            elif name.endswith("modules.builtin"):
                out = os.path.join(mods, "modules.builtin")
            else:
                if name.endswith(".xz"):  # 6.12 ships them compressed; busybox insmod wants .ko
                    data = lzma.decompress(data)
                    name = name[:-3]
                mod = os.path.basename(name)[:-3].replace("-", "_")
                names[mod] = modinfo_depends(data)
                out = os.path.join(mods, mod + ".ko")
            with open(out, "wb") as f:
                f.write(data)
        order, seen = [], set()

        def need(mod):
            if mod in seen:
                return
            seen.add(mod)
            for dep in names.get(mod, []):
                need(dep)
            if mod in names:
                order.append(mod)
        for mod in NINEP:
            need(mod)
        with open(os.path.join(mods, "order"), "w") as f:
            f.write(" ".join(order) + "\n")
        # the sources of refscale and torture
        src = os.path.join(self.dir, "src")
        wanted = ("kernel/torture.c", "kernel/rcu/refscale.c", "kernel/rcu/rcu.h")
        series = self.pkgs["source"][0][len("linux-source-"):]
        os.makedirs(src)
        # streamed: the tarball is 140 MB, its content more than a GB
        sh(["sh", "-c", "dpkg-deb --fsys-tarfile \"$1\" | tar -xO ./usr/src/linux-source-$2.tar.xz"
            " | xz -dc | tar -x -C \"$3\" --strip-components=1 " +
            " ".join("linux-source-$2/" + w for w in wanted),
            "sh", debs[self.pkgs["source"][0]], series, src], what="unpacking linux-source")
        for w in wanted:
            if not os.path.exists(os.path.join(src, w)):
                raise RuntimeError("linux-source has no %s" % w)
        for name, m, data in deb_members(debs[self.pkgs["busybox"][0]], lambda n: n == "bin/busybox"):
            with open(os.path.join(self.dir, "busybox"), "wb") as f:
                f.write(data)
        os.chmod(os.path.join(self.dir, "busybox"), 0o755)
        with open(os.path.join(self.dir, "packages.json"), "w") as f:
            json.dump({k: "%s=%s" % v for k, v in self.pkgs.items()}, f, indent=1)
        open(os.path.join(self.dir, "ready"), "w").close()

    @property
    def tree(self):
        return os.path.join(self.dir, "root/usr/src/linux-headers-%s" % self.release)

    @property
    def source(self):
        return os.path.join(self.dir, "src")

    def _build_modules(self):
        """atomwatch.ko, torture.ko and refscale.ko for this kernel, built by the agent's
        kernel-build (cross-compiled for arm64), cached by the module sources' hash."""
        h = hashlib.sha256()
        for f in ("runner/kmod/atomwatch.c", "runner/kmod/Kbuild", "agents/kmod.c"):
            with open(os.path.join(SRC, f), "rb") as fh:
                h.update(fh.read())
        self.kmod = os.path.join(self.dir, "kmod-" + h.hexdigest()[:12])
        if os.path.exists(os.path.join(self.kmod, "ok")):
            return
        shutil.rmtree(self.kmod, ignore_errors=True)
        os.makedirs(self.kmod)
        cfg = os.path.join(self.kmod, "build.yaml")
        make_vars = []
        if self.arch == "arm64" and os.uname().machine != "aarch64":
            if not shutil.which("aarch64-linux-gnu-gcc"):
                raise Skip("aarch64-linux-gnu-gcc is missing (scripts/deps.sh test)")
            make_vars += ["ARCH: arm64", "CROSS_COMPILE: aarch64-linux-gnu-"]
        if not shutil.which("pahole"):
            # kernels with BTF for modules (6.12) want pahole for it; the tests need no BTF
            make_vars.append("CONFIG_DEBUG_INFO_BTF_MODULES: ''")
        cross = "  make_vars: {%s}\n" % ", ".join(make_vars) if make_vars else ""
        with open(cfg, "w") as f:
            f.write("collector: {url: http://127.0.0.1:9, token_file: /dev/null}\n"
                    "spool: {dir: %s/spool}\nkernel:\n  build: %s\n  source: %s\n%s"
                    "  refscale:\n    types: [srcu]\n    source: %s\n"
                    % (self.kmod, self.tree, os.path.join(SRC, "runner/kmod"), cross,
                       self.source))
        t0 = time.time()
        sh([agent("x86_64" if os.uname().machine == "x86_64" else "arm64"), "kernel-build",
            "--config", cfg, "--out", self.kmod], what="atomwatch-agent kernel-build")
        log("built atomwatch.ko, torture.ko and refscale.ko for %s in %.1f s"
            % (self.release, time.time() - t0))
        open(os.path.join(self.kmod, "ok"), "w").close()


def agent(arch):
    """The agent binary for `arch`: the native build's, or the arm64 cross build's (made with
    scripts/build.sh aarch64-agent, incrementally)."""
    if arch == "x86_64" and os.uname().machine == "x86_64" or \
            arch == "arm64" and os.uname().machine == "aarch64":
        path = os.environ.get("AW_AGENT") or os.path.join(BUILD, "agents/atomwatch-agent")
        if not os.path.exists(path):
            raise RuntimeError("no agent at %s" % path)
        return path
    path = os.path.join(SRC, "build/aarch64-agent/agents/atomwatch-agent")
    with open(os.path.join(cache_root(), "lock-agent"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists("/usr/lib/aarch64-linux-gnu/pkgconfig/libcurl.pc"):
            raise Skip("libcurl4-openssl-dev:arm64 is missing (scripts/deps.sh test)")
        sh(["sh", os.path.join(SRC, "scripts/build.sh"), "aarch64-agent"],
           what="scripts/build.sh aarch64-agent")
    return path


# ---- the initramfs ----

def cpio_newc(entries):
    """A newc cpio archive of (name, mode, data) entries (data None: a directory; a tuple
    (major, minor): a character device)."""
    out = bytearray()
    ino = 1

    def pad(n):
        out.extend(b"\0" * ((4 - n % 4) % 4))

    for name, mode, data in entries + [("TRAILER!!!", 0, b"")]:
        rdev = (0, 0)
        if isinstance(data, tuple):
            rdev, data = data, b""
        body = data or b""
        namez = name.encode() + b"\0"
        fields = [ino, mode, 0, 0, 1, 0, len(body), 0, 0, rdev[0], rdev[1], len(namez), 0]
        out.extend(b"070701" + b"".join(b"%08X" % v for v in fields) + namez)
        pad(110 + len(namez))
        out.extend(body)
        pad(len(body))
        ino += 1
    return bytes(out)


INIT = r"""#!/bin/busybox sh
# atomwatch kernel test guest: 9p shares, this host's / as a read-only root to chroot into
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in %(modules)s; do insmod /lib/modules/$m.ko || echo "guest: insmod $m failed"; done
opts=trans=virtio,version=9p2000.L,msize=512000
if ! mount -t 9p -o $opts share /share; then
	echo "guest: cannot mount the share"
	poweroff -f
fi
mount -t 9p -o $opts,ro hostroot /host || echo "guest: cannot mount the host's root"
R=/host
mount -t proc proc $R/proc
mount -t sysfs sys $R/sys
mount -t devtmpfs dev $R/dev
mount --bind /share $R%(share)s
# the kernel's config where an installed kernel has it (the fingerprint hashes it)
mount -t tmpfs boot $R/boot && cp /share/config-%(release)s $R/boot/
echo "guest: up"
. /share/guest.sh > /share/guest.log 2>&1
echo "guest: done"
sync
poweroff -f
"""


class Boot:
    """One boot: a writable share (a temp folder, the same path inside the guest's chroot),
    the guest's steps in guest.sh, the console log."""

    def __init__(self, kernel, cpu=None, smp=2, mem=1024):
        self.k = kernel
        self.cpu = cpu
        self.smp = smp
        self.mem = mem
        self.share = tempfile.mkdtemp(prefix="aw-kernel-", dir="/tmp")
        os.chmod(self.share, 0o755)
        os.makedirs(os.path.join(self.share, "tmp"))
        shutil.copy(os.path.join(kernel.dir, "boot/config"),
                    os.path.join(self.share, "config-" + kernel.release))

    def path(self, *rel):
        return os.path.join(self.share, *rel)

    def write(self, rel, text, mode=0o644):
        with open(self.path(rel), "w") as f:
            f.write(text)
        os.chmod(self.path(rel), mode)

    def read(self, rel, default=None):
        try:
            with open(self.path(rel)) as f:
                return f.read()
        except OSError:
            if default is not None:
                return default
            raise

    def initramfs(self):
        mods = os.path.join(self.k.dir, "modules")
        with open(os.path.join(mods, "order")) as f:
            order = f.read().split()
        with open(os.path.join(self.k.dir, "busybox"), "rb") as f:
            busybox = f.read()
        entries = [(d, 0o40755, None) for d in ("bin", "dev", "proc", "sys", "share", "host",
                                                "lib", "lib/modules")]
        entries.append(("dev/console", 0o20600, (5, 1)))
        entries.append(("bin/busybox", 0o100755, busybox))
        for m in order:
            with open(os.path.join(mods, m + ".ko"), "rb") as f:
                entries.append(("lib/modules/%s.ko" % m, 0o100644, f.read()))
        init = INIT % {"modules": " ".join(order), "share": self.share,
                       "release": self.k.release}
        entries.append(("init", 0o100755, init.encode()))
        path = self.path("initrd.gz")
        with gzip.open(path, "wb", compresslevel=1) as f:
            f.write(cpio_newc(entries))
        return path

    def run(self, guest_sh, timeout=240):
        """Boots, runs guest_sh (busybox sh, outside the chroot; $R is the host's root) and
        powers off. Returns the console output; raises on a timeout or when the guest never
        finished."""
        self.write("guest.sh", guest_sh)
        a = self.k.a
        cmd = [a["qemu"], "-accel", a["accel"], "-m", str(self.mem), "-smp", str(self.smp),
               "-nographic", "-no-reboot", "-nodefaults", "-serial", "stdio"] + a["machine"]
        if self.cpu:
            cmd += ["-cpu", self.cpu]
        cmd += ["-kernel", os.path.join(self.k.dir, "boot/vmlinuz"), "-initrd", self.initramfs(),
                "-append", "console=%s panic=-1 quiet loglevel=4" % a["console"],
                "-virtfs", "local,path=%s,mount_tag=share,security_model=none" % self.share,
                "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,"
                "multidevs=remap"]
        t0 = time.time()
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout)
        self.seconds = time.time() - t0
        self.console = p.stdout.decode(errors="replace")
        with open(self.path("console.log"), "w") as f:
            f.write(self.console)
        if "guest: done" not in self.console:
            raise RuntimeError("the guest did not finish (qemu exit %d); console:\n%s\n"
                               "guest.log:\n%s" % (p.returncode, self.console[-4000:],
                                                   self.read("guest.log", "")[-3000:]))
        return self.console

    def cleanup(self):
        shutil.rmtree(self.share, ignore_errors=True)


def main(fn):
    """Runs fn(); a Skip exits 77 with the reason on stdout (what CTest shows)."""
    try:
        fn()
    except Skip as e:
        print("SKIPPED: %s" % e, flush=True)
        sys.exit(SKIP)

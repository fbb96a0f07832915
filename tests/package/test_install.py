#!/usr/bin/python3
"""cmake --install of the build under test into a temporary DESTDIR: every file the install
rules promise, the systemd units naming the installed programs, the manual pages clean under
`man --warnings`, and a subject library built with nothing but the installed header found
through `pkg-config --cflags atomwatch-subject`."""

import gzip
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

PREFIX = os.environ.get("AW_INSTALL_PREFIX", "/usr/local")
VERSION = os.environ.get("AW_VERSION", "")
PAGES = ["man1/atomwatch-run.1", "man1/atomwatch-agent.1", "man1/atomwatch-ci.1",
         "man8/atomwatch-collector.8"]


def sh(*argv, env=None, cwd=None):
    out = subprocess.run(list(argv), env=env, cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=300)
    if out.returncode:
        raise AssertionError("%s failed (%d):\n%s%s" % (" ".join(argv), out.returncode,
                                                       out.stdout[-3000:], out.stderr[-3000:]))
    return out


class Tree:
    def __init__(self):
        self.dest = h.tempdir("aw-install-")
        self.root = self.dest + PREFIX
        env = dict(os.environ, DESTDIR=self.dest)
        sh("cmake", "--install", h.BUILD_DIR, env=env)

    def path(self, rel):
        return os.path.join(self.root, rel)


def test_files(t):
    want = ["bin/atomwatch-run", "bin/atomwatch-agent", "bin/atomwatch-collector",
            "bin/atomwatch-ci", "lib/systemd/system/atomwatch-agent.service",
            "lib/systemd/system/atomwatch-collector.service", "share/atomwatch/matrix.yaml",
            "share/atomwatch/ci/github/atomwatch.yml",
            "share/atomwatch/ci/gitlab/atomwatch.gitlab-ci.yml",
            "share/doc/atomwatch/examples/agent.yaml",
            "share/doc/atomwatch/examples/collector.yaml",
            "share/doc/atomwatch/examples/thresholds.yaml", "share/doc/atomwatch/LICENSE",
            "share/doc/atomwatch/README.md", "share/doc/atomwatch/api.md",
            "include/atomwatch/subject.h", "share/pkgconfig/atomwatch-subject.pc"] + \
        ["share/man/" + p for p in PAGES]
    missing = [w for w in want if not os.path.isfile(t.path(w))]
    eq(missing, [], "installed files missing")
    for prog in ("atomwatch-run", "atomwatch-agent", "atomwatch-collector", "atomwatch-ci"):
        check(os.access(t.path("bin/" + prog), os.X_OK), prog + " is not executable")
        out = sh(t.path("bin/" + prog), "--version").stdout
        check(VERSION in out, "%s --version: %s" % (prog, out))


def test_units(t):
    for prog in ("atomwatch-agent", "atomwatch-collector"):
        with open(t.path("lib/systemd/system/%s.service" % prog)) as f:
            unit = f.read()
        starts = re.findall(r"^ExecStart=(\S+)", unit, re.M)
        eq(starts, ["%s/bin/%s" % (PREFIX, prog)], "%s.service ExecStart" % prog)
        check("[Install]" in unit and "WantedBy=multi-user.target" in unit, prog)


def test_man(t):
    for page in PAGES:
        path = t.path("share/man/" + page)
        out = subprocess.run(["man", "--warnings", "-l", path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=60,
                             env=dict({k: v for k, v in os.environ.items() if k != "MAN_KEEP_FORMATTING"},
                                      MANWIDTH="80"))
        eq(out.returncode, 0, "man %s" % page)
        eq(out.stderr.strip(), "", "man --warnings %s" % page)
        name = os.path.basename(page).rsplit(".", 1)[0]
        check(name in out.stdout and "SYNOPSIS" in out.stdout, out.stdout[:500])
        with open(path) as f:
            th = [line for line in f if line.startswith(".TH ")]
        check(th and ('"atomwatch %s"' % VERSION) in th[0],
              "%s: .TH names version %s: %s" % (page, VERSION, th))


def test_subject(t):
    env = dict(os.environ, PKG_CONFIG_PATH=t.path("share/pkgconfig"),
               PKG_CONFIG_SYSROOT_DIR=t.dest)
    eq(sh("pkg-config", "--modversion", "atomwatch-subject", env=env).stdout.strip(), VERSION,
       "pkg-config --modversion")
    cflags = sh("pkg-config", "--cflags", "atomwatch-subject", env=env).stdout.split()
    eq(cflags, ["-I%s/include" % t.root], "pkg-config --cflags")
    lib = os.path.join(t.dest, "libpcpu.so")
    src = os.path.join(h.SOURCE_DIR, "examples", "libpcpu", "percpu.c")
    # no -I of the source tree: the header must come from the installed one
    sh("cc", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", *cflags, "-o", lib, src)
    syms = sh("nm", "-D", "--defined-only", lib).stdout
    check(re.search(r" T atomwatch_subject$", syms, re.M), syms)


def main():
    t = Tree()
    h.run([("files and programs", lambda: test_files(t)),
           ("systemd units name the installed programs", lambda: test_units(t)),
           ("manual pages: man --warnings", lambda: test_man(t)),
           ("a subject built with pkg-config --cflags atomwatch-subject",
            lambda: test_subject(t))], "cmake --install")


if __name__ == "__main__":
    main()

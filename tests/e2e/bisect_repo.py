"""A subject repository for the bisection's tests and bench (tests/e2e/test_agent_bisect.py,
test_bisect_daemon.py, bench/agents/bisect_bench.py): bench/detect/subject_chain.c (a serial
chain of 32 dependent multiplies per call, each add one more cycle) committed N times, one
commit in the middle a real code change (EXTRA more adds in the source: about +10% for 10, +5%
for 5 on this VM, docs/benchmarks.md "Interleaved A/B"), every other commit a change of a comment
only (the same machine code). Commit dates a minute apart, a day ago, so that the runs of the
commits order as the commits do. Optionally a commit whose source does not compile."""

import os
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = 'cc -O2 -shared -fPIC -I"$INC" -DCHAIN=32 -o libsubject.so subject.c'


def _env(when):
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update({"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@e2e", "GIT_COMMITTER_NAME": "b",
                "GIT_COMMITTER_EMAIL": "b@e2e", "GIT_AUTHOR_DATE": "@%d +0000" % when,
                "GIT_COMMITTER_DATE": "@%d +0000" % when})
    return env


def git(repo, *args, when=None):
    p = subprocess.run(["git", "-C", repo] + list(args), capture_output=True, text=True,
                       env=_env(when or int(time.time())))
    if p.returncode:
        raise AssertionError("git %s: %s" % (" ".join(args), p.stderr))
    return p.stdout.strip()


def make(repo, n=32, culprit=16, extra=10, broken=(), start=None):
    """Creates the repository in `repo` (a new directory): commits 0 .. n-1, commit `culprit`
    adding `extra` adds, the commits of `broken` not compiling (an #error, removed again by the
    next commit). Returns the list of commit ids, oldest first."""
    with open(os.path.join(SOURCE_DIR, "bench", "detect", "subject_chain.c")) as f:
        source = f.read()
    assert "#ifndef EXTRA\n#define EXTRA 0\n#endif" in source
    os.makedirs(repo, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", repo], check=True)
    with open(os.path.join(repo, ".gitignore"), "w") as f:
        f.write("libsubject.so\n")
    start = start or int(time.time()) - 86400
    shas = []
    adds = 0
    for i in range(n):
        if i == culprit:
            adds = extra
        text = source.replace("#ifndef EXTRA\n#define EXTRA 0\n#endif",
                              "#ifndef EXTRA\n#define EXTRA %d\n#endif" % adds)
        # comment-only changes: the revision's note, the same code
        text += "".join("/* revision %d: a comment, nothing else */\n" % k for k in range(i + 1))
        if i in broken:
            text += "#error this revision does not build\n"
        with open(os.path.join(repo, "subject.c"), "w") as f:
            f.write(text)
        git(repo, "add", "-A", when=start + 60 * i)
        msg = ("add %d adds to the chain" % extra if i == culprit
               else "does not build" if i in broken else "comment %d" % i)
        git(repo, "commit", "-q", "-m", msg, when=start + 60 * i)
        shas.append(git(repo, "rev-parse", "HEAD"))
    return shas


def subject_config(repo, name="s", checkout=False, before=""):
    """The agent config's subjects section for the repository. With `checkout` the build
    checks out $ATOMWATCH_COMMIT first (a daemon's runs build in the repository itself; a
    bisection's worktree is at that commit already); `before` runs first (a slow build)."""
    inc = os.path.join(SOURCE_DIR, "runner", "include")
    build = (before + "; " if before else "") + (
        'git checkout -q "$ATOMWATCH_COMMIT" && ' if checkout else "") + BUILD
    return ("subjects:\n  %s:\n    build: '%s'\n    dir: %s\n    library: %s/libsubject.so\n"
            "    env: {INC: %s}\n    cpus: first\n    timeout: 5m\n"
            % (name, build, repo, repo, inc))

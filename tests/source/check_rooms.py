#!/usr/bin/env python3
"""Fails when a folder of C sources outgrows its room: a .c or .h file of more than MAX_LINES
lines, or a folder holding more than MAX_FILES .c files (headers are not counted: each .c
file is a unit of the link graph, its header the door to it). Each offender is printed with
its count, e.g.
  collector/pages: 16 .c files (at most 15)
  collector/store/pg.c: 1043 lines (at most 1000)
Exit status: 0 when every file and folder fits, 1 when one does not, 2 on usage errors.

Usage: check_rooms.py DIR [DIR...]    (each folder with its subfolders)
       check_rooms.py --self-test      (the checker on made-up folders)
"""
import os
import sys
import tempfile

MAX_LINES = 1000
MAX_FILES = 15


def offenders(top):
    """The lines saying what is too large under `top`, paths relative to top's parent."""
    out, base = [], os.path.dirname(os.path.abspath(top))
    for d, subdirs, files in sorted(os.walk(top)):
        subdirs.sort()
        rel = os.path.relpath(d, base)
        units = [f for f in files if f.endswith(".c")]
        if len(units) > MAX_FILES:
            out.append("%s: %d .c files (at most %d)" % (rel, len(units), MAX_FILES))
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            with open(os.path.join(d, f), "rb") as fh:
                n = fh.read().count(b"\n")
            if n > MAX_LINES:
                out.append("%s: %d lines (at most %d)" % (os.path.join(rel, f), n, MAX_LINES))
    return out


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        top = os.path.join(tmp, "col")
        os.makedirs(os.path.join(top, "sub"))
        for i in range(MAX_FILES):
            with open(os.path.join(top, "sub", "f%d.c" % i), "w") as f:
                f.write("x\n" * MAX_LINES)
        with open(os.path.join(top, "sub", "f.h"), "w") as f:
            f.write("x\n")
        assert offenders(top) == [], offenders(top)  # at the limits: fits
        with open(os.path.join(top, "sub", "one_more.c"), "w") as f:
            f.write("x\n")
        with open(os.path.join(top, "big.h"), "w") as f:
            f.write("x\n" * (MAX_LINES + 1))
        got = offenders(top)
        want = ["col/big.h: %d lines (at most %d)" % (MAX_LINES + 1, MAX_LINES),
                "col/sub: %d .c files (at most %d)" % (MAX_FILES + 1, MAX_FILES)]
        assert got == want, got
    print("check_rooms self-test: ok")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) < 2 or any(a.startswith("-") or not os.path.isdir(a) for a in argv[1:]):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    bad = [line for top in argv[1:] for line in offenders(top)]
    for line in bad:
        print(line)
    if not bad:
        print("every file and folder fits its room")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

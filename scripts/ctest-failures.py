#!/usr/bin/env python3
"""Prints, for each test that failed in a CTest run, its name, its FAIL lines and its last
error line (shortened): the summary scripts/test.sh prints at the end of a failed run, where a
CI log cut to its tail still shows why each test failed.
Usage: ctest-failures.py BUILD_DIR [LABEL]"""
import re
import sys

LIMIT = 2500


def failures(log):
    """(name, output) for each failed test of a LastTest.log."""
    for m in re.finditer(r"^\d+/\d+ Test: (\S+)\n.*?^Output:\n-+\n(.*?)^<end of output>\n"
                         r".*?^Test (Passed|Failed)", log, re.S | re.M):
        if m.group(3) == "Failed":
            yield m.group(1), m.group(2)


def main():
    build, label = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
    try:
        with open(build + "/Testing/Temporary/LastTest.log", errors="replace") as f:
            log = f.read()
    except OSError as e:
        print("no test log in %s: %s" % (build, e))
        return
    for name, out in failures(log):
        lines = out.rstrip().splitlines()
        fails = [x for x in lines if x.startswith("FAIL ")]
        errors = [x for x in lines if re.match(r"\w*(Error|Exception)\b.*: ", x)]
        print("--- %s%s" % (name, " (%s)" % label if label else ""))
        for x in fails:
            print("  " + x)
        last = errors[-1] if errors else "\n".join(lines[-15:])
        print("  " + (last if len(last) <= LIMIT else last[:LIMIT] + " [...]"))


if __name__ == "__main__":
    main()

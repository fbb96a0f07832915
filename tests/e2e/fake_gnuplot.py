#!/usr/bin/python3
"""A gnuplot that starts and then never draws: it answers the collector's first exchange (the
terminals it has, gnuplot's status) as gnuplot does, then reads what it is sent and answers
nothing, so that a post-ingest worker using it hangs in its first chart, holding its task, until
its collector is killed (its input then ends, and so does this process)."""

import re
import sys


def main():
    buf = b""
    answered = False
    while True:
        ch = sys.stdin.buffer.read(1)
        if not ch:
            return 0
        if answered:
            continue
        buf += ch
        terms = re.search(rb'print "(AW-TERMS-[0-9a-f]+) "', buf)
        done = re.search(rb'print sprintf\("(AW-DONE-[0-9a-f]+-[0-9]+) ', buf)
        if terms and done and buf.endswith(b"\n"):
            out = sys.stdout.buffer
            out.write(terms.group(1) + b" svg pngcairo png \n")
            out.write(done.group(1) + b" 0 \n")
            out.flush()
            answered = True


if __name__ == "__main__":
    sys.exit(main())

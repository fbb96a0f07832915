#!/usr/bin/python3
"""How much runs measured back to back share the machine's state (docs/detection.md, "Why"):
for each shape of a recording's subject, the median |log difference| of the p50 of two
consecutive base runs against that of two base runs drawn at random (seeded). A ratio well
under 1 says the host moves in spells longer than a run: a head's confirmations, measured right
after it, repeat its moment rather than test it.

usage: spells.py RECORDING.jsonl[.xz|.gz]...
Exit status: 0, 1 on an unreadable recording, 2 on bad usage."""
import gzip
import json
import lzma
import math
import random
import statistics
import sys

SHAPES = ("overlap", "hash", "branchy", "chain")


def opener(path):
    if path.endswith(".xz"):
        return lzma.open(path, "rt")
    if path.endswith(".gz"):
        return gzip.open(path, "rt")
    return open(path)


def base_p50s(path):
    """{shape: [log p50 of each base run, in measuring order]} of the subject's cells on CPU 0."""
    out = {s: [] for s in SHAPES}
    with opener(path) as f:
        for i, line in enumerate(f):
            if i == 0:
                continue  # the header
            run = json.loads(line)
            if run.get("variant") != "base":
                continue
            for c in run["doc"].get("cells", []):
                if c.get("subject") == "shapes" and c.get("cpu") == 0 and c.get("op") in out \
                        and isinstance(c.get("p50"), (int, float)) and c["p50"] > 0:
                    out[c["op"]].append(math.log(c["p50"]))
    return out


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    for path in sys.argv[1:]:
        try:
            series = base_p50s(path)
        except (OSError, ValueError, EOFError, lzma.LZMAError) as e:
            sys.stderr.write("spells.py: cannot read %s: %s\n" % (path, e))
            return 1
        print(path)
        rng = random.Random(1)
        for shape, x in series.items():
            if len(x) < 10:
                print("  %-8s fewer than 10 base runs" % shape)
                continue
            lag1 = statistics.median(abs(x[i + 1] - x[i]) for i in range(len(x) - 1))
            pairs = statistics.median(abs(x[rng.randrange(len(x))] - x[rng.randrange(len(x))])
                                      for _ in range(5000))
            print("  %-8s consecutive %.2f%%, random pairs %.2f%%, ratio %.2f"
                  % (shape, 100 * lag1, 100 * pairs, lag1 / pairs if pairs else float("nan")))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""bench_detect_replay end to end on a recording of the repository: it prints one table per
recording whose counts add up (every A/A head of --confirm 3 counted by every method, the
variants' heads likewise), --spaced SEED judges more heads (every base run can be one, since
its history is drawn from the whole recording) and gives the same table for the same seed,
--screen-noise 0 judges the same heads, and bad usage exits 2 naming the option.

usage: test_replay.py --replay PATH --recording FILE"""
import argparse
import re
import subprocess
import sys
import unittest

ARGS = None
ROW = re.compile(r"^(atomwatch, --confirm|atomwatch, 1 head run|plain 5% threshold|"
                 r"z-score \|z\| > 5)\s+(\d+)/(\d+)\s+[\d.]+%\s+(\d+)/(\d+)\s+[\d.]+%\s+"
                 r"(\d+)/(\d+)\s+[\d.]+%\s+(\d+)/(\d+)\s+[\d.]+%$")


def replay(*args):
    return subprocess.run([ARGS.replay] + list(args), capture_output=True, text=True,
                          timeout=300)


def table(out):
    rows = {}
    for line in out.splitlines():
        m = ROW.match(line)
        if m:
            rows[m.group(1)] = [int(x) for x in m.groups()[1:]]
    return rows


class Replay(unittest.TestCase):
    def check(self, rows):
        self.assertEqual(len(rows), 4, rows)
        heads = {tuple(r[1::2]) for r in rows.values()}
        self.assertEqual(len(heads), 1, "every method judges the same heads: %r" % rows)
        for r in rows.values():
            for caught, total in zip(r[0::2], r[1::2]):
                self.assertLessEqual(caught, total)
        return heads.pop()

    def test_consecutive_and_spaced(self):
        p = replay(ARGS.recording)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("judged against the base runs measured before it", p.stdout)
        consecutive = self.check(table(p.stdout))
        self.assertGreater(consecutive[0], 0, "A/A heads")
        self.assertGreater(sum(consecutive[1:]), 0, "A/B heads")

        p = replay("--spaced", "7", ARGS.recording)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("History drawn with seed 7", p.stdout)
        spaced = self.check(table(p.stdout))
        # the first ten base runs are heads too, their history drawn from later runs
        self.assertGreater(spaced[0], consecutive[0])
        again = replay("--spaced", "7", ARGS.recording)
        self.assertEqual(table(again.stdout), table(p.stdout), "the same seed, the same draw")

        p = replay("--confirm-after", "20", ARGS.recording)
        self.assertEqual(p.returncode, 0, p.stderr)
        later = self.check(table(p.stdout))
        # heads need their three confirmations from 20 runs on: the last ones have none
        self.assertLess(later[0], consecutive[0])

        # the first run's screen without its noise floor: the same heads, judged again
        p = replay("--screen-noise", "0", ARGS.recording)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.check(table(p.stdout)), consecutive)

    def test_bad_usage(self):
        for args, needle in ((["--spaced", "0"], "--spaced takes a seed >= 1"),
                             (["--spaced", "x"], "--spaced takes a seed >= 1"),
                             (["--confirm-after", "0"], "--confirm-after takes 1..1000"),
                             (["--confirm", "9"], "--confirm takes 0..8"),
                             (["--screen-noise", "-0.01"], "--screen-noise takes 0..0.5"),
                             (["--screen-noise", "1%"], "--screen-noise takes 0..0.5"),
                             ([], "no recording given")):
            p = replay(*args, *([ARGS.recording] if args else []))
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(needle, p.stderr)
            self.assertEqual(p.stdout, "")
        p = replay("/nonexistent/rec.jsonl")
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot open", p.stderr)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--replay", required=True)
    ap.add_argument("--recording", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""bench/detect/spells.py on a recording of the repository: one line per shape with both
medians and their ratio (the same figures twice: its draw is seeded), and bad usage exits 2,
an unreadable recording 1, naming it.

usage: test_spells.py --recording FILE"""
import argparse
import os
import re
import subprocess
import sys
import unittest

ARGS = None
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "detect",
                      "spells.py")


def spells(*args):
    return subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True,
                          timeout=120)


class Spells(unittest.TestCase):
    def test_figures(self):
        p = spells(ARGS.recording)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = re.findall(r"^  (\w+) +consecutive ([\d.]+)%, random pairs ([\d.]+)%, "
                           r"ratio ([\d.]+)$", p.stdout, re.M)
        self.assertEqual([x[0] for x in lines], ["overlap", "hash", "branchy", "chain"])
        for shape, lag1, pairs, ratio in lines:
            self.assertGreater(float(pairs), 0, shape)
            self.assertAlmostEqual(float(ratio), float(lag1) / float(pairs), delta=0.01)
        self.assertEqual(spells(ARGS.recording).stdout, p.stdout, "seeded: the same figures")

    def test_bad_input(self):
        p = spells()
        self.assertEqual(p.returncode, 2)
        self.assertIn("usage: spells.py", p.stderr)
        p = spells("/nonexistent/rec.jsonl.xz")
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot read /nonexistent/rec.jsonl.xz", p.stderr)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--recording", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()

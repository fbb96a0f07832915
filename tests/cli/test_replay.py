#!/usr/bin/python3
"""bench_detect_replay end to end on a recording of the repository: its tallies add up (every
A/A head counted once, each shape's too; each variant's heads caught, loud or silent, those
with a local shift at the threshold among them), it prints the confirmation's cost, --spaced
SEED judges more heads (every base run can be one, since its history is drawn from the whole
recording) and gives the same tallies for the same seed, --confirm-after 20 the same heads (their
confirmations drawn from 20 runs on, wrapping round the recording's end), --confirm-gap-s 0
(re-measurements one after another, not 30 s apart) the same heads, --screen-noise 0 the same
heads, and bad usage exits 2 naming the option. It replays the recording's first
RUNS runs (a plain .jsonl copy), which keeps five replays to a minute.

usage: test_replay.py --replay PATH --recording FILE"""
import argparse
import lzma
import os
import subprocess
import sys
import tempfile
import unittest

ARGS = None
RUNS = 110


def replay(*args):
    return subprocess.run([ARGS.replay] + list(args), capture_output=True, text=True,
                          timeout=300)


def tallies(out):
    """The machine-readable lines: {"aa": (gates, loud, commits), "ab": {(shape, variant):
    (caught, loud, silent, heads, real, real_caught, real_silent, sure, sure_caught,
    sure_silent)}, "aashape": {shape: (gates, loud, heads)}}."""
    t = {"aa": None, "ab": {}, "aashape": {}}
    for line in out.splitlines():
        f = line.split()
        if not f or f[0] != "tally":
            continue
        if f[1] == "aa":
            t["aa"] = tuple(int(x) for x in f[4:7])
        elif f[1] == "aashape":
            t["aashape"][" ".join(f[4:-3])] = tuple(int(x) for x in f[-3:])
        elif f[1] == "ab":
            # tally ab PATH LOAD SHAPE... VARIANT SHIFT caught loud silent heads real rc rs
            # sure sc ss
            t["ab"][(" ".join(f[4:-12]), f[-12])] = tuple(int(x) for x in f[-10:])
    return t


class Replay(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.recording = os.path.join(cls.tmp.name, "first.jsonl")
        with lzma.open(ARGS.recording, "rt") as src, open(cls.recording, "w") as dst:
            for i, line in enumerate(src):
                if i > RUNS:
                    break
                dst.write(line)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check(self, t):
        """Counts that add up; returns the heads judged (A/A commits, each A/B row's heads)."""
        self.assertIsNotNone(t["aa"], "an A/A tally")
        gates, loud, commits = t["aa"]
        self.assertGreater(commits, 0, "A/A heads")
        self.assertLessEqual(gates + loud, commits)
        self.assertTrue(t["ab"], "A/B tallies")
        for key, (caught, loud, silent, heads, real, rc, rs, sure, sc, ss) in t["ab"].items():
            self.assertEqual(caught + loud + silent, heads, key)
            self.assertLessEqual(real, heads, key)
            self.assertLessEqual(rc + rs, real, key)
            self.assertLessEqual(sure, real, key)  # surely at the threshold: at it, first
            self.assertLessEqual(sc, rc, key)
            self.assertLessEqual(ss, rs, key)
            self.assertNotIn("atomwatch-control", key[0], "the control cell is no shape")
        for shape, (g, lo, heads) in t["aashape"].items():
            self.assertEqual(heads, commits, shape)
            self.assertLessEqual(g + lo, heads, shape)
        return (commits,) + tuple(sorted((k, v[3]) for k, v in t["ab"].items()))

    def test_consecutive_and_spaced(self):
        p = replay(self.recording)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("judged against the base runs measured before it", p.stdout)
        self.assertRegex(p.stdout, r"confirmation cost: .* median [\d.]+x over \d+ A/A heads")
        consecutive = self.check(tallies(p.stdout))
        consecutive_text = p.stdout
        self.assertGreater(sum(h for _, h in consecutive[1:]), 0, "A/B heads")

        # (re-measurements back to back: a spaced history keeps away from every moment a
        # head's confirmations measure, and 30 s apart they cover this short copy)
        p = replay("--spaced", "7", "--confirm-gap-s", "0", self.recording)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("History drawn with seed 7", p.stdout)
        spaced = self.check(tallies(p.stdout))
        # the first base runs are heads too, their history drawn from later runs
        self.assertGreater(spaced[0], consecutive[0])
        again = replay("--spaced", "7", "--confirm-gap-s", "0", self.recording)
        self.assertEqual(tallies(again.stdout), tallies(p.stdout), "the same seed, the same draw")

        p = replay("--confirm-after", "20", self.recording)
        self.assertEqual(p.returncode, 0, p.stderr)
        # confirmations from 20 runs on, the recording's start after its end: the same heads
        self.assertEqual(self.check(tallies(p.stdout)), consecutive)

        # re-measurements one after another (the default waits 30 s between them): the same
        # heads, each confirmed by the runs next to it
        p = replay("--confirm-gap-s", "0", self.recording)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("Confirmations measured apart", p.stdout)
        self.assertEqual(self.check(tallies(p.stdout)), consecutive)
        self.assertIn("Confirmations measured apart: the i-th the first run of its kind "
                      "started 30 s x i", consecutive_text)

        # the first run's screen without its noise floor: the same heads, judged again
        p = replay("--screen-noise", "0", self.recording)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.check(tallies(p.stdout)), consecutive)

    def test_bad_usage(self):
        for args, needle in ((["--spaced", "0"], "--spaced takes a seed >= 1"),
                             (["--spaced", "x"], "--spaced takes a seed >= 1"),
                             (["--confirm-after", "0"], "--confirm-after takes 1..1000"),
                             (["--confirm", "17"], "--confirm takes 0..16"),
                             (["--confirm", "x"], "--confirm takes 0..16"),
                             (["--screen-noise", "-0.01"], "--screen-noise takes 0..0.5"),
                             (["--confirm-gap-s", "-1"], "--confirm-gap-s takes 0..3600"),
                             (["--confirm-gap-s", "3601"], "--confirm-gap-s takes 0..3600"),
                             (["--confirm-gap-s", "x"], "--confirm-gap-s takes 0..3600"),
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

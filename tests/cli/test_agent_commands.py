#!/usr/bin/python3
"""atomwatch-agent's commands, three ways: the manual page (its SYNOPSIS and its COMMANDS
section), `--help` (its "Commands:" section) and the agent itself (the list in its "unknown
command" error, and that each command is dispatched rather than refused as unknown) must name
the same commands. A command added to one and forgotten in another fails here."""
import argparse
import os
import re
import subprocess
import sys
import unittest

ARGS = None
COMMAND_RE = re.compile(r"^[a-z][a-z0-9-]*$")


def roff_text(line):
    """A roff line's words without its font escapes: '\\-' is '-', '\\fI' and the like go."""
    line = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", line)
    return line.replace("\\-", "-").replace("\\(em", "-").replace('"', "")


def man_sections(path):
    """Section name -> its lines, for the .SH sections of a man(7) page."""
    sections, name = {}, None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^\.SH\s+(.*)$", line)
            if m:
                name = roff_text(m.group(1)).strip()
                sections[name] = []
            elif name:
                sections[name].append(line)
    return sections


def synopsis_commands(lines):
    """The word after the program name in each .SY block: the first bold word after .SY."""
    out, in_sy = [], False
    for line in lines:
        if line.startswith(".SY"):
            in_sy = True
            continue
        if in_sy and line.startswith(".B "):
            out.append(roff_text(line[3:]).split()[0])
            in_sy = False
        elif in_sy and line.startswith(".YS"):
            raise AssertionError("a .SY block without a command in bold")
    return out


def commands_section(lines):
    """The tags of the top-level .TP paragraphs of COMMANDS (those inside .RS/.RE are a
    command's options): the first word of each tag line."""
    out, depth, want_tag = [], 0, False
    for line in lines:
        if line.startswith(".RS"):
            depth += 1
        elif line.startswith(".RE"):
            depth -= 1
        elif line.startswith(".TP"):
            want_tag = depth == 0
        elif want_tag:
            want_tag = False
            m = re.match(r"^\.(?:B|BI|BR|I|IR)\s+(.*)$", line)
            out.append(roff_text(m.group(1) if m else line).split()[0])
    return out


def help_commands(text):
    """The commands of --help's "Commands:" section: its lines indented by exactly two
    spaces (the synopsis continuations and descriptions are indented further)."""
    lines = text.splitlines()
    try:
        start = lines.index("Commands:")
    except ValueError:
        raise AssertionError("no 'Commands:' line in --help:\n" + text)
    out = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        m = re.match(r"^  (\S+)", line)
        if m:
            out.append(m.group(1))
    return out


def agent(*args):
    return subprocess.run([ARGS.agent] + list(args), capture_output=True, text=True, timeout=60)


class Commands(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.man = man_sections(ARGS.man)
        p = agent("--help")
        if p.returncode != 0:
            raise AssertionError("--help exited %d: %s" % (p.returncode, p.stderr))
        cls.help = help_commands(p.stdout)

    def check_names(self, names, where):
        self.assertTrue(names, "no commands found in %s" % where)
        for n in names:
            self.assertRegex(n, COMMAND_RE, "a command of %s" % where)
        self.assertEqual(len(names), len(set(names)), "a command twice in %s" % where)

    def test_synopsis_matches_commands_section(self):
        synopsis = synopsis_commands(self.man["SYNOPSIS"])
        commands = commands_section(self.man["COMMANDS"])
        self.check_names(synopsis, "the man page's SYNOPSIS")
        self.check_names(commands, "the man page's COMMANDS")
        self.assertEqual(sorted(synopsis), sorted(commands),
                         "SYNOPSIS and COMMANDS of %s differ" % ARGS.man)

    def test_help_lists_the_man_page_commands(self):
        self.check_names(self.help, "--help")
        man = set(synopsis_commands(self.man["SYNOPSIS"])) | set(
            commands_section(self.man["COMMANDS"]))
        self.assertEqual(sorted(self.help), sorted(man),
                         "--help lists %s, the man page %s" % (sorted(self.help), sorted(man)))

    def test_agent_knows_exactly_these_commands(self):
        p = agent("no-such-command")
        self.assertEqual(p.returncode, 2, p.stderr)
        m = re.search(r"unknown command 'no-such-command' \(([^)]*)\)", p.stderr)
        self.assertTrue(m, p.stderr)
        known = re.split(r",\s*|\s+or\s+", m.group(1).strip())
        self.assertEqual(sorted(known), sorted(self.help),
                         "the agent's own list of commands differs from --help's")
        # Each is dispatched: whatever it then says (a missing option, the missing config), it is
        # not refused as unknown. Nothing is measured: every call lacks what it needs.
        missing = os.path.join(os.sep, "nonexistent", "agent.yaml")
        for command in self.help:
            p = agent(command, "--config", missing)
            self.assertNotIn("unknown command", p.stderr, command)
            self.assertNotEqual(p.returncode, 0, "%s with no config: %s" % (command, p.stderr))


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--man", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()

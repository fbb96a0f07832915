#!/usr/bin/python3
"""The house style checks of docs/style.md that a machine can make, over every C source and
header of the tree (C++ too for the banned functions):

  check_style.py banned SOURCE_DIR            calls of banned functions, as file:line:col
  check_style.py format SOURCE_DIR CLANG_FORMAT   clang-format --dry-run -Werror (.clang-format)
  check_style.py selftest                     the banned check finds calls, not mentions

Exit status 0 when clean, 1 with one line per finding, 2 on a usage or tool error."""

import os
import re
import subprocess
import sys
import tempfile

# Each banned function with what to use instead. They either write without a bound, cannot
# report a parse error, or keep hidden static state (not thread-safe).
BANNED = {
    "strcpy": "snprintf(), or memcpy() of a length already checked",
    "strcat": "aw_buf_puts()/aw_buf_printf() (common/include/aw/buf.h) or snprintf()",
    "strncpy": "snprintf() or memcpy() (strncpy may leave the copy unterminated)",
    "strncat": "aw_buf_puts()/aw_buf_printf() or snprintf()",
    "stpcpy": "memcpy() of a length already checked",
    "sprintf": "snprintf() or aw_asprintf() (common/include/aw/util.h)",
    "vsprintf": "vsnprintf() or aw_buf_vprintf()",
    "gets": "fgets() or getline()",
    "atoi": "aw_parse_u64() (common/include/aw/util.h), or strtol() with errno and the end checked",
    "atol": "aw_parse_u64(), or strtol() with errno and the end checked",
    "atoll": "aw_parse_u64(), or strtoll() with errno and the end checked",
    "atof": "strtod() with errno and the end checked",
    "strtok": "strtok_r(), or strcspn()/strspn() over the string",
    "tmpnam": "mkstemp() or mkdtemp()",
    "tempnam": "mkstemp() or mkdtemp()",
    "mktemp": "mkstemp() or mkdtemp()",
    "gmtime": "gmtime_r(), or aw_time_format() (common/include/aw/util.h)",
    "localtime": "localtime_r()",
    "ctime": "strftime() over localtime_r()",
    "asctime": "strftime()",
    "alloca": "a fixed-size buffer or malloc() (no stack allocations of run-time size)",
}

SKIP_DIRS = {".git", "node_modules", "build"}
CALL = re.compile(r"(?<![\w.>$])(" + "|".join(sorted(BANNED, key=len, reverse=True)) +
                  r")\s*\(")


def sources(top, exts):
    """Tracked and untracked-but-not-ignored files when `top` is a git checkout, else a walk that
    skips build trees."""
    try:
        out = subprocess.run(["git", "-C", top, "ls-files", "-co", "--exclude-standard", "-z"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
        names = [n for n in out.stdout.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
        for d, dirs, files in os.walk(top):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith(("obj-", "build"))]
            names += [os.path.relpath(os.path.join(d, f), top) for f in files]
    return sorted(n for n in names if n.endswith(exts) and os.path.isfile(os.path.join(top, n)))


def blank_non_code(text):
    """The text with comments and string and character literals turned into spaces (newlines
    kept), so that a banned name is found only where it is called."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            out.append(c)
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:j]))
        i = j
    return "".join(out)


def find_banned(path, shown):
    with open(path, encoding="utf-8", errors="replace") as f:
        code = blank_non_code(f.read())
    found = []
    for m in CALL.finditer(code):
        line = code.count("\n", 0, m.start()) + 1
        col = m.start() - (code.rfind("\n", 0, m.start()) + 1) + 1
        name = m.group(1)
        found.append("%s:%d:%d: banned function '%s': use %s" % (shown, line, col, name,
                                                                 BANNED[name]))
    return found


def check_banned(top):
    found = []
    for name in sources(top, (".c", ".h", ".cc")):
        found += find_banned(os.path.join(top, name), name)
    for line in found:
        print(line)
    print("banned functions: %d call(s) found" % len(found) if found else
          "banned functions: none")
    return 1 if found else 0


def check_format(top, clang_format):
    if not clang_format:
        print("clang-format not found: install it (sh scripts/deps.sh test)", file=sys.stderr)
        return 2
    names = sources(top, (".c", ".h"))
    if not names:
        print("no C sources under %s" % top, file=sys.stderr)
        return 2
    out = subprocess.run([clang_format, "--dry-run", "-Werror", "--style=file"] + names, cwd=top,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if out.returncode:
        print(out.stdout, end="")
        bad = sorted({m.group(1) for m in re.finditer(r"^([^\s:]+):\d+:\d+: error", out.stdout,
                                                        re.M)})
        print("clang-format: %d file(s) to reformat (clang-format -i FILE): %s"
              % (len(bad), " ".join(bad)))
        return 1
    print("clang-format: %d files formatted as .clang-format says" % len(names))
    return 0


def selftest():
    sample = ('/* strcpy(a, b) in a comment */\n'
              '// sprintf(x) too\n'
              'static const char *s = "atoi(\\"1\\") in a string";\n'
              'char c = \'(\';\n'
              'int f(void) { return my_atoi(s) + q.atoi(s) + p->strcat(s) + strtok_r(s, 0, 0); }\n'
              'int g(char *d) { strcpy(d, "x"); return atoi (d); }\n'
              '#define X(d) sprintf(d, "%d", 1)\n')
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "sample.c")
        with open(path, "w") as f:
            f.write(sample)
        got = [line.split(": use ")[0] for line in find_banned(path, "sample.c")]
    want = ["sample.c:6:18: banned function 'strcpy'", "sample.c:6:41: banned function 'atoi'",
            "sample.c:7:14: banned function 'sprintf'"]
    if got != want:
        print("selftest: got %r, want %r" % (got, want))
        return 1
    print("selftest: ok")
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "banned":
        return check_banned(argv[2])
    if len(argv) == 4 and argv[1] == "format":
        return check_format(argv[2], argv[3])
    if len(argv) == 2 and argv[1] == "selftest":
        return selftest()
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Fails when the C files of a folder depend on each other in a circle.

Two graphs are read from the sources themselves, without a compiler:
- the include graph: `#include "x.h"` naming a file of the folder (or of a subfolder);
- the symbol graph between .c files: a.c -> b.c when a.c uses a function or variable that b.c
  defines with external linkage (static ones stay inside their file).
Each cycle found is printed with the headers or symbols on its edges, e.g.
  server.c -> api.c (aw_api_hosts) -> server.c (aw_reply_json)
Exit status: 0 when both graphs are acyclic, 1 when one is not, 2 on usage errors.

Usage: check_cycles.py DIR [DIR...]    (each folder with its subfolders)
       check_cycles.py --self-test      (the checker on made-up files with known cycles)
"""
import os
import re
import sys

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9][A-Za-z0-9_.]*|\S")
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
KEYWORDS = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "_Atomic", "_Bool", "_Noreturn",
    "_Thread_local", "__attribute__", "__thread",
}


def strip(text):
    """The text without comments, string and character literals (each kept as a blank, so
    that lines and token boundaries stay where they were)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join("\n" if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def without_directives(text):
    """The text without preprocessor lines (continuations included)."""
    lines, out, cont = text.split("\n"), [], False
    for line in lines:
        directive = cont or line.lstrip().startswith("#")
        cont = directive and line.endswith("\\")
        out.append("" if directive else line)
    return "\n".join(out)


def definitions(code):
    """The names of the functions and variables a .c file defines at file scope: (those with
    external linkage, the static ones)."""
    toks = TOKEN.findall(without_directives(code))
    names, statics, stmt, parens, i = set(), set(), [], 0, 0

    def skip_braces(i):
        depth = 0
        while i < len(toks):
            depth += {"{": 1, "}": -1}.get(toks[i], 0)
            i += 1
            if not depth:
                break
        return i

    while i < len(toks):
        tok = toks[i]
        if tok == "__attribute__":
            # __attribute__((...)) says nothing about the name; its parentheses would hide it
            depth, i = 0, i + 1
            while i < len(toks):
                depth += {"(": 1, ")": -1}.get(toks[i], 0)
                i += 1
                if not depth:
                    break
            continue
        parens += {"(": 1, ")": -1}.get(tok, 0)
        head = stmt[:stmt.index("=")] if "=" in stmt else stmt
        words = [t for t in stmt if IDENT.fullmatch(t)]
        linkage = not ({"static", "extern", "typedef"} & set(words))
        kept = names if linkage else statics
        if tok == "{" and not parens:
            i = skip_braces(i)
            if "(" in head and "=" not in stmt:
                # a function definition: its name comes just before the first '('
                k = stmt.index("(")
                if k and IDENT.fullmatch(stmt[k - 1]) and "typedef" not in words:
                    kept.add(stmt[k - 1])
                stmt = []
            else:
                stmt.append("{}")  # an initializer, or a struct/union/enum body
            continue
        if tok == ";" and not parens:
            if "(" not in head and not ({"extern", "typedef"} & set(words)):
                decl = head[:head.index("[")] if "[" in head else head
                if decl and decl[0] in ("struct", "union", "enum"):
                    decl = decl[2:] if len(decl) > 1 and IDENT.fullmatch(decl[1]) else decl[1:]
                decl = [t for t in decl if IDENT.fullmatch(t) and t not in KEYWORDS]
                if decl:
                    kept.add(decl[-1])
            stmt = []
        else:
            stmt.append(tok)
        i += 1
    return names, statics


def uses(code):
    """The identifiers a file names, member names (after '.' or '->') left out."""
    toks, out = TOKEN.findall(code), set()
    for k, t in enumerate(toks):
        if not IDENT.fullmatch(t):
            continue
        if k and (toks[k - 1] == "." or (k > 1 and toks[k - 1] == ">" and toks[k - 2] == "-")):
            continue
        out.add(t)
    return out


def cycles(graph):
    """The cycles of a graph, each a list of nodes with the first repeated last: for each
    strongly connected component (of more than one node, or one node with an edge to itself),
    each pair of nodes with edges both ways, and the shortest cycle through each other node."""
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(set(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    found, seen = [], set()
    for comp in comps:
        if len(comp) == 1 and min(comp) not in graph.get(min(comp), ()):
            continue
        # every pair of files that depend on each other both ways, then the shortest cycle
        # (breadth first) through each file no pair names, so that every file is named
        named = set()
        for a in sorted(comp):
            for b in sorted(graph.get(a, ())):
                if a < b and a in graph.get(b, ()):
                    found.append([a, b, a])
                    seen.add(frozenset([(a, b), (b, a)]))
                    named |= {a, b}
        for start in sorted(comp - named):
            path = shortest_cycle(graph, comp, start)
            key = frozenset(zip(path, path[1:]))
            if key not in seen:
                seen.add(key)
                found.append(path)
    return found


def shortest_cycle(graph, comp, start):
    prev, todo = {start: None}, [start]
    while todo:
        nxt = []
        for v in todo:
            for w in sorted(graph.get(v, ())):
                if w == start:
                    path = [w, v]
                    while prev[v] is not None:
                        v = prev[v]
                        path.append(v)
                    return list(reversed(path))
                if w in comp and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        todo = nxt
    return [start, start]


def describe(cycle, label):
    parts = [cycle[0]]
    for a, b in zip(cycle, cycle[1:]):
        parts.append("%s (%s)" % (b, label(a, b)))
    return " -> ".join(parts)


def resolve(name, includer, files):
    """The file of `files` (paths relative to the folder) an #include "name" in `includer`
    means: beside the includer, then from the folder's top, then the one file of that base
    name; None for a header from elsewhere (common's aw/..., the system's)."""
    for cand in (os.path.normpath(os.path.join(os.path.dirname(includer), name)),
                 os.path.normpath(name)):
        if cand in files:
            return cand
    same = [f for f in files if os.path.basename(f) == os.path.basename(name)]
    return same[0] if len(same) == 1 and "/" not in name else None


def check(folder):
    files = sorted(os.path.relpath(os.path.join(d, f), folder)
                   for d, _, names in os.walk(folder) for f in names
                   if f.endswith((".c", ".h")))
    raw = {f: open(os.path.join(folder, f), encoding="utf-8", errors="replace").read()
           for f in files}
    problems = []

    includes = {}  # file -> {file it includes: the name as written}
    for f in files:
        for name in INCLUDE.findall(strip_keep_includes(raw[f])):
            g = resolve(name, f, raw)
            if g and g != f:
                includes.setdefault(f, {})[g] = name
    for c in cycles(includes):
        problems.append("include cycle in %s: %s" % (folder, describe(
            c, lambda a, b: "#include \"%s\"" % includes[a][b])))

    code = {f: strip(raw[f]) for f in files if f.endswith(".c")}
    defined, own = {}, {}
    for f, text in code.items():
        external, static = definitions(text)
        own[f] = external | static
        for name in external:
            defined.setdefault(name, set()).add(f)
    # a name a file defines itself (its own static, or one of two builds' variants of the same
    # function) is a use of its own definition
    used = {f: uses(text) - own[f] for f, text in code.items()}
    edges = {}
    for f in code:
        for name in used[f]:
            for g in defined.get(name, ()):
                if g != f:
                    edges.setdefault(f, {}).setdefault(g, set()).add(name)
    graph = {f: set(edges.get(f, {})) for f in code}
    for c in cycles(graph):
        problems.append("call cycle in %s: %s" % (folder, describe(
            c, lambda a, b: ", ".join(sorted(edges[a][b])[:3]) +
            (", ..." if len(edges[a][b]) > 3 else ""))))
    return problems, len(files), sum(len(v) for v in graph.values())


def strip_keep_includes(text):
    """Comments removed, the quoted names of #include lines kept."""
    names = INCLUDE.findall(re.sub(r"/\*.*?\*/", " ", text, flags=re.S))
    return "\n".join('#include "%s"' % n for n in names)


def self_test():
    """The checker finds the cycles it should and no others, on files written here."""
    import tempfile
    files = {
        "a.h": '#include "b.h"\n',
        "b.h": '#include <stdio.h>\n#include "sub/c.h" /* "a.h" */\n',
        "sub/c.h": '#include "../a.h"\n',
        "d.h": '#include "b.h"\n',
        "x.c": '#include "d.h"\nint y_fn(void);\n'
               'int x_fn(void)\n{\n\treturn y_fn();\n}\n',
        "y.c": 'struct s { int (*x_fn)(void); };\nint x_fn(void);\n'
               'static int local(struct s *p) { return p->x_fn(); }\n'
               'int __attribute__((unused)) y_fn(void) { return x_fn() + local(0); }\n',
        "z.c": '/* y_fn() */ static const char *s = "y_fn";\n'
               'static const struct { int a; } w_table[] = {{1}};\n'
               'int z_fn(void) { return w_table[0].a + (s != 0); }\n',
        "w.c": 'int w_table;\nextern int z_fn(void);\nint w_fn(void) { return z_fn(); }\n',
    }
    with tempfile.TemporaryDirectory() as d:
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        problems, n_files, _ = check(d)
    want = [
        "include cycle in %s: a.h -> b.h (#include \"b.h\") -> sub/c.h (#include \"sub/c.h\") "
        "-> a.h (#include \"../a.h\")" % d,
        "call cycle in %s: x.c -> y.c (y_fn) -> x.c (x_fn)" % d,
    ]
    ok = n_files == len(files) and problems == want
    for p in problems:
        print("found:  " + p)
    if not ok:
        for w in want:
            print("wanted: " + w)
    print("self-test %s" % ("passed" if ok else "FAILED"))
    return 0 if ok else 1


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    problems = []
    for folder in argv[1:]:
        if not os.path.isdir(folder):
            print("%s: not a folder" % folder, file=sys.stderr)
            return 2
        p, n_files, n_edges = check(folder)
        problems += p
        print("%s: %d files, %d dependencies between .c files, %d cycle(s)" %
              (folder, n_files, n_edges, len(p)))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Every note cited in the tree has a definition under exactly that name (the notes test).

Two forms, each checked against its own definitions (commit c3690b4 explains why two):
  bracket  the name in square brackets after the word: defined by a comment line (// or #) that
           starts with it, alone or followed by a colon and its text; cited anywhere.
  quoted   the notes kept in CMake files and scripts, which an external checker of the bracket
           form does not read: the name in double quotes after the word, defined by a # comment
           line that holds it alone; cited anywhere.
This file spells neither form literally (it builds them from WORD), so it is checked like any
other, by itself and by that external checker.
A citation whose name matches no definition exactly (a truncated or misspelt name), and a
citation split across lines, fail, with their file and line. Scans every text file under the
root but build trees and hidden directories.

  tools/check_notes.py [--root DIR]   check the tree (default: this checkout)
  tools/check_notes.py --self-test    check that a broken citation of each form fails and a
                                      correct one passes, in a scratch tree
Python 3 standard library only.
"""
import argparse
import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORD = "No" + "te"  # never the word and a bracket or quote together in this file's text
LB, RB, Q = "\\[", "\\]", '"'
FORMS = {
    "bracket": (re.compile(r"^\s*(?://|#) " + WORD + " " + LB + r"([^\]\n]+)" + RB +
                           r"(?::|\s*$)"),
                re.compile(WORD + " " + LB + r"([^\]\n]*)" + RB)),
    "quoted": (re.compile(r"^\s*# " + WORD + " " + Q + r"([^\"\n]+)" + Q + r"\s*$"),
               re.compile(WORD + " " + Q + r"([^\"\n]*)" + Q)),
}
# A citation broken across lines reads as a truncated name: the word Note at the end of a line, or
# an opening bracket or quote that the line does not close.
SPLIT = re.compile(r"\b" + WORD + r"(\s*$| " + LB + r"[^\]\n]*$| " + Q + r"[^\"\n]*$)")
SKIP_DIRS = re.compile(r"^(\..*|build|build-.*|out|__pycache__)$")


def text_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not SKIP_DIRS.match(d))
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            try:
                if os.path.getsize(path) > 4 << 20:
                    continue
                with open(path, encoding="utf-8") as f:
                    yield os.path.relpath(path, root), f.read().splitlines()
            except (UnicodeDecodeError, OSError):
                continue  # binary files (plots, data)


def check(root, out=sys.stdout):
    definitions = {form: {} for form in FORMS}
    citations = {form: [] for form in FORMS}
    split = []
    for rel, lines in text_files(root):
        for n, line in enumerate(lines, 1):
            s = SPLIT.search(line)
            if s:
                split.append((rel, n, line[s.start():]))
            for form, (define, cite) in FORMS.items():
                m = define.match(line)
                if m:
                    definitions[form].setdefault(m.group(1), f"{rel}:{n}")
                for c in cite.finditer(line):
                    if m and c.start() == line.index(WORD):
                        continue  # the definition itself
                    citations[form].append((c.group(1), rel, n))
    bad = len(split)
    for rel, n, text in split:
        print(f"{rel}:{n}: a note citation split across lines ({text.strip()!r}): write its "
              "name on one line", file=out)
    for form in FORMS:
        for name, rel, n in citations[form]:
            if name not in definitions[form]:
                bad += 1
                near = [d for d in definitions[form] if d.startswith(name.rstrip(".").strip())
                        or name.startswith(d)]
                hint = f" (did you mean: {', '.join(near)}?)" if near else ""
                print(f"{rel}:{n}: {WORD} {name!r} ({form} form) has no definition{hint}",
                      file=out)
    counts = ", ".join(f"{len(citations[f])} {f} citations of {len(definitions[f])} definitions"
                       for f in FORMS)
    if bad:
        print(f"notes: {bad} broken citation(s); {counts}", file=out)
        return 1
    print(f"notes: ok: {counts}", file=out)
    return 0


def self_test():
    # Written with N for the word, so that this file cites nothing itself.
    def t(text):
        return text.replace("N[", WORD + " [").replace('N"', WORD + ' "')

    cases = {
        "good": ("// N[Some name]\n// text\n", "// See N[Some name].\n",
                 '# N"Kept in CMake"\n', 'x # N"Kept in CMake"\n', 0),
        "truncated bracket": ("// N[Some name]\n", "// See N[Some nam].\n",
                              '# N"K"\n', '# N"K"\n', 1),
        "truncated quoted": ("// N[Some name]\n", "// N[Some name]\n",
                             '# N"Kept in CMake"\n', 'see N"Kept in"\n', 1),
        "split across lines": ("// N[Some name]\n", "// See N[Some\n// name].\n",
                               '# N"K"\n', "# see " + WORD + '\n# "K"\n', 1),
        "bracket cited in quotes": ("// N[Some name]\n", 'see N"Some name"\n',
                                    '# N"K"\n', '# N"K"\n', 1),
    }
    cases = {label: tuple(t(x) if isinstance(x, str) else x for x in case)
             for label, case in cases.items()}
    failed = 0
    for label, (defn, cite, qdefn, qcite, want) in cases.items():
        with tempfile.TemporaryDirectory() as tmp:
            for name, body in (("a.h", defn), ("b.cc", cite), ("c.cmake", qdefn),
                               ("d.md", qcite)):
                with open(os.path.join(tmp, name), "w") as f:
                    f.write(body)
            sink = open(os.devnull, "w")
            got = check(tmp, sink)
            sink.close()
        status = "ok" if got == want else "FAIL"
        failed += got != want
        print(f"self-test {status}: {label}: exit {got}, expected {want}")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=ROOT)
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    return self_test() if args.self_test else check(args.root)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The shape of the code a newcomer reads: file lengths, function lengths, class data members.

Limits (docs/ARCHITECTURE.md, "Shape"): no file outside tests/ over MAX_FILE_LINES lines, no
function over MAX_FUNCTION_LINES lines (C++, CUDA, Python, bash, CMake), no C++ class or struct
with more than MAX_DATA_MEMBERS non-static data members. The few exceptions are listed in
EXEMPT below, each with its reason.

  tools/code_shape.py [--root DIR] [--top N]   the largest files, functions and classes
  tools/code_shape.py --check                  exit 1, naming each, if any limit is broken
  (tests/docs/code_shape_selftest.py checks the parsers on inputs whose answers are known)

It reads the files git lists (tracked, and untracked ones not ignored), as text: a heuristic
parser, not a compiler. A function's length runs from the line its signature starts on to the
line of its closing brace; a C++ class's data members are the declarations at its own level
that are neither functions, types, aliases nor static. Python 3 standard library only.
"""
import argparse
import ast
import bisect
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 80
MAX_DATA_MEMBERS = 20
CPP = (".h", ".cc", ".cu", ".cuh", ".hpp", ".cpp", ".inc")
SKIP = re.compile(r"^(tests/|build[^/]*/|docs/|results/|third_party/)")
# (path, function or class): why it may pass a limit.
EXEMPT = {}


def git_files(root):
    """The files git lists; outside a checkout, every file below root but build trees."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                              "--exclude-standard"], check=True, capture_output=True, text=True)
        names = out.stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        names = [os.path.relpath(os.path.join(d, f), root) for d, dirs, files in os.walk(root)
                 for f in files
                 if not re.search(r"(^|/)(\.\w|build)", os.path.relpath(d, root))]
    return sorted({f for f in names if not SKIP.match(f) and os.path.isfile(os.path.join(root, f))})


# --- C++ -----------------------------------------------------------------------------------------
def strip_cpp(text):
    """Comments, string and character literals and preprocessor lines blanked; newlines kept."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            while i < n and text[i] != "\n":  # a directive, with its continuation lines
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = False
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            k = text.find("(", i)
            delim = ")" + text[i + 2:k] + '"'
            j = text.find(delim, k)
            j = n if j < 0 else j + len(delim)
            out.append('""' + "".join("\n" for ch in text[i:j] if ch == "\n"))
            i = j
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else|try)\s*$")
TYPE_HEAD = re.compile(r"(^|[\s;}])(class|struct|union|enum)\b")
NAMESPACE = re.compile(r"(^|[\s;}])(namespace\b|extern\s*\"\")")
IDENT = re.compile(r"[A-Za-z_]\w*")


def top_level(text):
    """text with () [] <> contents (templates, parameters) blanked to spaces, lengths kept."""
    out, depth = [], 0
    for ch in text:
        if ch in "([":
            depth += 1
            out.append(ch if depth == 1 else " ")
        elif ch in ")]":
            depth = max(0, depth - 1)
            out.append(ch if depth == 0 else " ")
        else:
            out.append(ch if depth == 0 else " ")
    return "".join(out)


def blank_templates(text):
    out, depth = [], 0
    for i, ch in enumerate(text):
        if ch == "<" and (i + 1 < len(text) and text[i + 1] != "<") and \
                not (i > 0 and text[i - 1] == "<"):
            if re.search(r"(\w|::)\s*$", text[:i]) and not re.search(r"\boperator\s*$", text[:i]):
                depth += 1
                out.append(" ")
                continue
        if ch == ">" and depth > 0 and not (i > 0 and text[i - 1] == "-"):
            depth -= 1
            out.append(" ")
            continue
        out.append(" " if depth > 0 else ch)
    return "".join(out)


def classify(head):
    """What a '{' opens, from the text since the last ; { or } at its level."""
    h = head.strip()
    flat = top_level(blank_templates(h))
    if NAMESPACE.search(" " + h) and "(" not in flat:
        return "namespace"
    if CONTROL.search(flat.rstrip(") ").split("(")[0] if "(" in flat else flat):
        return "block"
    if TYPE_HEAD.search(" " + flat) and "(" not in flat.split(":")[0]:
        if re.search(r"\benum\b", flat):
            return "enum"
        return "class"
    if "(" in flat:
        before_paren = flat.split("(")[0]
        if "=" in before_paren and "operator" not in before_paren:
            return "init"
        if flat.rstrip().endswith("]") or re.search(r"\]\s*\(", flat):
            return "block"  # a lambda
        return "function"
    return "init"


def matching_brace(text, i):
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


def line_of(text, i, starts):
    return bisect.bisect_right(starts, i)


def function_name(head):
    flat = blank_templates(head)
    k = top_level(flat).find("(")
    m = re.search(r"((?:[A-Za-z_]\w*\s*::\s*)*~?\s*[A-Za-z_]\w*|operator\s*\S+?)\s*$",
                  head[:k] if k >= 0 else head)
    return re.sub(r"\s+", "", m.group(1)) if m else "?"


def is_init_item_brace(head):
    """A '{' inside a constructor's member initialiser list (x_{1}), not the body."""
    flat = top_level(blank_templates(head))
    m = re.search(r"\)\s*(?:const\s*)?(?:noexcept\s*)?:(?!:)", flat)
    return bool(m) and bool(re.search(r"[\w>]\s*$", head.rstrip()))


def cpp_shapes(text):
    """([(name, first line, last line)], [(class name, data members, line)])."""
    s = strip_cpp(text)
    starts = [0] + [m.end() for m in re.finditer("\n", s)]
    functions, classes = [], []

    def scan(lo, hi, scope, cls):
        members, head_at = 0, lo
        i = lo
        while i < hi:
            ch = s[i]
            if ch == "{":
                head = s[head_at:i]
                kind = classify(head)
                if kind == "function" and is_init_item_brace(head):
                    i = matching_brace(s, i) + 1
                    continue
                end = matching_brace(s, i)
                if kind == "function":
                    first = line_of(s, head_at + len(head) - len(head.lstrip()), starts)
                    functions.append((function_name(head), first, line_of(s, end, starts)))
                elif kind in ("namespace",):
                    scan(i + 1, end, "namespace", None)
                elif kind == "class":
                    m = re.search(r"\b(?:class|struct|union)\s+(?:\w+\s+)*?([A-Za-z_]\w*)\s*"
                                  r"(?:final\s*)?(?::[^{]*)?$", blank_templates(head.strip()))
                    name = m.group(1) if m else "(anonymous)"
                    qualified = (cls + "::" if cls else "") + name
                    count = scan(i + 1, end, "class", qualified)
                    classes.append((qualified, count, line_of(s, i, starts)))
                    # `struct X {...} x;` declares a member too: the rest is read with the statement
                    j = end + 1
                    rest = re.match(r"\s*([A-Za-z_]\w*)", s[j:hi])
                    if scope == "class" and rest and rest.group(1) not in ("const",):
                        members += 1
                    i = end + 1
                    head_at = i
                    while head_at < hi and s[head_at] in " \t\n":
                        head_at += 1
                    if scope == "class" and rest:
                        k = s.find(";", j, hi)
                        i = head_at = (k + 1) if k >= 0 else hi
                    continue
                elif kind == "init" and scope == "class":
                    # a member with a braced initialiser: part of its declaration
                    i = end + 1
                    continue
                elif kind == "init" or kind == "enum":
                    i = end + 1
                    continue
                i = end + 1
                head_at = i
                continue
            if ch == ";":
                if scope == "class":
                    members += data_members(s[head_at:i])
                head_at = i + 1
            elif ch == ":" and scope == "class" and re.search(
                    r"\b(public|private|protected)\s*$", s[head_at:i]):
                head_at = i + 1
            i += 1
        return members

    scan(0, len(s), "namespace", None)
    return functions, classes


def data_members(decl):
    d = decl.strip()
    if not d:
        return 0
    if re.match(r"(using|typedef|friend|static|template|enum|class|struct|union|"
                r"static_assert|public|private|protected)\b", d):
        return 0
    if re.search(r"\b(static|constexpr|typedef)\b", d.split("=")[0]):
        return 0
    flat = top_level(blank_templates(d))
    before = flat.split("=")[0]
    if "(" in before:
        # a function (declared, = default, = delete, = 0) unless the '(' only follows '=' or '{'
        return 0
    if re.search(r"\boperator\b", before):
        return 0
    braces = 0
    parts = 1
    for ch in flat:
        if ch == "{":
            braces += 1
        elif ch == "}":
            braces -= 1
        elif ch == "," and braces == 0:
            parts += 1
    return parts


# --- Python, bash, CMake -----------------------------------------------------------------------
def python_functions(text):
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            out.append((node.name, first, node.end_lineno))
    return out


def delimited_functions(text, start, end_of):
    """Functions that open on a line matching `start` and close on the line end_of(match) finds."""
    out, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        m = start.match(line)
        end = end_of(m) if m else None
        j = next((j for j in range(i + 1, len(lines)) if end and end.match(lines[j])), None)
        if j is not None:
            out.append((m.group(2), i + 1, j + 1))
    return out


def shell_functions(text):
    return delimited_functions(
        text, re.compile(r"^(\s*)(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)\s*\{\s*(#.*)?$"),
        lambda m: re.compile("^" + m.group(1) + r"\}\s*(#.*)?$"))


def cmake_functions(text):
    return delimited_functions(
        text, re.compile(r"^\s*(function|macro)\s*\(\s*([\w-]+)", re.I),
        lambda m: re.compile(r"^\s*end" + m.group(1) + r"\s*\(", re.I))


def shapes_of(path, text):
    if path.endswith(CPP):
        return cpp_shapes(text)
    if path.endswith(".py"):
        return python_functions(text), []
    if path.endswith(".sh") or text.startswith("#!/usr/bin/env bash") or \
            text.startswith("#!/bin/bash"):
        return shell_functions(text), []
    if path.endswith(".cmake") or os.path.basename(path) == "CMakeLists.txt":
        return cmake_functions(text), []
    return [], []


def measure(root):
    files, functions, classes = [], [], []
    for f in git_files(root):
        try:
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                text = fh.read()
        except (UnicodeDecodeError, OSError):
            continue
        if f.endswith((".json", ".md", ".txt", ".tsv", ".csv", ".gz", ".png", ".dict")) and \
                os.path.basename(f) != "CMakeLists.txt":
            continue
        files.append((f, text.count("\n") + (0 if text.endswith("\n") or not text else 1)))
        fn, cl = shapes_of(f, text)
        functions += [(f, name, first, last - first + 1) for name, first, last in fn]
        classes += [(f, name, line, count) for name, count, line in cl]
    return files, functions, classes


def violations(files, functions, classes):
    out = []
    for f, n in files:
        if n > MAX_FILE_LINES and (f, None) not in EXEMPT:
            out.append("%s: %d lines (at most %d outside tests/)" % (f, n, MAX_FILE_LINES))
    for f, name, line, n in functions:
        if n > MAX_FUNCTION_LINES and (f, name) not in EXEMPT:
            out.append("%s:%d: function %s is %d lines (at most %d)" %
                       (f, line, name, n, MAX_FUNCTION_LINES))
    for f, name, line, n in classes:
        if n > MAX_DATA_MEMBERS and (f, name) not in EXEMPT:
            out.append("%s:%d: class %s has %d data members (at most %d)" %
                       (f, line, name, n, MAX_DATA_MEMBERS))
    return out


def report(root, top):
    files, functions, classes = measure(root)
    print("largest files (lines):")
    for f, n in sorted(files, key=lambda x: -x[1])[:top]:
        print("  %5d  %s" % (n, f))
    print("longest functions (lines):")
    for f, name, line, n in sorted(functions, key=lambda x: -x[3])[:top]:
        print("  %5d  %s:%d %s" % (n, f, line, name))
    print("classes with the most data members:")
    for f, name, line, n in sorted(classes, key=lambda x: -x[3])[:top]:
        print("  %5d  %s:%d %s" % (n, f, line, name))
    bad = violations(files, functions, classes)
    print("%d over the limits (files %d, functions %d, data members %d)" %
          (len(bad), MAX_FILE_LINES, MAX_FUNCTION_LINES, MAX_DATA_MEMBERS))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=ROOT)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    bad = report(args.root, args.top)
    if args.check and bad:
        print("\n".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Check src/'s layout (src/README.md): every source file sits in a layer
folder, includes only headers of its own layer and of the layers before it,
no two modules (a .c with its .h) depend on each other, directly or around
a longer circle, no two .c files of a folder use each other's functions
around a circle (a header shared by several files hides such a circle from
the include graph: file_circles follows the definitions), and no function
runs over MAX_FUNCTION lines. Prints each violation; exits 1 if there is one.

usage: scripts/layout.py [SRC_DIR]"""
import os
import re
import sys

# The layers, lowest first: a file may include headers of its own folder and
# of the folders listed before it. main.c and tools/ sit on top.
LAYERS = ["core", "vk", "spirv", "sanitize", "kernels", "specs", "reports", "formats", "pipeline", "cli"]
TOP = ["tools", "."]
# Functions are kept short: a longer one is split where a name explains a step.
MAX_FUNCTION = 80


def long_functions(path, rel):
    """(name line, length) of each function body longer than MAX_FUNCTION."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, start = [], None
    for i, line in enumerate(lines):
        if line == "{" or re.match(r"^[A-Za-z].*\)\s*\{$", line):
            j = i - 1 if line == "{" else i
            while j > 0 and not re.match(r"^[A-Za-z]", lines[j]):
                j -= 1
            start = j
        elif line == "}" and start is not None:
            if i - start + 1 > MAX_FUNCTION:
                out.append(f"{rel}:{start + 1}: a function of {i - start + 1} lines (at most {MAX_FUNCTION})")
            start = None
    return out


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", " ", text, flags=re.S))


def find_circles(deps, label):
    """Each circle of the graph deps (node -> set of nodes), as violations."""
    out, state, stack = [], {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(deps.get(m, ())):
            if state.get(n) == 1:
                out.append(f"{label}: " + " -> ".join(stack[stack.index(n):] + [n]))
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(deps):
        if m not in state:
            visit(m)
    return out


def file_circles(src, files):
    """Circles between the .c files of one folder: a file depends on another
    when it calls a kv_ function (or a macro of the folder's headers that
    calls one) that the other defines."""
    out = []
    folders = sorted({os.path.dirname(f) for f in files})
    for folder in folders:
        cs = [f for f in files if os.path.dirname(f) == folder and f.endswith(".c")]
        hs = [f for f in files if os.path.dirname(f) == folder and f.endswith(".h")]
        text = {f: strip_comments(open(os.path.join(src, f), encoding="utf-8").read()) for f in cs + hs}
        defined = {}
        for f in cs:
            for m in re.finditer(r"^(?!static\b)[A-Za-z][^;{}()]*?\b(kv_\w+)\s*\([^;]*?$", text[f], re.M):
                defined[m.group(1)] = f
        macros = {}
        for h in hs:
            for m in re.finditer(r"^\s*#\s*define\s+(\w+)\(((?:[^\n]*\\\n)*[^\n]*)", text[h], re.M):
                macros[m.group(1)] = set(re.findall(r"\b(kv_\w+)\s*\(", m.group(2)))
        deps = {}
        for f in cs:
            used = set(re.findall(r"\b(kv_\w+)\s*\(", text[f]))
            for mac in re.findall(r"\b([A-Z][A-Z0-9_]*)\s*\(", text[f]):
                used |= macros.get(mac, set())
            for name in used:
                g = defined.get(name)
                if g and g != f:
                    deps.setdefault(f, set()).add(g)
        out.extend(find_circles(deps, "file circle"))
    return out


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
    src = os.path.normpath(src)
    files = []
    for d, _, names in os.walk(src):
        for n in names:
            if n.endswith((".c", ".h")):
                files.append(os.path.relpath(os.path.join(d, n), src))
    bad = []
    deps = {}
    for f in sorted(files):
        folder = os.path.dirname(f) or "."
        if folder not in LAYERS and folder not in TOP:
            bad.append(f"{f}: in no layer folder ({', '.join(LAYERS)})")
            continue
        rank = LAYERS.index(folder) if folder in LAYERS else len(LAYERS)
        mod = f[:-2]
        text = open(os.path.join(src, f), encoding="utf-8").read()
        if f.endswith(".c"):
            bad.extend(long_functions(os.path.join(src, f), f))
        for m in re.finditer(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
            inc = m.group(1)
            path = os.path.normpath(os.path.join(src, inc))
            if not os.path.exists(path):
                continue  # a build-time header (spirv/, kv_commit.h)
            if inc != os.path.relpath(path, src):
                bad.append(f'{f}: #include "{inc}": name it from src/ ("{os.path.relpath(path, src)}")')
            to = os.path.dirname(inc) or "."
            if to in LAYERS and LAYERS.index(to) > rank:
                bad.append(f'{f}: #include "{inc}": layer {folder} may not include {to} (a later layer)')
            elif to in TOP and folder != to:
                bad.append(f'{f}: #include "{inc}": nothing includes {to}/')
            if inc[:-2] != mod:
                deps.setdefault(mod, set()).add(inc[:-2])
    # circles between modules, then between the files of a folder
    bad.extend(find_circles(deps, "circle"))
    bad.extend(file_circles(src, files))
    for b in bad:
        print(b)
    print(f"layout: {len(files)} files in {len(LAYERS)} layers, {len(bad)} violations", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Check src/'s layout (src/README.md): every source file sits in a layer
folder, includes only headers of its own layer and of the layers before it,
no two modules (a .c with its .h) depend on each other, directly or around
a longer circle, and no function runs over MAX_FUNCTION lines. Prints each violation; exits 1 if there is one.

usage: scripts/layout.py [SRC_DIR]"""
import os
import re
import sys

# The layers, lowest first: a file may include headers of its own folder and
# of the folders listed before it. main.c and tools/ sit on top.
LAYERS = ["core", "vk", "spirv", "kernels", "reports", "formats", "pipeline", "cli"]
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
    # circles between modules: a depth-first search over module dependencies
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(deps.get(m, ())):
            if state.get(n) == 1:
                bad.append("circle: " + " -> ".join(stack[stack.index(n):] + [n]))
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(deps):
        if m not in state:
            visit(m)
    for b in bad:
        print(b)
    print(f"layout: {len(files)} files in {len(LAYERS)} layers, {len(bad)} violations", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

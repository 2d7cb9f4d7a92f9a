#!/usr/bin/env python3
"""The layering of the tree, held: the include graph between the libraries' folders, derived
from every #include of their sources, must be the table of docs/architecture.md ("The include
graph"), have no cycle, and no file outside a template's homes may include a template's
header (schedule_space/*_template.h).

A new arrow fails until the table says so (and the table is where a reviewer sees it); an arrow
the table lists that no include makes any more fails too, so that the page stays true.

    layering_test.py SOURCE_DIR
"""
import os
import re
import sys

# The libraries' folders (folder = library = namespace); a file belongs to the longest match.
LIBRARIES = [
    "support", "schedule_space", "records", "proto",
    "compiler/graph", "compiler/epilogue", "compiler/passes", "compiler/frontend",
    "compiler/codegen", "compiler/codegen/llvm", "compiler/codegen/cuda",
    "compiler/measure", "compiler/runtime", "compiler/driver",
    "tuner", "tuner/graph_tuner", "tracker", "device_server", "workflow", "cli", "python",
]
# Where a template's own header may be included: its space (schedule_space), its emitters (the
# code generators') and the tests and benchmarks that probe its internals. Everyone else goes
# through schedule_space/template.h.
TEMPLATE_HEADER = re.compile(r"^schedule_space/[a-z0-9_]+_template\.h$")
TEMPLATE_HOMES = ["schedule_space", "compiler/codegen/llvm", "compiler/codegen/cuda", "tests",
                  "bench"]
SOURCE = re.compile(r"\.(cc|h|def|inc)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def library_of(path):
    best = None
    for lib in LIBRARIES:
        if (path == lib or path.startswith(lib + "/")) and (best is None or len(lib) > len(best)):
            best = lib
    return best


def derive(root):
    """{library: {library it includes: first include that makes the arrow}}, template breaches."""
    edges = {lib: {} for lib in LIBRARIES}
    breaches = []
    for top in sorted({lib.split("/")[0] for lib in LIBRARIES} | {"tests", "bench"}):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if d not in ("node_modules", "corpus"))
            for name in sorted(filenames):
                if not SOURCE.search(name):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                with open(os.path.join(root, path), errors="replace") as f:
                    text = f.read()
                own = library_of(path)
                for m in INCLUDE.finditer(text):
                    target = m.group(1)
                    if TEMPLATE_HEADER.match(target) and not any(
                            path.startswith(home + "/") for home in TEMPLATE_HOMES):
                        breaches.append(f"{path} includes {target}")
                    used = library_of(target)
                    if own and used and used != own:
                        edges[own].setdefault(used, f"{path} -> {target}")
    return edges, breaches


def documented(root):
    """The table under '## The include graph' in docs/architecture.md."""
    path = os.path.join(root, "docs", "architecture.md")
    with open(path) as f:
        text = f.read()
    start = text.find("## The include graph")
    if start < 0:
        sys.exit(f"layering: {path} has no '## The include graph' section")
    table = {}
    for line in text[start:].splitlines()[1:]:
        if line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        lib = cells[0].strip("`").rstrip("/")
        table[lib] = {c.strip("`").rstrip("/") for c in re.findall(r"`[^`]+`", cells[1])}
    return table


def cycles(edges):
    state, stack, found = {}, [], []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, {})):
            if state.get(m) == 1:
                found.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(edges):
        if n not in state:
            visit(n)
    return found


def main():
    root = sys.argv[1]
    edges, breaches = derive(root)
    table = documented(root)
    problems = []
    for lib in LIBRARIES:
        if lib not in table:
            problems.append(f"docs/architecture.md's include graph has no row for `{lib}/`")
            continue
        for used, example in sorted(edges[lib].items()):
            if used not in table[lib]:
                problems.append(f"new arrow {lib} -> {used} ({example}): not in docs/architecture.md")
        for used in sorted(table[lib] - set(edges[lib])):
            problems.append(f"docs/architecture.md lists {lib} -> {used}, which no include makes")
    for lib in sorted(set(table) - set(LIBRARIES)):
        problems.append(f"docs/architecture.md's include graph names `{lib}/`, not a library")
    for cycle in cycles(edges):
        problems.append("cycle: " + " -> ".join(cycle))
    problems += [f"a template's internals outside its homes: {b}" for b in breaches]
    arrows = sum(len(v) for v in edges.values())
    if problems:
        print("\n".join(problems))
        print(f"layering: {len(problems)} problem(s); {arrows} arrows between {len(LIBRARIES)} "
              "libraries")
        return 1
    print(f"layering: {arrows} arrows between {len(LIBRARIES)} libraries, as documented; no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())

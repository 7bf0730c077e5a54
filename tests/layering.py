#!/usr/bin/env python3
"""Reads a `cargo modules dependencies` graph (DOT) on stdin and fails if the modules have a cycle.

Layering as rust-analyzer means it: within each module, its child modules form a DAG. A use from
`a::x::f` of `a::y::T` is an edge x → y between the children of `a`; a module's use of its own ancestor
or descendant is not an edge (a parent declares its children; a child may use its parent's names).
"""
import re
import sys

NODE = re.compile(r'^\s*"([^"]+)" \[label=.*// "(\w+)" node')
USE = re.compile(r'^\s*"([^"]+)" -> "([^"]+)" \[label="uses"')


def main():
    modules, uses = set(), []
    for line in sys.stdin:
        if m := NODE.match(line):
            if m.group(2) in ("crate", "mod"):
                modules.add(m.group(1))
        elif m := USE.match(line):
            uses.append((m.group(1), m.group(2)))
    if not modules:
        sys.exit("layering: no module in the graph read (did cargo modules fail?)")

    def module_of(path):
        parts = path.split("::")
        while parts and "::".join(parts) not in modules:
            parts.pop()
        return parts

    edges = {}
    for source, target in uses:
        a, b = module_of(source), module_of(target)
        common = 0
        while common < min(len(a), len(b)) and a[common] == b[common]:
            common += 1
        if common == len(a) or common == len(b):
            continue  # the same module, or an ancestor and its descendant
        x, y = "::".join(a[: common + 1]), "::".join(b[: common + 1])
        edges.setdefault(x, {}).setdefault(y, (source, target))

    cycles = strongly_connected(edges)
    for cycle in cycles:
        print(f"module cycle: {', '.join(sorted(cycle))}")
        for x in sorted(cycle):
            for y, (source, target) in sorted(edges.get(x, {}).items()):
                if y in cycle:
                    print(f"  {x} -> {y}: {source} uses {target}")
    sys.exit(1 if cycles else 0)


def strongly_connected(edges):
    """Tarjan's algorithm: the components of more than one module."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    sys.setrecursionlimit(10_000)
    for v in list(edges):
        if v not in index:
            visit(v)
    return found


if __name__ == "__main__":
    main()

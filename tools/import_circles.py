"""No circle among the project's modules (`make lint`, beside import-linter's
layer contracts in pyproject.toml): every group of modules that import each
other, directly or round about, at module level or inside a function, is
printed with the imports that tie it, and the exit status is 1.

A package's ``__init__`` that re-exports its submodules is not a circle with
them (a submodule importing a sibling through the package is read as
importing the sibling). Type-checking-only imports count: they are arrows a
reader follows too."""

from __future__ import annotations

import sys
from pathlib import Path

import grimp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PACKAGES = ("casino", "tables", "audit")


def strongly_connected(nodes, edges) -> list[list[str]]:
    """Tarjan's components of more than one module, iteratively."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        out.append(sorted(group))
    return out


def circles(packages=PACKAGES) -> list[tuple[list[str], list[str]]]:
    graph = grimp.build_graph(*packages, include_external_packages=False)
    packages_init = {m for m in graph.modules if graph.find_children(m)}
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if imported in packages_init and module.startswith(imported + "."):
                continue  # a submodule reading its own package's __init__
            if module in packages_init and imported.startswith(module + "."):
                continue  # a package's __init__ re-exporting its submodules
            edges.setdefault(module, set()).add(imported)
    found = []
    for group in strongly_connected(graph.modules, edges):
        members = set(group)
        ties = []
        for module in group:
            for imported in sorted(edges.get(module, ()) & members):
                lines = sorted({d["line_number"] for d in graph.get_import_details(
                    importer=module, imported=imported)})
                where = ", ".join(map(str, lines))
                ties.append(f"{module} -> {imported} (line {where})")
        found.append((group, ties))
    return found


def main() -> int:
    found = circles()
    for group, ties in found:
        print(f"circle of {len(group)} modules: {', '.join(group)}")
        for tie in ties:
            print(f"  {tie}")
    if found:
        print(f"{len(found)} circle(s): break them (README, 'Layout').")
        return 1
    print("No circle among the modules of " + ", ".join(PACKAGES) + ".")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Print the import cycles of the `tracer` and `app` packages.

Run: `uv run --frozen python benchmarks/import_graph_report.py`.

The graph is grimp's (what import-linter uses): every `import` statement in a module,
function-level lazy imports included ("it imports this module"), and `if TYPE_CHECKING:`
imports too (a type named is a module depended on). A cycle is a strongly connected
component of more than one module; `tests/package/test_import_graph.py` asserts there is none
in either package (`tracer/demo/` included since issue 38; `outside_demo` is kept for
the toy test of issue 22's rule).
"""

from __future__ import annotations

import sys

import grimp

PACKAGE = "tracer"
ALLOWED = "tracer.demo"  # the demo scenarios may import each other (issue 22)


def build_graph(package: str = PACKAGE) -> grimp.ImportGraph:
    """The import graph of `package`, lazy and `if TYPE_CHECKING:` imports included."""
    return grimp.build_graph(package, cache_dir=None, exclude_type_checking_imports=False)


def edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    """Each module of `tracer` and the modules of `tracer` it imports."""
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module, each sorted, largest first."""
    succ = edges(graph)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(succ):
        if root in index:
            continue
        # iterative Tarjan: (node, iterator over its successors)
        work = [(root, iter(sorted(succ[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(succ[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found, key=lambda c: (-len(c), c))


def outside_demo(found: list[list[str]], allowed: str = ALLOWED) -> list[list[str]]:
    """The cycles with at least one module outside `allowed` (`tracer/demo/`)."""
    return [
        c for c in found
        if any(m != allowed and not m.startswith(allowed + ".") for m in c)
    ]


def main() -> int:
    for package in (PACKAGE, "app"):
        graph = build_graph(package)
        found = cycles(graph)
        print(f"modules in {package}: {len(graph.modules)}")
        print(f"import cycles: {len(found)} ({sum(map(len, found))} modules in them)")
        for c in found:
            print(f"  [{len(c)}] " + " ".join(m.removeprefix(package + ".") for m in c))
    return 0


if __name__ == "__main__":
    sys.exit(main())

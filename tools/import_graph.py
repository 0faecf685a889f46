"""The import graph of the project's own Python modules, read from the source with ``ast``: the
one import reader of the tree (``control-plane/tests/test_import_graph.py`` fails on a cycle in
it, ``tools/diagrams/layout.py`` draws it). Run it to list the cycles::

    .venv/bin/python tools/import_graph.py [ROOT]

Every package in the checkout is found on the filesystem (a directory with ``__init__.py`` whose
parent has none is a top-level package; its parent is a source root), so a package that moves or
is renamed stays covered without touching this file. Every import in every module counts: at top
level, inside functions and classes, under ``try``, and under ``if TYPE_CHECKING:`` (a cycle
hidden there still ties the modules together and comes back the day the import is needed at run
time). Relative imports are resolved; ``from pkg import name`` is an import of ``pkg.name`` when
that is a module, else of ``pkg``; ``importlib.import_module("literal")`` counts too.

An edge goes to the module named, not to the packages above it: Python runs ``a/__init__.py``
before ``a.b``, but counting that would make every ``__init__`` that re-exports its own
submodules a "cycle", which is the usual, harmless layout.

Test directories (``tests``, ``test*``) are left out: nothing in the product imports them, so
they cannot close a cycle through product code, and pytest imports them under names that depend
on its import mode and rootdir (``control-plane/tests/controller`` would pose as a top-level
``controller`` package), so their edges could not be resolved faithfully.
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Container
from pathlib import Path

# Directories that hold no project source: virtualenvs, build output, mutmut's copy, VCS data.
SKIP_DIRS = {".venv", "venv", "build", "dist", "mutants", "node_modules", "__pycache__", ".git"}


def _skipped(part: str) -> bool:
    return (part in SKIP_DIRS or part.startswith(".") or part.endswith(".egg-info")
            or part in ("tests", "test") or part.startswith("test_"))


def find_modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of every package under ``root``."""
    out: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not _skipped(d))
        d = Path(dirpath)
        if "__init__.py" not in filenames:
            continue  # not a package: its .py files are scripts, nobody's import target
        pkg: list[str] = []
        up = d
        while up != root and (up / "__init__.py").is_file():
            pkg.insert(0, up.name)
            up = up.parent
        if not pkg:
            continue  # ``root`` itself is a package: it has no name to import it by
        for fn in sorted(filenames):
            if not fn.endswith(".py") or fn.startswith("test_") or fn == "conftest.py":
                continue
            name = ".".join(pkg) if fn == "__init__.py" else ".".join([*pkg, fn[:-3]])
            out[name] = d / fn
    return out


def _longest_known(name: str, known: Container[str]) -> str | None:
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def _importlib_target(node: ast.Call) -> str | None:
    f = node.func
    named = (isinstance(f, ast.Attribute) and f.attr == "import_module") or (
        isinstance(f, ast.Name) and f.id == "import_module")
    if named and node.args and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str) and not node.args[0].value.startswith("."):
        return node.args[0].value
    return None


def module_imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules that module ``name`` (file ``path``) imports, anywhere in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (m := _longest_known(alias.name, known)) is not None:
                    found.add(m)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                up = package.split(".") if package else []
                if node.level - 1 > len(up):
                    continue  # beyond the top-level package: Python refuses it too
                up = up[:len(up) - (node.level - 1)]
                base = ".".join([*up, node.module] if node.module else up)
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}" if base else alias.name
                if alias.name != "*" and sub in known:
                    found.add(sub)
                elif (m := _longest_known(base, known)) is not None:
                    found.add(m)
        elif isinstance(node, ast.Call) and (target := _importlib_target(node)):
            if (m := _longest_known(target, known)) is not None:
                found.add(m)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    known = find_modules(root)
    return {m: module_imports(m, f, known) for m, f in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module, and modules importing themselves,
    each sorted (Tarjan's algorithm, iterative: the graph has hundreds of modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph.get(start, ())))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, todo = work[-1]
            if todo:
                w = todo.pop()
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, sorted(graph.get(w, ()))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                comp: list[str] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in graph.get(v, ()):
                    out.append(sorted(comp))
    return sorted(out)


def describe(found: list[list[str]]) -> str:
    return "\n".join(f"import cycle of {len(c)} module(s): {', '.join(c)}" for c in found)


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
    found = cycles(import_graph(root))
    print(describe(found) if found else "no import cycles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

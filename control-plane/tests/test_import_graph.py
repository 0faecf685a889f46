"""No import cycles among the project's own Python modules (tools/import_graph.py reads the
imports: every package found on disk, every import counted, in-function and TYPE_CHECKING ones
included; its docstring says exactly what counts), and the reader itself finds a cycle."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from import_graph import cycles, describe, import_graph  # noqa: E402

# ----------------------------------------------------------------------------- the tests

def test_the_project_has_no_import_cycles() -> None:
    graph = import_graph(REPO)
    # the walk found the project's packages (wherever they live now), not an empty tree
    tops = {m.split(".")[0] for m in graph}
    assert {"softnic", "p4cache", "p4cache_agent"} <= tops, sorted(tops)
    assert len(graph) > 50, len(graph)
    found = cycles(graph)
    assert not found, "\n" + describe(found)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_the_check_finds_cycles_in_a_synthetic_package(tmp_path: Path) -> None:
    _write(tmp_path, {
        # a source root one level down, as control-plane/ and host/ are
        "src/pkg/__init__.py": "from pkg.util import helper\n",
        "src/pkg/util.py": "def helper() -> int:\n    return 1\n",
        # a -> b at top level, b -> a only inside a function
        "src/pkg/a.py": "from pkg import b\n",
        "src/pkg/b.py": "def late() -> None:\n    from . import a\n    a.x = 1\n",
        # c -> d under TYPE_CHECKING, d -> c through its parent package's relative import
        "src/pkg/sub/__init__.py": "",
        "src/pkg/sub/c.py": ("from typing import TYPE_CHECKING\n"
                             "if TYPE_CHECKING:\n    from pkg.sub.d import D\n"),
        "src/pkg/sub/d.py": "from ..sub import c\nclass D: ...\n",
        # importing oneself by name
        "src/pkg/selfish.py": "import pkg.selfish\n",
        # e -> f -> g -> e, through importlib and `import x.y as z`
        "src/pkg/e.py": "import importlib\nF = importlib.import_module('pkg.f')\n",
        "src/pkg/f.py": "import pkg.g as g\n",
        "src/pkg/g.py": "try:\n    from pkg.e import F\nexcept ImportError:\n    F = None\n",
        # no cycle: h -> util, and a test directory that imports everything is ignored
        "src/pkg/h.py": "from pkg.util import helper\n",
        "src/pkg/tests/__init__.py": "",
        "src/pkg/tests/test_h.py": "from pkg import h\n",
        "tests/helper.py": "import pkg.h\n",
        ".venv/lib/pkg2/__init__.py": "import pkg2\n",
    })
    graph = import_graph(tmp_path)
    assert "pkg.tests.test_h" not in graph and "pkg2" not in graph
    assert graph["pkg.b"] == {"pkg.a"}            # the import inside the function counts
    assert graph["pkg.sub.c"] == {"pkg.sub.d"}    # and the one under TYPE_CHECKING
    assert graph["pkg.sub.d"] == {"pkg.sub.c"}    # `from ..sub import c` is pkg.sub.c
    assert graph["pkg"] == {"pkg.util"}
    found = cycles(graph)
    assert found == [["pkg.a", "pkg.b"], ["pkg.e", "pkg.f", "pkg.g"], ["pkg.selfish"],
                     ["pkg.sub.c", "pkg.sub.d"]], describe(found)
    assert "pkg.a, pkg.b" in describe(found)


def test_no_cycle_means_an_empty_report(tmp_path: Path) -> None:
    _write(tmp_path, {"pkg/__init__.py": "from . import a\n", "pkg/a.py": "from . import b\n",
                      "pkg/b.py": "import os\n"})
    graph = import_graph(tmp_path)
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.b"}, "pkg.b": set()}
    assert cycles(graph) == []

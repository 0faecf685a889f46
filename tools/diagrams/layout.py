"""Draw docs/layout.png: the project's code, one column per top-level folder, one box per package,
and an arrow for every package that imports another.

    .venv/bin/python tools/diagrams/layout.py [--out docs/layout.png] [--dpi 110]

Nothing here is drawn by hand: the boxes and arrows come from the import statements of the code
as it is, read by tools/import_graph.py (in-function imports and ``import_module`` calls too).
Boxes are stacked by layer: a package sits above every package it imports, so arrows point
down, and an arrow pointing up would be an import cycle between packages. Tests are left out.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

from p4cache.paths import checkout  # noqa: E402

ROOT = checkout() or Path.cwd()
sys.path.insert(0, str(ROOT / "tools"))
import import_graph  # noqa: E402  (tools/import_graph.py: the one import reader)

DEFAULT_OUT = ROOT / "docs" / "layout.png"

# top-level folder -> (column title, colour); the folders' Python packages are found on disk
FOLDERS = {
    "softnic": ("softnic/  (P4 toolchain and switch)", "#e8f5e9"),
    "control-plane": ("control-plane/  (controller, system, lab)", "#ede7f6"),
    "host": ("host/  (memcached host agent)", "#fff8e1"),
    "bench": ("bench/  (p4cache-bench)", "#e3f2fd"),
}
# packages shown one level deeper than the others (a stage per box)
DEEPER = {"softnic.compiler"}
GREY = "#455a64"


def node_of(module: str) -> str:
    """The box a module belongs to: its package two levels down (three in :data:`DEEPER`)."""
    parts = module.split(".")
    depth = 3 if ".".join(parts[:2]) in DEEPER else 2
    return ".".join(parts[:depth])


def graph(root: Path) -> tuple[dict[str, str], dict[str, set[str]]]:
    """(box -> folder, box -> boxes it imports), from tools/import_graph.py's reading of the
    imports (the same one the import-cycle test checks)."""
    modules = import_graph.find_modules(root)
    folder_of: dict[str, str] = {}
    edges: dict[str, set[str]] = defaultdict(set)
    for m, path in modules.items():
        folder = path.relative_to(root).parts[0]
        if folder not in FOLDERS:
            continue
        src = node_of(m)
        folder_of[src] = folder
        for dep in import_graph.module_imports(m, path, modules):
            dst = node_of(dep)
            if dst != src:
                edges[src].add(dst)
    return folder_of, edges


def layers(nodes: list[str], edges: dict[str, set[str]]) -> dict[str, int]:
    """Layer 0 imports nothing; a box sits one layer above the highest box it imports (a cycle,
    if there ever is one, is cut where the walk meets it again)."""
    layer: dict[str, int] = {}
    active: set[str] = set()
    nodes_set = set(nodes)

    def visit(n: str) -> int:
        if n in layer:
            return layer[n]
        if n in active:
            return -1
        active.add(n)
        deps = [visit(d) for d in edges.get(n, ()) if d in nodes_set]
        active.discard(n)
        layer[n] = 1 + max(deps, default=-1)
        return layer[n]

    for n in nodes:
        visit(n)
    return layer


def draw(out: Path, dpi: int) -> None:
    folder_of, edges = graph(ROOT)
    linked = set(edges) | {d for ds in edges.values() for d in ds}
    # a package whose __init__ neither imports nor is imported on its own (its modules are
    # boxes of their own) would be an empty box
    nodes = sorted(n for n in folder_of if n in linked or ("." in n and n not in DEEPER))
    layer = layers(nodes, edges)
    height = max(layer.values()) + 1
    columns = list(FOLDERS)
    col_w, box_h, row_h = 25.0, 3.2, 5.0
    pos: dict[str, tuple[float, float]] = {}
    fig, ax = plt.subplots(figsize=(20, 2.2 + height * 1.25))
    top = height * row_h + 6
    ax.set_xlim(0, col_w * len(columns))
    ax.set_ylim(0, top)
    ax.axis("off")
    for c, folder in enumerate(columns):
        title, face = FOLDERS[folder]
        ax.add_patch(FancyBboxPatch((c * col_w + 0.4, 0.4), col_w - 0.8, top - 0.8,
                                    boxstyle="round,pad=0,rounding_size=1.0", facecolor=face,
                                    edgecolor=GREY, linewidth=1.2))
        ax.text(c * col_w + col_w / 2, top - 1.6, title, ha="center", va="top", fontsize=12,
                fontweight="bold")
        by_layer: dict[int, list[str]] = defaultdict(list)
        for n in nodes:
            if folder_of[n] == folder:
                by_layer[layer[n]].append(n)
        for lay, group in by_layer.items():
            w = (col_w - 2) / len(group)
            for i, n in enumerate(sorted(group)):
                x = c * col_w + 1 + i * w
                y = 1.5 + lay * row_h
                ax.add_patch(FancyBboxPatch((x + 0.2, y), w - 0.4, box_h,
                                            boxstyle="round,pad=0,rounding_size=0.6",
                                            facecolor="white", edgecolor=GREY, linewidth=1.0))
                label = n.split(".", 1)[1] if "." in n else n
                size = 8 if len(label) * 0.55 < w else 6.5
                ax.text(x + w / 2, y + box_h / 2, label.replace(".", ".\u200b"), ha="center",
                        va="center", fontsize=size, wrap=True)
                pos[n] = (x + w / 2, y)
    for src, dsts in edges.items():
        for dst in dsts:
            if src not in pos or dst not in pos:
                continue
            (x1, y1), (x2, y2) = pos[src], pos[dst]
            up = layer[dst] >= layer[src]
            ax.add_patch(FancyArrowPatch((x1, y1), (x2, y2 + box_h), arrowstyle="-|>",
                                         mutation_scale=8, linewidth=0.6, alpha=0.45,
                                         color="#c62828" if up else GREY,
                                         connectionstyle="arc3,rad=0.05", shrinkA=0, shrinkB=0))
    ax.set_title("p4cache's code: packages by folder, each above what it imports "
                 "(drawn from the imports by tools/diagrams/layout.py)", fontsize=13, pad=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi)
    print(f"wrote {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--dpi", type=int, default=110)
    args = ap.parse_args()
    draw(args.out, args.dpi)


if __name__ == "__main__":
    main()

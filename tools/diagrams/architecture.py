"""Draw docs/architecture.png: p4cache's parts (left) and the paths a request takes (right).

    .venv/bin/python tools/diagrams/architecture.py [--out docs/architecture.png] [--dpi 110]

The left panel shows where each part runs and what connects them; the right panel is a sequence
chart of the five paths that docs/architecture.md walks through (GET hit, GET miss, TCP write
through the gate, promotion, eviction). Everything is drawn from the tables below, so a change
of the system means editing a row, not coordinates scattered through the code.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

from p4cache.paths import checkout  # noqa: E402

DEFAULT_OUT = (checkout() or Path.cwd()) / "docs" / "architecture.png"

# One colour per path, used in both panels.
PATHS = {
    "A": ("GET hit", "#2e7d32"),
    "B": ("GET miss", "#1565c0"),
    "C": ("TCP write through the gate", "#c62828"),
    "D": ("promotion (digest, reserve, fetch, fill)", "#6a1b9a"),
    "E": ("eviction", "#ef6c00"),
}
GREY = "#455a64"

# --- left panel: the parts ---------------------------------------------------------------------

# name: (x, y, width, height, title, body lines, face colour)
BOXES = {
    "controller": (31, 80, 42, 17, "p4cache-controller",
                   ["control host (root namespace in the lab)",
                    "policy: hot-key admission, coldest-first eviction",
                    "promote / refill / evict, TTL deadlines, recovery",
                    "status on :11214 (p4cache-controller status)"], "#ede7f6"),
    "clients": (1, 38, 22, 24, "clients c1, c2",
                ["pymemcache, libmemcached",
                 "UDP get  -> server:11211",
                 "TCP writes -> server:11211",
                 "(the agent's gate)"], "#e3f2fd"),
    "switch": (28, 16, 46, 56, "switch s1: softnic run | simple_switch_grpc",
               ["p4src/v1model/p4cache.p4 (BMv2 JSON + P4Info)",
                "1-10: the order a packet meets the controls"], "#e8f5e9"),
    "server": (78, 16, 21, 58, "server m1 (m2 alike)", [], "#fff8e1"),
}

# Inner boxes of the switch (the ingress controls, in the order a packet meets them) and of the
# server.
PIPELINE = ["CacheParser", "KeyParse", "ControlTrust", "CacheLookup", "WritesAndUpdates",
            "SlotStore", "HotKeys", "CacheStats", "Respond | Forwarding",
            "Checksum, Deparser"]
SERVER_PARTS = [
    (79.5, 47, 18, 20, "p4cache-agent",
     ["TCP gate  :11211", "control  :11213", "(JSON lines)", "fence, watch set W"], "#ffe0b2"),
    (79.5, 19, 18, 20, "memcached",
     ["UDP :11211 (-U)", "TCP :11212", "(only the agent", "reaches it: nft)"], "#ffecb3"),
]

# Links between parts: (start, end, label, path letters, rad of the arc)
LINKS = [
    ((23, 53), (28, 53), "ports 3, 4", "ABC", 0.0),
    ((74, 53), (79.5, 57), "port 1", "BC", 0.0),
    ((74, 40), (79.5, 29), "UDP (miss)", "B", 0.0),
    ((47, 80), (47, 72), "P4Runtime gRPC :9559\npipeline, tables, counters,\n"
     "digests, packet-out/in", "DE", 0.0),
    ((73, 88), (88.5, 67), "management link\nfetch, unwatch, sync", "DE", -0.25),
    ((88.5, 47), (88.5, 39), "mg k v f t\nwrites (TCP :11212)", "CD", 0.0),
]


def box(ax, x, y, w, h, face, edge=GREY, lw=1.4, rounding=1.2):
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle=f"round,pad=0,rounding_size={rounding}",
                                facecolor=face, edgecolor=edge, linewidth=lw))


def arrow(ax, start, end, color, lw=1.6, rad=0.0, style="-|>", both=False, ls="-"):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=("<|-|>" if both else style),
                                 mutation_scale=13, color=color, linewidth=lw, linestyle=ls,
                                 connectionstyle=f"arc3,rad={rad}", shrinkA=1, shrinkB=1))


def draw_parts(ax):
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 100)
    ax.axis("off")
    ax.set_title("Parts, where they run, and what connects them", fontsize=14, pad=10,
                 fontweight="bold")
    for x, y, w, h, title, lines, face in BOXES.values():
        box(ax, x, y, w, h, face)
        ax.text(x + w / 2, y + h - 2.2, title, ha="center", va="top", fontsize=11,
                fontweight="bold")
        for i, line in enumerate(lines):
            ax.text(x + w / 2, y + h - 6 - i * 3.1, line, ha="center", va="top", fontsize=8.8)

    # The pipeline inside the switch, numbered in the order a packet meets it: the first column
    # top to bottom, then the second.
    sx, sy, sw, sh = BOXES["switch"][:4]
    col_w, row_h, gap = 19, 6.2, 1.6
    for i, name in enumerate(PIPELINE):
        col, row = divmod(i, 5)
        x = sx + 3 + col * (col_w + 2.5)
        y = sy + sh - 17 - row * (row_h + gap)
        box(ax, x, y, col_w, row_h, "#c8e6c9", lw=1.0, rounding=0.8)
        ax.text(x + col_w / 2, y + row_h / 2, f"{i + 1}  {name}", ha="center", va="center",
                fontsize=9, family="monospace")
        if row < 4 and i + 1 < len(PIPELINE):
            arrow(ax, (x + col_w / 2, y), (x + col_w / 2, y - gap), GREY, lw=1.0)
    ax.text(sx + sw - 1.5, sy + 1.5, "registers: slot_* and store_* (SlotStore),\n"
            "sketch0-2, bloom0-1 (HotKeys); digest hot_key_digest_t",
            ha="right", va="bottom", fontsize=7.8, style="italic", color=GREY)

    for x, y, w, h, title, lines, face in SERVER_PARTS:
        box(ax, x, y, w, h, face)
        ax.text(x + w / 2, y + h - 2, title, ha="center", va="top", fontsize=10,
                fontweight="bold")
        for i, line in enumerate(lines):
            ax.text(x + w / 2, y + h - 6 - i * 3.0, line, ha="center", va="top", fontsize=8.5)

    for start, end, label, letters, rad in LINKS:
        arrow(ax, start, end, GREY, lw=2.0, rad=rad, both=True)
        mx, my = (start[0] + end[0]) / 2, (start[1] + end[1]) / 2
        if label:
            dx = 1.2 if start[0] == end[0] else 0
            dy = 1.2 if start[1] == end[1] else 0
            ax.text(mx + dx, my + dy, label, fontsize=8.2, ha="left", va="bottom",
                    color=GREY, bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5,
                                      "alpha": 0.85})
        for k, letter in enumerate(letters):
            ax.text(mx - 2.6 + k * 2.6, my - 2.8, letter, fontsize=8.5, ha="center",
                    va="center", color="white", fontweight="bold",
                    bbox={"boxstyle": "circle,pad=0.18", "facecolor": PATHS[letter][1],
                          "edgecolor": "none"})

    # Legend of the path letters.
    for k, (letter, (name, color)) in enumerate(PATHS.items()):
        y = 11 - k * 2.6
        ax.text(2, y, letter, fontsize=9, ha="center", va="center", color="white",
                fontweight="bold", bbox={"boxstyle": "circle,pad=0.2", "facecolor": color,
                                         "edgecolor": "none"})
        ax.text(4, y, name, fontsize=9, va="center")
    ax.text(2, 14.5, "paths (sequence on the right):", fontsize=9, fontweight="bold",
            va="center")


# --- right panel: the paths as a sequence chart ----------------------------------------------

LANES = ["client", "switch", "controller", "agent", "memcached"]

# (path letter, from lane, to lane, label); None as "from" starts a new section.
STEPS = [
    ("A", None, None, "A  GET hit: answered by the switch"),
    ("A", "client", "switch", "get k<CRLF>  (UDP :11211)"),
    ("A", "switch", "client", "VALUE k f n ... END, from registers (same frame, turned around)"),
    ("B", None, None, "B  GET miss: memcached answers"),
    ("B", "client", "switch", "get k<CRLF>"),
    ("B", "switch", "memcached", "forwarded unchanged; sketch +1"),
    ("B", "memcached", "client", "VALUE ... END (bridged back through the switch)"),
    ("C", None, None, "C  TCP write: invalidate, ack, forward"),
    ("C", "client", "agent", "set k ... (TCP, bridged by the switch)"),
    ("C", "agent", "switch", "OP_INVALIDATE_KEY k (UDP :11311)"),
    ("C", "switch", "agent", "ack: applied | not-cached (slot invalid + written)"),
    ("C", "agent", "memcached", "set k ... (TCP :11212)"),
    ("C", "memcached", "agent", "STORED"),
    ("C", "agent", "client", "STORED"),
    ("D", None, None, "D  promotion: digest -> reserve -> fetch -> versioned fill"),
    ("D", "switch", "controller", "digest (server, key_len, key): hot, or refill ask"),
    ("D", "controller", "switch", "packet-out OP_UPDATE(s, v, len 0): reserve"),
    ("D", "switch", "controller", "packet-in ack: applied"),
    ("D", "controller", "switch", "insert cache_lookup (server, key) -> set_slot(s)"),
    ("D", "controller", "agent", "fetch k"),
    ("D", "agent", "memcached", "fence; mg k v f t"),
    ("D", "memcached", "agent", "VA <bytes> f<flags> t<ttl>, data"),
    ("D", "agent", "controller", "value, flags, ttl"),
    ("D", "controller", "switch", "OP_UPDATE(s, v+1, VALUE...END): fill"),
    ("D", "switch", "controller", "ack: applied (or written: new round)"),
    ("E", None, None, "E  eviction (cold, TTL, flush, given up)"),
    ("E", "controller", "switch", "delete cache_lookup entry"),
    ("E", "controller", "switch", "OP_UPDATE(s, v', len 0): invalidate"),
    ("E", "switch", "controller", "ack: applied"),
    ("E", "controller", "agent", "unwatch k"),
]


def draw_sequence(ax):
    n = len(STEPS)
    ax.set_xlim(-0.6, len(LANES) - 0.4)
    ax.set_ylim(n + 0.6, -1.6)
    ax.axis("off")
    ax.set_title("The paths, step by step (time runs down)", fontsize=14, pad=10,
                 fontweight="bold")
    x = {name: i for i, name in enumerate(LANES)}
    for name, i in x.items():
        ax.plot([i, i], [-0.6, n + 0.3], color="#b0bec5", linewidth=1.2, zorder=0)
        ax.text(i, -1.0, name, ha="center", va="center", fontsize=11, fontweight="bold",
                bbox={"boxstyle": "round,pad=0.35", "facecolor": "#eceff1",
                      "edgecolor": GREY})
    for row, (letter, src, dst, label) in enumerate(STEPS):
        color = PATHS[letter][1]
        y = row + 0.2
        if src is None:
            ax.text(-0.55, y, label, ha="left", va="center", fontsize=10.5, fontweight="bold",
                    color=color)
            ax.plot([-0.55, len(LANES) - 0.45], [y - 0.48, y - 0.48], color=color,
                    linewidth=0.8, alpha=0.5)
            continue
        x0, x1 = x[src], x[dst]
        ax.add_patch(FancyArrowPatch((x0, y), (x1, y), arrowstyle="-|>", mutation_scale=12,
                                     color=color, linewidth=1.6, shrinkA=3, shrinkB=3))
        mid = (x0 + x1) / 2
        ax.text(mid, y - 0.12, label, ha="center", va="bottom", fontsize=8.3,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.3, "alpha": 0.9})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--dpi", type=int, default=110)
    args = p.parse_args(argv)
    fig = plt.figure(figsize=(22, 12.5))
    ax_parts = fig.add_axes((0.01, 0.02, 0.46, 0.93))
    ax_seq = fig.add_axes((0.49, 0.02, 0.50, 0.93))
    draw_parts(ax_parts)
    draw_sequence(ax_seq)
    fig.suptitle("p4cache: an in-network cache for memcached", fontsize=17,
                 fontweight="bold", y=0.995)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=args.dpi, facecolor="white")
    plt.close(fig)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

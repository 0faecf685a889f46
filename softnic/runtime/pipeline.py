"""The executable form of one loaded program: control nodes and the :class:`Pipeline`.

A control block is a graph of nodes (tables, conditions, action calls); each node's ``apply``
runs it on a packet's field slots and returns the next node, so a pipeline pass is a loop of
``node = node.apply(f, s)`` with no dict lookups. ``build`` creates these from BMv2 JSON.
"""

from __future__ import annotations

import time
from typing import Any

from softnic.runtime.codegen import Compiled
from softnic.runtime.loader import Program
from softnic.runtime.match_tables import Entry, Table
from softnic.runtime.packet import PacketCtx


class TableNode:
    __slots__ = ("table", "default", "json_default", "default_const", "next_by_action",
                 "has_hit", "has_miss", "hit_next", "miss_next", "base_next", "plen_slot", "name")

    def __init__(self, table: Table, plen_slot: int) -> None:
        self.table = table
        self.name = table.name
        self.plen_slot = plen_slot
        self.default: Entry | None = None
        self.json_default: Entry | None = None
        self.default_const = False

    def apply(self, f: list[int], s: PacketCtx) -> Any:
        t = self.table
        e = t.lookup(f)
        if e is None:
            e = self.default
            if e is None:  # a miss with no default action: __MISS__, else base_default_next
                return self.base_next
            e.fn(f, e.data, s)
            return None if s.exited else e.next
        if t.with_counters:
            c = e.counter
            c[0] += 1
            c[1] += f[self.plen_slot]
        if t.meter_target is not None:
            m = e.meter
            f[t.meter_target] = 0 if m is None else m.execute(
                f[self.plen_slot] if t.meter_bytes else 1, time.monotonic())
        e.fn(f, e.data, s)
        return None if s.exited else e.next


class FixedActionNode(TableNode):
    """A keyless table whose default action is const (what a compiler makes of statements in an
    ``apply`` block): no lookup can change its outcome, so it just runs that action."""

    __slots__ = ()

    def apply(self, f: list[int], s: PacketCtx) -> Any:
        e = self.default
        e.fn(f, e.data, s)  # type: ignore[union-attr]
        return None if s.exited else e.next  # type: ignore[union-attr]


class CondNode:
    __slots__ = ("name", "fn", "true_next", "false_next")

    def apply(self, f: list[int], s: PacketCtx) -> Any:
        return self.true_next if self.fn(f) else self.false_next


class ActionCallNode:
    __slots__ = ("name", "fn", "next")

    def apply(self, f: list[int], s: PacketCtx) -> Any:
        self.fn(f, (), s)
        return None if s.exited else self.next


class Pipeline:
    """Everything built from one JSON: compiled code, tables, node graph, metadata slots."""

    def __init__(self, prog: Program, comp: Compiled) -> None:
        self.prog = prog
        self.comp = comp
        self.template = prog.layout.template
        self.sm = prog.layout.sm
        self.tables: dict[str, TableNode] = {}
        self.nodes: dict[str, Any] = {}
        self.inits: dict[str, Any] = {}
        sm = self.sm
        # standard_metadata slots as plain attributes: the per-packet path avoids dict lookups
        self.s_iport = sm["ingress_port"]
        self.s_espec = sm["egress_spec"]
        self.s_eport = sm["egress_port"]
        self.s_itype = sm["instance_type"]
        self.s_plen = sm["packet_length"]
        self.s_igts = sm["ingress_global_timestamp"]
        self.s_egts = sm["egress_global_timestamp"]
        self.s_mcast = sm["mcast_grp"]
        self.s_rid = sm["egress_rid"]
        self.s_perr = sm["parser_error"]
        self.sobe = prog.errors["StackOutOfBounds"]
        self.ingress_init: Any = None
        self.egress_init: Any = None
        # The same controls as one function each (gen_control_block, or a node walk: ``walker``).
        self.ingress_fn: Any = None
        self.egress_fn: Any = None
        # BMv2's packet length register: a hidden slot when the program can make it differ
        # from packet_length (add/remove_header, writes to packet_length); otherwise
        # packet_length itself, so the common case costs nothing extra per packet.
        self.track_len = comp.track_len
        self.len_slot = prog.layout.len_reg if comp.track_len else self.s_plen
        self.espec_init = 0
        self.meta_ranges = _metadata_ranges(prog.layout)
        self.error_names = {code: name for name, code in prog.errors.items()}

    def error_name(self, code: int) -> str:
        """The P4 name of an error code, from the JSON ``errors`` table (as BMv2 logs it)."""
        return self.error_names.get(code, f"error {code}")


def _metadata_ranges(lay: Any) -> list[tuple[int, int]]:
    """Slot ranges holding metadata (everything but packet headers and the indices of header
    stacks and header-union stacks).

    BMv2's ``reset_metadata`` zeroes exactly these for clones; resetting them to the template
    does the same, keeping metadata headers valid.
    """
    meta = [True] * len(lay.template)
    for h in lay.headers.values():
        if not h.metadata:
            for i in range(h.base, h.base + h.span):
                meta[i] = False
    for st in [*lay.stacks.values(), *lay.union_stacks.values()]:
        meta[st.next_slot] = False
    out: list[tuple[int, int]] = []
    start = None
    for i, m in enumerate(meta + [False]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            out.append((start, i))
            start = None
    return out


def walker(init: Any) -> Any:
    """A function running the control that starts at ``init`` by walking its nodes (for graphs
    gen_control_block does not compile, and as the reference the compiled form is tested
    against)."""

    def walk(f: list[int], s: PacketCtx) -> None:
        node = init
        while node is not None:
            node = node.apply(f, s)

    return walk

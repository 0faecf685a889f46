"""The control-plane half of ``Switch``: pipeline load, tables, externs, PRE.

Every call takes the switch lock, so an update is atomic with respect to packets.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from softnic.runtime.api import (
    ActionCall,
    Digest,
    InvalidArgument,
    MatchKey,
    NotFound,
    PacketIn,
    PipelineLoadError,
    SwitchError,
    TableEntry,
)
from softnic.runtime.build import build_pipeline, next_for
from softnic.runtime.externs import Meter
from softnic.runtime.match_tables import Entry, Table
from softnic.runtime.pipeline import Pipeline, TableNode
from softnic.runtime.pre import PacketReplicationEngine


class ControlPlane:
    """Mixin of :class:`~softnic.runtime.switch.Switch`: everything but the packet path."""

    _lock: threading.Lock
    _p: Pipeline | None
    _pre: PacketReplicationEngine

    # ------------------------------------------------------------------ pipeline loading
    def load_json(self, bmv2_json: dict) -> None:
        try:
            pl = build_pipeline(bmv2_json, self.drop_port)
        except PipelineLoadError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            raise PipelineLoadError(f"malformed BMv2 JSON: {type(e).__name__}: {e}") from e
        except Exception as e:  # a check the loader lacks: still a load failure, never a crash
            raise PipelineLoadError(
                f"BMv2 JSON not loadable (unexpected {type(e).__name__}: {e})") from e
        with self._lock:
            self._p = pl
            if not self._ctrl_explicit:
                self._ctrl_in = self._guess_ctrl("packet_in")
                self._ctrl_out = self._guess_ctrl("packet_out")

    def has_pipeline(self) -> bool:
        return self._p is not None

    def set_controller_headers(self, packet_in: str | None, packet_out: str | None) -> None:
        """Header TYPE names of the @controller_header("packet_in"/"packet_out") headers."""
        with self._lock:
            self._ctrl_in, self._ctrl_out = packet_in, packet_out
            self._ctrl_explicit = True

    def controller_headers(self) -> tuple[str | None, str | None]:
        """The packet_in / packet_out controller header types in use (set or guessed)."""
        return self._ctrl_in, self._ctrl_out

    def controller_prefix(self, metadata: dict[str, int]) -> bytes:
        """The packet_out controller header serialised from ``metadata`` (missing fields are
        0), as packet-out prepends it; empty when the program has none."""
        p = self._p
        if p is None or self._ctrl_out is None:
            return b""
        hdr = next((h for h in p.prog.layout.headers.values()
                    if h.type_name == self._ctrl_out and not h.metadata), None)
        if hdr is None:
            return b""
        v = 0
        for fname, w, _ in hdr.fields:
            v = (v << w) | (int(metadata.get(fname, 0)) & ((1 << w) - 1))
        return v.to_bytes(hdr.nbits // 8, "big")

    def table_match_order(self, table: str) -> list[TableEntry]:
        """A table's entries in the order a lookup tries them: by priority, highest first, ties
        to the first installed (ternary, range and optional tables); else as installed."""
        with self._lock:
            t = self._table(table).table
            seq = t.sorted if t.mode == "ternary" else list(t.entries.values())
            return [t.to_api(e) for e in seq]

    def set_trace(self, trace: Callable[[str], None] | None) -> None:
        with self._lock:
            self._trace = trace

    def _guess_ctrl(self, word: str) -> str | None:
        assert self._p is not None
        for tname in self._p.prog.header_types:
            if word in tname.lower():
                return tname
        return None

    # ------------------------------------------------------------------ handlers
    def set_packet_in_handler(self, cb: Callable[[PacketIn], None] | None) -> None:
        self._packet_in_cb = cb

    def set_digest_handler(self, cb: Callable[[Digest], None] | None) -> None:
        self._digest_cb = cb

    # ------------------------------------------------------------------ tables
    def _table(self, name: str) -> TableNode:
        p = self._p
        if p is None:
            raise SwitchError("no pipeline loaded")
        node = p.tables.get(name)
        if node is None:
            raise NotFound(f"no table named '{name}'")
        return node

    def _mutable(self, node: TableNode) -> Table:
        if node.table.immutable:
            raise InvalidArgument(f"table '{node.name}' has const entries")
        return node.table

    def table_add(self, table: str, entry: TableEntry) -> None:
        with self._lock:
            node = self._table(table)
            t = self._mutable(node)
            e = t.make_entry(entry.key, entry.action, entry.priority,
                             lambda a: next_for(node, a, hit=True))
            e.counter = [entry.counter_packets, entry.counter_bytes]
            if t.meter_target is not None:
                e.meter = Meter()
                e.meter.set(entry.meter_config)
            t.insert(e)

    def table_modify(self, table: str, entry: TableEntry) -> None:
        with self._lock:
            node = self._table(table)
            t = self._mutable(node)
            e = t.find(entry.key, entry.priority)
            t.bind_action(e, entry.action, lambda a: next_for(node, a, hit=True))
            if e.meter is not None and entry.meter_config is not None:
                e.meter.set(entry.meter_config)

    def table_delete(self, table: str, key: list[MatchKey | None], priority: int) -> None:
        with self._lock:
            node = self._table(table)
            t = self._mutable(node)
            t.remove(t.find(key, priority))

    def table_entries(self, table: str) -> list[TableEntry]:
        with self._lock:
            node = self._table(table)
            return [node.table.to_api(e) for e in node.table.entries.values()]

    def table_set_default(self, table: str, action: ActionCall) -> None:
        with self._lock:
            node = self._table(table)
            if node.default_const:
                raise InvalidArgument(f"table '{table}': the default action is const")
            e = Entry()
            node.table.bind_action(e, action, lambda a: next_for(node, a, hit=False))
            node.default = e

    def table_get_default(self, table: str) -> ActionCall:
        with self._lock:
            node = self._table(table)
            d = node.default
            if d is None:
                return ActionCall("NoAction", [])
            return ActionCall(self._aname(self._p, d.aid), list(d.params))  # type: ignore[arg-type]

    def table_reset_default(self, table: str) -> None:
        with self._lock:
            node = self._table(table)
            node.default = node.json_default

    def table_clear(self, table: str) -> None:
        with self._lock:
            node = self._table(table)
            self._mutable(node).clear()

    # ------------------------------------------------------------------ externs
    def _extern(self, kind: str, name: str) -> Any:
        p = self._p
        if p is None:
            raise SwitchError("no pipeline loaded")
        obj = getattr(p.comp, kind).get(name)
        if obj is None:
            raise NotFound(f"no {kind[:-1]} named '{name}'")
        return obj

    @staticmethod
    def _index(obj: Any, index: int) -> None:
        if not 0 <= index < obj.size:  # IndexError: P4Runtime's OUT_OF_RANGE
            raise IndexError(f"index {index} out of range for '{obj.name}' ({obj.size})")

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        with self._lock:
            c = self._extern("counters", name)
            self._index(c, index)
            return c.packets[index], c.bytes[index]

    def counter_write(self, name: str, index: int, packets: int, nbytes: int) -> None:
        with self._lock:
            c = self._extern("counters", name)
            self._index(c, index)
            c.packets[index], c.bytes[index] = packets, nbytes

    def counter_size(self, name: str) -> int:
        with self._lock:
            return self._extern("counters", name).size

    def direct_counter_read(self, table: str, entry_key: list[MatchKey | None],
                            priority: int) -> tuple[int, int]:
        with self._lock:
            e = self._table(table).table.find(entry_key, priority)
            return e.counter[0], e.counter[1]

    def direct_counter_write(self, table: str, entry_key: list[MatchKey | None], priority: int,
                             packets: int, nbytes: int) -> None:
        """Set an entry's direct counter (P4Runtime DirectCounterEntry MODIFY).

        The cells are updated in place: the entry's counter list is the one the packet path
        increments, so packets that follow add to the written values.
        """
        if packets < 0 or nbytes < 0:
            raise InvalidArgument("counter values must not be negative")
        with self._lock:
            e = self._table(table).table.find(entry_key, priority)
            e.counter[0], e.counter[1] = packets, nbytes

    def register_read(self, name: str, index: int) -> int:
        with self._lock:
            r = self._extern("registers", name)
            self._index(r, index)
            return r.cells[index]

    def register_write(self, name: str, index: int, value: int) -> None:
        with self._lock:
            r = self._extern("registers", name)
            self._index(r, index)
            r.cells[index] = value & r.mask

    def register_size(self, name: str) -> int:
        with self._lock:
            return self._extern("registers", name).size

    def meter_set(self, name: str, index: int, config: tuple[int, int, int, int]) -> None:
        with self._lock:
            m = self._extern("meters", name)
            self._index(m, index)
            m.meters[index].set(config)

    def meter_get(self, name: str, index: int) -> tuple[int, int, int, int] | None:
        with self._lock:
            m = self._extern("meters", name)
            self._index(m, index)
            return m.meters[index].config

    # ------------------------------------------------------------------ PRE
    def mc_group_set(self, group: int, replicas: list[tuple[int, int]]) -> None:
        with self._lock:
            self._pre.group_set(group, replicas)

    def mc_group_delete(self, group: int) -> None:
        with self._lock:
            self._pre.group_delete(group)

    def mc_groups(self) -> dict[int, list[tuple[int, int]]]:
        with self._lock:
            return {g: list(r) for g, r in self._pre.groups.items()}

    def clone_session_set(self, session: int, replicas: list[tuple[int, int]],
                          truncate_len: int = 0) -> None:
        with self._lock:
            self._pre.session_set(session, replicas, truncate_len)

    def clone_session_delete(self, session: int) -> None:
        with self._lock:
            self._pre.session_delete(session)

    def clone_sessions(self) -> dict[int, tuple[list[tuple[int, int]], int]]:
        with self._lock:
            return {k: (list(r), t) for k, (r, t) in self._pre.sessions.items()}

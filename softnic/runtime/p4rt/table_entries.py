"""Write and Read of TableEntry, DirectCounterEntry and DirectMeterEntry.

Rules from the P4Runtime spec that the engine does not know about are applied here: the default
entry is only ever MODIFYed (an unset action resets it to the program's default), a ``const``
default action or a ``const entries`` table refuses writes with PERMISSION_DENIED, a wildcard read
(``table_id`` 0 and/or no match) returns every entry but not the default entries, and direct
resources are only MODIFYed, addressed by their table entry.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from p4.v1 import p4runtime_pb2

from softnic.runtime.api import SwitchAPI, TableEntry

from . import translate
from .engine import engine_errors
from .errors import P4RTError, invalid, not_found, permission_denied
from .idle import ageing, time_since_last_hit_ns
from .p4info import P4InfoIndex, TableInfo

Update = p4runtime_pb2.Update


def _const_table(t: TableInfo) -> P4RTError:
    return permission_denied(f"table {t.name} has const entries: it cannot be written")


class TableHandler:
    def __init__(self, switch: SwitchAPI, index: P4InfoIndex) -> None:
        self.switch = switch
        self.index = index

    # -- writes
    def write(self, op: int, msg: p4runtime_pb2.TableEntry) -> None:
        t = self.index.table(msg.table_id)
        if msg.HasField("time_since_last_hit"):  # PI's wording
            raise invalid("has_time_since_last_hit must not be set in WriteRequest")
        if msg.idle_timeout_ns:
            if msg.is_default_action:
                raise invalid(f"table {t.name}: the default entry cannot have an idle timeout")
            if op != Update.DELETE and not t.supports_timeout:
                # P4Runtime spec: only for tables with idle_timeout_behavior NOTIFY_CONTROL
                raise invalid(f"table {t.name} does not support idle timeouts "
                              "(no support_timeout = true in the P4 program)")
            if msg.idle_timeout_ns < 0:
                raise invalid(f"table {t.name}: idle_timeout_ns must not be negative")
        if msg.is_default_action:
            self._write_default(op, t, msg)
            return
        if t.is_const:
            raise _const_table(t)
        if op == Update.INSERT:
            entry = translate.decode_entry(self.index, t, msg, with_action=True)
            with engine_errors(f"insert into {t.name}"):
                self.switch.table_add(t.name, entry)
            if msg.idle_timeout_ns:
                self._set_idle_timeout(t, entry, msg.idle_timeout_ns, reset=True)
        elif op == Update.MODIFY:
            entry = translate.decode_entry(self.index, t, msg, with_action=True)
            with engine_errors(f"modify in {t.name}"):
                self.switch.table_modify(t.name, entry)
            if t.supports_timeout:  # a MODIFY sets the timeout it carries (0: none)
                self._set_idle_timeout(t, entry, msg.idle_timeout_ns, reset=False)
        elif op == Update.DELETE:
            entry = translate.decode_entry(self.index, t, msg, with_action=False)
            with engine_errors(f"delete from {t.name}"):
                self.switch.table_delete(t.name, entry.key, entry.priority)
        else:
            raise invalid(f"unknown update type {op}")

    def _set_idle_timeout(self, t: TableInfo, entry: TableEntry, timeout_ns: int,
                          reset: bool) -> None:
        eng = ageing(self.switch)
        with engine_errors(f"idle timeout in {t.name}"):
            eng.table_set_idle_timeout(t.name, entry.key, entry.priority, timeout_ns, reset)

    @staticmethod
    def _idle_state(e: TableEntry, out: p4runtime_pb2.TableEntry, with_hit_time: bool,
                    now: float) -> None:
        """``idle_timeout_ns`` of a read entry, and ``time_since_last_hit`` when the request
        asks for it (an entry with no timeout reports the time since its insertion or last hit
        too, as PI does for a table that supports timeouts). Both come from the snapshot the
        engine returned with the entries (one lock for the whole read)."""
        out.idle_timeout_ns = e.idle_timeout_ns
        if with_hit_time:
            out.time_since_last_hit.elapsed_ns = time_since_last_hit_ns(e.last_hit, now)

    def _write_default(self, op: int, t: TableInfo, msg: p4runtime_pb2.TableEntry) -> None:
        if op != Update.MODIFY:
            raise invalid(f"table {t.name}: the default entry can only be modified")
        if len(msg.match) or msg.priority:
            raise invalid(f"table {t.name}: the default entry has no match and no priority")
        if t.const_default_action_id:
            raise permission_denied(f"table {t.name} has a const default action")
        if not msg.HasField("action"):
            with engine_errors(f"reset default of {t.name}"):
                self.switch.table_reset_default(t.name)
            return
        call = translate.decode_action(self.index, t, msg.action, for_default=True)
        with engine_errors(f"set default of {t.name}"):
            self.switch.table_set_default(t.name, call)

    # -- reads
    def _tables(self, table_id: int) -> list[TableInfo]:
        if table_id == 0:
            return [t for t in self.index.tables.values() if t.in_json]
        return [self.index.table(table_id)]

    def _entries(self, t: TableInfo, req: p4runtime_pb2.TableEntry) -> list[TableEntry]:
        with engine_errors(f"read {t.name}"):
            entries = self.switch.table_entries(t.name)
        if not len(req.match):
            return entries
        if req.table_id == 0:
            raise invalid("a match filter needs a table id")
        key = translate.decode_key(t, req.match)
        return [e for e in entries if translate.same_key(e.key, key)
                and (not t.needs_priority or e.priority == req.priority)]

    def read(self, req: p4runtime_pb2.TableEntry) -> Iterator[p4runtime_pb2.Entity]:
        with_counters = req.HasField("counter_data")
        with_hit_time = req.HasField("time_since_last_hit")
        for t in self._tables(req.table_id):
            if req.is_default_action:
                yield self._default_entity(t)
                continue
            entries = self._entries(t, req)
            now = time.monotonic()
            for e in entries:
                ent = p4runtime_pb2.Entity()
                translate.encode_entry(self.index, t, e, ent.table_entry, with_counters)
                if t.supports_timeout and not e.is_const:
                    self._idle_state(e, ent.table_entry, with_hit_time, now)
                yield ent

    def _default_entity(self, t: TableInfo) -> p4runtime_pb2.Entity:
        with engine_errors(f"read default of {t.name}"):
            call = self.switch.table_get_default(t.name)
        ent = p4runtime_pb2.Entity()
        ent.table_entry.table_id = t.id
        ent.table_entry.is_default_action = True
        translate.encode_action(self.index, call, ent.table_entry.action)
        return ent

    # -- direct counters and meters
    def _direct_table(self, req: p4runtime_pb2.TableEntry, attr: str, kind: str) -> list[TableInfo]:
        tables = [t for t in self._tables(req.table_id) if getattr(t, attr)]
        if req.table_id and not tables:
            raise invalid(f"table {self.index.table(req.table_id).name} has no direct {kind}")
        return tables

    def _one_entry(self, t: TableInfo, req: p4runtime_pb2.TableEntry) -> TableEntry:
        if not len(req.match) and not t.fields:
            raise invalid(f"table {t.name} has no key: address its default entry instead")
        translate.check_priority(t, req.priority)
        found = self._entries(t, req)
        if not found:
            raise not_found(f"no such entry in {t.name}")
        return found[0]

    def write_direct_counter(self, op: int, msg: p4runtime_pb2.DirectCounterEntry) -> None:
        if op != Update.MODIFY:
            raise invalid("direct counter entries can only be modified")
        t = self._direct_table(msg.table_entry, "direct_counter_id", "counter")[0]
        e = self._one_entry(t, msg.table_entry)
        with engine_errors(f"write direct counter of {t.name}"):
            self.switch.direct_counter_write(t.name, e.key, e.priority, msg.data.packet_count,
                                             msg.data.byte_count)

    def read_direct_counter(self, req: p4runtime_pb2.DirectCounterEntry
                            ) -> Iterator[p4runtime_pb2.Entity]:
        for t in self._direct_table(req.table_entry, "direct_counter_id", "counter"):
            for e in self._entries(t, req.table_entry):
                with engine_errors(f"read direct counter of {t.name}"):
                    packets, nbytes = self.switch.direct_counter_read(t.name, e.key, e.priority)
                ent = p4runtime_pb2.Entity()
                dc = ent.direct_counter_entry
                translate.encode_entry(self.index, t, e, dc.table_entry, with_counters=False)
                dc.table_entry.ClearField("action")
                dc.data.packet_count = packets
                dc.data.byte_count = nbytes
                yield ent

    def write_direct_meter(self, op: int, msg: p4runtime_pb2.DirectMeterEntry) -> None:
        if op != Update.MODIFY:
            raise invalid("direct meter entries can only be modified")
        t = self._direct_table(msg.table_entry, "direct_meter_id", "meter")[0]
        e = self._one_entry(t, msg.table_entry)
        c = msg.config
        e.meter_config = (c.cir, c.cburst, c.pir, c.pburst) if msg.HasField("config") else None
        with engine_errors(f"write direct meter of {t.name}"):
            self.switch.table_modify(t.name, e)

    def read_direct_meter(self, req: p4runtime_pb2.DirectMeterEntry
                          ) -> Iterator[p4runtime_pb2.Entity]:
        for t in self._direct_table(req.table_entry, "direct_meter_id", "meter"):
            for e in self._entries(t, req.table_entry):
                ent = p4runtime_pb2.Entity()
                dm = ent.direct_meter_entry
                translate.encode_entry(self.index, t, e, dm.table_entry, with_counters=False)
                dm.table_entry.ClearField("action")
                dm.table_entry.ClearField("meter_config")
                if e.meter_config is not None:
                    cir, cburst, pir, pburst = e.meter_config
                    dm.config.cir, dm.config.cburst = cir, cburst
                    dm.config.pir, dm.config.pburst = pir, pburst
                yield ent


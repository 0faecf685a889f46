"""Dispatch of Write updates and Read entities to the handler for each entity kind.

One :class:`Entities` exists per committed pipeline (it holds that pipeline's P4Info index), so
a pipeline change can never mix ids of two programs. Entity kinds softnic does not implement
(action profiles, extern entries) answer UNIMPLEMENTED rather than being ignored.
"""

from __future__ import annotations

from collections.abc import Iterator

from p4.v1 import p4runtime_pb2

from softnic.runtime.api import SwitchAPI

from .digests import DigestManager
from .errors import already_exists, invalid, not_found, unimplemented
from .externs import ExternHandler
from .p4info import P4InfoIndex
from .pre import PreHandler
from .table_entries import TableHandler
from .value_set_entries import ValueSetHandler

Update = p4runtime_pb2.Update


class Entities:
    def __init__(self, switch: SwitchAPI, index: P4InfoIndex, digests: DigestManager,
                 pre: PreHandler) -> None:
        self.index = index
        self.tables = TableHandler(switch, index)
        self.externs = ExternHandler(switch, index)
        self.value_sets = ValueSetHandler(switch, index)
        self.pre = pre
        self.digests = digests

    def write(self, update: p4runtime_pb2.Update) -> None:
        op = update.type
        if op not in (Update.INSERT, Update.MODIFY, Update.DELETE):
            raise invalid("update type must be INSERT, MODIFY or DELETE")
        e = update.entity
        kind = e.WhichOneof("entity")
        if kind == "table_entry":
            self.tables.write(op, e.table_entry)
        elif kind == "counter_entry":
            self.externs.write_counter(op, e.counter_entry)
        elif kind == "direct_counter_entry":
            self.tables.write_direct_counter(op, e.direct_counter_entry)
        elif kind == "meter_entry":
            self.externs.write_meter(op, e.meter_entry)
        elif kind == "direct_meter_entry":
            self.tables.write_direct_meter(op, e.direct_meter_entry)
        elif kind == "register_entry":
            self.externs.write_register(op, e.register_entry)
        elif kind == "packet_replication_engine_entry":
            self.pre.write(op, e.packet_replication_engine_entry)
        elif kind == "digest_entry":
            self._write_digest(op, e.digest_entry)
        elif kind == "value_set_entry":
            self.value_sets.write(op, e.value_set_entry)
        elif kind is None:
            raise invalid("update without an entity")
        else:
            raise unimplemented(f"{kind} is not supported by softnic")

    def read(self, e: p4runtime_pb2.Entity) -> Iterator[p4runtime_pb2.Entity]:
        kind = e.WhichOneof("entity")
        if kind == "table_entry":
            yield from self.tables.read(e.table_entry)
        elif kind == "counter_entry":
            yield from self.externs.read_counter(e.counter_entry)
        elif kind == "direct_counter_entry":
            yield from self.tables.read_direct_counter(e.direct_counter_entry)
        elif kind == "meter_entry":
            yield from self.externs.read_meter(e.meter_entry)
        elif kind == "direct_meter_entry":
            yield from self.tables.read_direct_meter(e.direct_meter_entry)
        elif kind == "register_entry":
            yield from self.externs.read_register(e.register_entry)
        elif kind == "packet_replication_engine_entry":
            yield from self.pre.read(e.packet_replication_engine_entry)
        elif kind == "digest_entry":
            yield from self._read_digest(e.digest_entry)
        elif kind == "value_set_entry":
            yield from self.value_sets.read(e.value_set_entry)
        elif kind is None:
            raise invalid("read of an empty entity")
        else:
            raise unimplemented(f"{kind} is not supported by softnic")

    # -- digests
    def _write_digest(self, op: int, msg: p4runtime_pb2.DigestEntry) -> None:
        info = self.index.digest(msg.digest_id)
        configured = self.digests.configured()
        if op == Update.DELETE:
            if info.id not in configured:
                raise not_found(f"digest {info.name} is not configured")
            self.digests.remove_config(info.id)
            return
        if op == Update.INSERT and info.id in configured:
            raise already_exists(f"digest {info.name} is already configured")
        if op == Update.MODIFY and info.id not in configured:
            raise not_found(f"digest {info.name} is not configured")
        if not msg.HasField("config"):
            raise invalid(f"digest {info.name}: config is required")
        c = msg.config
        if c.max_timeout_ns < 0 or c.ack_timeout_ns < 0 or c.max_list_size < 0:
            raise invalid(f"digest {info.name}: config values must not be negative")
        self.digests.set_config(info, c)

    def _read_digest(self, req: p4runtime_pb2.DigestEntry) -> Iterator[p4runtime_pb2.Entity]:
        configured = self.digests.configured()
        if req.digest_id:
            info = self.index.digest(req.digest_id)
            if info.id not in configured:
                raise not_found(f"digest {info.name} is not configured")
            ids = [info.id]
        else:
            ids = sorted(configured)
        for i in ids:
            ent = p4runtime_pb2.Entity()
            ent.digest_entry.digest_id = i
            ent.digest_entry.config.CopyFrom(configured[i])
            yield ent

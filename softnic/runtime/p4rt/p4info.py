"""Id-indexed view of a P4Info message.

P4Runtime addresses every object by its numeric P4Info id while the engine speaks the
fully-qualified names of the BMv2 JSON. This index is the single place where ids become names
(and bitwidths become limits), so every entity handler validates ids the same way: an id that is
not in the P4Info is a malformed request (INVALID_ARGUMENT), never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2

from .errors import invalid

MatchType = p4info_pb2.MatchField.MatchType


@dataclass
class FieldInfo:
    id: int
    name: str
    bitwidth: int
    match_type: int = 0  # MatchField.MatchType for match fields


@dataclass
class ActionInfo:
    id: int
    name: str
    params: list[FieldInfo]
    params_by_id: dict[int, FieldInfo] = field(default_factory=dict)


@dataclass
class TableInfo:
    id: int
    name: str
    fields: list[FieldInfo]
    fields_by_id: dict[int, FieldInfo]
    action_ids: set[int]
    default_only_ids: set[int]
    table_only_ids: set[int]
    const_default_action_id: int
    is_const: bool
    size: int
    needs_priority: bool
    direct_counter_id: int = 0
    direct_meter_id: int = 0
    has_action_profile: bool = False
    # False for a table p4c's mid end removed from the JSON but kept in the P4Info (BMv2 loads
    # that pair): wildcard reads skip it, a request naming it gets the engine's NOT_FOUND.
    in_json: bool = True
    # P4Info idle_timeout_behavior NOTIFY_CONTROL (p4c: support_timeout = true): entries may
    # have an idle_timeout_ns.
    supports_timeout: bool = False


@dataclass
class IndexedInfo:
    """A counter, meter or register: an array of ``size`` cells."""

    id: int
    name: str
    size: int
    bitwidth: int = 0  # registers: width of one cell (0 when not a plain bitstring)


@dataclass
class DirectInfo:
    id: int
    name: str
    table_id: int


@dataclass
class DigestInfo:
    id: int
    name: str
    members: list[FieldInfo]


@dataclass
class PacketMetadataInfo:
    id: int
    name: str
    fields: list[FieldInfo]
    fields_by_id: dict[int, FieldInfo]


_PRIORITY_TYPES = {MatchType.TERNARY, MatchType.RANGE, MatchType.OPTIONAL}


class P4InfoIndex:
    """All lookups the service needs from one P4Info, built once per pipeline."""

    def __init__(self, info: p4info_pb2.P4Info) -> None:
        self.info = info
        self.actions: dict[int, ActionInfo] = {}
        for a in info.actions:
            params = [FieldInfo(p.id, p.name, p.bitwidth) for p in a.params]
            self.actions[a.preamble.id] = ActionInfo(
                a.preamble.id, a.preamble.name, params, {p.id: p for p in params})
        self.tables: dict[int, TableInfo] = {}
        for t in info.tables:
            self.tables[t.preamble.id] = self._table(t)
        self.counters = {c.preamble.id: IndexedInfo(c.preamble.id, c.preamble.name, c.size)
                         for c in info.counters}
        self.meters = {m.preamble.id: IndexedInfo(m.preamble.id, m.preamble.name, m.size)
                       for m in info.meters}
        self.registers = {r.preamble.id: IndexedInfo(
            r.preamble.id, r.preamble.name, r.size,
            r.type_spec.bitstring.bit.bitwidth or r.type_spec.bitstring.int.bitwidth)
            for r in info.registers}
        self.direct_counters = {d.preamble.id: DirectInfo(d.preamble.id, d.preamble.name,
                                                          d.direct_table_id)
                                for d in info.direct_counters}
        self.direct_meters = {d.preamble.id: DirectInfo(d.preamble.id, d.preamble.name,
                                                        d.direct_table_id)
                              for d in info.direct_meters}
        for d in self.direct_counters.values():
            if d.table_id in self.tables:
                self.tables[d.table_id].direct_counter_id = d.id
        for d in self.direct_meters.values():
            if d.table_id in self.tables:
                self.tables[d.table_id].direct_meter_id = d.id
        self.digests = {d.preamble.id: DigestInfo(d.preamble.id, d.preamble.name,
                                                  self._struct_members(d.type_spec))
                        for d in info.digests}
        self.digests_by_name = {d.name: d for d in self.digests.values()}
        self.packet_metadata: dict[str, PacketMetadataInfo] = {}
        for c in info.controller_packet_metadata:
            fields = [FieldInfo(m.id, m.name, m.bitwidth) for m in c.metadata]
            self.packet_metadata[c.preamble.name] = PacketMetadataInfo(
                c.preamble.id, c.preamble.name, fields, {f.id: f for f in fields})

    def _table(self, t: p4info_pb2.Table) -> TableInfo:
        fields = [FieldInfo(m.id, m.name, m.bitwidth, m.match_type) for m in t.match_fields]
        scope = p4info_pb2.ActionRef
        return TableInfo(
            id=t.preamble.id, name=t.preamble.name, fields=fields,
            fields_by_id={f.id: f for f in fields},
            action_ids={r.id for r in t.action_refs},
            default_only_ids={r.id for r in t.action_refs if r.scope == scope.DEFAULT_ONLY},
            table_only_ids={r.id for r in t.action_refs if r.scope == scope.TABLE_ONLY},
            const_default_action_id=t.const_default_action_id,
            is_const=t.is_const_table, size=t.size,
            needs_priority=any(f.match_type in _PRIORITY_TYPES for f in fields),
            has_action_profile=t.implementation_id != 0,
            supports_timeout=t.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL)

    def _struct_members(self, spec: p4info_pb2.P4DataTypeSpec) -> list[FieldInfo]:
        """Digest members, in declaration order, with their bitwidths (0 if not a bitstring)."""
        if spec.WhichOneof("type_spec") != "struct":
            return []
        struct = self.info.type_info.structs.get(spec.struct.name)
        if struct is None:
            return []
        out = []
        for i, m in enumerate(struct.members):
            bs = m.type_spec.bitstring
            width = bs.bit.bitwidth or bs.int.bitwidth or bs.varbit.max_bitwidth
            kind = m.type_spec.WhichOneof("type_spec")
            if kind == "bool":
                width = 1
            elif kind == "serializable_enum":  # p4c names the enum; its width is in type_info
                enums = self.info.type_info.serializable_enums
                enum = enums.get(m.type_spec.serializable_enum.name)
                width = enum.underlying_type.bitwidth if enum is not None else 0
            elif kind == "new_type":  # a ``type`` declaration: its original bit string
                new = self.info.type_info.new_types.get(m.type_spec.new_type.name)
                width = new.original_type.bitstring.bit.bitwidth if new is not None else 0
            out.append(FieldInfo(i + 1, m.name, width))
        return out

    # -- lookups that turn a bad id into INVALID_ARGUMENT with a clear message
    def table(self, table_id: int) -> TableInfo:
        t = self.tables.get(table_id)
        if t is None:
            raise invalid(f"unknown table id {table_id}")
        return t

    def action(self, action_id: int) -> ActionInfo:
        a = self.actions.get(action_id)
        if a is None:
            raise invalid(f"unknown action id {action_id}")
        return a

    @staticmethod
    def _lookup(kind: str, table: dict, obj_id: int):
        obj = table.get(obj_id)
        if obj is None:
            raise invalid(f"unknown {kind} id {obj_id}")
        return obj

    def counter(self, cid: int) -> IndexedInfo:
        return self._lookup("counter", self.counters, cid)

    def meter(self, mid: int) -> IndexedInfo:
        return self._lookup("meter", self.meters, mid)

    def register(self, rid: int) -> IndexedInfo:
        return self._lookup("register", self.registers, rid)

    def direct_counter(self, did: int) -> DirectInfo:
        return self._lookup("direct counter", self.direct_counters, did)

    def direct_meter(self, did: int) -> DirectInfo:
        return self._lookup("direct meter", self.direct_meters, did)

    def digest(self, did: int) -> DigestInfo:
        return self._lookup("digest", self.digests, did)

"""Write and Read of ValueSetEntry (P4Runtime spec, "ValueSetEntry").

A deliberate superset, like registers (see externs.py): simple_switch_grpc's PI server answers
every ValueSetEntry with UNIMPLEMENTED (p4lang/PI#316; still so in 2024, project-ideas#12), so
on BMv2 a value set can only be filled through the Thrift runtime_CLI (pvs_add). softnic
implements the spec instead, over the engine's parse_vset API.

A value set always exists, so the only Write is MODIFY, which replaces the whole member list
(an empty list empties the set); INSERT and DELETE are INVALID_ARGUMENT. More members than the
P4Info ``size`` is RESOURCE_EXHAUSTED. Each member gives every match field of the P4Info entry
once; BMv2 stores exact members only, so a non-exact field match is UNIMPLEMENTED. A member goes
to the engine as its fields concatenated without padding (BMv2's compressed form). A Read with
``value_set_id`` 0 returns every set; members come back in the order they were written, with
canonical bytestrings.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from . import bytestr
from .engine import engine_errors
from .errors import P4RTError, invalid, unimplemented
from .p4info import P4InfoIndex

Update = p4runtime_pb2.Update


class ValueSetHandler:
    def __init__(self, switch: Any, index: P4InfoIndex) -> None:
        self.switch = switch
        self.index = index
        self.sets = {v.preamble.id: v for v in index.info.value_sets}

    def _info(self, vid: int) -> p4info_pb2.ValueSet:
        vs = self.sets.get(vid)
        if vs is None:
            raise invalid(f"unknown value set id {vid}")
        return vs

    def write(self, op: int, msg: p4runtime_pb2.ValueSetEntry) -> None:
        vs = self._info(msg.value_set_id)
        name = vs.preamble.name
        if op != Update.MODIFY:
            raise invalid(f"value set {name}: only MODIFY is allowed (it replaces the members)")
        if len(msg.members) > vs.size:
            raise P4RTError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                            f"value set {name}: {len(msg.members)} members exceed its size "
                            f"{vs.size}")
        values = [self._member(vs, m, i) for i, m in enumerate(msg.members)]
        with engine_errors(f"write value set {name}"):
            self.switch.parse_vset_set(name, values)

    def _member(self, vs: p4info_pb2.ValueSet, m: p4runtime_pb2.ValueSetMember,
                i: int) -> int:
        name = vs.preamble.name
        given: dict[int, int] = {}
        fields = {f.id: f for f in vs.match}
        for fm in m.match:
            f = fields.get(fm.field_id)
            what = f"value set {name} member {i} field {fm.field_id}"
            if f is None:
                raise invalid(f"{what}: no such match field")
            if fm.field_id in given:
                raise invalid(f"{what}: given twice")
            kind = fm.WhichOneof("field_match_type")
            if kind != "exact":
                raise unimplemented(f"{what}: only exact matches are supported in value sets "
                                    f"(BMv2 stores exact members), got {kind}")
            given[fm.field_id] = bytestr.decode(fm.exact.value, f.bitwidth, what)
        value = 0
        for f in vs.match:
            if f.id not in given:
                raise invalid(f"value set {name} member {i}: match field {f.id} is missing")
            value = (value << f.bitwidth) | given[f.id]
        return value

    def read(self, req: p4runtime_pb2.ValueSetEntry) -> Iterator[p4runtime_pb2.Entity]:
        infos = (list(self.sets.values()) if req.value_set_id == 0
                 else [self._info(req.value_set_id)])
        for vs in infos:
            with engine_errors(f"read value set {vs.preamble.name}"):
                values = self.switch.parse_vset_get(vs.preamble.name)
            ent = p4runtime_pb2.Entity()
            e = ent.value_set_entry
            e.value_set_id = vs.preamble.id
            for v in values:
                member = e.members.add()
                shift = sum(f.bitwidth for f in vs.match)
                for f in vs.match:
                    shift -= f.bitwidth
                    fm = member.match.add(field_id=f.id)
                    fm.exact.value = bytestr.encode((v >> shift) & ((1 << f.bitwidth) - 1))
            yield ent

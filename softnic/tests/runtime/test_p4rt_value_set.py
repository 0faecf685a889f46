"""ValueSetEntry over real gRPC (P4Runtime spec "ValueSetEntry"): MODIFY replaces the whole
member list, INSERT/DELETE are refused, more members than the P4Info size is RESOURCE_EXHAUSTED,
reads return the members; packets through the engine then follow the members written.

The program is compiled by softnic and its P4Info built from the compile. Its parser extracts
``h`` (bytes a, b); value set ``P.kvs`` (struct: f = a, g = b[3:0]) sends the packet to
``parse_g``, which extracts ``g`` (byte c); the ingress copies ``g.c`` into ``h.b`` and only
``h`` is emitted, so the output's second byte is c exactly when the set matched.
"""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as pb

from softnic.compiler.p4info.serialize import build_p4info
from softnic.tests.compiler.p4progs import compile_text
from softnic.tests.compiler.test_value_sets import HEAD, TAIL
from softnic.tests.runtime.test_p4rt import env
from softnic.tests.runtime.test_p4rt_fixture import update, write_errors

__all__ = ["env"]

SRC = HEAD + """struct k_t { bit<8> f; bit<4> g; }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    value_set<k_t>(2) kvs;
    value_set<bit<8>>(4) pvs;
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a, hdr.h.b[3:0]) { kvs: parse_g; default: s2; }
    }
    state s2 { transition select(hdr.h.b) { pvs: parse_g; default: accept; } }
    state parse_g { pkt.extract(hdr.g); transition accept; }
}
""" + TAIL


@pytest.fixture
def vs_ready(env, tmp_path: Path):
    sw, connect, _ = env
    j, res = compile_text(tmp_path, SRC)
    info = build_p4info(res)
    c = connect()
    c.set_pipeline(device_config=json.dumps(j).encode(), p4info_msg=info)
    ids = {v.preamble.name: v.preamble.id for v in info.value_sets}
    return sw, c, ids


def member(*fields: bytes) -> pb.ValueSetMember:
    m = pb.ValueSetMember()
    for i, v in enumerate(fields, start=1):
        m.match.add(field_id=i).exact.value = v
    return m


def entry(vid: int, *members: pb.ValueSetMember) -> pb.ValueSetEntry:
    e = pb.ValueSetEntry(value_set_id=vid)
    e.members.extend(members)
    return e


def second_byte(sw, a: int, b: int, c: int = 0xEE) -> int:
    [(port, data)] = sw.process_packet(0, bytes([a, b, c]))
    assert port == 1
    return data[1]


def read_members(c, vid: int) -> list[list[tuple[int, bytes]]]:
    [ent] = c.read(pb.Entity(value_set_entry=pb.ValueSetEntry(value_set_id=vid)))
    assert ent.value_set_entry.value_set_id == vid
    return [[(fm.field_id, fm.exact.value) for fm in m.match]
            for m in ent.value_set_entry.members]


def test_modify_replaces_members_and_packets_follow(vs_ready) -> None:
    sw, c, ids = vs_ready
    kvs = ids["P.kvs"]
    assert second_byte(sw, 0xAB, 0x07) == 0x07  # empty set: nothing matches
    c.write(update("MODIFY", "value_set_entry",
                   entry(kvs, member(b"\xab", b"\x07"), member(b"\x01", b"\x0f"))))
    assert read_members(c, kvs) == [[(1, b"\xab"), (2, b"\x07")], [(1, b"\x01"), (2, b"\x0f")]]
    assert second_byte(sw, 0xAB, 0x37) == 0xEE  # a = 0xab, b[3:0] = 7
    assert second_byte(sw, 0x01, 0xFF) == 0xEE
    assert second_byte(sw, 0xAB, 0x06) == 0x06
    # MODIFY replaces the whole list
    c.write(update("MODIFY", "value_set_entry", entry(kvs, member(b"\x01", b"\x0f"))))
    assert read_members(c, kvs) == [[(1, b"\x01"), (2, b"\x0f")]]
    assert second_byte(sw, 0xAB, 0x37) == 0x37
    assert second_byte(sw, 0x01, 0x0F) == 0xEE
    # an empty MODIFY empties the set
    c.write(update("MODIFY", "value_set_entry", entry(kvs)))
    assert read_members(c, kvs) == []
    assert second_byte(sw, 0x01, 0x0F) == 0x0F


def test_wildcard_read_lists_every_set(vs_ready) -> None:
    _, c, ids = vs_ready
    c.write(update("MODIFY", "value_set_entry", entry(ids["P.pvs"], member(b"\x05"))))
    ents = c.read(pb.Entity(value_set_entry=pb.ValueSetEntry()))
    got = {e.value_set_entry.value_set_id: len(e.value_set_entry.members) for e in ents}
    assert got == {ids["P.kvs"]: 0, ids["P.pvs"]: 1}


@pytest.mark.parametrize(("kind", "members", "code"), [
    ("INSERT", [(b"\x01", b"\x01")], code_pb2.INVALID_ARGUMENT),
    ("DELETE", [(b"\x01", b"\x01")], code_pb2.INVALID_ARGUMENT),
    ("MODIFY", [(b"\x01", b"\x01"), (b"\x02", b"\x02"), (b"\x03", b"\x03")],
     code_pb2.RESOURCE_EXHAUSTED),  # size 2
    ("MODIFY", [(b"\x01", b"\x10")], code_pb2.INVALID_ARGUMENT),  # 0x10 needs 5 bits, g has 4
    ("MODIFY", [(b"\x01",)], code_pb2.INVALID_ARGUMENT),  # field 2 missing
])
def test_refused_writes(vs_ready, kind: str, members: list, code: int) -> None:
    _, c, ids = vs_ready
    kvs = ids["P.kvs"]
    c.write(update("MODIFY", "value_set_entry", entry(kvs, member(b"\x09", b"\x09"))))
    with pytest.raises(grpc.RpcError) as ei:
        c.write(update(kind, "value_set_entry", entry(kvs, *[member(*m) for m in members])))
    [err] = write_errors(ei.value)
    assert err.canonical_code == code
    assert read_members(c, kvs) == [[(1, b"\x09"), (2, b"\x09")]]  # unchanged


def test_ternary_member_is_unimplemented(vs_ready) -> None:
    _, c, ids = vs_ready
    m = pb.ValueSetMember()
    t = m.match.add(field_id=1).ternary
    t.value, t.mask = b"\x01", b"\xff"
    m.match.add(field_id=2).exact.value = b"\x01"
    with pytest.raises(grpc.RpcError) as ei:
        c.write(update("MODIFY", "value_set_entry", entry(ids["P.kvs"], m)))
    [err] = write_errors(ei.value)
    assert err.canonical_code == code_pb2.UNIMPLEMENTED

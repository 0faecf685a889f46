"""Digests of tuple type (``digest(1, {a, b})``, ``digest<tuple<...>>(...)``): their P4Info
form and their delivery over real gRPC.

P4Info (p4c's v1model P4RuntimeArchHandler::getDigestCall and TypeSpecConverter): a digest whose
type argument is not a named type is called ``digest_<n>`` (n counts such calls) and its
type_spec is ``tuple { members { bitstring { bit { bitwidth: W } } } ... }``, the members' own
type specs in order; a tuple adds nothing to ``type_info``.

Delivery (P4Runtime spec, "DigestList": each data entry is a P4Data of the digest's P4Info
type, so a tuple-typed digest's data are ``P4Data.tuple``, members in order). The program's
header is four bytes a, b, c, d; the ingress sends digests of some of them and forwards.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2 as pb

from softnic.compiler.p4info.serialize import build_p4info
from softnic.tests.compiler.p4progs import compile_text
from softnic.tests.runtime.test_p4rt import env
from softnic.tests.runtime.test_p4rt_fixture import update

__all__ = ["env"]

SRC = """#include <core.p4>
#include <v1model.p4>
header d_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct hs_t { d_t d; }
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs_t h, inout m_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(h.d); transition accept; }
}
control VC(inout hs_t h, inout m_t meta) { apply { } }
control I(inout hs_t h, inout m_t meta, inout standard_metadata_t sm) {
    apply { CALLS sm.egress_spec = 1; }
}
control E(inout hs_t h, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t h, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t h) { apply { pkt.emit(h.d); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

ONE_CALL = [
    "digest(1, {h.d.a, h.d.b});",  # T inferred: tuple<bit<8>, bit<8>>
    "digest<tuple<bit<8>, bit<8>>>(1, {h.d.a, h.d.b});",
]


def build(tmp_path: Path, calls: str):
    j, res = compile_text(tmp_path, SRC.replace("CALLS", calls))
    return j, build_p4info(res)


@pytest.mark.parametrize("call", ONE_CALL)
def test_p4info_of_a_tuple_digest(tmp_path: Path, call: str) -> None:
    _, info = build(tmp_path, call)
    [d] = info.digests
    assert d.preamble.name == "digest_0"
    assert d.type_spec.WhichOneof("type_spec") == "tuple"
    members = d.type_spec.tuple.members
    assert [m.WhichOneof("type_spec") for m in members] == ["bitstring", "bitstring"]
    assert [m.bitstring.bit.bitwidth for m in members] == [8, 8]
    assert len(info.type_info.structs) == 0  # a tuple has no type_info entry


def test_p4info_of_two_tuple_digests(tmp_path: Path) -> None:
    _, info = build(tmp_path, "digest(1, {h.d.a, h.d.b}); digest(2, {h.d.c});")
    got = {d.preamble.name: [m.bitstring.bit.bitwidth for m in d.type_spec.tuple.members]
           for d in info.digests}
    assert got == {"digest_0": [8, 8], "digest_1": [8]}
    assert len(info.type_info.structs) == 0


def configure(c, digest_id: int) -> None:
    d = pb.DigestEntry(digest_id=digest_id)
    d.config.max_timeout_ns, d.config.max_list_size, d.config.ack_timeout_ns = 0, 1, 0
    c.write(update("INSERT", "digest_entry", d))


@pytest.mark.parametrize("call", ONE_CALL)
def test_tuple_digest_is_delivered_as_a_p4data_tuple(env, tmp_path: Path, call: str) -> None:
    sw, connect, _ = env
    j, info = build(tmp_path, call)
    c = connect()
    c.set_pipeline(device_config=json.dumps(j).encode(), p4info_msg=info)
    [d] = info.digests
    configure(c, d.preamble.id)
    sw.process_packet(0, bytes([0x11, 0x22, 0x33, 0x44]))
    msg = c.next("digest")
    assert msg is not None and msg.digest.digest_id == d.preamble.id
    [data] = msg.digest.data
    assert data.WhichOneof("data") == "tuple"
    assert [m.bitstring for m in data.tuple.members] == [b"\x11", b"\x22"]


def test_two_tuple_digests_go_to_their_own_ids(env, tmp_path: Path) -> None:
    sw, connect, _ = env
    j, info = build(tmp_path, "digest(1, {h.d.a, h.d.b}); digest(2, {h.d.c});")
    c = connect()
    c.set_pipeline(device_config=json.dumps(j).encode(), p4info_msg=info)
    ids = {d.preamble.name: d.preamble.id for d in info.digests}
    configure(c, ids["digest_0"])
    configure(c, ids["digest_1"])
    sw.process_packet(0, bytes([1, 2, 3, 4]))
    got = {}
    for _ in range(2):
        msg = c.next("digest")
        assert msg is not None
        [data] = msg.digest.data
        got[msg.digest.digest_id] = [m.bitstring for m in data.tuple.members]
    assert got == {ids["digest_0"]: [b"\x01", b"\x02"], ids["digest_1"]: [b"\x03"]}


def test_p4info_tuple_members_of_int_and_bool(tmp_path: Path) -> None:
    """TypeSpecConverter: a signed ``int<W>`` member is ``bitstring { int { bitwidth: W } }``,
    a bool ``bool {}``."""
    src = SRC.replace("struct m_t { bit<8> x; }", "struct m_t { int<8> s; bool f; }")
    j, res = compile_text(tmp_path, src.replace(
        "CALLS", "meta.s = (int<8>)h.d.a; meta.f = h.d.b == 2; digest(1, {meta.s, meta.f});"))
    [d] = build_p4info(res).digests
    a, b = d.type_spec.tuple.members
    assert a.bitstring.WhichOneof("type_spec") == "int" and a.bitstring.int.bitwidth == 8
    assert b.WhichOneof("type_spec") == "bool"

"""P4Info type information and table idle timeouts, as p4c-bm2-ss writes them.

p4c (control-plane/p4RuntimeSerializer.cpp, typeSpecConverter.cpp, v1model's
addTableProperties):
* a table with ``support_timeout = true`` gets ``idle_timeout_behavior: NOTIFY_CONTROL``;
* each serializable enum that is the type of a match field, an action parameter, a
  ``@controller_header`` field or a digest struct field is in ``type_info.serializable_enums``:
  the underlying bit width, and the members in declaration order, each value as ``ceil(W/8)``
  big-endian bytes. A serializable enum no control-plane object uses is not there;
* a digest struct field of such a type has ``type_spec { serializable_enum { name } }``;
* ``type_name`` is only written for ``type`` declarations (p4c's getTypeName), never for enums.
"""

from __future__ import annotations

from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from softnic.compiler.p4info.serialize import build_p4info
from softnic.tests.compiler.p4progs import compile_text, program

DECLS = """
enum bit<8> Reason_t { FLOW_UNKNOWN = 1, TTL_EXPIRED = 0x20 }
enum bit<12> Tag_t { LOW = 3, HIGH = 0x801 }
enum bit<4> Unused_t { U = 1 }
enum Plain_t { P0, P1 }
@controller_header("packet_in")
header packet_in_t { Reason_t reason; bit<8> pad; }
struct learn_t { Tag_t tag; bit<8> a; }
"""


def _p4info(tmp_path: Path, body: str) -> p4info_pb2.P4Info:
    src = program(body).replace("#include <v1model.p4>\n", "#include <v1model.p4>\n" + DECLS, 1)
    _, res = compile_text(tmp_path, src)
    return build_p4info(res)


BODY = """
  action set_reason(Reason_t r) { hdr.h.b = (bit<8>)r; }
  action learn() { digest<learn_t>(1, {Tag_t.HIGH, hdr.h.a}); }
  table t {
    key = { hdr.h.a : exact; }
    actions = { set_reason; learn; }
    support_timeout = true;
  }
  table u { key = { hdr.h.b : exact; } actions = { NoAction; } }
  apply { sm.egress_spec = 1; t.apply(); u.apply(); }
"""


def test_support_timeout_is_notify_control(tmp_path: Path) -> None:
    p4 = _p4info(tmp_path, BODY)
    by_name = {t.preamble.name: t for t in p4.tables}
    assert by_name["I.t"].idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL
    assert by_name["I.u"].idle_timeout_behavior == p4info_pb2.Table.NO_TIMEOUT
    assert "idle_timeout_behavior" in text_format.MessageToString(by_name["I.t"])


def test_serializable_enums_in_type_info(tmp_path: Path) -> None:
    p4 = _p4info(tmp_path, BODY)
    want = type(p4.type_info)()
    text_format.Parse("""
      serializable_enums { key: "Reason_t" value {
        underlying_type { bitwidth: 8 }
        members { name: "FLOW_UNKNOWN" value: "\\001" }
        members { name: "TTL_EXPIRED" value: "\\040" } } }
      serializable_enums { key: "Tag_t" value {
        underlying_type { bitwidth: 12 }
        members { name: "LOW" value: "\\000\\003" }
        members { name: "HIGH" value: "\\010\\001" } } }
      structs { key: "learn_t" value {
        members { name: "tag" type_spec { serializable_enum { name: "Tag_t" } } }
        members { name: "a" type_spec { bitstring { bit { bitwidth: 8 } } } } } }
    """, want)
    assert p4.type_info == want
    # the enum keeps its width and no type_name where it is used
    [ch] = p4.controller_packet_metadata
    assert [(m.name, m.bitwidth, m.HasField("type_name")) for m in ch.metadata] == [
        ("reason", 8, False), ("pad", 8, False)]
    [action] = [a for a in p4.actions if a.preamble.name == "I.set_reason"]
    assert [(p.name, p.bitwidth, p.HasField("type_name")) for p in action.params] == [
        ("r", 8, False)]


def test_enum_match_field(tmp_path: Path) -> None:
    body = """
  Reason_t r = (Reason_t)hdr.h.a;
  table t { key = { r : exact @name("reason"); } actions = { NoAction; } }
  apply { sm.egress_spec = 1; t.apply(); }
"""
    p4 = _p4info(tmp_path, body)
    [t] = p4.tables
    assert [(f.name, f.bitwidth, f.HasField("type_name")) for f in t.match_fields] == [
        ("reason", 8, False)]
    assert t.idle_timeout_behavior == p4info_pb2.Table.NO_TIMEOUT
    assert list(p4.type_info.serializable_enums) == ["Reason_t"]


def test_runtime_reads_enum_digest_member_width(tmp_path: Path) -> None:
    """softnic's P4Runtime service takes a digest member's width from the serializable enum the
    P4Info names (12 bits for Tag_t), as it does from a bit string."""
    from softnic.runtime.p4rt.p4info import P4InfoIndex

    index = P4InfoIndex(_p4info(tmp_path, BODY))
    [digest] = index.digests.values()
    assert [(f.name, f.bitwidth) for f in digest.members] == [("tag", 12), ("a", 8)]


NEWTYPE_DECLS = """
type bit<9> PortId_t;
typedef PortId_t PortAlias_t;
@controller_header("packet_in")
header packet_in_t { PortId_t port; bit<7> pad; }
struct learn2_t { PortAlias_t port; bit<8> a; }
"""

NEWTYPE_BODY = """
  PortId_t local_port = (PortId_t)(bit<9>)hdr.h.b;
  action fwd(PortId_t p) { sm.egress_spec = (bit<9>)p; }
  action learn() { digest<learn2_t>(1, {(PortAlias_t)(bit<9>)hdr.h.a, hdr.h.a}); }
  table t {
    key = { local_port : exact @name("port"); hdr.h.a : exact; }
    actions = { fwd; learn; }
  }
  apply { sm.egress_spec = 1; t.apply(); }
"""


def test_newtype_names_and_new_types(tmp_path: Path) -> None:
    src = program(NEWTYPE_BODY).replace("#include <v1model.p4>\n",
                                        "#include <v1model.p4>\n" + NEWTYPE_DECLS, 1)
    _, res = compile_text(tmp_path, src)
    p4 = build_p4info(res)
    [t] = p4.tables
    assert [(f.name, f.bitwidth, f.type_name.name) for f in t.match_fields] == [
        ("port", 9, "PortId_t"), ("hdr.h.a", 8, "")]
    [fwd] = [a for a in p4.actions if a.preamble.name == "I.fwd"]
    assert [(p.name, p.bitwidth, p.type_name.name) for p in fwd.params] == [
        ("p", 9, "PortId_t")]
    [ch] = p4.controller_packet_metadata
    assert [(m.name, m.bitwidth, m.type_name.name) for m in ch.metadata] == [
        ("port", 9, "PortId_t"), ("pad", 7, "")]
    want = type(p4.type_info)()
    text_format.Parse("""
      new_types { key: "PortId_t" value {
        original_type { bitstring { bit { bitwidth: 9 } } } } }
      structs { key: "learn2_t" value {
        members { name: "port" type_spec { new_type { name: "PortId_t" } } }
        members { name: "a" type_spec { bitstring { bit { bitwidth: 8 } } } } } }
    """, want)
    assert p4.type_info == want


def test_runtime_reads_newtype_digest_member_width(tmp_path: Path) -> None:
    from softnic.runtime.p4rt.p4info import P4InfoIndex

    src = program(NEWTYPE_BODY).replace("#include <v1model.p4>\n",
                                        "#include <v1model.p4>\n" + NEWTYPE_DECLS, 1)
    _, res = compile_text(tmp_path, src)
    [digest] = P4InfoIndex(build_p4info(res)).digests.values()
    assert [(f.name, f.bitwidth) for f in digest.members] == [("port", 9), ("a", 8)]

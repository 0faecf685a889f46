"""Parser value sets (P4_16 spec "Parser Value Sets"; p4c-bm2-ss ParserConverter; BMv2
JSON_format.md "parse_vsets"): compile, BMv2 JSON form, and packets through the engine after
the control plane adds members.

Every program extracts ``h`` (bytes a, b) and, when the value-set case matches, ``g`` (byte c);
the ingress copies ``g.c`` into ``h.b`` when ``g`` is valid, and the deparser emits ``h`` only,
so the output's second byte is ``c`` exactly when the value set matched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from softnic.compiler.diagnostics import CompileError
from softnic.runtime.parse_vsets import ValueSetError
from softnic.runtime.switch import Switch
from softnic.tests.compiler.p4progs import compile_text

HEAD = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
header g_t { bit<8> c; }
struct hs_t { h_t h; g_t g; }
struct m_t { bit<8> x; }
"""

TAIL = """
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; if (hdr.g.isValid()) { hdr.h.b = hdr.g.c; } }
}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def program(decls: str, select: str, types: str = "") -> str:
    return HEAD + types + f"""
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{
    {decls}
    state start {{
        pkt.extract(hdr.h);
        transition select({select}) {{
            pvs: parse_g;
            default: accept;
        }}
    }}
    state parse_g {{ pkt.extract(hdr.g); transition accept; }}
}}
""" + TAIL


def second_byte(sw: Switch, a: int, b: int, c: int = 0xEE) -> int:
    [(port, data)] = sw.process_packet(0, bytes([a, b, c]))
    assert port == 1
    return data[1]


def switch(j: dict[str, Any]) -> Switch:
    sw = Switch()
    sw.load_json(j)
    return sw


def test_bit_value_set_json_and_packets(tmp_path: Path) -> None:
    j, _ = compile_text(tmp_path, program("value_set<bit<8>>(4) pvs;", "hdr.h.a"))
    # JSON_format.md: name (the control-plane name), id, compressed_bitwidth; p4c also writes
    # the declared size as max_size (p4c#2185/#2195), which BMv2 does not read
    assert j["parse_vsets"] == [{"name": "P.pvs", "id": 0, "compressed_bitwidth": 8,
                                "max_size": 4}]
    [start] = [s for s in j["parsers"][0]["parse_states"] if s["name"] == "start"]
    assert start["transitions"][0] == {"type": "parse_vset", "value": "P.pvs", "mask": None,
                                       "next_state": "parse_g"}
    sw = switch(j)
    # an empty set matches nothing: the default case (accept) is taken
    assert second_byte(sw, 5, 1) == 1
    sw.parse_vset_add("P.pvs", 5)
    sw.parse_vset_add("P.pvs", 0x80)
    assert second_byte(sw, 5, 1) == 0xEE
    assert second_byte(sw, 0x80, 1) == 0xEE
    assert second_byte(sw, 6, 1) == 1
    assert sw.parse_vset_get("P.pvs") == [5, 0x80]
    sw.parse_vset_remove("P.pvs", 5)
    assert second_byte(sw, 5, 1) == 1
    assert second_byte(sw, 0x80, 1) == 0xEE
    sw.parse_vset_clear("P.pvs")
    assert second_byte(sw, 0x80, 1) == 1
    with pytest.raises(ValueSetError):
        sw.parse_vset_add("P.pvs", 0x100)  # wider than the compressed bitwidth
    with pytest.raises(ValueSetError):
        sw.parse_vset_add("P.nope", 1)


def test_struct_value_set_members_are_unpadded(tmp_path: Path) -> None:
    """Two key fields of 8 and 4 bits: the set's bitwidth is 12 and a member is the fields
    concatenated without byte padding (a ++ b[3:0]), not the 16-bit padded key."""
    types = "struct k_t { bit<8> f; bit<4> g; }\n"
    j, _ = compile_text(tmp_path, program("value_set<k_t>(2) pvs;", "hdr.h.a, hdr.h.b[3:0]",
                                          types))
    assert j["parse_vsets"] == [{"name": "P.pvs", "id": 0, "compressed_bitwidth": 12,
                                "max_size": 2}]
    sw = switch(j)
    sw.parse_vset_add("P.pvs", 0xAB7)  # a == 0xab, b[3:0] == 7
    assert second_byte(sw, 0xAB, 0x37) == 0xEE
    assert second_byte(sw, 0xAB, 0x07) == 0xEE
    assert second_byte(sw, 0xAB, 0x06) == 0x06
    assert second_byte(sw, 0x0A, 0xB7) == 0xB7
    with pytest.raises(ValueSetError):
        sw.parse_vset_add("P.pvs", 0x1000)


def test_tuple_value_set(tmp_path: Path) -> None:
    j, _ = compile_text(tmp_path, program("value_set<tuple<bit<8>, bit<8>>>(4) pvs;",
                                          "hdr.h.a, hdr.h.b"))
    assert j["parse_vsets"][0]["compressed_bitwidth"] == 16
    sw = switch(j)
    sw.parse_vset_add("P.pvs", 0x0102)
    assert second_byte(sw, 1, 2) == 0xEE
    assert second_byte(sw, 2, 1) == 1


def test_unused_value_set_is_removed_and_ids_follow_declarations(tmp_path: Path) -> None:
    """p4c's RemoveAllUnusedDeclarations drops a value set no select names; the others keep
    declaration order, numbered from 0; @name gives the control-plane name."""
    decls = ("value_set<bit<8>>(4) unused; value_set<bit<8>>(4) other; "
             "@name(\"my_vs\") value_set<bit<8>>(4) pvs;")
    src = program(decls, "hdr.h.a").replace(
        "default: accept;", "default: s2;").replace(
        "state parse_g", "state s2 { transition select(hdr.h.b) { other: parse_g; "
        "default: accept; } }\n    state parse_g")
    j, res = compile_text(tmp_path, src)
    assert j["parse_vsets"] == [
        {"name": "P.other", "id": 0, "compressed_bitwidth": 8, "max_size": 4},
        {"name": "P.my_vs", "id": 1, "compressed_bitwidth": 8, "max_size": 4}]
    from softnic.compiler.p4info.serialize import build_p4info
    assert [v.preamble.name for v in build_p4info(res).value_sets] == ["P.other", "P.my_vs"]
    sw = switch(j)
    sw.parse_vset_add("P.other", 3)  # selected on b
    assert second_byte(sw, 3, 1) == 1
    assert second_byte(sw, 1, 3) == 0xEE
    sw.parse_vset_add("P.my_vs", 3)  # selected on a
    assert second_byte(sw, 3, 1) == 0xEE
    with pytest.raises(ValueSetError):
        sw.parse_vset_add("P.unused", 1)


def test_value_set_of_an_inlined_sub_parser(tmp_path: Path) -> None:
    """A sub-parser's value set, after inlining, is named after the instance (P.sp.pvs)."""
    src = HEAD + """
parser Sub(packet_in pkt, inout hs_t hdr) {
    value_set<bit<8>>(4) pvs;
    state start { transition select(hdr.h.a) { pvs: parse_g; default: accept; } }
    state parse_g { pkt.extract(hdr.g); transition accept; }
}
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    Sub() sp;
    state start { pkt.extract(hdr.h); sp.apply(pkt, hdr); transition accept; }
}
""" + TAIL
    j, _ = compile_text(tmp_path, src)
    assert j["parse_vsets"] == [{"name": "P.sp.pvs", "id": 0, "compressed_bitwidth": 8,
                                "max_size": 4}]
    sw = switch(j)
    assert second_byte(sw, 5, 1) == 1
    sw.parse_vset_add("P.sp.pvs", 5)
    assert second_byte(sw, 5, 1) == 0xEE


def test_max_size_is_not_enforced_by_the_engine(tmp_path: Path) -> None:
    """BMv2 1.15 reads no max_size (P4Objects::init_parse_vsets: name, id, compressed_bitwidth;
    behavioral-model#856 closed unimplemented): its parse_vset_add takes more members."""
    j, _ = compile_text(tmp_path, program("value_set<bit<8>>(1) pvs;", "hdr.h.a"))
    assert j["parse_vsets"][0]["max_size"] == 1
    sw = switch(j)
    sw.parse_vset_add("P.pvs", 1)
    sw.parse_vset_add("P.pvs", 1)  # already a member: no change
    sw.parse_vset_add("P.pvs", 2)
    assert sw.parse_vset_get("P.pvs") == [1, 2]
    assert second_byte(sw, 2, 1) == 0xEE


@pytest.mark.parametrize(("decls", "select", "where", "message"), [
    ("bit<32> n = 4; value_set<bit<8>>(n) pvs;", "hdr.h.a", ":9:38:",
     "n: value_set size must be a compile-time constant integer"),
    ("value_set<bit<16>>(4) pvs;", "hdr.h.a", ":13:13:",
     "pvs: value_set<bit<16>> does not match the select key (bit<8>)"),
    ("value_set<bit<8>>(4) pvs;", "hdr.h.a, hdr.h.b", ":13:13:",
     "pvs: value_set<bit<8>> does not match the select key (bit<8>, bit<8>)"),
    ("value_set<h_t>(4) pvs;", "hdr.h.a", ":9:15:",  # p4c's TypeInference wording
     "h_t: Illegal type for value_set element type"),
])
def test_value_set_errors(tmp_path: Path, decls: str, select: str, where: str,
                          message: str) -> None:
    with pytest.raises(CompileError) as ei:
        compile_text(tmp_path, program(decls, select))
    assert message in str(ei.value)
    assert f"prog.p4{where} error:" in str(ei.value)  # positioned at the offending text


def test_value_set_inside_a_tuple_keyset_is_refused(tmp_path: Path) -> None:
    src = program("value_set<bit<8>>(4) pvs;", "hdr.h.a").replace(
        "transition select(hdr.h.a) {\n            pvs: parse_g;",
        "transition select(hdr.h.a, hdr.h.b) {\n            (pvs, 1): parse_g;")
    with pytest.raises(CompileError) as ei:
        compile_text(tmp_path, src)
    assert "pvs: a value_set must be the whole keyset of a select case" in str(ei.value)


def test_value_set_outside_a_parser_is_a_syntax_error(tmp_path: Path) -> None:
    src = program("", "hdr.h.a").replace(
        "control VC(inout hs_t hdr, inout m_t meta) { apply { } }",
        "control VC(inout hs_t hdr, inout m_t meta) { value_set<bit<8>>(4) v; apply { } }")
    with pytest.raises(CompileError) as ei:
        compile_text(tmp_path, src)
    assert "syntax error" in str(ei.value)


P4INFO_TYPES = """
struct k_t { @match(ternary) bit<8> f; @name("gee") bit<4> g; @match(range) @foo bit<8> r; }
"""
P4INFO_DECLS = """
    value_set<bit<8>>(4) pvs;
    @id(0x03000007) value_set<k_t>(16) kvs;
    value_set<tuple<bit<8>, bit<8>>>(2) tvs;
"""
P4INFO_STATES = """
        transition select(hdr.h.a) { pvs: parse_g; default: s2; }
    }
    state s2 { transition select(hdr.h.a, hdr.h.b[3:0], hdr.h.b) { kvs: parse_g; default: s3; } }
    state s3 { transition select(hdr.h.a, hdr.h.b) { tvs: parse_g; default: accept; } }
    state parse_g { pkt.extract(hdr.g); transition accept; }
}
"""


def test_p4info_value_sets(tmp_path: Path) -> None:
    """p4c's P4RuntimeAnalyzer::addValueSet: preamble (id prefix 0x03, name Parser.vs, alias),
    size; a bit<W> element is one unnamed EXACT field with id 1; a struct gives one field per
    struct field with its control-plane name, width and @match kind (EXACT by default), and
    its other annotations. A tuple element has no P4Info form (p4c refuses to write it)."""
    from softnic.compiler.p4info.serialize import build_p4info

    src = HEAD + P4INFO_TYPES + """
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {""" + \
        P4INFO_DECLS + "    state start {\n        pkt.extract(hdr.h);" + P4INFO_STATES + TAIL
    j, res = compile_text(tmp_path, src)
    assert [v["compressed_bitwidth"] for v in j["parse_vsets"]] == [8, 20, 16]
    info = build_p4info(res)
    pvs, kvs = info.value_sets
    assert pvs.preamble.name == "P.pvs" and pvs.preamble.alias == "pvs"
    assert pvs.preamble.id >> 24 == 0x03
    assert pvs.size == 4
    mt = pvs.match[0].DESCRIPTOR.fields_by_name["match_type"].enum_type
    kinds = {v.number: v.name for v in mt.values}
    assert [(m.id, m.name, m.bitwidth, kinds[m.match_type]) for m in pvs.match] == [
        (1, "", 8, "EXACT")]
    assert kvs.preamble.id == 0x03000007 and kvs.preamble.name == "P.kvs" and kvs.size == 16
    assert [(m.id, m.name, m.bitwidth, kinds[m.match_type], list(m.annotations))
            for m in kvs.match] == [(1, "f", 8, "TERNARY", []), (2, "gee", 4, "EXACT", []),
                                    (3, "r", 8, "RANGE", ["@foo"])]


def test_masked_vset_transition_in_json(tmp_path: Path) -> None:
    """BMv2 ParseSwitchCaseVSetWithMask (a JSON form p4c-bm2-ss 1.2.4 does not write): the key
    and every member are ANDed with the mask (compressed width) before comparing."""
    j, _ = compile_text(tmp_path, program("value_set<bit<8>>(4) pvs;", "hdr.h.a"))
    [start] = [s for s in j["parsers"][0]["parse_states"] if s["name"] == "start"]
    start["transitions"][0]["mask"] = "0xf0"
    sw = switch(j)
    sw.parse_vset_add("P.pvs", 0x5A)
    sw.parse_vset_add("P.pvs", 0x5B)
    assert second_byte(sw, 0x53, 1) == 0xEE  # 0x50 == 0x5a & 0xf0
    assert second_byte(sw, 0x63, 1) == 1
    sw.parse_vset_remove("P.pvs", 0x5A)
    assert second_byte(sw, 0x53, 1) == 0xEE  # 0x5b still gives 0x50
    sw.parse_vset_remove("P.pvs", 0x5B)
    assert second_byte(sw, 0x53, 1) == 1


@pytest.mark.parametrize(("edit", "message"), [
    (lambda j, t: t.update(value="P.nope"), "Invalid reference to parse value set 'P.nope'"),
    (lambda j, t: t.update(mask="0x00f0"), "Parser transition mask for value set has incorrect "
     "width, expected width is 1 bytes but actual width is 2 bytes"),
    (lambda j, t: j["parse_vsets"][0].update(compressed_bitwidth=16),
     "parse_vset 'P.pvs' has compressed_bitwidth 16 but the transition key is 8 bits wide"),
])
def test_bad_vset_json_is_refused(tmp_path: Path, edit: Any, message: str) -> None:
    from softnic.runtime.api import PipelineLoadError

    j, _ = compile_text(tmp_path, program("value_set<bit<8>>(4) pvs;", "hdr.h.a"))
    [start] = [s for s in j["parsers"][0]["parse_states"] if s["name"] == "start"]
    edit(j, start["transitions"][0])
    with pytest.raises(PipelineLoadError) as ei:
        switch(j)
    assert message in str(ei.value)


def test_nested_struct_element_is_flattened(tmp_path: Path) -> None:
    """p4c's matchCase flattens a struct element (nested structs too) into a tuple of its
    fields: {a: bit<8>, inner: {g: bit<4>}} matches select(a, b[3:0]); the set is 12 bits."""
    types = "struct in_t { bit<4> g; }\nstruct k_t { bit<8> f; in_t inner; }\n"
    j, res = compile_text(tmp_path, program("value_set<k_t>(2) pvs;", "hdr.h.a, hdr.h.b[3:0]",
                                            types))
    assert j["parse_vsets"] == [{"name": "P.pvs", "id": 0, "compressed_bitwidth": 12,
                                "max_size": 2}]
    sw = switch(j)
    sw.parse_vset_add("P.pvs", 0x127)
    assert second_byte(sw, 0x12, 0x57) == 0xEE
    assert second_byte(sw, 0x12, 0x56) == 0x56
    # a field that is not bit<W>: P4Info has no form for it (p4c refuses to write it)
    from softnic.compiler.p4info.serialize import build_p4info
    assert list(build_p4info(res).value_sets) == []


def test_struct_with_enum_field_is_refused(tmp_path: Path) -> None:
    types = "enum bit<8> E { A = 1 }\nstruct k_t { E e; }\n"
    with pytest.raises(CompileError) as ei:
        compile_text(tmp_path, program("value_set<k_t>(2) pvs;", "hdr.h.a", types))
    assert "pvs: the fields of value_set<k_t> cannot be matched in 'select'" in str(ei.value)


def test_signed_element(tmp_path: Path) -> None:
    """int<W> is a Type_Bits for p4c's P4Info too (one EXACT field of W bits); a member is the
    key's W-bit two's complement pattern."""
    from softnic.compiler.p4info.serialize import build_p4info

    j, res = compile_text(tmp_path, program("value_set<int<8>>(4) pvs;", "(int<8>)hdr.h.a"))
    [vs] = build_p4info(res).value_sets
    assert [(m.id, m.bitwidth) for m in vs.match] == [(1, 8)]
    sw = switch(j)
    sw.parse_vset_add("P.pvs", 0xFF)  # -1
    assert second_byte(sw, 0xFF, 1) == 0xEE
    assert second_byte(sw, 0x7F, 1) == 1


def test_any_constant_size_compiles(tmp_path: Path) -> None:
    """p4c checks the size only when writing P4Info (negative: "@size should be a positive
    integer"), so 0 compiles and is listed with size 0, and a negative size compiles but the
    set has no P4Info form."""
    from softnic.compiler.p4info.serialize import build_p4info

    j, res = compile_text(tmp_path, program("value_set<bit<8>>(0) pvs;", "hdr.h.a"))
    assert [v.size for v in build_p4info(res).value_sets] == [0]
    j, res = compile_text(tmp_path, program("value_set<bit<8>>(-1) pvs;", "hdr.h.a"), "neg")
    assert j["parse_vsets"] == [{"name": "P.pvs", "id": 0, "compressed_bitwidth": 8,
                                "max_size": -1}]
    assert list(build_p4info(res).value_sets) == []

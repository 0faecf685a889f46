"""Instantiation constructs p4c-bm2-ss accepts: type arguments, generic parsers and controls,
sub-parsers, sub-controls passed as constructor arguments.

Each program is compiled by softnic and run on the engine; the expected bytes are worked out by
hand from the P4_16 spec (copy-in/copy-out of parser and control arguments, section 6.8) and
from what p4c's inliner does where the spec leaves it open (an ``out`` header argument of a
sub-parser starts invalid).

The packet is a 2-byte header ``h`` (``a``, ``b``) and, when the parser extracts it, a second
2-byte header ``g`` (``c``, ``d``); the deparser emits ``h`` then ``g``, then the payload the
parser did not consume. Everything leaves on port 1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.compiler.diagnostics import CompileError
from softnic.runtime.api import ActionCall, MatchKey, TableEntry
from softnic.runtime.switch import Switch
from softnic.tests.compiler.p4progs import compile_text

TYPES = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
header g_t { bit<8> c; bit<8> d; }
struct hs_t { h_t h; g_t g; }
struct m_t { bit<8> x; bit<8> y; }
"""

BLOCKS = """
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.g); } }
"""

PARSER = """
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
"""

INGRESS = """
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
"""

MAIN = "V1Switch(P(), VC(), I(), E(), CC(), D()) main;\n"


def build(parser: str = PARSER, ingress: str = INGRESS, main: str = MAIN,
          extra: str = "") -> str:
    return TYPES + extra + parser + BLOCKS + ingress + main


def run(tmp_path: Path, src: str, pkt: list[int]) -> list[int]:
    j, _ = compile_text(tmp_path, src)
    sw = Switch()
    sw.load_json(j)
    outs = sw.process_packet(0, bytes(pkt))
    assert len(outs) == 1, outs
    port, data = outs[0]
    assert port == 1
    return list(data)


def refused(tmp_path: Path, src: str) -> str:
    with pytest.raises(CompileError) as ei:
        compile_text(tmp_path, src)
    assert ei.value.loc is not None
    return str(ei.value)


# ---------------------------------------------------------------------- type arguments


def test_package_with_explicit_type_arguments(tmp_path: Path) -> None:
    ing = INGRESS.replace("sm.egress_spec = 1;", "sm.egress_spec = 1; hdr.h.b = hdr.h.a + 1;")
    src = build(ingress=ing, main="V1Switch<hs_t, m_t>(P(), VC(), I(), E(), CC(), D()) main;\n")
    assert run(tmp_path, src, [7, 0]) == [7, 8]


def test_package_type_arguments_must_match_the_blocks(tmp_path: Path) -> None:
    src = build(main="V1Switch<m_t, hs_t>(P(), VC(), I(), E(), CC(), D()) main;\n")
    assert "P(): Cannot unify hs_t to m_t" in refused(tmp_path, src)


def test_package_type_argument_count(tmp_path: Path) -> None:
    src = build(main="V1Switch<hs_t>(P(), VC(), I(), E(), CC(), D()) main;\n")
    assert "expected 2 type arguments, got 1" in refused(tmp_path, src)


# ---------------------------------------------------------------------- generic blocks


GENERIC_INGRESS = """
control GI<H, M>(inout H hdr, inout M meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
"""


def test_generic_control_in_the_package_explicit(tmp_path: Path) -> None:
    src = build(ingress=GENERIC_INGRESS,
                main="V1Switch(P(), VC(), GI<hs_t, m_t>(), E(), CC(), D()) main;\n")
    assert run(tmp_path, src, [1, 2]) == [1, 2]


def test_generic_control_in_the_package_inferred(tmp_path: Path) -> None:
    src = build(ingress=GENERIC_INGRESS,
                main="V1Switch(P(), VC(), GI(), E(), CC(), D()) main;\n")
    assert run(tmp_path, src, [1, 2]) == [1, 2]


def test_generic_parser_in_the_package(tmp_path: Path) -> None:
    # GP extracts nothing: h stays invalid, both bytes are payload and come back unchanged
    parser = """
parser GP<H, M>(packet_in pkt, out H hdr, inout M meta, inout standard_metadata_t sm) {
    state start { transition accept; }
}
"""
    src = build(parser=parser, main="V1Switch(GP(), VC(), I(), E(), CC(), D()) main;\n")
    assert run(tmp_path, src, [1, 2, 3]) == [1, 2, 3]


SWAP = """
control Swap<T>(inout T x, inout T y) {
    apply { T t = x; x = y; y = t; }
}
"""


def test_generic_sub_control_two_specialisations(tmp_path: Path) -> None:
    ing = """
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    Swap<bit<8>>() s8;
    Swap<bit<16>>() s16;
    apply {
        sm.egress_spec = 1;
        s8.apply(hdr.h.a, hdr.h.b);
        bit<16> u = 16w0x0102;
        bit<16> v = 16w0x0304;
        s16.apply(u, v);
        hdr.h.a = hdr.h.a + u[7:0];
    }
}
"""
    # a, b swapped: (b, a); then u = 0x0304, so a' = b + 4
    assert run(tmp_path, build(ingress=ing, extra=SWAP), [10, 20]) == [24, 10]


def test_generic_block_never_instantiated_is_ignored(tmp_path: Path) -> None:
    assert run(tmp_path, build(extra=SWAP), [1, 2]) == [1, 2]


# ---------------------------------------------------------------------- sub-parsers


SUB_G = """
parser SubG(packet_in pkt, out g_t g) {
    state start { pkt.extract(g); transition accept; }
}
"""


def test_sub_parser_extracts_into_the_callers_header(tmp_path: Path) -> None:
    parser = SUB_G + """
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    SubG() sg;
    state start { pkt.extract(hdr.h); sg.apply(pkt, hdr.g); transition accept; }
}
"""
    ing = INGRESS.replace("sm.egress_spec = 1;",
                          "sm.egress_spec = 1; if (hdr.g.isValid()) { hdr.h.b = hdr.g.c; }")
    assert run(tmp_path, build(parser=parser, ingress=ing), [1, 2, 3, 4, 5]) == [1, 3, 3, 4, 5]


def test_sub_parser_states_select_and_rest_of_the_state(tmp_path: Path) -> None:
    """The sub-parser branches on its ``in`` argument; the statements after the call run once
    it accepts, then the caller's own transition is taken."""
    parser = """
parser SubG(packet_in pkt, in bit<8> sel, out g_t g, inout bit<8> n) {
    state start {
        n = n + 1;
        transition select(sel) { 1: more; default: accept; }
    }
    state more { pkt.extract(g); n = n + 10; transition accept; }
}
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    SubG() sg;
    state start {
        pkt.extract(hdr.h);
        meta.x = 100;
        sg.apply(pkt, hdr.h.a, hdr.g, meta.x);
        meta.y = meta.x + 1;
        transition select(hdr.h.a) { 1: one; default: accept; }
    }
    state one { meta.y = meta.y + 50; transition accept; }
}
"""
    ing = INGRESS.replace("sm.egress_spec = 1;", "sm.egress_spec = 1; hdr.h.b = meta.y;")
    src = build(parser=parser, ingress=ing)
    # a = 1: n = 100 + 1 + 10 = 111, y = 112, +50 = 162; g extracted
    assert run(tmp_path, src, [1, 0, 7, 8, 9]) == [1, 162, 7, 8, 9]
    # a = 2: n = 101, y = 102; g not extracted, so 7, 8, 9 are payload
    assert run(tmp_path, src, [2, 0, 7, 8, 9]) == [2, 102, 7, 8, 9]


def test_sub_parser_in_argument_is_an_expression(tmp_path: Path) -> None:
    parser = """
parser Add(packet_in pkt, in bit<8> v, out bit<8> r) {
    state start { r = v + 1; transition accept; }
}
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    Add() add;
    state start { pkt.extract(hdr.h); add.apply(pkt, hdr.h.a + 2, meta.x); transition accept; }
}
"""
    ing = INGRESS.replace("sm.egress_spec = 1;", "sm.egress_spec = 1; hdr.h.b = meta.x;")
    assert run(tmp_path, build(parser=parser, ingress=ing), [5, 0]) == [5, 8]


def test_sub_parser_applied_twice_out_header_starts_invalid(tmp_path: Path) -> None:
    """The second call does not extract; its ``out`` header starts invalid, and that is what
    is copied back to ``hdr.g`` (p4c resets the headers of an ``out`` argument)."""
    parser = """
parser SubG(packet_in pkt, in bit<8> sel, out g_t g) {
    state start { transition select(sel) { 1: ext; default: accept; } }
    state ext { pkt.extract(g); transition accept; }
}
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    SubG() sg;
    state start {
        pkt.extract(hdr.h);
        sg.apply(pkt, 1, hdr.g);
        sg.apply(pkt, hdr.h.a, hdr.g);
        transition accept;
    }
}
"""
    src = build(parser=parser)
    # a = 0: g (3, 4) consumed by the first call, invalid after the second: not emitted
    assert run(tmp_path, src, [0, 9, 3, 4, 7, 8]) == [0, 9, 7, 8]
    # a = 1: the second call extracts (7, 8) into g
    assert run(tmp_path, src, [1, 9, 3, 4, 7, 8]) == [1, 9, 7, 8]


def test_sub_parser_inout_copy_in_copy_out_twice(tmp_path: Path) -> None:
    parser = """
parser Inc(packet_in pkt, inout bit<8> c) {
    state start { c = c + 1; transition accept; }
}
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    Inc() inc;
    state start { pkt.extract(hdr.h); meta.x = hdr.h.a; inc.apply(pkt, meta.x); transition s2; }
    state s2 { inc.apply(pkt, meta.x); transition accept; }
}
"""
    ing = INGRESS.replace("sm.egress_spec = 1;", "sm.egress_spec = 1; hdr.h.b = meta.x;")
    assert run(tmp_path, build(parser=parser, ingress=ing), [40, 0]) == [40, 42]


def test_sub_parser_with_locals_constructor_argument_and_nesting(tmp_path: Path) -> None:
    parser = """
parser Inner(packet_in pkt, out g_t g)(bit<8> k) {
    bit<8> t;
    state start { pkt.extract(g); t = g.d; g.d = t + k; transition accept; }
}
parser Outer(packet_in pkt, out g_t g, out bit<8> seen) {
    Inner(8w5) inner;
    bit<8> t;
    state start { t = 7; inner.apply(pkt, g); seen = g.c + t; transition accept; }
}
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    Outer() o;
    bit<8> t;
    state start {
        pkt.extract(hdr.h);
        t = 1;
        o.apply(pkt, hdr.g, meta.x);
        meta.y = t;
        transition accept;
    }
}
"""
    ing = INGRESS.replace("sm.egress_spec = 1;",
                          "sm.egress_spec = 1; hdr.h.b = meta.x + meta.y;")
    # g = (3, 4 + 5); seen = 3 + 7 = 10; meta.y = 1 (the caller's t)
    assert run(tmp_path, build(parser=parser, ingress=ing), [0, 0, 3, 4]) == [0, 11, 3, 9]


def test_sub_parser_after_an_if_in_the_state(tmp_path: Path) -> None:
    parser = SUB_G + """
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    SubG() sg;
    state start {
        pkt.extract(hdr.h);
        if (hdr.h.a == 1) { meta.x = 3; } else { meta.x = 4; }
        sg.apply(pkt, hdr.g);
        transition accept;
    }
}
"""
    ing = INGRESS.replace("sm.egress_spec = 1;", "sm.egress_spec = 1; hdr.h.b = meta.x;")
    src = build(parser=parser, ingress=ing)
    assert run(tmp_path, src, [1, 0, 5, 6]) == [1, 3, 5, 6]
    assert run(tmp_path, src, [2, 0, 5, 6]) == [2, 4, 5, 6]


def test_generic_sub_parser(tmp_path: Path) -> None:
    parser = """
parser Ext<T>(packet_in pkt, out T x) {
    state start { pkt.extract(x); transition accept; }
}
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    Ext<h_t>() eh;
    Ext<g_t>() eg;
    state start { eh.apply(pkt, hdr.h); eg.apply(pkt, hdr.g); transition accept; }
}
"""
    ing = INGRESS.replace("sm.egress_spec = 1;", "sm.egress_spec = 1; hdr.h.b = hdr.g.d;")
    assert run(tmp_path, build(parser=parser, ingress=ing), [1, 2, 3, 4]) == [1, 4, 3, 4]


# ---------------------------------------------------------------------- constructor arguments


SUB_CONTROLS = """
control Add40(inout bit<8> x) { apply { x = x + 40; } }
control Twice(inout bit<8> x) { apply { x = x + x; } }
control Step(inout bit<8> x);
"""


def test_control_passed_to_the_ingress_as_constructor_argument(tmp_path: Path) -> None:
    ing = """
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm)(Step s) {
    apply { sm.egress_spec = 1; s.apply(hdr.h.b); }
}
"""
    src = build(ingress=ing, extra=SUB_CONTROLS,
                main="V1Switch(P(), VC(), I(Add40()), E(), CC(), D()) main;\n")
    assert run(tmp_path, src, [0, 2]) == [0, 42]


def test_control_passed_to_a_local_instance(tmp_path: Path) -> None:
    ing = """
control Wrap(inout bit<8> x)(Step s, bit<8> k) {
    apply { s.apply(x); x = x + k; }
}
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    Wrap(Twice(), 8w1) w1;
    Wrap(Add40(), 8w2) w2;
    apply { sm.egress_spec = 1; w1.apply(hdr.h.a); w2.apply(hdr.h.b); }
}
"""
    src = build(ingress=ing, extra=SUB_CONTROLS)
    assert run(tmp_path, src, [5, 1]) == [11, 43]


def test_constructor_argument_that_is_not_a_block(tmp_path: Path) -> None:
    ing = """
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm)(Step s) {
    apply { sm.egress_spec = 1; s.apply(hdr.h.b); }
}
"""
    src = build(ingress=ing, extra=SUB_CONTROLS,
                main="V1Switch(P(), VC(), I(8w3), E(), CC(), D()) main;\n")
    assert "expected a parser or control instantiation" in refused(tmp_path, src)


# ---------------------------------------------------------------------- the package's arguments


def test_package_arguments_by_name_in_any_order(tmp_path: Path) -> None:
    ing = INGRESS.replace("sm.egress_spec = 1;", "sm.egress_spec = 1; hdr.h.b = hdr.h.a + 1;")
    main = "V1Switch(vr=VC(), p=P(), ig=I(), eg=E(), dep=D(), ck=CC()) main;\n"
    assert run(tmp_path, build(ingress=ing, main=main), [7, 0]) == [7, 8]


def test_package_argument_with_an_unknown_name(tmp_path: Path) -> None:
    main = "V1Switch(p=P(), vr=VC(), ig=I(), eg=E(), ck=CC(), zz=D()) main;\n"
    assert "zz: no parameter named zz in V1Switch" in refused(tmp_path, build(main=main))


def test_generic_block_with_type_arguments_the_package_contradicts(tmp_path: Path) -> None:
    src = build(ingress=GENERIC_INGRESS,
                main="V1Switch(P(), VC(), GI<m_t, hs_t>(), E(), CC(), D()) main;\n")
    assert "GI(): Cannot unify m_t to hs_t" in refused(tmp_path, src)


def test_type_arguments_on_a_block_that_is_not_generic(tmp_path: Path) -> None:
    src = build(main="V1Switch(P<hs_t>(), VC(), I(), E(), CC(), D()) main;\n")
    assert "P: is not a generic type" in refused(tmp_path, src)


# ---------------------------------------------------------------------- refusals, positioned


def test_instance_declared_twice(tmp_path: Path) -> None:
    ing = """
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    Add40() s;
    Add40() s;
    apply { sm.egress_spec = 1; s.apply(hdr.h.b); }
}
"""
    assert "s: Duplicates declaration s" in refused(tmp_path, build(ingress=ing,
                                                                    extra=SUB_CONTROLS))


def test_sub_parser_used_as_a_value(tmp_path: Path) -> None:
    parser = SUB_G + """
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    SubG() sg;
    state start { pkt.extract(hdr.h); sg.foo(pkt, hdr.g); transition accept; }
}
"""
    assert "sg: a parser instance can only be applied" in refused(tmp_path, build(parser=parser))


def test_sub_parser_argument_missing(tmp_path: Path) -> None:
    parser = SUB_G + """
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    SubG() sg;
    state start { pkt.extract(hdr.h); sg.apply(pkt); transition accept; }
}
"""
    assert "sg.apply: Expected 2 arguments, got 1" in refused(tmp_path, build(parser=parser))


def test_sub_control_apply_used_as_a_value(tmp_path: Path) -> None:
    ing = """
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    Add40() s;
    apply { sm.egress_spec = 1; if (s.apply(hdr.h.b)) { } }
}
"""
    msg = refused(tmp_path, build(ingress=ing, extra=SUB_CONTROLS))
    assert "s: a control instance can only be applied, as a statement" in msg


def test_sub_parser_with_the_whole_header_struct_and_a_stack(tmp_path: Path) -> None:
    """``inout`` of a struct holding a header stack: the stack's next index is copied back
    with it, so the caller's ``.next`` continues after the element the sub-parser filled."""
    src = """#include <core.p4>
#include <v1model.p4>
header e_t { bit<8> v; bit<8> more; }
header cnt_t { bit<8> n; }
struct hs_t { cnt_t cnt; e_t[3] es; }
struct m_t { bit<8> x; }
parser First(packet_in pkt, inout hs_t hdr, out bit<8> more) {
    state start { pkt.extract(hdr.es.next); more = hdr.es.last.more; transition accept; }
}
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    First() first;
    bit<8> more;
    state start { pkt.extract(hdr.cnt); first.apply(pkt, hdr, more);
                  transition select(more) { 1: rest; default: accept; } }
    state rest { pkt.extract(hdr.es.next);
                 transition select(hdr.es.last.more) { 1: rest; default: accept; } }
}
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.cnt.n = 0;
        if (hdr.es[0].isValid()) { hdr.cnt.n = hdr.cnt.n + 1; }
        if (hdr.es[1].isValid()) { hdr.cnt.n = hdr.cnt.n + 2; }
        if (hdr.es[2].isValid()) { hdr.cnt.n = hdr.cnt.n + 4; }
    }
}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.cnt); pkt.emit(hdr.es); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    # three elements: the first from the sub-parser, two from the caller's loop
    assert run(tmp_path, src, [0, 10, 1, 11, 1, 12, 0, 99]) == [7, 10, 1, 11, 1, 12, 0, 99]
    assert run(tmp_path, src, [0, 10, 0, 99]) == [1, 10, 0, 99]


def test_sub_parser_argument_declared_in_the_state(tmp_path: Path) -> None:
    """Two states each declare their own ``t`` and pass it to the sub-parser; the copy-out
    lands in a new state, so the variables become parser locals (each its own)."""
    parser = """
parser Inc(packet_in pkt, inout bit<8> c) {
    state start { c = c + 1; transition accept; }
}
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    Inc() inc;
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) { 1: one; default: two; }
    }
    state one { bit<8> t = 10; inc.apply(pkt, t); meta.x = t; transition accept; }
    state two { bit<8> t = 20; inc.apply(pkt, t); inc.apply(pkt, t); meta.x = t;
                transition accept; }
}
"""
    ing = INGRESS.replace("sm.egress_spec = 1;", "sm.egress_spec = 1; hdr.h.b = meta.x;")
    src = build(parser=parser, ingress=ing)
    assert run(tmp_path, src, [1, 0]) == [1, 11]
    assert run(tmp_path, src, [2, 0]) == [2, 22]


def test_sub_parser_passed_to_the_parser_as_constructor_argument(tmp_path: Path) -> None:
    parser = SUB_G + """
parser SubT(packet_in pkt, out g_t g);
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm)(SubT sp) {
    state start { pkt.extract(hdr.h); sp.apply(pkt, hdr.g); transition accept; }
}
"""
    ing = INGRESS.replace("sm.egress_spec = 1;", "sm.egress_spec = 1; hdr.h.b = hdr.g.d;")
    src = build(parser=parser, ingress=ing,
                main="V1Switch(P(SubG()), VC(), I(), E(), CC(), D()) main;\n")
    assert run(tmp_path, src, [1, 2, 3, 4]) == [1, 4, 3, 4]


def test_controls_passed_through_two_levels_of_constructor_arguments(tmp_path: Path) -> None:
    ing = """
control Mid(inout bit<8> x)(Step s) { apply { s.apply(x); s.apply(x); } }
control Outer(inout bit<8> x)(Step s) { apply { s.apply(x); x = x + 1; } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    Outer(Mid(Add40())) o;
    apply { sm.egress_spec = 1; o.apply(hdr.h.b); }
}
"""
    # 5 + 40 + 40 + 1
    assert run(tmp_path, build(ingress=ing, extra=SUB_CONTROLS), [0, 5]) == [0, 86]


SUB_TABLE = """
control Sub(inout bit<8> x) {
    action set(bit<8> v) { x = v; }
    table t { key = { x : exact; } actions = { set; NoAction; } default_action = NoAction(); }
    apply { t.apply(); }
}
"""


@pytest.mark.parametrize(("anno", "table", "action"), [
    ("", "I.s.t", "I.s.set"),
    ('@name("fwd")', "I.fwd.t", "I.fwd.set"),
    ('@name(".top.fwd")', "top.fwd.t", "top.fwd.set"),
])
def test_sub_control_locals_are_named_after_the_instance_external_name(
        tmp_path: Path, anno: str, table: str, action: str) -> None:
    """p4c's inliner prefixes the callee's locals with the instance's external name (its
    @name when it has one; an absolute one makes them absolute)."""
    ing = f"""
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{
    {anno} Sub() s;
    apply {{ sm.egress_spec = 1; s.apply(hdr.h.b); }}
}}
"""
    j, res = compile_text(tmp_path, build(ingress=ing, extra=SUB_TABLE))
    assert [t.name for t in res.tables] == [table]
    sw = Switch()
    sw.load_json(j)
    sw.table_add(table, TableEntry([MatchKey(2)], ActionCall(action, [99])))
    assert sw.process_packet(0, bytes([1, 2])) == [(1, bytes([1, 99]))]
    assert sw.process_packet(0, bytes([1, 3])) == [(1, bytes([1, 3]))]


def test_generic_sub_control_type_argument_from_its_constructor_argument(
        tmp_path: Path) -> None:
    ing = """
control AddK<T>(inout T x)(T k) { apply { x = x + k; } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    AddK(8w7) add7;
    AddK(16w300) add300;
    apply {
        sm.egress_spec = 1;
        add7.apply(hdr.h.b);
        bit<16> w = 16w1;
        add300.apply(w);
        hdr.h.a = w[15:8];
    }
}
"""
    # b + 7; w = 1 + 300 = 0x012D, so a = 0x01
    assert run(tmp_path, build(ingress=ing), [0, 5]) == [1, 12]


def test_sub_parser_out_value_left_unwritten_is_the_instances_last_one(tmp_path: Path) -> None:
    """The spec leaves an unwritten out value undefined; p4c's inliner declares one variable
    per instance and parameter, shared by all its calls, so p4c + BMv2 copy out the value the
    previous call left there."""
    parser = """
parser Maybe(packet_in pkt, in bit<8> sel, in bit<8> v, out bit<8> r) {
    state start { transition select(sel) { 1: w; default: accept; } }
    state w { r = v; transition accept; }
}
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    Maybe() m;
    state start {
        pkt.extract(hdr.h);
        m.apply(pkt, 1, hdr.h.a, meta.x);
        m.apply(pkt, 0, 8w0, meta.y);
        transition accept;
    }
}
"""
    ing = INGRESS.replace("sm.egress_spec = 1;", "sm.egress_spec = 1; hdr.h.b = meta.y;")
    assert run(tmp_path, build(parser=parser, ingress=ing), [9, 0]) == [9, 9]

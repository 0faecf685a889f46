"""Left-to-right evaluation with side effects (P4_16 spec 8.1 and 6.8 / 8.4 / 8.5: operands,
arguments and the left-hand side are evaluated left to right, ``&&``/``||``/``?:`` evaluate their
later part only when needed), made explicit by the SideEffectOrdering pass.

Most programs are the 2-byte ``h`` (``a``, ``b``) template of :mod:`p4progs`; each expected
output byte is worked out by hand from the spec. ``bump(x)`` adds one to ``x`` and returns it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.tests.compiler.p4progs import compile_text, program, run_b

BUMP = "bit<8> bump(inout bit<8> x) { x = x + 1; return x; }\n"
S = "sm.egress_spec = 1; "


def src(body: str, pre: str = BUMP) -> str:
    return program(body).replace("control I(", pre + "control I(", 1)


def out(tmp_path: Path, text: str, a: int, b: int = 0) -> int | None:
    j, _ = compile_text(tmp_path, text)
    return run_b(j, a, b)


def test_left_operand_is_read_before_the_call(tmp_path: Path) -> None:
    # 3 + bump(b): the left operand is 3, bump makes b 4 and returns 4
    text = src("apply { " + S + "hdr.h.b = 3; hdr.h.b = hdr.h.b + bump(hdr.h.b); }")
    assert out(tmp_path, text, 0) == 7


def test_nested_calls_and_reads_between_them_in_order(tmp_path: Path) -> None:
    # bump -> 4 (b = 4); then b is read: 4; then bump -> 5: 4 + (4 + 5)
    text = src("apply { " + S + "hdr.h.b = 3; "
               "hdr.h.b = bump(hdr.h.b) + (hdr.h.b + bump(hdr.h.b)); }")
    assert out(tmp_path, text, 0) == 13


def test_argument_is_evaluated_before_a_later_argument_changes_it(tmp_path: Path) -> None:
    # p = 3 (copied in before bump runs), q = 4: 3 - 4 wraps to 255
    pre = BUMP + "bit<8> sub(in bit<8> p, in bit<8> q) { return p - q; }\n"
    text = src("apply { " + S + "hdr.h.b = 3; hdr.h.b = sub(hdr.h.b, bump(hdr.h.b)); }", pre)
    assert out(tmp_path, text, 0) == 255


def test_inout_argument_copied_in_before_a_later_argument_runs(tmp_path: Path) -> None:
    # p is copied in as 3, bump makes b 4 (q = 4), p = 7 is copied out over b
    pre = BUMP + "void acc(inout bit<8> p, in bit<8> q) { p = p + q; }\n"
    text = src("apply { " + S + "hdr.h.b = 3; acc(hdr.h.b, bump(hdr.h.b)); }", pre)
    assert out(tmp_path, text, 0) == 7


@pytest.mark.parametrize("a,want", [(0, 0), (1, 11)])
def test_and_calls_its_right_operand_only_when_the_left_holds(tmp_path: Path, a: int,
                                                               want: int) -> None:
    text = src("apply { " + S + "hdr.h.b = 0; "
               "if (hdr.h.a == 1 && bump(hdr.h.b) == 1) { hdr.h.b = hdr.h.b + 10; } }")
    assert out(tmp_path, text, a) == want


@pytest.mark.parametrize("a,want", [(1, 10), (0, 11)])
def test_or_calls_its_right_operand_only_when_the_left_fails(tmp_path: Path, a: int,
                                                             want: int) -> None:
    text = src("apply { " + S + "hdr.h.b = 0; "
               "if (hdr.h.a == 1 || bump(hdr.h.b) == 1) { hdr.h.b = hdr.h.b + 10; } }")
    assert out(tmp_path, text, a) == want


@pytest.mark.parametrize("a,want", [(1, 12), (0, 5)])
def test_conditional_operator_evaluates_only_the_chosen_branch(tmp_path: Path, a: int,
                                                               want: int) -> None:
    # a == 1: bump makes b 6 and returns 6, then b is read: 6 + 6; else b stays 5
    text = src("apply { " + S + "hdr.h.b = 5; "
               "hdr.h.b = hdr.h.a == 1 ? bump(hdr.h.b) + hdr.h.b : hdr.h.b; }")
    assert out(tmp_path, text, a) == want


TABLE = """
  action set() { hdr.h.b = 100; }
  table t { key = { hdr.h.a : exact; } actions = { set; NoAction; }
            const entries = { 1 : set(); } default_action = NoAction; }
"""


@pytest.mark.parametrize("a,want", [(1, 4), (0, 5)])
def test_table_hit_as_a_value_after_an_operand(tmp_path: Path, a: int, want: int) -> None:
    # b is read (3) before the table runs (its action writes 100 to b on a hit)
    text = src(TABLE + "apply { " + S + "hdr.h.b = 3; "
               "hdr.h.b = hdr.h.b + (t.apply().hit ? 8w1 : 8w2); }")
    assert out(tmp_path, text, a) == want


@pytest.mark.parametrize("a,want", [(2, 4), (1, 100), (3, 0)])
def test_table_hit_inside_a_larger_condition(tmp_path: Path, a: int, want: int) -> None:
    text = src(TABLE + "apply { " + S + "hdr.h.b = 0; "
               "if (!t.apply().hit && hdr.h.a == 2) { hdr.h.b = 4; } }")
    assert out(tmp_path, text, a) == want


@pytest.mark.parametrize("a,want", [(1, 100), (0, 4)])
def test_table_miss_in_a_variable_initializer(tmp_path: Path, a: int, want: int) -> None:
    text = src(TABLE + "apply { " + S + "hdr.h.b = 0; "
               "bool m = t.apply().miss; if (m) { hdr.h.b = hdr.h.b + 4; } }")
    assert out(tmp_path, text, a) == want


@pytest.mark.parametrize("a,want", [(0, 1), (1, 101), (2, 0)])
def test_table_apply_under_or_runs_only_when_the_left_fails(tmp_path: Path, a: int,
                                                            want: int) -> None:
    text = src(TABLE + "apply { " + S + "hdr.h.b = 0; "
               "if (hdr.h.a == 0 || t.apply().hit) { hdr.h.b = hdr.h.b + 1; } }")
    assert out(tmp_path, text, a) == want


@pytest.mark.parametrize("a,want", [(1, 101), (2, 50), (3, 60)])
def test_applies_in_expressions_inside_switch_cases(tmp_path: Path, a: int, want: int) -> None:
    # a=1: t runs set (b=100), u misses -> 101; a=2: t misses, w runs set2 (b=20) and hits
    # -> 50; a=3: t and w miss -> 60
    body = TABLE + """
  action set2() { hdr.h.b = 20; }
  table u { key = { hdr.h.a : exact; } actions = { set2; NoAction; }
            const entries = { 2 : set2(); } default_action = NoAction; }
  table w { key = { hdr.h.a : exact; } actions = { set2; NoAction; }
            const entries = { 2 : set2(); } default_action = NoAction; }
  apply {
    sm.egress_spec = 1; hdr.h.b = 0;
    switch (t.apply().action_run) {
      set: { bool m = u.apply().miss; if (m) { hdr.h.b = hdr.h.b + 1; } }
      default: { hdr.h.b = w.apply().hit ? 8w50 : 8w60; }
    }
  }"""
    assert out(tmp_path, src(body), a) == want


@pytest.mark.parametrize("a,want", [(3, 9), (2, 0)])
def test_key_with_side_effects_is_computed_before_the_apply(tmp_path: Path, a: int,
                                                            want: int) -> None:
    # keys are evaluated in order: a = 3 looks up (3, 4) (the entry: b = 9); a = 2 looks up
    # (2, 3) (a miss)
    text = src("""
  action s(bit<8> v) { hdr.h.b = v; }
  table t { key = { hdr.h.a : exact @name("a"); bump(hdr.h.a) : exact @name("bumped"); }
            actions = { s; NoAction; } const entries = { (3, 4) : s(9); }
            default_action = NoAction; }
  apply { sm.egress_spec = 1; t.apply(); }""")
    j, _ = compile_text(tmp_path, text)
    [table] = [t for p in j["pipelines"] for t in p["tables"] if t["name"] == "I.t"]
    assert [k["name"] for k in table["key"]] == ["a", "bumped"]
    assert run_b(j, a) == want


STACK_PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct hs_t { h_t h; h_t[2] s; }
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
BUMP
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.s[0].setValid(); hdr.s[1].setValid();
        hdr.s[0].b = 5; hdr.s[1].b = 7;
        BODY
        hdr.h.b = hdr.s[0].b * 16 + hdr.s[1].b;
    }
}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def stack_src(body: str) -> str:
    return STACK_PROGRAM.replace("BUMP", BUMP).replace("BODY", body)


def test_left_hand_side_index_is_evaluated_before_the_right_hand_side(tmp_path: Path) -> None:
    # the index reads a = 0 before bump makes it 1: s[0].b = 1, s[1].b stays 7
    text = stack_src("hdr.s[hdr.h.a].b = bump(hdr.h.a);")
    assert out(tmp_path, text, 0) == 1 * 16 + 7


def test_index_and_element_read_before_a_later_call(tmp_path: Path) -> None:
    # s[a] is s[0] (5), read before bump makes a 1: s[0].b = 5 + 1
    text = stack_src("hdr.s[hdr.h.a].b = hdr.s[hdr.h.a].b + bump(hdr.h.a);")
    assert out(tmp_path, text, 0) == 6 * 16 + 7


def test_side_effects_ordered_inside_an_action(tmp_path: Path) -> None:
    text = src("action f() { hdr.h.b = hdr.h.b + bump(hdr.h.b); }\n"
               "apply { " + S + "hdr.h.b = 3; f(); }")
    assert out(tmp_path, text, 0) == 7


def test_side_effects_ordered_in_a_function_return(tmp_path: Path) -> None:
    # g: x = 3 is read, bump makes x 4: returns 7; the copy-out of x (4) comes before the
    # assignment of the result
    pre = BUMP + "bit<8> g(inout bit<8> x) { return x + bump(x); }\n"
    text = src("apply { " + S + "hdr.h.b = 3; hdr.h.b = g(hdr.h.b); }", pre)
    assert out(tmp_path, text, 0) == 7


PARSER_PROGRAM = program("apply { " + S + "}").replace(
    "state start { pkt.extract(hdr.h); transition accept; }",
    "state start { pkt.extract(hdr.h); transition select(hdr.h.a + bump(hdr.h.a)) {"
    " 1: one; 4: four; default: accept; } }\n"
    "    state one { hdr.h.b = 9; transition accept; }\n"
    "    state four { hdr.h.b = 8; transition accept; }").replace(
    "parser P(", BUMP + "parser P(", 1)


@pytest.mark.parametrize("a,want", [(0, 9), (1, 0)])
def test_select_expression_reads_before_the_call(tmp_path: Path, a: int, want: int) -> None:
    # a = 0: 0 + bump(a) = 0 + 1 = 1 -> state one; a = 1: 1 + 2 = 3 -> accept (evaluating
    # the call first would give 2 and 4)
    assert out(tmp_path, PARSER_PROGRAM, a) == want

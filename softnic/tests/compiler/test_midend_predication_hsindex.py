"""p4c's mid-end Predication as p4c-bm2-ss runs it on action bodies, and the BMv2 back end's
header-width rule.

- An assignment under an ``if`` in an action - also of a whole header or header stack element -
  is predicated (``h = c ? s : h``), so it is accepted and runs as the spec says; the condition
  is evaluated once, before the branch's statements.
- A method call (an extern, ``setValid``...) or ``exit`` under an ``if`` in an action is refused
  with p4c's "<statement>: Conditional execution in actions unsupported on this target", at
  that statement.
- An ``if`` whose condition is a compile-time constant is folded away first (p4c's
  ConstantFolding and SimplifyControlFlow), so its dead branch may call an extern.
- A header whose fields do not total a multiple of 8 bits is refused (p4c's BMv2 back end does
  not pad headers).

Expected packets are worked out by hand from the P4_16 spec: header assignment copies the
header's validity and fields (an invalid source makes the destination invalid), and the
deparser emits only valid headers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.compiler.diagnostics import CompileError
from softnic.tests.compiler.p4progs import compile_text, program, run_b
from softnic.tests.compiler.p4progs import run_packet as run

STACK_HEAD = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct hs_t { h_t h; h_t[2] s; }
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.s[0]); pkt.extract(hdr.s[1]);
                  transition accept; }
}
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
"""

STACK_TAIL = """
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) {
    apply { pkt.emit(hdr.h); pkt.emit(hdr.s[0]); pkt.emit(hdr.s[1]); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def stack_program(ingress_body: str) -> str:
    return (STACK_HEAD + "control I(inout hs_t hdr, inout m_t meta, "
            "inout standard_metadata_t sm) {\n" + ingress_body + "\n}\n" + STACK_TAIL)


HEADER_ASSIGN = """
    action a() {
        if (hdr.h.a == 1) {
            hdr.s[0] = hdr.s[1];
        } else if (hdr.h.a == 2) {
            hdr.s[1] = hdr.s[0];
            hdr.h.b = 7;
        }
        if (hdr.h.a == 3) {
            if (hdr.s[0].a == 5) {
                hdr.s[0] = hdr.s[1];    // the condition was read before: b is still set
                hdr.h.b = 1;
            }
        }
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.b == 9) { hdr.s[1].setInvalid(); }
        a();
    }"""


def test_header_assignment_under_if_in_action_is_predicated(tmp_path: Path) -> None:
    j, _ = compile_text(tmp_path, stack_program(HEADER_ASSIGN))
    # a = 1: s[0] = s[1]
    assert run(j, bytes.fromhex("0100 0a0b 0c0d")) == bytes.fromhex("0100 0c0d 0c0d")
    # a = 2: s[1] = s[0] and b = 7
    assert run(j, bytes.fromhex("0200 0a0b 0c0d")) == bytes.fromhex("0207 0a0b 0a0b")
    # a = 4: no branch runs
    assert run(j, bytes.fromhex("0400 0a0b 0c0d")) == bytes.fromhex("0400 0a0b 0c0d")
    # nested: a = 3 and s[0].a = 5: s[0] = s[1], then b = 1 (condition evaluated once)
    assert run(j, bytes.fromhex("0300 050b 0c0d")) == bytes.fromhex("0301 0c0d 0c0d")
    # nested, inner condition false: nothing
    assert run(j, bytes.fromhex("0300 060b 0c0d")) == bytes.fromhex("0300 060b 0c0d")
    # s[1] made invalid first: s[0] = s[1] makes s[0] invalid too; only h is emitted
    assert run(j, bytes.fromhex("0109 0a0b 0c0d")) == bytes.fromhex("0109")


def test_header_assignment_from_a_struct_copy_under_if(tmp_path: Path) -> None:
    # a struct holding a header, copied under an if: p4c's CopyStructures splits it into the
    # header assignment, which Predication predicates
    src = stack_program("""
    action a() {
        hs_t tmp = hdr;
        tmp.h.a = 0xee;
        if (hdr.h.b == 1) { hdr = tmp; }
    }
    apply { sm.egress_spec = 1; a(); }""")
    j, _ = compile_text(tmp_path, src)
    assert run(j, bytes.fromhex("0101 0a0b 0c0d")) == bytes.fromhex("ee01 0a0b 0c0d")
    assert run(j, bytes.fromhex("0102 0a0b 0c0d")) == bytes.fromhex("0102 0a0b 0c0d")


def test_constant_condition_in_action_is_folded_before_predication(tmp_path: Path) -> None:
    src = program("""
    action count(bit<8> k) {
        if (false) { mark_to_drop(sm); } else { hdr.h.b = hdr.h.b + k; }
        if (true) {
            if (hdr.h.a == 1) { hdr.h.b = hdr.h.b + 0x10; }
        } else {
            if (hdr.h.a == 1) { mark_to_drop(sm); }   // dead: folded away with its if
        }
    }
    apply { sm.egress_spec = 1; count(2); }""")
    j, _ = compile_text(tmp_path, src)
    assert run_b(j, 1, 5) == 0x17
    assert run_b(j, 2, 5) == 7


def test_constant_named_condition_in_action(tmp_path: Path) -> None:
    src = program("""
    action act() {
        if (DEBUG) { mark_to_drop(sm); }
        if (!DEBUG) { hdr.h.b = 3; }
    }
    apply { sm.egress_spec = 1; act(); }""").replace(
        "control I(", "const bool DEBUG = false;\ncontrol I(")
    j, _ = compile_text(tmp_path, src)
    assert run_b(j, 1, 5) == 3


@pytest.mark.parametrize(("stmt", "shown"), [
    ("exit;", "exit"),
    ("hdr.h.setInvalid();", "hdr.h.setInvalid()"),
    ("mark_to_drop(sm);", "mark_to_drop(sm)"),
])
def test_unpredicable_statement_under_if_in_action_is_refused_at_it(
        tmp_path: Path, stmt: str, shown: str) -> None:
    src = program(f"""
    action act() {{
        if (hdr.h.a == 1) {{
            hdr.h.b = 2;
            {stmt}
        }} else {{ hdr.h.b = 1; }}
    }}
    apply {{ sm.egress_spec = 1; act(); }}""")
    with pytest.raises(CompileError) as exc:
        compile_text(tmp_path, src)
    e = exc.value
    assert e.message == f"{shown}: Conditional execution in actions unsupported on this target"
    assert e.loc is not None
    line = src.splitlines()[e.loc.line - 1]
    assert line[e.loc.col - 1:].startswith(stmt.rstrip(";"))


def test_unpredicable_statement_in_inner_if_is_refused(tmp_path: Path) -> None:
    src = program("""
    action act() {
        if (hdr.h.a == 1) {
            if (hdr.h.b == 2) { hdr.h.setValid(); }
        }
    }
    apply { sm.egress_spec = 1; act(); }""")
    with pytest.raises(CompileError, match=r"error: hdr\.h\.setValid\(\): Conditional execution"):
        compile_text(tmp_path, src)


ODD_HEADER = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<32> a; bit<8> b; bit<1> v; }
struct hs_t { h_t h; }
struct m_t { bit<1> flag; }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_header_not_a_multiple_of_8_bits_is_refused_at_the_header(tmp_path: Path) -> None:
    with pytest.raises(CompileError) as exc:
        compile_text(tmp_path, ODD_HEADER)
    e = exc.value
    assert e.message == ("Found header with fields totaling 41 bits.  BMv2 target only "
                         "supports headers with fields totaling a multiple of 8 bits.")
    assert e.loc is not None and e.loc.line == 3
    # the metadata struct m_t (1 bit) is padded by the BMv2 back end, not refused
    j, _ = compile_text(tmp_path, ODD_HEADER.replace("bit<1> v; }", "bit<1> v; bit<7> pad; }"))
    assert j["header_types"]


UNUSED_PARAMS = """
    action keep(inout bit<8> v) { }
    action peek(in bit<8> v) { }
    action bump(inout bit<8> v) { v = v + 1; }
    apply {
        sm.egress_spec = 1;
        keep(hdr.s[hdr.h.a].a);
        peek(hdr.s[hdr.h.a].b);
        if (hdr.h.b == 1) { bump(hdr.s[hdr.h.a].b); }
    }"""


def test_unused_directional_argument_is_never_evaluated(tmp_path: Path) -> None:
    # p4c-bm2-ss (RemoveActionParameters, then LocalCopyPropagation) leaves nothing of the copy
    # of an argument the action never uses, so BMv2 never reads h.s[h.h.a]: an index out of
    # range there does not abort it and the packet comes back unchanged
    j, _ = compile_text(tmp_path, stack_program(UNUSED_PARAMS))
    assert run(j, bytes.fromhex("0000 0a0b 0c0d")) == bytes.fromhex("0000 0a0b 0c0d")
    assert run(j, bytes.fromhex("0700 0a0b 0c0d")) == bytes.fromhex("0700 0a0b 0c0d")
    # a used argument is still copied in and out
    assert run(j, bytes.fromhex("0101 0a0b 0c0d")) == bytes.fromhex("0101 0a0b 0c0e")


def test_runtime_index_written_under_if_in_action_uses_a_guarded_index(tmp_path: Path) -> None:
    # p4c's Predication reads a run-time index of the left-hand side into a temporary that is
    # the index when the condition holds and 0 otherwise: with the condition false nothing
    # changes and an index out of range is never dereferenced
    src = stack_program("""
    action a() {
        if (hdr.h.b == 1) { hdr.s[hdr.h.a].a = 9; }
        if (hdr.h.b == 2) { if (hdr.s[0].b == 0x0b) { hdr.s[hdr.h.a] = hdr.s[0]; } }
    }
    apply { sm.egress_spec = 1; a(); }""")
    j, _ = compile_text(tmp_path, src)
    assert run(j, bytes.fromhex("0101 0a0b 0c0d")) == bytes.fromhex("0101 0a0b 090d")
    assert run(j, bytes.fromhex("0001 0a0b 0c0d")) == bytes.fromhex("0001 090b 0c0d")
    # condition false, index 7 out of range: forwarded unchanged
    assert run(j, bytes.fromhex("0700 0a0b 0c0d")) == bytes.fromhex("0700 0a0b 0c0d")
    # nested: s[1] = s[0] when b == 2 and s[0].b == 0b
    assert run(j, bytes.fromhex("0102 0a0b 0c0d")) == bytes.fromhex("0102 0a0b 0a0b")
    # inner condition false, index out of range: unchanged
    assert run(j, bytes.fromhex("0702 0a0c 0c0d")) == bytes.fromhex("0702 0a0c 0c0d")


def test_exit_after_a_conditional_return_is_refused_as_p4c_does(tmp_path: Path) -> None:
    # p4c's issue2359.p4: RemoveReturns puts the exit under "if not returned", which Predication
    # refuses ("error: exit" in p4c's BMv2 test expectations)
    src = program("""
    action act(inout bit<8> v) {
        if (hdr.h.a == 1) { return; }
        exit;
    }
    apply { sm.egress_spec = 1; act(hdr.h.b); }""")
    with pytest.raises(CompileError) as exc:
        compile_text(tmp_path, src)
    e = exc.value
    assert e.message == "exit: Conditional execution in actions unsupported on this target"
    assert e.loc is not None and src.splitlines()[e.loc.line - 1].strip() == "exit;"


def test_header_from_a_list_under_if_in_action_is_refused_as_its_set_valid(
        tmp_path: Path) -> None:
    # p4c's front end writes h = {...} as h.setValid() and the assignment (its
    # gauntlet_index_10-bmv2-frontend.p4); Predication refuses that method call
    src = program("""
    action act() {
        if (hdr.h.a == 1) { hdr.h = {8w1, 8w2}; }
    }
    apply { sm.egress_spec = 1; act(); }""")
    with pytest.raises(CompileError) as exc:
        compile_text(tmp_path, src)
    assert exc.value.message == ("hdr.h.setValid(): Conditional execution in actions "
                                 "unsupported on this target")

"""Copy-in/copy-out (P4_16 spec 6.8, "Calling convention") for actions, functions and
sub-controls, and direct action calls with run-time or directional arguments.

The spec's rule, which every expectation below is worked out from: the arguments are evaluated
once, left to right, when the call starts; ``in``/``inout`` (and, for actions, directionless)
arguments are copied into the parameters then; the body runs on the parameters; ``out`` and
``inout`` parameters are copied back into the argument locations when the call ends, left to
right. An ``out`` parameter starts uninitialised, and an uninitialised header is invalid. So a
body that writes the argument's location directly loses that write to the copy-out, and a body
that changes what an ``in`` argument named still sees the value from the call.

Each program runs on the engine: the header ``h.d`` (``a b c d``) is the whole packet, and the
output packet is its value after ingress.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.compiler.diagnostics import CompileError
from softnic.tests.compiler.engine_run import compile_src, program, run_once, run_src


def ingress(decls: str, apply: str) -> str:
    return program(f"""
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {{
    {decls}
    apply {{ sm.egress_spec = 1; {apply} }}
}}""")


def test_action_copy_out_wins_over_a_direct_write(tmp_path: Path) -> None:
    # x = 5 copied in; x = 6; the direct write b = 100 is overwritten by the copy-out of x
    src = ingress("action f(inout bit<8> x) { x = x + 1; h.d.b = 100; }",
                  "h.d.b = 5; f(h.d.b);")
    assert run_src(tmp_path, src, bytes([1, 2, 3, 4])) == bytes([1, 6, 3, 4])


def test_action_in_argument_is_copied_at_the_call(tmp_path: Path) -> None:
    # v = a (0x10) at the call; the body then sets a = 0x33 and b = v = 0x10
    src = ingress("action snap(in bit<8> v) { h.d.a = 0x33; h.d.b = v; }", "snap(h.d.a);")
    assert run_src(tmp_path, src, bytes([0x10, 0, 0, 0])) == bytes([0x33, 0x10, 0, 0])


def test_action_out_copy_out_wins(tmp_path: Path) -> None:
    # y = 7; the direct c = 1 is overwritten by the copy-out of y
    src = ingress("action set_out(out bit<8> y) { y = 7; h.d.c = 1; }", "set_out(h.d.c);")
    assert run_src(tmp_path, src, bytes([0, 0, 0, 0])) == bytes([0, 0, 7, 0])


def test_action_whole_struct_inout(tmp_path: Path) -> None:
    # hh is a copy of all of h; hh.d.b = 9; the direct writes b = 50, c = 77 are lost when
    # the whole struct is copied back: b = 9, c = its value at the call
    src = ingress("action f(inout headers_t hh) { hh.d.b = 9; h.d.b = 50; h.d.c = 77; }",
                  "f(h);")
    assert run_src(tmp_path, src, bytes([1, 2, 3, 4])) == bytes([1, 9, 3, 4])


def test_action_whole_header_inout(tmp_path: Path) -> None:
    # dd.a = a + 1; the direct writes a = EE, d = DD are lost to the copy-out of dd
    src = ingress("action f(inout data_t dd) { dd.a = dd.a + 1; h.d.a = 0xEE; h.d.d = 0xDD; }",
                  "f(h.d);")
    assert run_src(tmp_path, src, bytes([1, 2, 3, 4])) == bytes([2, 2, 3, 4])


def test_same_action_call_twice(tmp_path: Path) -> None:
    # each call: x = b; b += 10 (lost); x = x + 1; b = x. b: 0 -> 1 -> 2
    src = ingress("action bump(inout bit<8> x) { h.d.b = h.d.b + 10; x = x + 1; }",
                  "h.d.b = 0; bump(h.d.b); bump(h.d.b);")
    assert run_src(tmp_path, src, bytes([0, 0, 0, 0])) == bytes([0, 2, 0, 0])


def test_copy_out_is_left_to_right(tmp_path: Path) -> None:
    # y = 2 then x = 1, but x is copied back first and y last: b = 2
    src = ingress("action two(inout bit<8> x, inout bit<8> y) { y = 2; x = 1; }",
                  "two(h.d.b, h.d.b);")
    assert run_src(tmp_path, src, bytes([0, 0, 0, 0])) == bytes([0, 2, 0, 0])


def test_copy_out_before_exit(tmp_path: Path) -> None:
    # exit ends the action, and the action's results are still copied back: b = 9, not 1
    src = ingress("action f(inout bit<8> x) { x = 9; h.d.b = 1; exit; }", "f(h.d.b);")
    assert run_src(tmp_path, src, bytes([0, 0, 0, 0])) == bytes([0, 9, 0, 0])


def test_direct_call_with_run_time_action_data(tmp_path: Path) -> None:
    # p4c-bm2-ss accepts a directly called action with a run-time argument (it inlines it);
    # v = a = 7 at the call, a = 0 afterwards does not change it: b = 8
    src = ingress("action g(bit<8> v) { h.d.a = 0; h.d.b = v + 1; }", "g(h.d.a);")
    assert run_src(tmp_path, src, bytes([7, 0, 0, 0])) == bytes([0, 8, 0, 0])


def test_direct_call_needs_no_temporary_when_nothing_aliases(tmp_path: Path) -> None:
    # the tutorials' firewall shape: header fields passed to an action that never writes
    # them are used in place, so no scalar for v appears in the JSON
    src = ingress("action g(bit<8> v) { h.d.b = v + 1; }", "g(h.d.a);")
    j = compile_src(tmp_path, src)
    scalars = next(t for t in j["header_types"] if t["name"] == "scalars_0")
    assert not [f for f in scalars["fields"] if f[0].startswith("v")]
    assert run_once(j, bytes([7, 0, 0, 0])) == bytes([7, 8, 0, 0])


def test_slice_as_inout_argument(tmp_path: Path) -> None:
    # x = b[7:4] = 5; x = 6; copied back into b[7:4]; b[3:0] stays A: b = 0x6A
    src = ingress("action f(inout bit<4> x) { x = x + 1; }", "f(h.d.b[7:4]);")
    assert run_src(tmp_path, src, bytes([0, 0x5A, 0, 0])) == bytes([0, 0x6A, 0, 0])


def test_action_called_from_an_action(tmp_path: Path) -> None:
    # inner's copy-out of x (6) wins over its direct write b = 50
    src = ingress("""
    action inner(inout bit<8> x) { x = x + 1; h.d.b = 50; }
    action outer() { inner(h.d.b); }""", "h.d.b = 5; outer();")
    assert run_src(tmp_path, src, bytes([0, 0, 0, 0])) == bytes([0, 6, 0, 0])


VALIDITY = "if (t.isValid()) { h.d.b = 1; } else { h.d.b = 2; }"


def test_out_header_of_an_action_starts_invalid(tmp_path: Path) -> None:
    # dd starts invalid; the copy-out makes t invalid: b = 2
    src = ingress("action clear(out data_t dd) { }",
                  f"data_t t = h.d; clear(t); {VALIDITY}")
    assert run_src(tmp_path, src, bytes([1, 0, 0, 0])) == bytes([1, 2, 0, 0])


def test_out_header_of_a_function_starts_invalid(tmp_path: Path) -> None:
    src = program("""
void clear(out data_t dd) { }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; data_t t = h.d; clear(t); VALIDITY }
}""".replace("VALIDITY", VALIDITY))
    assert run_src(tmp_path, src, bytes([1, 0, 0, 0])) == bytes([1, 2, 0, 0])


def test_out_header_of_a_sub_control_starts_invalid(tmp_path: Path) -> None:
    src = program("""
control Sub(out data_t dd) { apply { } }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    apply { sm.egress_spec = 1; data_t t = h.d; sub.apply(t); VALIDITY }
}""".replace("VALIDITY", VALIDITY))
    assert run_src(tmp_path, src, bytes([1, 0, 0, 0])) == bytes([1, 2, 0, 0])


def test_run_time_stack_index_argument_is_evaluated_once(tmp_path: Path) -> None:
    # the argument h.s[h.ix.i].v names s[1] at the call (i = 1); the body moves i to 2 before
    # it writes x, and the copy-out still goes to s[1]: s = 10, 21, 30; i = 2
    src = """
#include <core.p4>
#include <v1model.p4>
header e_t { bit<8> v; }
header i_t { bit<8> i; }
struct headers_t { i_t ix; e_t[3] s; }
struct meta_t { bit<8> m; }
parser P(packet_in pkt, out headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.ix);
        pkt.extract(h.s.next); pkt.extract(h.s.next); pkt.extract(h.s.next);
        transition accept;
    }
}
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    action f(inout bit<8> x) { h.ix.i = h.ix.i + 1; x = x + 1; }
    apply { sm.egress_spec = 1; f(h.s[h.ix.i].v); }
}
control VC(inout headers_t h, inout meta_t meta) { apply { } }
control E(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.ix); pkt.emit(h.s); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    assert run_src(tmp_path, src, bytes([1, 10, 20, 30])) == bytes([2, 10, 21, 30])


def test_table_binds_a_directional_parameter(tmp_path: Path) -> None:
    # the actions list binds x to c; val (3) comes from the default action's data. x = c is
    # copied in when the action runs, the direct write c = 77 is lost to the copy-out: c + 3
    src = ingress("""
    action setx(inout bit<8> x, bit<8> val) { x = x + val; h.d.c = 0x77; }
    table t {
        actions = { setx(h.d.c); }
        default_action = setx(h.d.c, 3);
    }""", "t.apply();")
    j = compile_src(tmp_path, src)
    act = next(a for a in j["actions"] if a["name"] == "I.setx")
    assert act["runtime_data"] == [{"name": "val", "bitwidth": 8}]
    assert run_once(j, bytes([0, 0, 5, 0])) == bytes([0, 0, 8, 0])


def test_table_binds_a_directional_parameter_of_a_top_level_action(tmp_path: Path) -> None:
    # a top-level action keeps its control-plane name when the table binds its parameter
    src = program("""
action add_to(inout bit<8> x, bit<8> v) { x = x + v; }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    table t {
        actions = { add_to(h.d.d); }
        default_action = add_to(h.d.d, 5);
    }
    apply { sm.egress_spec = 1; t.apply(); }
}""")
    j = compile_src(tmp_path, src)
    assert [a["runtime_data"] for a in j["actions"] if a["name"] == "add_to"] == [
        [{"name": "v", "bitwidth": 8}]]
    assert run_once(j, bytes([0, 0, 0, 4])) == bytes([0, 0, 0, 9])


STACK_PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header e_t { bit<8> v; }
header i_t { bit<8> i; }
struct headers_t { i_t ix; e_t[3] s; }
struct meta_t { bit<8> m; }
parser P(packet_in pkt, out headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.ix);
        pkt.extract(h.s.next); pkt.extract(h.s.next); pkt.extract(h.s.next);
        transition accept;
    }
}
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    action f(inout e_t[3] st) { st[0].v = st[0].v + 1; h.s[0].v = 99; h.s[2].v = 98; }
    action g(out e_t[3] st) { st[1].setValid(); st[1].v = 5; }
    apply { sm.egress_spec = 1; if (h.ix.i == 0) { f(h.s); } else { g(h.s); } }
}
control VC(inout headers_t h, inout meta_t meta) { apply { } }
control E(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.ix); pkt.emit(h.s); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_whole_header_stack_inout(tmp_path: Path) -> None:
    # st is a copy of the stack; st[0].v = 11; the direct writes 99 and 98 are lost to the
    # copy-out of the whole stack
    assert run_src(tmp_path, STACK_PROGRAM, bytes([0, 10, 20, 30])) == bytes([0, 11, 20, 30])


def test_whole_header_stack_out_starts_invalid(tmp_path: Path) -> None:
    # every element of st starts invalid; only st[1] is made valid (v = 5); the copy-out makes
    # s[0] and s[2] invalid, and the deparser emits only the valid s[1]
    assert run_src(tmp_path, STACK_PROGRAM, bytes([1, 10, 20, 30])) == bytes([1, 5])


def test_out_header_of_a_sub_control_whose_action_uses_it(tmp_path: Path) -> None:
    # dd starts invalid at every apply; the table's action (which reads the parameters, so
    # they become variables of the caller) makes it valid, with a = k, only when k == 1; the
    # copy-out makes h.d invalid otherwise, and the caller then rebuilds it as 9 2 0 0
    src = program("""
control Sub(out data_t dd, inout bit<8> k) {
    action a() { dd.setValid(); dd.a = k; }
    table t { actions = { a; } default_action = a(); }
    apply { if (k == 1) { t.apply(); } }
}
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    apply {
        sm.egress_spec = 1;
        bit<8> kk = h.d.a;
        sub.apply(h.d, kk);
        if (!h.d.isValid()) { h.d.setValid(); h.d.a = 9; h.d.b = 2; h.d.c = 0; h.d.d = 0; }
    }
}""")
    j = compile_src(tmp_path, src)
    assert run_once(j, bytes([1, 0, 0, 0]))[0] == 1
    assert run_once(j, bytes([3, 0, 0, 0])) == bytes([9, 2, 0, 0])


def sub_control_exit(sub: str) -> str:
    return program("""
control Sub(inout bit<8> x, inout bit<8> y) { SUB }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    apply { sm.egress_spec = 1; sub.apply(h.d.b, h.d.b); h.d.c = 1; }
}""".replace("SUB", sub))


def test_exit_in_a_sub_control_still_copies_out(tmp_path: Path) -> None:
    # spec, exit statement: the copy-outs of the enclosing control and its callers are still
    # performed. x = 7, y = 8, exit; copied back left to right: b = 7, then b = 8; c = 1 never
    # runs
    src = sub_control_exit("apply { x = 7; y = 8; exit; }")
    assert run_src(tmp_path, src, bytes([0, 3, 0, 0])) == bytes([0, 8, 0, 0])


def test_exit_in_an_action_of_a_sub_control_still_copies_out(tmp_path: Path) -> None:
    # the exit comes from an action the sub-control calls; the sub-control's copy-outs
    # still run: b = 8
    src = sub_control_exit("action stop() { exit; } apply { x = 7; y = 8; stop(); }")
    assert run_src(tmp_path, src, bytes([0, 3, 0, 0])) == bytes([0, 8, 0, 0])


def test_exit_copies_out_the_action_then_the_sub_control(tmp_path: Path) -> None:
    # stop's z (y's copy) = 5 is copied back first, then the sub-control's x = 7 and y = 5,
    # left to right: b = 5
    src = sub_control_exit(
        "action stop(inout bit<8> z) { z = 5; exit; } apply { x = 7; stop(y); }")
    assert run_src(tmp_path, src, bytes([0, 3, 0, 0])) == bytes([0, 5, 0, 0])


def test_sub_control_whose_action_reads_its_parameters_applied_three_times(tmp_path: Path) -> None:
    # each apply copies its own arguments into the parameters the action reads, and back:
    # b = 3 + 2 = 5; c = 4 + 10 + 1 = 15; d = 5 + 5 = 10 (x and k both copied from d)
    src = program("""
control Sub(inout bit<8> x, in bit<8> k) {
    action add() { x = x + k; }
    apply { add(); if (k == 10) { x = x + 1; } }
}
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    apply {
        sm.egress_spec = 1;
        sub.apply(h.d.b, h.d.a);
        sub.apply(h.d.c, 8w10);
        sub.apply(h.d.d, h.d.d);
    }
}""")
    assert run_src(tmp_path, src, bytes([2, 3, 4, 5])) == bytes([2, 5, 15, 10])


def test_copy_out_follows_the_written_order_of_named_arguments(tmp_path: Path) -> None:
    # the arguments are written y first, then x: y (2) is copied back first, x (1) last: b = 1
    src = ingress("action two(inout bit<8> x, inout bit<8> y) { x = 1; y = 2; }",
                  "two(y = h.d.b, x = h.d.b);")
    assert run_src(tmp_path, src, bytes([0, 0, 0, 0])) == bytes([0, 1, 0, 0])


def test_mistyped_argument_of_an_inlined_function_is_refused(tmp_path: Path) -> None:
    # a bit<8> location cannot be passed for an inout bit<16> parameter (no implicit casts
    # between widths); the call disappears when the function is inlined, so its copy is what
    # the checker sees
    src = program("""
void inc(inout bit<16> x) { x = x + 1; }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; inc(h.d.b); }
}""")
    with pytest.raises(CompileError, match="Cannot unify bit<8> to bit<16>"):
        compile_src(tmp_path, src)


def test_mistyped_argument_of_a_sub_control_is_refused(tmp_path: Path) -> None:
    src = program("""
control Sub(inout bit<16> x) { apply { x = x + 1; } }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    apply { sm.egress_spec = 1; sub.apply(h.d.b); }
}""")
    with pytest.raises(CompileError, match="Cannot unify bit<8> to bit<16>"):
        compile_src(tmp_path, src)


def test_action_call_in_a_parser_is_refused(tmp_path: Path) -> None:
    # actions run only in controls; p4c's type checker says so in these words
    src = program("""
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}""", parser="""
action pa(inout bit<8> x) { x = 1; }
parser P(packet_in pkt, out headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(h.d); pa(h.d.b); transition accept; }
}
""")
    with pytest.raises(CompileError, match=r"pa\(h.d.b\): Action calls are not allowed within "
                       "parsers"):
        compile_src(tmp_path, src)


def test_return_in_a_sub_control_still_copies_out(tmp_path: Path) -> None:
    # return ends the sub-control's apply, and its results are copied back (b = 7, then
    # b = 8); the caller goes on (c = 1); y = 9 after the return never runs
    src = sub_control_exit("apply { x = 7; y = 8; if (x == 7) { return; } y = 9; }")
    assert run_src(tmp_path, src, bytes([0, 3, 0, 0])) == bytes([0, 8, 1, 0])


def test_dont_care_for_an_in_parameter_is_refused(tmp_path: Path) -> None:
    # only an out parameter can take _ (nothing is copied in); p4c's wording
    src = ingress("action f(in bit<8> x) { h.d.b = x; }", "f(_);")
    with pytest.raises(CompileError, match="_: don't care argument only allowed for out "
                       "parameters"):
        compile_src(tmp_path, src)


def test_read_only_value_for_an_inout_parameter_is_refused(tmp_path: Path) -> None:
    src = ingress("action f(inout bit<8> x) { x = 1; }", "f(h.d.a + 1);")
    with pytest.raises(CompileError, match=r"h.d.a \+ 1: Read-only value used for out/inout "
                       "parameter x"):
        compile_src(tmp_path, src)

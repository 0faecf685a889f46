"""Inlining keeps P4's lexical scoping (p4c resolves every name before it inlines).

A function, a sub-control or a block's constructor argument means what its names meant where it
was written, not what the same names mean where desugar.py copies the code to: a global ``K``
referred to by a function stays the global when the caller declares its own ``K``, and a caller
variable passed as an argument is not captured by a callee's action parameter of the same name.
Each program runs on the engine and the output packet carries the computed values; the input
packet is always a=10, b=20, c=30, d=40.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.compiler.compile import compile_file
from softnic.tests.compiler.engine_run import program, run_src

IN = bytes([10, 20, 30, 40])

CASES = {
    # a caller's apply-local constant does not capture the global a function refers to
    "function_vs_apply_local_const": ("""
const bit<8> K = 5;
bit<8> f(bit<8> a) { return a + K; }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        const bit<8> K = 1;
        h.d.a = f(h.d.a);
        h.d.b = h.d.b + K;
    }
}
""", [15, 21, 30, 40]),
    # ... nor does a variable of the same name
    "function_vs_apply_local_variable": ("""
const bit<8> K = 5;
bit<8> f(bit<8> a) { return a + K; }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> K = 1;
        h.d.a = f(h.d.a);
        K = K + 1;
        h.d.b = h.d.b + K;
    }
}
""", [15, 22, 30, 40]),
    # ... nor a control-level constant, in apply or in an action calling the function
    "function_vs_control_local_const": ("""
const bit<8> K = 5;
bit<8> f(bit<8> a) { return a + K; }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    const bit<8> K = 1;
    action act() { h.d.c = f(h.d.c) + K; }
    apply {
        sm.egress_spec = 1;
        h.d.a = f(h.d.a);
        h.d.b = h.d.b + K;
        act();
    }
}
""", [15, 21, 36, 40]),
    # an action parameter named like the global, and a default argument naming the global
    "function_default_and_action_param": ("""
const bit<8> K = 5;
bit<8> f(in bit<8> a, in bit<8> b = K) { return a + b; }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    action a(bit<8> K) { h.d.c = f(h.d.c); h.d.d = K; }
    table t { actions = { a; } default_action = a(9); }
    apply {
        sm.egress_spec = 1;
        const bit<8> K = 1;
        h.d.a = f(h.d.a);
        h.d.b = h.d.b + K;
        t.apply();
    }
}
""", [15, 21, 35, 9]),
    # function parameters and locals named like the caller's variables
    "function_params_vs_caller_locals": ("""
bit<8> f(in bit<8> a, in bit<8> b) { bit<8> x = a - b; return x; }
bit<8> g(in bit<8> x) { bit<8> a = x + 1; return a; }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> a = h.d.b;
        bit<8> b = h.d.a;
        bit<8> x = 3;
        h.d.a = f(b, a);
        h.d.b = f(a, b) + x;
        h.d.c = g(a) + x;
        h.d.d = a;
    }
}
""", [246, 13, 24, 20]),
    # a sub-control's body refers to the global the caller's control-level variable shadows
    "subcontrol_vs_control_local_variable": ("""
const bit<8> K = 5;
control Sub(inout bit<8> x) {
    apply { x = x + K; }
}
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    bit<8> K = 1;
    Sub() s;
    apply {
        sm.egress_spec = 1;
        s.apply(h.d.a);
        h.d.b = h.d.b + K;
    }
}
""", [15, 21, 30, 40]),
    # shadowing inside the sub-control itself, with an explicit top-level path
    "subcontrol_nested_shadowing": ("""
const bit<8> K = 5;
control Sub(inout bit<8> x) {
    const bit<8> K = 7;
    apply {
        x = x + K;
        { const bit<8> K = 50; x = x + K; }
        x = x + K + .K;
    }
}
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    bit<8> K = 1;
    Sub() s;
    apply {
        sm.egress_spec = 1;
        s.apply(h.d.a);
        h.d.b = h.d.b + K;
    }
}
""", [79, 21, 30, 40]),
    # a sub-control of a sub-control, each level with its own K
    "subcontrol_two_levels": ("""
const bit<8> K = 5;
control Inner(inout bit<8> x) { apply { x = x + K; } }
control Outer(inout bit<8> y) {
    const bit<8> K = 100;
    Inner() i;
    apply { i.apply(y); y = y + K; }
}
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    const bit<8> K = 1;
    Outer() o;
    apply {
        sm.egress_spec = 1;
        o.apply(h.d.a);
        h.d.b = h.d.b + K;
    }
}
""", [115, 21, 30, 40]),
    # top-level actions keep referring to the global, called directly or from a table
    "toplevel_action_vs_control_local": ("""
const bit<8> K = 5;
action add_k(inout bit<8> x) { x = x + K; }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    const bit<8> K = 1;
    action a2() { add_k(h.d.c); h.d.d = h.d.d + K; }
    table t { actions = { a2; } default_action = a2(); }
    apply {
        sm.egress_spec = 1;
        add_k(h.d.a);
        h.d.b = h.d.b + K;
        t.apply();
    }
}
""", [15, 21, 35, 41]),
    # a caller variable passed to a sub-control is not captured by the callee's action
    # parameter of the same name (argument declared in the caller's apply block)
    "subcontrol_arg_vs_action_param_apply_local": ("""
control Sub(inout bit<8> x, in bit<8> y) {
    action set(bit<8> v) { x = v + y; }
    table t { actions = { set; } default_action = set(7); }
    apply { t.apply(); }
}
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() s;
    apply {
        sm.egress_spec = 1;
        bit<8> v = h.d.b;
        s.apply(h.d.a, v);
    }
}
""", [27, 20, 30, 40]),
    # ... a control-level variable and a constructor argument, with named action arguments
    "subcontrol_args_vs_action_params": ("""
control Sub(inout bit<8> x, in bit<8> y)(bit<8> m) {
    action set(bit<8> v, bit<8> w) { x = v + y + m + w; }
    table t { actions = { set; } default_action = set(w = 1, v = 7); }
    apply { t.apply(); }
}
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    const bit<8> w = 100;
    bit<8> v;
    Sub(w) s;
    apply {
        sm.egress_spec = 1;
        v = h.d.b;
        s.apply(h.d.a, v);
    }
}
""", [128, 20, 30, 40]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_inlined_code_keeps_its_names(tmp_path: Path, name: str) -> None:
    body, want = CASES[name]
    assert list(run_src(tmp_path, program(body), IN)) == want


def test_main_constructor_argument_is_not_captured_by_block_locals(tmp_path: Path) -> None:
    """``I(K)`` in main means the global K inside I, where a local and an action parameter
    are also called K."""
    body = """
const bit<8> K = 5;
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm)(bit<8> m) {
    const bit<8> K = 1;
    action a(bit<8> K) { h.d.c = K + m; }
    table t { actions = { a; } default_action = a(2); }
    apply {
        sm.egress_spec = 1;
        h.d.a = h.d.a + m;
        h.d.b = h.d.b + K;
        t.apply();
    }
}
"""
    assert list(run_src(tmp_path, program(body, ingress="I(K)"), IN)) == [15, 21, 7, 40]


def test_renamed_action_parameter_keeps_its_control_plane_name(tmp_path: Path) -> None:
    body, _ = CASES["subcontrol_args_vs_action_params"]
    path = tmp_path / "prog.p4"
    path.write_text(program(body))
    bmv2_json, resources = compile_file(path)
    act = next(a for a in bmv2_json["actions"] if a["name"] == "I.s.set")
    assert [p["name"] for p in act["runtime_data"]] == ["v", "w"]
    info = next(a for a in resources.actions if a.name == "I.s.set")
    assert [p.name for p in info.params] == ["v", "w"]


def test_action_parameter_name_annotation_is_its_control_plane_name() -> None:
    """p4c names action parameters by ``externalName()`` in the BMv2 JSON and by
    ``controlPlaneName()`` in P4Info: both honour ``@name`` (corpus annotations.p4 has
    ``action forward(@name("out_port") bit<9> port)``)."""
    bmv2_json, resources = compile_file(Path(__file__).parents[1] / "corpus" / "annotations.p4")
    act = next(a for a in bmv2_json["actions"] if a["name"] == "AIngress.ingress.fwd")
    assert act["runtime_data"] == [{"name": "out_port", "bitwidth": 9}]
    info = next(a for a in resources.actions if a.name == "AIngress.ingress.fwd")
    assert [p.name for p in info.params] == ["out_port"]


def test_function_inlined_into_parser_keeps_the_global(tmp_path: Path) -> None:
    """Parser-level and state-level K around calls of a function that reads the global K, in
    a state statement, inside an ``if`` (the state is split) and in a select expression."""
    parser = """
const bit<8> K = 5;
bit<8> f(in bit<8> a) { return a + K; }
parser P(packet_in pkt, out headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    bit<8> K = 1;
    state start {
        pkt.extract(h.d);
        h.d.a = f(h.d.a);
        bit<8> K = 2;
        h.d.b = h.d.b + K;
        if (h.d.c == 30) { h.d.c = f(h.d.c) + K; }
        transition select(f(h.d.d)) { 45: two; default: accept; }
    }
    state two { h.d.d = K; transition accept; }
}
"""
    body = """
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
"""
    assert list(run_src(tmp_path, program(body, parser=parser), IN)) == [15, 22, 37, 1]

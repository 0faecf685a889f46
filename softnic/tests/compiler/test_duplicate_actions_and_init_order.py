"""One action bound in several tables (p4c's DuplicateActions) and the evaluation order of
control- and parser-level initializers (p4c's MoveInitializers before SideEffectOrdering).

Expected packets are worked out from the P4_16 spec: a table's ``actions = { a(x); }`` binds
``a``'s directional parameters to ``x`` for that table only (each table's copy writes its own
location); arguments are evaluated left to right, an ``inout`` one copied in when the call is
evaluated; a control-level initializer runs each time the control's ``apply`` starts, a
parser-level one once, when the parser starts, in declaration order.
"""

from __future__ import annotations

from pathlib import Path

from softnic.runtime.api import ActionCall, MatchKey, TableEntry
from softnic.runtime.switch import Switch
from softnic.tests.compiler.engine_run import compile_src, program, run_once, run_src
from softnic.tests.compiler.p4progs import compile_text


def switch_for(tmp_path: Path, src: str) -> Switch:
    sw = Switch()
    sw.load_json(compile_src(tmp_path, src))
    return sw


# ---------------------------------------------------------------------- R1: one action, many tables

TWO_TABLES = program("""
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    action set(out bit<8> r, bit<8> v) { bit<8> t = v + 1; r = t; }
    table t1 { key = { h.d.a : exact; } actions = { set(h.d.b); } }
    table t2 { key = { h.d.a : exact; } actions = { set(h.d.c); } }
    apply { sm.egress_spec = 1; t1.apply(); t2.apply(); }
}
""")


def test_one_action_bound_to_two_locations_writes_each_tables_own(tmp_path: Path) -> None:
    sw = switch_for(tmp_path, TWO_TABLES)
    sw.table_add("I.t1", TableEntry([MatchKey(1)], ActionCall("I.set", [0x10])))
    sw.table_add("I.t2", TableEntry([MatchKey(1)], ActionCall("I.set", [0x20])))
    # t1's set writes b = 0x10 + 1, t2's writes c = 0x20 + 1; a and d stay
    assert sw.process_packet(0, bytes([1, 0, 0, 9])) == [(1, bytes([1, 0x11, 0x21, 9]))]
    # both miss (NoAction): nothing changes
    assert sw.process_packet(0, bytes([2, 5, 6, 7])) == [(1, bytes([2, 5, 6, 7]))]


def test_each_copy_is_named_like_the_action_in_json_and_p4info(tmp_path: Path) -> None:
    j, res = compile_text(tmp_path, TWO_TABLES)
    tables = {t["name"]: t for p in j["pipelines"] for t in p["tables"]}
    ids = {a["id"]: a for a in j["actions"]}
    a1 = ids[tables["I.t1"]["action_ids"][tables["I.t1"]["actions"].index("I.set")]]
    a2 = ids[tables["I.t2"]["action_ids"][tables["I.t2"]["actions"].index("I.set")]]
    # p4c-bm2-ss: one JSON action per table, both called I.set, with action data v only
    assert a1["id"] != a2["id"]
    assert a1["name"] == a2["name"] == "I.set"
    assert [r["name"] for r in a1["runtime_data"]] == [r["name"] for r in a2["runtime_data"]] \
        == ["v"]
    # P4Info is written from the front end's program: one action I.set(v), in both tables
    sets = [a for a in res.actions if a.name == "I.set"]
    assert len(sets) == 1
    assert [p.name for p in sets[0].params] == ["v"]
    refs = {t.name: [r.name for r in t.action_refs] for t in res.tables}
    assert "I.set" in refs["I.t1"] and "I.set" in refs["I.t2"]


def test_the_same_binding_in_two_tables_and_as_default_action(tmp_path: Path) -> None:
    src = program("""
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    action inc(inout bit<8> x) { x = x + 1; }
    table t1 { key = { h.d.a : exact; } actions = { inc(h.d.b); } default_action = inc(h.d.b); }
    table t2 { key = { h.d.a : exact; } actions = { inc(h.d.b); } default_action = inc(h.d.b); }
    table t3 { key = { h.d.a : exact; } actions = { inc(h.d.c); } default_action = inc(h.d.c); }
    apply { sm.egress_spec = 1; t1.apply(); t2.apply(); t3.apply(); }
}
""")
    # every table misses and runs its default: b + 1 + 1, c + 1
    assert run_src(tmp_path, src, bytes([0, 5, 7, 0])) == bytes([0, 7, 8, 0])


def test_top_level_action_bound_in_two_tables(tmp_path: Path) -> None:
    src = program("""
action nine(out bit<8> r) { r = 9; }
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    table t1 { key = { h.d.a : exact; } actions = { nine(h.d.b); } default_action = nine(h.d.b); }
    table t2 { key = { h.d.a : exact; } actions = { nine(h.d.c); } default_action = nine(h.d.c); }
    apply { sm.egress_spec = 1; t1.apply(); t2.apply(); }
}
""")
    assert run_src(tmp_path, src, bytes([0, 1, 2, 3])) == bytes([0, 9, 9, 3])


def test_switch_on_action_run_of_the_second_table(tmp_path: Path) -> None:
    src = program("""
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    action set(out bit<8> r, bit<8> v) { r = v; }
    action other() { h.d.d = 0x44; }
    table t1 { key = { h.d.a : exact; } actions = { set(h.d.b); other; } }
    table t2 { key = { h.d.a : exact; } actions = { set(h.d.c); other; } }
    apply {
        sm.egress_spec = 1;
        t1.apply();
        switch (t2.apply().action_run) {
            set: { h.d.d = 0x33; }
        }
    }
}
""")
    sw = switch_for(tmp_path, src)
    sw.table_add("I.t1", TableEntry([MatchKey(1)], ActionCall("I.set", [0x10])))
    sw.table_add("I.t2", TableEntry([MatchKey(1)], ActionCall("I.set", [0x20])))
    sw.table_add("I.t2", TableEntry([MatchKey(2)], ActionCall("I.other", [])))
    # t2 runs its set (c = 0x20), so the switch's set case runs (d = 0x33)
    assert sw.process_packet(0, bytes([1, 0, 0, 0])) == [(1, bytes([1, 0x10, 0x20, 0x33]))]
    # t2 runs other (d = 0x44) and no case matches
    assert sw.process_packet(0, bytes([2, 0, 0, 0])) == [(1, bytes([2, 0, 0, 0x44]))]


# ---------------------------------------------------------------------- W2: initializer order

FUNC = "bit<8> set1(inout bit<8> s) { s = 1; return 2; }\nstruct S { bit<8> x; bit<8> y; }\n"


def test_control_level_initializer_reads_before_a_later_call_changes(tmp_path: Path) -> None:
    src = program(FUNC + """
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    S tmp = { h.d.a, set1(h.d.a) };
    bit<8> later = h.d.a;
    apply { sm.egress_spec = 1; h.d.b = tmp.x; h.d.c = tmp.y; h.d.d = later; }
}
""")
    # tmp.x = a before set1 (7); set1 makes a = 1 and gives 2; later reads a after tmp: 1
    assert run_src(tmp_path, src, bytes([7, 0, 0, 0])) == bytes([1, 7, 2, 1])


def test_parser_level_initializer_order_and_function_call(tmp_path: Path) -> None:
    parser = """
parser P(packet_in pkt, out headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    S tmp = { meta.m, set1(meta.m) };
    state start { pkt.extract(h.d); h.d.b = tmp.x; h.d.c = tmp.y; h.d.d = meta.m;
                  transition accept; }
}
"""
    src = program("""
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
""", parser=FUNC + parser)
    # meta.m starts at 0 (v1model zeroes metadata); tmp = {0, 2}; set1 makes meta.m = 1
    j = compile_src(tmp_path, src)
    assert run_once(j, bytes([9, 9, 9, 9])) == bytes([9, 0, 2, 1])
    # no state goes back to start: the initializers open start itself (p4c's mid end merges
    # MoveInitializers' new start state into the old one), so no parse state is added
    [p] = j["parsers"]
    assert [s["name"] for s in p["parse_states"]] == ["start"]


def test_parser_level_initializer_runs_once_when_start_loops(tmp_path: Path) -> None:
    parser = """
parser P(packet_in pkt, out headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    bit<8> n = 5;
    state start {
        n = n + 1;
        transition select(pkt.lookahead<bit<8>>()) { 0: skip; default: done; }
    }
    state skip { pkt.advance(8); transition start; }
    state done { pkt.extract(h.d); meta.m = n; transition accept; }
}
"""
    src = program("""
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; h.d.d = meta.m; }
}
""", parser=parser)
    # two zero bytes are skipped: start runs three times, n = 5 + 3 = 8 (the initializer
    # runs once, when the parser starts, not each time start is entered); the skipped bytes
    # are not part of h.d and so not emitted
    assert run_src(tmp_path, src, bytes([0, 0, 4, 3, 2, 1])) == bytes([4, 3, 2, 8])

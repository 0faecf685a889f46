"""Hand-written BMv2 JSON in the forms p4c-bm2-ss 1.2.4 emits, for ``test_bmv2_dialect.py``.

Each builder writes one small v1model program the way p4c's BMv2 back end does (scalars and
standard_metadata instances, ``s[0]``-named stack elements, primitive arguments of type
``expression`` holding a whole expression node, ``extract_VL`` lengths wrapped in an
``expression``, ...): the shapes come from p4c's backends/bmv2/common (expression.cpp,
action.cpp, parser.cpp) and behavioral-model's docs/JSON_format.md, not from softnic's output.
The P4 each stands for is in its docstring.
"""

from __future__ import annotations

from softnic.tests.runtime.fixtures.make_fixtures import (
    EMPTY_EGRESS,
    action,
    assign,
    ex,
    extract,
    fld,
    hdr,
    htype,
    hx,
    prim,
    program,
    state,
    table,
    wrap,
)


def const_table(name: str, tid: int, act: str, aid: int, nxt: str | None) -> dict:
    """A keyless table running one action (p4c's tbl_<action> for statements in apply)."""
    return table(name, tid, [], [(act, aid)], (aid, [], True), base_next=nxt)


def vl_stack() -> dict:
    """header h_t { bit<8> len; bit<8> err; }  header v_t { bit<8> n; varbit<16> d; }
    struct hs_t { h_t h; v_t[2] s; }
    parser: pkt.extract(hdr.h); pkt.extract(hdr.s.next, (bit<32>)hdr.h.len); accept
    ingress: sm.egress_spec = 1; hdr.h.err = (bit<8>)sm.parser_error;
    deparser: emit(hdr.h); emit(hdr.s);
    """
    types = [htype("h_t", 2, [["len", 8, False], ["err", 8, False]]),
             dict(htype("v_t", 3, [["n", 8, False], ["d", "*"]]), max_length=3)]
    headers = [hdr("h", 2, "h_t"), hdr("s[0]", 3, "v_t"), hdr("s[1]", 4, "v_t")]
    length = {"type": "expression", "value": fld("h", "len")}
    start = state("start", 0, [
        extract("h"),
        {"op": "extract_VL", "parameters": [{"type": "stack", "value": "s"}, length]},
    ], [], [(None, None, None)])
    act = action("act", 0, [], [
        assign(fld("standard_metadata", "egress_spec"), hx(1)),
        assign(fld("h", "err"), wrap(ex("&", fld("standard_metadata", "parser_error"),
                                        hx(0xFF)))),
    ])
    ingress = {"init_table": "tbl_act", "action_profiles": [], "conditionals": [],
               "tables": [const_table("tbl_act", 0, "act", 0, None)]}
    return program("vl_stack", types, headers, [start], ["h", "s[0]", "s[1]"], [act], ingress,
                   EMPTY_EGRESS, header_stacks=[{"name": "s", "id": 0, "header_type": "v_t",
                                                 "size": 2, "header_ids": [3, 4]}])


def header_select() -> dict:
    """header h_t { bit<8> sel; }  header t_t { bit<8> x; }  struct { h_t h; t_t a, b, c; }
    ingress: sm.egress_spec = 1; hdr.a = hdr.h.sel == 1 ? hdr.b : hdr.c;
    (p4c: assign_header whose source is the '?' expression, wrapped as every argument is)
    """
    types = [htype("h_t", 2, [["sel", 8, False]]), htype("t_t", 3, [["x", 8, False]])]
    headers = [hdr("h", 2, "h_t"), hdr("a", 3, "t_t"), hdr("b", 4, "t_t"), hdr("c", 5, "t_t")]
    start = state("start", 0, [extract("h"), extract("a"), extract("b"), extract("c")], [],
                  [(None, None, None)])
    choose = wrap({"type": "expression", "value": {
        "op": "?", "left": {"type": "header", "value": "b"},
        "right": {"type": "header", "value": "c"},
        "cond": ex("==", fld("h", "sel"), hx(1))}})
    act = action("act", 0, [], [
        assign(fld("standard_metadata", "egress_spec"), hx(1)),
        prim("assign_header", {"type": "header", "value": "a"}, choose),
    ])
    ingress = {"init_table": "tbl_act", "action_profiles": [], "conditionals": [],
               "tables": [const_table("tbl_act", 0, "act", 0, None)]}
    return program("header_select", types, headers, [start], ["h", "a", "b", "c"], [act],
                   ingress, EMPTY_EGRESS)


def exit_in_action(keyed: bool) -> dict:
    """header h_t { bit<8> k; bit<8> x; bit<8> y; bit<8> z; }
    ingress: action f() { sm.egress_spec = 1; hdr.h.x = 5; exit; }
             t.apply() (default_action f, keyed on hdr.h.k or keyless); hdr.h.x = 9;
    egress:  hdr.h.z = 3;
    The JSON's f also has ``hdr.h.y = 7`` *after* the exit primitive: p4c never writes that
    (it stops converting an action at exit), but BMv2 runs it, since its exit only marks the
    packet; the pipeline stops before the next table, and egress still runs.
    """
    types = [htype("h_t", 2, [["k", 8, False], ["x", 8, False], ["y", 8, False],
                              ["z", 8, False]])]
    start = state("start", 0, [extract("h")], [], [(None, None, None)])
    acts = [
        action("I.f", 0, [], [assign(fld("standard_metadata", "egress_spec"), hx(1)),
                              assign(fld("h", "x"), hx(5)), prim("exit"),
                              assign(fld("h", "y"), hx(7))]),
        action("nine", 1, [], [assign(fld("h", "x"), hx(9))]),
        action("three", 2, [], [assign(fld("h", "z"), hx(3))]),
    ]
    keys = [("exact", ["h", "k"], "hdr.h.k")] if keyed else []
    t = table("I.t", 0, keys, [("I.f", 0)], (0, [], not keyed), base_next="tbl_nine")
    ingress = {"init_table": "I.t", "action_profiles": [], "conditionals": [],
               "tables": [t, const_table("tbl_nine", 1, "nine", 1, None)]}
    egress = {"init_table": "tbl_three", "action_profiles": [], "conditionals": [],
              "tables": [const_table("tbl_three", 2, "three", 2, None)]}
    return program("exit_in_action", types, [hdr("h", 2, "h_t")], [start], ["h"], acts,
                   ingress, egress)


def stack_index() -> dict:
    """header h_t { bit<8> idx; bit<8> b; }  header e_t { bit<8> v; }  e_t[2] s
    parser: extract(hdr.h); extract(hdr.s.next); extract(hdr.s.next); accept
    ingress: sm.egress_spec = 1; hdr.s[hdr.h.idx].v = hdr.h.b;
    (p4c: the run-time indexed lvalue is ``access_field`` of ``dereference_header_stack``,
    wrapped in an ``expression`` argument - JSON_format.md's own example)
    """
    types = [htype("h_t", 2, [["idx", 8, False], ["b", 8, False]]),
             htype("e_t", 3, [["v", 8, False]])]
    headers = [hdr("h", 2, "h_t"), hdr("s[0]", 3, "e_t"), hdr("s[1]", 4, "e_t")]
    stack = {"type": "header_stack", "value": "s"}
    start = state("start", 0, [extract("h"),
                               {"op": "extract", "parameters": [stack | {"type": "stack"}]},
                               {"op": "extract", "parameters": [stack | {"type": "stack"}]}],
                  [], [(None, None, None)])
    elem = ex("dereference_header_stack", stack, fld("h", "idx"))
    lvalue = wrap({"type": "expression", "value": {"op": "access_field", "left": elem,
                                                   "right": 0}})
    act = action("act", 0, [], [assign(fld("standard_metadata", "egress_spec"), hx(1)),
                                assign(lvalue, fld("h", "b"))])
    ingress = {"init_table": "tbl_act", "action_profiles": [], "conditionals": [],
               "tables": [const_table("tbl_act", 0, "act", 0, None)]}
    return program("stack_index", types, headers, [start], ["h", "s[0]", "s[1]"], [act],
                   ingress, EMPTY_EGRESS, header_stacks=[{"name": "s", "id": 0,
                                                          "header_type": "e_t", "size": 2,
                                                          "header_ids": [3, 4]}])

"""Expression forms of the engine (``exprgen``) that the other tests leave alone: run-time header
stack indices (``dereference_header_stack`` / ``access_field``, as rvalue and lvalue), stack
fields and lookahead in the parser, ``lastIndex``, header unions, signed stack fields, the
legacy JSON forms BMv2 also accepts, and the load-time errors of malformed expressions.

Programs are compiled by softnic's front end; the legacy / malformed variants are that JSON with
one node changed, loaded into the real engine and driven with packets.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from softnic.runtime.api import PipelineLoadError
from softnic.tests.runtime.mut_programs import compile_src, one_out, program, switch_for, walk

STACK = program(
    types="header h_t { bit<8> idx; bit<8> a; bit<8> b; bit<8> c; bit<8> n; bit<8> d; }\n"
          "header e_t { bit<8> v; }",
    headers={"h": "h_t", "s": "e_t[3]"},
    parse="pkt.extract(hdr.h); "
          "transition select(pkt.lookahead<bit<8>>()) { 0: accept; default: parse_s; }",
    # lastIndex is read in the parser: p4c allows it nowhere else
    states="state parse_s { pkt.extract(hdr.s.next); hdr.h.n = (bit<8>)hdr.s.lastIndex; "
           "transition select(hdr.s.last.v) { 0xFF: accept; default: parse_s; } }",
    ingress="""
        hdr.h.a = hdr.s[hdr.h.idx].v;
        hdr.s[hdr.h.idx].v = hdr.h.b;
        if (hdr.s[hdr.h.idx].isValid()) { hdr.h.c = 1; } else { hdr.h.c = 2; }
        if (sm.parser_error == error.StackOutOfBounds) { hdr.h.d = 1; }
    """)


@pytest.fixture(scope="module")
def stack_json(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return compile_src(tmp_path_factory.mktemp("stack"), STACK)


def h(idx: int, b: int = 0) -> bytes:
    return bytes([idx, 0xEE, b, 0, 0, 0])


# (packet, expected output): h is idx a b c n d, then the stack elements, then payload
STACK_CASES = [
    (h(0, 0x55) + bytes.fromhex("0a0bff"), bytes([0, 0x0A, 0x55, 1, 2, 0]) + bytes.fromhex(
        "550bff")),
    (h(1, 0x66) + bytes.fromhex("0a0bff"), bytes([1, 0x0B, 0x66, 1, 2, 0]) + bytes.fromhex(
        "0a66ff")),
    (h(2, 0x77) + bytes.fromhex("0a0bff"), bytes([2, 0xFF, 0x77, 1, 2, 0]) + bytes.fromhex(
        "0a0b77")),
    # two elements: s[2] is invalid, so reading it gives no value and writing it is lost
    (h(1, 0x12) + bytes.fromhex("0aff"), bytes([1, 0xFF, 0x12, 1, 1, 0]) + bytes.fromhex(
        "0a12")),
    # a fourth element does not fit: StackOutOfBounds, the rest stays payload
    (h(0, 0x00) + bytes.fromhex("01020304"), bytes([0, 0x01, 0x00, 1, 2, 1]) + bytes.fromhex(
        "00020304")),
]


def legacy_variants(j: dict) -> Iterator[tuple[str, dict]]:
    """The program as compiled, and as older p4c versions / hand-written JSON express it."""
    yield "as compiled", j
    # header fields given as [name, width] (no signedness): unsigned
    k = copy.deepcopy(j)
    for ht in k["header_types"]:
        ht["fields"] = [f[:2] for f in ht["fields"]]
    yield "two-element fields", k


@pytest.mark.parametrize(("data", "expected"), STACK_CASES)
def test_runtime_stack_index_and_parser_stack_fields(stack_json, data, expected) -> None:
    for name, j in legacy_variants(stack_json):
        sw = switch_for(j)
        assert one_out(sw, data) == expected, name
        assert sw.stats.engine_errors == 0


def test_isvalid_of_a_runtime_stack_element(stack_json) -> None:
    sw = switch_for(stack_json)
    out = one_out(sw, h(2) + bytes.fromhex("0aff"))
    assert out[3] == 2  # s[2] invalid
    out = one_out(sw, h(1) + bytes.fromhex("0aff"))
    assert out[3] == 1


# -- legacy JSON: {"op": "valid", "right": <header>} and bare header / expression wrappers ------

UNION = program(
    types="header a_t { bit<8> x; }\nheader b_t { bit<16> y; }\n"
          "header_union u_t { a_t a; b_t b; }\n"
          "header h_t { bit<8> kind; bit<8> r; bit<8> q; }",
    headers={"h": "h_t", "u": "u_t"},
    parse="pkt.extract(hdr.h); transition select(hdr.h.kind) "
          "{ 1: pa; 2: pb; default: accept; }",
    states="state pa { pkt.extract(hdr.u.a); transition accept; } "
           "state pb { pkt.extract(hdr.u.b); transition accept; }",
    ingress="""
        if (hdr.u.isValid()) { hdr.h.r = 1; } else { hdr.h.r = 2; }
        if (hdr.u.a.isValid()) { hdr.h.q = 3; }
        if (hdr.u.b.isValid()) { hdr.h.q = 4; }
    """)


@pytest.fixture(scope="module")
def union_json(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return compile_src(tmp_path_factory.mktemp("union"), UNION)


def legacy_valid(j: dict) -> dict:
    """Every ``d2b(h.$valid$)`` rewritten as the P4-14-era ``valid(h)`` operator."""
    k = copy.deepcopy(j)
    n = 0
    for node in walk(k):
        if node.get("op") == "d2b":
            r = node.get("right") or {}
            if r.get("type") == "field" and r["value"][1] == "$valid$":
                node["op"] = "valid"
                node["right"] = {"type": "header", "value": r["value"][0]}
                n += 1
    assert n
    return k


UNION_CASES = [(bytes([1, 0, 0, 0x41]), bytes([1, 1, 3, 0x41])),
               (bytes([2, 0, 0, 0x41, 0x42]), bytes([2, 1, 4, 0x41, 0x42])),
               (bytes([3, 0, 0, 0x41]), bytes([3, 2, 0, 0x41]))]


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize(("data", "expected"), UNION_CASES)
def test_header_union_validity(union_json, legacy, data, expected) -> None:
    sw = switch_for(legacy_valid(union_json) if legacy else union_json)
    assert one_out(sw, data) == expected


def test_union_validity_is_a_valid_union_expression(union_json) -> None:
    assert any(n.get("op") == "valid_union" for n in walk(union_json))


# -- signed stack fields through a run-time index ------------------------------------------------

SIGNED_STACK = program(
    types="header h_t { bit<8> idx; bit<8> neg; bit<8> w; }\nheader e_t { int<8> v; }",
    headers={"h": "h_t", "s": "e_t[2]"},
    parse="pkt.extract(hdr.h); pkt.extract(hdr.s.next); pkt.extract(hdr.s.next); "
          "transition accept;",
    meta="int<16> w;",
    ingress="""
        hdr.s[hdr.h.idx].v = hdr.s[hdr.h.idx].v - 8s1;
        if (hdr.s[hdr.h.idx].v < 0) { hdr.h.neg = 1; } else { hdr.h.neg = 2; }
        meta.w = (int<16>)hdr.s[hdr.h.idx].v;
        hdr.h.w = (bit<8>)(int<8>)(meta.w >> 8);
    """)


@pytest.mark.parametrize(("idx", "v", "neg"), [(0, 0x00, 1), (1, 0x00, 1), (0, 0x01, 2),
                                               (1, 0x80, 2), (0, 0x81, 1), (1, 0x7F, 2)])
def test_signed_field_written_through_a_runtime_index(tmp_path, idx, v, neg) -> None:
    sw = switch_for(compile_src(tmp_path, SIGNED_STACK))
    s = [0x10, 0x10]
    s[idx] = v
    out = one_out(sw, bytes([idx, 0, 0] + s))
    nv = (v - 1) & 0xFF
    exp = [0x10, 0x10]
    exp[idx] = nv
    assert out == bytes([idx, neg, 0xFF if nv & 0x80 else 0] + exp)


# -- malformed expressions fail at load time, naming where ----------------------------------------

def first(j: dict, pred: Callable[[dict], bool]) -> dict:
    return next(n for n in walk(j) if pred(n))


def access_field_rvalue(j: dict) -> dict:
    """The ``access_field`` node read by ``hdr.h.a = hdr.s[hdr.h.idx].v``."""
    act = first(j, lambda n: n.get("op") == "assign"
                and n["parameters"][0] == {"type": "field", "value": ["h", "a"]})
    return first(act["parameters"][1], lambda n: n.get("op") == "access_field")


def access_field_lvalue(j: dict) -> dict:
    act = first(j, lambda n: n.get("op") == "assign"
                and n["parameters"][1] == {"type": "field", "value": ["h", "b"]})
    return first(act["parameters"][0], lambda n: n.get("op") == "access_field")


def set_(node_fn: Callable[[dict], dict], key: str, value: Any) -> Callable[[dict], None]:
    return lambda j: node_fn(j).__setitem__(key, value)


BAD_STACK: dict[str, tuple[Callable[[dict], None], str]] = {
    "rvalue offset past the fields": (set_(access_field_rvalue, "right", 1),
                                      r"bad field offset 1"),
    "rvalue negative offset": (set_(access_field_rvalue, "right", -1), r"bad field offset -1"),
    "rvalue offset not an int": (set_(access_field_rvalue, "right", "0"),
                                 r"bad field offset '0'"),
    "lvalue offset past the fields": (set_(access_field_lvalue, "right", 1),
                                      r"bad field offset 1"),
    "lvalue negative offset": (set_(access_field_lvalue, "right", -1), r"bad field offset -1"),
    "lvalue offset not an int": (set_(access_field_lvalue, "right", None),
                                 r"bad field offset None"),
    "not a header": (set_(access_field_rvalue, "left", {"type": "hexstr", "value": "0x1"}),
                     r"expected a header reference"),
    "unknown stack": (lambda j: first(access_field_rvalue(j), lambda n: n.get(
        "op") == "dereference_header_stack")["left"].__setitem__("value", "nostack"),
        r"nostack"),
    "lvalue not assignable": (lambda j: first(j, lambda n: n.get("op") == "assign"
                                              and n["parameters"][1] == {
                                                  "type": "field", "value": ["h", "b"]})
                              ["parameters"].__setitem__(0, {"type": "hexstr", "value": "0x1"}),
                              r"not an assignable field"),
    "lvalue not a dict": (lambda j: first(j, lambda n: n.get("op") == "assign"
                                          and n["parameters"][1] == {
                                              "type": "field", "value": ["h", "b"]})
                          ["parameters"].__setitem__(0, 7), r"malformed lvalue 7"),
    "lookahead malformed": (lambda j: first(j, lambda n: n.get("type") == "lookahead")
                            .__setitem__("value", [0]), r"malformed lookahead"),
    "lookahead not ints": (lambda j: first(j, lambda n: n.get("type") == "lookahead")
                           .__setitem__("value", [0, "8"]), r"malformed lookahead"),
    "stack_field malformed": (lambda j: first(j, lambda n: n.get("type") == "stack_field")
                              .__setitem__("value", ["s"]), r"malformed stack_field"),
    "stack_field unknown field": (lambda j: first(j, lambda n: n.get("type") == "stack_field")
                                  .__setitem__("value", ["s", "nofield"]), r"nofield"),
    "hexstr bool": (lambda j: first(j, lambda n: n.get("type") == "hexstr")
                    .__setitem__("value", True), r"expected a hex string, got True"),
    "hexstr list": (lambda j: first(j, lambda n: n.get("type") == "hexstr")
                    .__setitem__("value", [1]), r"expected a hex string, got \[1\]"),
    "hexstr garbage": (lambda j: first(j, lambda n: n.get("type") == "hexstr")
                       .__setitem__("value", "0xq"), r"malformed hex string '0xq'"),
    "unknown expression type": (set_(access_field_rvalue, "left", {"type": "nonsense"}),
                                r"Invalid 'type' in expression: 'nonsense'"),
}


@pytest.mark.parametrize("case", sorted(BAD_STACK))
def test_malformed_stack_expressions_fail_at_load(stack_json, case) -> None:
    fn, msg = BAD_STACK[case]
    j = copy.deepcopy(stack_json)
    fn(j)
    with pytest.raises(PipelineLoadError, match=msg):
        switch_for(j)


def test_stack_program_loads_after_a_failed_variant(stack_json) -> None:
    """The JSON helpers above change copies: the compiled program itself still loads."""
    assert json.dumps(stack_json)
    switch_for(stack_json)


def test_unknown_header_union_fails_at_load(union_json) -> None:
    j = copy.deepcopy(union_json)
    first(j, lambda n: n.get("op") == "valid_union")["right"]["value"] = "nounion"
    with pytest.raises(PipelineLoadError, match=r"unknown header union 'nounion'"):
        switch_for(j)


# -- header operations through run-time indices and union members ---------------------------------

COPY = program(
    types="header h_t { bit<8> idx; bit<8> k; }\nheader e_t { bit<8> v; bit<8> w; }",
    headers={"h": "h_t", "x": "e_t", "s": "e_t[3]"},
    parse="pkt.extract(hdr.h); pkt.extract(hdr.x); pkt.extract(hdr.s.next); "
          "pkt.extract(hdr.s.next); hdr.h.k = (bit<8>)hdr.s.lastIndex; transition accept;",
    ingress="""
        hdr.s[hdr.h.idx] = hdr.x;
    """)


@pytest.mark.parametrize(("idx", "stack"), [(0, "abcd0304"), (1, "0102abcd"),
                                          (2, "01020304abcd")])
def test_header_copied_into_a_runtime_indexed_stack_element(tmp_path, idx, stack) -> None:
    """Copying a valid header makes the element valid and touches no other element."""
    sw = switch_for(compile_src(tmp_path, COPY))
    out = one_out(sw, bytes([idx, 0]) + bytes.fromhex("abcd" "0102" "0304"))
    assert out[2:4] == bytes.fromhex("abcd")
    assert out[4:] == bytes.fromhex(stack)
    assert out[1] == 1  # lastIndex as the parser left it (p4c allows it only there)


def test_size_stack_counts_the_valid_elements(stack_json) -> None:
    """BMv2's ``size_stack`` operator (the stack's current size) in place of lastIndex."""
    for node in walk(stack_json):
        if node.get("op") == "last_stack_index":
            node["op"] = "size_stack"
    sw = switch_for(stack_json)
    assert one_out(sw, h(0) + bytes.fromhex("0a0bff"))[4] == 3
    assert one_out(sw, h(0) + bytes.fromhex("0aff"))[4] == 2


UNION_SET = program(
    types="header a_t { bit<8> x; }\nheader b_t { bit<16> y; }\n"
          "header_union u_t { a_t a; b_t b; }\n"
          "header h_t { bit<8> kind; }",
    headers={"h": "h_t", "u": "u_t"},
    parse="pkt.extract(hdr.h); transition select(hdr.h.kind) "
          "{ 1: pa; 2: pb; default: accept; }",
    states="state pa { pkt.extract(hdr.u.a); transition accept; } "
           "state pb { pkt.extract(hdr.u.b); transition accept; }",
    ingress="""
        if (hdr.h.kind == 1) { hdr.u.b.setValid(); hdr.u.b.y = 16w0x4243; }
        if (hdr.h.kind == 2) { hdr.u.a.setValid(); hdr.u.a.x = 8w0x44; }
    """)


def test_setvalid_of_a_union_member_invalidates_the_others(tmp_path) -> None:
    sw = switch_for(compile_src(tmp_path, UNION_SET))
    assert one_out(sw, bytes([1, 0x41])) == bytes([1, 0x42, 0x43])
    assert one_out(sw, bytes([2, 0x41, 0x42])) == bytes([2, 0x44])
    assert one_out(sw, bytes([3, 0x41])) == bytes([3, 0x41])


def test_valid_union_with_a_malformed_operand_fails_at_load(union_json) -> None:
    j = copy.deepcopy(union_json)
    first(j, lambda n: n.get("op") == "valid_union")["right"] = "u"
    with pytest.raises(PipelineLoadError, match=r"Invalid 'type' in expression"):
        switch_for(j)


def test_signed_stack_field_read_into_an_unsigned_field(tmp_path) -> None:
    """``hdr.s.last.v`` (a ``stack_field``) of an int<8> element, stored into a bit<8> field."""
    j = compile_src(tmp_path, SIGNED_STACK)
    act = first(j, lambda n: n.get("op") == "assign"
                and n["parameters"][0] == {"type": "field", "value": ["h", "w"]})
    act["parameters"][1] = {"type": "stack_field", "value": ["s", "v"]}
    sw = switch_for(j)
    # s[1] is the last element; idx 0 changes s[0] only
    assert one_out(sw, bytes([0, 0, 0, 0x10, 0xFE]))[2] == 0xFE
    assert one_out(sw, bytes([0, 0, 0, 0x10, 0x7F]))[2] == 0x7F


def test_raw_integer_operands(stack_json) -> None:
    """A plain integer where an expression goes is refused at load, as BMv2's loader does
    (every operand is a type-value object there)."""
    j = copy.deepcopy(stack_json)
    act = first(j, lambda n: n.get("op") == "assign"
                and n["parameters"][0] == {"type": "field", "value": ["h", "a"]})
    act["parameters"][1] = {"type": "expression", "value": {"type": "expression", "value": {
        "op": "+", "left": 40, "right": {"type": "hexstr", "value": "0x2"}}}}
    with pytest.raises(PipelineLoadError, match=r"Invalid 'type' in expression: ''"):
        switch_for(j)


ONE = program(
    types="header h_t { bit<8> idx; bit<8> a; }\nheader e_t { bit<8> v; }",
    headers={"h": "h_t", "s": "e_t[1]"},
    parse="pkt.extract(hdr.h); pkt.extract(hdr.s.next); "
          "transition select(hdr.s.last.v) { default: accept; }",
    ingress="hdr.h.a = hdr.s[hdr.h.idx].v; hdr.s[hdr.h.idx].v = 8w0x77;")


def test_stack_of_one_element(tmp_path) -> None:
    sw = switch_for(compile_src(tmp_path, ONE))
    assert one_out(sw, bytes([0, 0, 0x42])) == bytes([0, 0x42, 0x77])


PLEN = program(
    types="header h_t { bit<8> a; bit<8> ilen; bit<8> elen; }",
    headers={"h": "h_t"},
    ingress="sm.packet_length = 32w100; hdr.h.ilen = sm.packet_length[7:0];",
    egress="hdr.h.elen = sm.packet_length[7:0];")


def test_egress_packet_length_is_the_packets_after_an_ingress_write(tmp_path) -> None:
    """The traffic manager sets egress packet_length from the packet, whatever ingress wrote."""
    sw = switch_for(compile_src(tmp_path, PLEN))
    assert one_out(sw, bytes(3) + b"abcd") == bytes([0, 100, 7]) + b"abcd"


VLCOPY = program(
    types="header l_t { bit<8> len; }\nheader o_t { bit<8> kind; varbit<64> opts; }",
    headers={"l": "l_t", "o": "o_t", "o2": "o_t"},
    parse="pkt.extract(hdr.l); pkt.extract(hdr.o, (bit<32>)hdr.l.len << 3); transition accept;",
    ingress="hdr.o2 = hdr.o;")


@pytest.mark.parametrize("opts", [b"", b"\x01", b"\x01\x02\x03"])
def test_copy_of_a_header_with_a_varbit_field(tmp_path, opts) -> None:
    sw = switch_for(compile_src(tmp_path, VLCOPY))
    o = b"\xc3" + opts
    assert one_out(sw, bytes([len(opts)]) + o + b"tail") == bytes([len(opts)]) + o + o + b"tail"

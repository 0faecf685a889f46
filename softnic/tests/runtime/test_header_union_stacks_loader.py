"""BMv2 JSON with ``header_union_stacks`` (a P4_16 ``U[2] us``): the loader, ``union_stack``
extracts in the parser and push/pop on a ``header_union_stack``.

The JSON is p4c's form, written by hand on top of a compiled program with two plain unions
``u0``/``u1`` of type ``U { A a; B b; }`` that become the elements of stack ``us``
(JSON_format.md: header_union_stacks' ``header_union_ids`` list the element unions in order;
``extract`` of type ``union_stack`` takes ``[stack, member]``). Expected packets follow the
P4_16 spec: ``us.next.m`` extracts into element nextIndex (then nextIndex + 1), push_front(1)
moves every element up one and invalidates element 0, pop_front(1) moves them down one.
"""
from __future__ import annotations

import copy
from typing import Any

import pytest

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.switch import Switch
from softnic.tests.compiler.p4progs import compile_text

SRC = """
#include <core.p4>
#include <v1model.p4>
header T { bit<8> tag; }
header A { bit<8> a; }
header B { bit<16> b; }
header_union U { A a; B b; }
struct H { T t; U u0; U u1; }
struct M { }
parser P(packet_in pk, out H h, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(h.t); transition select(h.t.tag) { 1: pa; default: accept; } }
    state pa { pk.extract(h.u0.a); transition accept; }
}
control VC(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action push_one() { h.t.tag = 9; }
    action pop_one() { h.t.tag = 8; }
    apply {
        sm.egress_spec = 1;
        if (h.t.tag == 3) { push_one(); }
        if (h.t.tag == 4) { pop_one(); }
        if (sm.parser_error == error.StackOutOfBounds) { h.t.tag = 0x77; }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H h, inout M m) { apply { } }
control D(packet_out pk, in H h) { apply { pk.emit(h.t); pk.emit(h.u0); pk.emit(h.u1); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _extract_us(member: str) -> dict[str, Any]:
    return {"op": "extract", "parameters": [{"type": "union_stack", "value": ["us", member]}]}


def _state(name: str, sid: int, ops: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "id": sid, "parser_ops": ops, "transition_key": [],
            "transitions": [{"type": "default", "value": None, "mask": None,
                             "next_state": None}]}


def _hex(v: int) -> dict[str, Any]:
    return {"type": "hexstr", "value": hex(v)}


@pytest.fixture(scope="module")
def us_json(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    j, _ = compile_text(tmp_path_factory.mktemp("us"), SRC)
    assert [u["name"] for u in j["header_unions"]] == ["u0", "u1"]
    j["header_union_stacks"] = [{"name": "us", "id": 0, "union_type": "U", "size": 2,
                                 "header_union_ids": [u["id"] for u in j["header_unions"]]}]
    [parser] = j["parsers"]
    start = next(s for s in parser["parse_states"] if s["name"] == "start")
    start["transitions"] = [
        {"type": "hexstr", "value": "0x01", "mask": None, "next_state": "sa"},
        {"type": "hexstr", "value": "0x02", "mask": None, "next_state": "sb"},
        {"type": "hexstr", "value": "0x03", "mask": None, "next_state": "sab"},
        {"type": "hexstr", "value": "0x04", "mask": None, "next_state": "sab"},
        {"type": "hexstr", "value": "0x05", "mask": None, "next_state": "sabb"},
        {"type": "default", "value": None, "mask": None, "next_state": None}]
    parser["parse_states"] = [start, _state("sa", 11, [_extract_us("a")]),
                              _state("sb", 12, [_extract_us("b")]),
                              _state("sab", 13, [_extract_us("a"), _extract_us("b")]),
                              _state("sabb", 14, [_extract_us("a"), _extract_us("b"),
                                                  _extract_us("b")])]
    for a in j["actions"]:
        op = {"I.push_one": "push", "I.pop_one": "pop"}.get(a["name"])
        if op:
            a["primitives"] = [{"op": op, "parameters": [
                {"type": "header_union_stack", "value": "us"}, _hex(1)]}]
    return j


def run(j: dict[str, Any], pkt: bytes) -> bytes:
    sw = Switch()
    sw.load_json(j)
    [(port, data)] = sw.process_packet(0, pkt)
    assert port == 1
    return data


PAY = bytes([0xE0, 0xE1])


def test_extract_into_next_element(us_json: dict[str, Any]) -> None:
    # us[0].a, then us[0].b: each extract fills element 0 (nextIndex 0)
    assert run(us_json, bytes([1, 0xAA]) + PAY) == bytes([1, 0xAA]) + PAY
    assert run(us_json, bytes([2, 0xBB, 0xCC]) + PAY) == bytes([2, 0xBB, 0xCC]) + PAY


def test_push_front_moves_whole_unions(us_json: dict[str, Any]) -> None:
    # tag 3: us[0].a = AA, us[1].b = BBCC; push_front(1): us[1] = old us[0] (a), us[0] invalid;
    # the old us[1] (b = BBCC) falls off the end
    assert run(us_json, bytes([3, 0xAA, 0xBB, 0xCC]) + PAY) == bytes([3, 0xAA]) + PAY


def test_pop_front_moves_whole_unions(us_json: dict[str, Any]) -> None:
    # tag 4: as tag 3, then pop_front(1): us[0] = old us[1] (b = BBCC), us[1] invalid
    assert run(us_json, bytes([4, 0xAA, 0xBB, 0xCC]) + PAY) == bytes([4, 0xBB, 0xCC]) + PAY


def test_extract_past_the_last_element_is_stack_out_of_bounds(us_json: dict[str, Any]) -> None:
    # tag 5: a, b fill both elements; the third extract (us.next.b) fails with
    # StackOutOfBounds before consuming anything, and ingress sets the tag to 0x77
    pkt = bytes([5, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE]) + PAY
    assert run(us_json, pkt) == bytes([0x77]) + pkt[1:]


def _load_error(j: dict[str, Any]) -> str:
    with pytest.raises(PipelineLoadError) as exc:
        Switch().load_json(j)
    return str(exc.value)


def test_unknown_union_id_is_refused(us_json: dict[str, Any]) -> None:
    j = copy.deepcopy(us_json)
    j["header_union_stacks"][0]["header_union_ids"] = [0, 7]
    assert "unknown header union id" in _load_error(j)


def test_unknown_member_is_refused(us_json: dict[str, Any]) -> None:
    j = copy.deepcopy(us_json)
    j["parsers"][0]["parse_states"][1]["parser_ops"] = [_extract_us("c")]
    assert "no member 'c'" in _load_error(j)


def test_unknown_union_stack_in_push_is_refused(us_json: dict[str, Any]) -> None:
    j = copy.deepcopy(us_json)
    a = next(a for a in j["actions"] if a["name"] == "I.push_one")
    a["primitives"][0]["parameters"][0]["value"] = "nope"
    assert "header union stack' with name 'nope'" in _load_error(j)


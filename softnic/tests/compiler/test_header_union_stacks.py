"""Stacks of header unions (``U[3] us``), compiled as p4c-bm2-ss does and run on the engine.

p4c (HeaderConverter::addHeaderStacks) lays ``us`` out as header unions ``us[0]``..``us[2]``
whose members are header instances ``us[i].a`` / ``us[i].b``, listed in
``header_union_stacks``; ``pk.extract(h.us.next.a)`` is an ``extract`` of type
``union_stack`` with value ``["us", "a"]``; push_front/pop_front are ``push``/``pop`` on a
``header_union_stack``. Expected packets are worked out from the P4_16 spec: ``us.next.m``
extracts into element nextIndex, at most one member of an element is valid, push_front(n)/
pop_front(n) move whole elements, ``emit(us)`` emits the valid member of each element in order.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from softnic.compiler.diagnostics import CompileError
from softnic.runtime.switch import Switch
from softnic.tests.compiler.p4progs import compile_text

SRC = """
#include <core.p4>
#include <v1model.p4>
header T { bit<8> tag; bit<8> op; }
header A { bit<8> a; }
header B { bit<16> b; }
header_union U { A a; B b; }
struct H { T t; U[3] us; }
struct M { }
parser P(packet_in pk, out H h, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(h.t); transition select(h.t.tag) { 0: accept; default: opt; } }
    state opt {
        transition select(pk.lookahead<bit<8>>()) {
            0xA0 &&& 0xF0: pa; 0xB0 &&& 0xF0: pb; default: accept; }
    }
    state pa { pk.extract(h.us.next.a); transition opt; }
    state pb { pk.extract(h.us.next.b); transition opt; }
}
control VC(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (h.us[0].a.isValid()) { h.t.tag = h.t.tag | 0x10; }
        if (h.us[1].b.isValid()) { h.t.tag = h.t.tag | 0x20; h.us[1].b.b = h.us[1].b.b + 1; }
        if (h.t.op == 1) { h.us.push_front(1); h.us[0].a.setValid(); h.us[0].a.a = 0xAF; }
        if (h.t.op == 2) { h.us.pop_front(1); }
        if (h.t.op == 3) { h.us[2].b.setValid(); h.us[2].b.b = 0xBEEF; }
        if (h.t.op == 4) { h.us[0].b.setValid(); h.us[0].b.b = 0x1234; }
        if (h.t.op == 5) { h.us.push_front(2); }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H h, inout M m) { apply { } }
control D(packet_out pk, in H h) { apply { pk.emit(h.t); pk.emit(h.us); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    j, _ = compile_text(tmp_path_factory.mktemp("us"), SRC)
    return j


@pytest.fixture(scope="module")
def sw(compiled: dict[str, Any]) -> Switch:
    s = Switch()
    s.load_json(compiled)
    return s


def send(sw: Switch, hexpkt: str) -> str:
    [(port, data)] = sw.process_packet(0, bytes.fromhex(hexpkt))
    assert port == 1
    return data.hex()


def test_json_layout_is_p4cs(compiled: dict[str, Any]) -> None:
    names = [h["name"] for h in compiled["headers"]]
    assert [n for n in names if n.startswith("us")] == [
        "us[0].a", "us[0].b", "us[1].a", "us[1].b", "us[2].a", "us[2].b"]
    assert [u["name"] for u in compiled["header_unions"]] == ["us[0]", "us[1]", "us[2]"]
    [st] = compiled["header_union_stacks"]
    assert st == {"name": "us", "id": 0, "union_type": "U", "size": 3,
                  "header_union_ids": [0, 1, 2]}
    ops = [op for s in compiled["parsers"][0]["parse_states"] for op in s["parser_ops"]]
    assert {"op": "extract", "parameters": [{"type": "union_stack", "value": ["us", "a"]}]} \
        in ops
    prims = [p for a in compiled["actions"] for p in a["primitives"]]
    pushes = [p["parameters"][0] for p in prims if p["op"] in ("push", "pop")]
    assert pushes and all(p == {"type": "header_union_stack", "value": "us"} for p in pushes)


def test_parse_and_emit(sw: Switch) -> None:
    # tag 0: no options
    assert send(sw, "0100ee") == "0100ee"
    # us[0].a = a1, us[1].a = a2; tag |= 0x10 (us[0].a valid)
    assert send(sw, "a100a1a2ee") == "b100a1a2ee"
    # us[0].a = a1, us[1].b = b2b3: tag |= 0x30, us[1].b.b + 1
    assert send(sw, "a100a1b2b3ee") == "b100a1b2b4ee"


def test_push_front(sw: Switch) -> None:
    # after parsing [a1, b2b3] and the +1: push_front(1) gives [-, a1, b2b4]; then us[0].a = af
    assert send(sw, "a101a1b2b3ee") == "b101afa1b2b4ee"
    # push_front(2) of [a1, b2b3+1]: [-, -, a1]; b2b4 falls off the end
    assert send(sw, "a105a1b2b3ee") == "b105a1ee"


def test_pop_front(sw: Switch) -> None:
    # [a1, b2b4] pop_front(1) -> [b2b4, -, -]
    assert send(sw, "a102a1b2b3ee") == "b102b2b4ee"


def test_set_valid_member_invalidates_its_sibling(sw: Switch) -> None:
    # us[0].a = a1 parsed; us[0].b.setValid() makes b the valid member of us[0]
    assert send(sw, "a104a1ee") == "b1041234ee"
    # us[2].b set valid in an otherwise empty element
    assert send(sw, "a103a1ee") == "b103a1beefee"


def test_extract_past_the_end_is_stack_out_of_bounds(sw: Switch) -> None:
    # a fourth option: StackOutOfBounds; the three parsed elements are emitted and the rest of
    # the packet (from the fourth option on) is payload
    assert send(sw, "a100a1a2a3a4ee") == "b100a1a2a3a4ee"


PB = "state pb { pk.extract(h.us.next.b); transition opt; }"
REFUSED = [
    ("sm.egress_spec = 1;", "sm.egress_spec = 1; h.us[h.t.op].a.setValid();",
     "run-time index into a stack of header unions"),
    (PB, "state pb { pk.extract(h.us.next.b); h.t.op = (bit<8>)h.us.lastIndex; "
         "transition opt; }", "lastIndex of a stack of header unions"),
    (PB, "state pb { pk.extract(h.us.next.b); h.t.op = h.us.last.b.b[7:0]; "
         "transition opt; }", ".last of a stack of header unions"),
]


@pytest.mark.parametrize("old,new,msg", REFUSED)
def test_unsupported_uses_are_positioned_refusals(tmp_path: Path, old: str, new: str,
                                                  msg: str) -> None:
    assert old in SRC
    with pytest.raises(CompileError) as exc:
        compile_text(tmp_path, SRC.replace(old, new, 1))
    text = str(exc.value)
    assert msg in text and "prog.p4:" in text


def test_clone_metadata_reset_keeps_union_stack_index(compiled: dict[str, Any]) -> None:
    """BMv2's reset_metadata for a clone zeroes metadata only; a header-union stack's
    nextIndex, like a header stack's, belongs to the packet's headers and is kept."""
    from softnic.runtime.build import build_pipeline

    pl = build_pipeline(compiled, 511)
    [st] = pl.prog.layout.union_stacks.values()
    assert not any(a <= st.next_slot < b for a, b in pl.meta_ranges)

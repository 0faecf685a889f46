"""BMv2 JSON forms that softnic's front end does not write but BMv2 (and older p4c) accept, and
the truncation rules of stores, run on the engine.

Each test compiles a small program with softnic's front end, changes one expression of the JSON
to the form under test, loads it into the real engine and sends packets.
"""

from __future__ import annotations

import pytest

from softnic.runtime.api import PipelineLoadError
from softnic.tests.runtime.mut_programs import compile_src, one_out, program, switch_for, walk

SRC = program(
    types="header h_t { bit<8> a; bit<8> b; bit<16> c; bit<8> d; int<8> s; bit<8> e; }",
    headers={"h": "h_t"},
    ingress_decls="register<bit<16>>(4) r;",
    ingress="""
        r.write(0, hdr.h.c);
        hdr.h.c = 16w0x0C0C;
        hdr.h.d = 8w0x0D;
        hdr.h.b = 8w0x0B;
        if (hdr.h.a == 8w0x5A) { hdr.h.e = 1; } else { hdr.h.e = 2; }
    """)


def assign_of(j: dict, field: str) -> dict:
    """The ``assign`` primitive writing the constant into ``hdr.h.<field>``."""
    return next(n for n in walk(j) if n.get("op") == "assign"
                and n["parameters"][0] == {"type": "field", "value": ["h", field]}
                and n["parameters"][1].get("type") == "hexstr")


def condition(j: dict) -> dict:
    [pl] = [p for p in j["pipelines"] if p["name"] == "ingress"]
    [c] = pl["conditionals"]
    return c


@pytest.fixture
def j(tmp_path) -> dict:
    return compile_src(tmp_path, SRC)


def run(j: dict, a: int = 0, b: int = 0, c: int = 0, s: int = 0) -> bytes:
    return one_out(switch_for(j), bytes([a, b]) + c.to_bytes(2, "big") + bytes([0, s, 0]))


def test_as_compiled(j) -> None:
    assert run(j, 0x5A, 1, 0x1234) == bytes.fromhex("5a0b0c0c0d" "0001")
    assert run(j, 0x5B, 1, 0x1234) == bytes.fromhex("5b0b0c0c0d" "0002")


# -- stores truncate to the destination ----------------------------------------------------------

@pytest.mark.parametrize(("c", "b"), [(0x0134, 0x34), (0xFFFF, 0xFF), (0x00FF, 0xFF)])
def test_wider_field_stored_into_a_narrower_one_is_truncated(j, c, b) -> None:
    assign_of(j, "c")["parameters"][1]["value"] = hex(c)
    assign_of(j, "b")["parameters"][1] = {"type": "field", "value": ["h", "c"]}
    assert run(j)[1] == b


def test_negative_constant_stored_into_an_unsigned_field(j) -> None:
    assign_of(j, "b")["parameters"][1] = {"type": "hexstr", "value": "-0x1"}
    assign_of(j, "d")["parameters"][1] = {"type": "hexstr", "value": "-0x80"}
    out = run(j)
    assert (out[1], out[4]) == (0xFF, 0x80)


def test_signed_field_stored_into_an_unsigned_field(j) -> None:
    assign_of(j, "b")["parameters"][1] = {"type": "field", "value": ["h", "s"]}
    assert run(j, s=0xFF)[1] == 0xFF
    assert run(j, s=0x80)[1] == 0x80
    assert run(j, s=0x7F)[1] == 0x7F


def test_unsigned_and_of_a_signed_field(j) -> None:
    assign_of(j, "c")["parameters"][1] = {"type": "expression", "value": {
        "type": "expression", "value": {
            "op": "&", "left": {"type": "field", "value": ["h", "s"]},
            "right": {"type": "field", "value": ["h", "s"]}}}}
    assert run(j, s=0xFE)[2:4] == b"\xff\xfe"  # -2 & -2 == -2, stored as bit<16>
    assert run(j, s=0x05)[2:4] == b"\x00\x05"


# -- register reads as expressions --------------------------------------------------------------

def register_read(index: int) -> dict:
    return {"type": "register", "value": ["I.r", {"type": "hexstr", "value": hex(index)}]}


def test_register_as_an_expression(j) -> None:
    assign_of(j, "c")["parameters"][1] = register_read(2)
    assign_of(j, "d")["parameters"][1] = {"type": "expression", "value": {
        "type": "expression", "value": {
            "op": "&", "left": register_read(0), "right": {"type": "hexstr", "value": "0xff"}}}}
    sw = switch_for(j)
    sw.register_write("I.r", 2, 0xBEEF)
    out = one_out(sw, bytes([0, 0, 0x12, 0x34, 0, 0, 0]))
    assert out[2:5] == bytes([0xBE, 0xEF, 0x34])  # r[0] was written with c = 0x1234 first


@pytest.mark.parametrize(("value", "msg"), [
    (["I.r"], r"malformed register reference"),
    (["I.r", {"type": "hexstr", "value": "0x0"}, 1], r"malformed register reference"),
    ("I.r", r"malformed register reference"),
    (["I.nope", {"type": "hexstr", "value": "0x0"}], r"unknown register array 'I.nope'"),
])
def test_malformed_register_expressions(j, value, msg) -> None:
    assign_of(j, "c")["parameters"][1] = {"type": "register", "value": value}
    with pytest.raises(PipelineLoadError, match=msg):
        switch_for(j)


# -- literal booleans and bare headers as conditions ---------------------------------------------

@pytest.mark.parametrize(("expr", "e"), [
    ({"type": "bool", "value": True}, 1), ({"type": "bool", "value": False}, 2),
    ({"type": "expression", "value": {"op": "and", "left": {"type": "bool", "value": True},
                                      "right": {"type": "bool", "value": True}}}, 1),
    ({"type": "expression", "value": {"op": "or", "left": {"type": "bool", "value": False},
                                      "right": {"type": "bool", "value": False}}}, 2),
    ({"type": "header", "value": "h"}, 1),
    ({"type": "expression", "value": {"op": "not", "right": {"type": "header", "value": "h"}}},
     2),
])
def test_literal_and_header_conditions(j, expr, e) -> None:
    condition(j)["expression"] = expr
    sw = switch_for(j)
    out = one_out(sw, bytes(7))
    assert out[6] == e
    assert sw.stats.engine_errors == 0


@pytest.mark.parametrize("v", [True, False])
def test_literal_booleans_stored_into_a_bit_field(j, v) -> None:
    # BMv2 takes a bool only inside an expression argument (a bare ``true`` or a ``bool``
    # argument is refused at load: test_bmv2_dialect.py)
    assign_of(j, "b")["parameters"][1] = {"type": "expression", "value": {"type": "bool",
                                                                          "value": v}}
    assign_of(j, "d")["parameters"][1] = {"type": "expression", "value": {
        "type": "expression", "value": {"op": "b2d", "left": None,
                                        "right": {"type": "bool", "value": v}}}}
    out = run(j)
    assert (out[1], out[4]) == (int(v), int(v))


# -- action parameters --------------------------------------------------------------------------

ACT = program(
    types="header h_t { bit<8> a; bit<8> b; }",
    headers={"h": "h_t"},
    ingress_decls="""
        action set(bit<8> x, bit<8> y) { hdr.h.a = x; hdr.h.b = y; }
        table t { key = { hdr.h.a : exact; } actions = { set; } default_action = set(1, 2); }
    """,
    ingress="t.apply();")


@pytest.mark.parametrize(("index", "msg"), [(2, r"parameter at offset 2 but action only has 2"),
                                            (-1, r"bad runtime_data index -1"),
                                            ("0", r"bad runtime_data index '0'")])
def test_runtime_data_index_checked_at_load(tmp_path, index, msg) -> None:
    j = compile_src(tmp_path, ACT)
    [a] = [a for a in j["actions"] if a["name"] == "I.set"]
    a["primitives"][1]["parameters"][1] = {"type": "runtime_data", "value": index}
    with pytest.raises(PipelineLoadError, match=msg):
        switch_for(j)


def test_runtime_data_last_index(tmp_path) -> None:
    j = compile_src(tmp_path, ACT)
    [a] = [a for a in j["actions"] if a["name"] == "I.set"]
    a["primitives"][0]["parameters"][1] = {"type": "runtime_data", "value": 1}
    assert one_out(switch_for(j), b"\x00\x00") == b"\x02\x02"

"""Bounded work per packet and per load: jumps, shifts, casts and nesting that JSON or a packet
controls cannot hang the switch or cost unbounded time and memory.

Each test failed before its fix: a backward ``_jump`` looped forever holding the switch lock; a
shift by a packet field of 0xffffffff took seconds and hundreds of MB; a cast width taken from a
field computed ``1 << width`` per packet; deep expression nesting crashed the loader.
"""

from __future__ import annotations

import copy
import tracemalloc
from typing import Any

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.exprgen import MAX_EXPR_DEPTH
from softnic.runtime.switch import Switch
from softnic.tests.runtime.engine_helpers import fixture_json
from softnic.tests.runtime.test_engine_robustness import run_bounded


def _f(h: str, f: str) -> dict:
    return {"type": "field", "value": [h, f]}


def _hex(v: int) -> dict:
    return {"type": "hexstr", "value": hex(v)}


def _e(op: str, left: Any, right: Any) -> dict:
    return {"type": "expression", "value": {"op": op, "left": left, "right": right}}


def _with_condition(expr: dict) -> dict:
    """basic_l3 whose ingress condition is ``ipv4.isValid() && expr``: true sends the packet
    to the (empty) LPM table, whose default action drops it; false forwards it unchanged to
    port 0."""
    j = fixture_json("basic_l3")
    cond = j["pipelines"][0]["conditionals"][0]
    cond["expression"] = _e("and", cond["expression"], expr)
    return j


def _packet(src: str, dst: str) -> bytes:
    return bytes(Ether() / IP(src=src, dst=dst) / UDP())


def _peak_bytes(sw: Switch, data: bytes) -> tuple[list, int]:
    """Output of one packet and the peak memory Python allocated while processing it: a
    measure of work that does not depend on the machine's speed."""
    tracemalloc.start()
    try:
        out = run_bounded(sw, 1, data, seconds=60)
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_shift_by_a_packet_supplied_amount_is_constant_time():
    # (srcAddr << dstAddr) & 0xffffffff == 0, with the amount taken from the packet
    shifted = _e("&", _e("<<", _f("ipv4", "srcAddr"), _f("ipv4", "dstAddr")), _hex(0xFFFFFFFF))
    sw = Switch()
    sw.load_json(_with_condition(_e("==", shifted, _hex(0))))
    # amount 0xffffffff: the truncated result is 0 -> condition true -> dropped by the table;
    # computing it would allocate a 512 MB int first
    out, peak = _peak_bytes(sw, _packet("10.0.0.1", "255.255.255.255"))
    assert out == []
    assert peak < 1 << 20, f"{peak} bytes allocated for one packet"
    # amount 32 (= the width): also 0 after truncation
    assert run_bounded(sw, 1, _packet("10.0.0.1", "0.0.0.32")) == []
    # amount 1: 0x0a000002 != 0 -> condition false -> forwarded unchanged
    data = _packet("10.0.0.1", "0.0.0.1")
    assert run_bounded(sw, 1, data) == [(0, data)]
    assert sw.stats.engine_errors == 0


def test_shift_left_primitive_with_a_huge_amount_is_constant_time():
    j = fixture_json("basic_l3")
    drop = next(a for a in j["actions"] if a["name"] == "MyIngress.drop")
    # ttl = srcAddr << dstAddr (the primitive form), before mark_to_drop
    drop["primitives"].insert(0, {"op": "shift_left", "parameters": [
        _f("ipv4", "ttl"), _f("ipv4", "srcAddr"), _f("ipv4", "dstAddr")]})
    sw = Switch()
    sw.load_json(j)
    out, peak = _peak_bytes(sw, _packet("10.0.0.1", "255.255.255.255"))
    assert out == []
    assert peak < 1 << 20, f"{peak} bytes allocated for one packet"
    assert sw.stats.engine_errors == 0


@pytest.mark.parametrize("target", [0, 1], ids=["to itself", "backward"])
def test_backward_jump_is_refused_at_load(target: int):
    j = fixture_json("basic_l3")
    drop = next(a for a in j["actions"] if a["name"] == "MyIngress.drop")
    drop["primitives"] = [{"op": "no_op", "parameters": []},
                          {"op": "_jump", "parameters": [_hex(target)]}]
    with pytest.raises(PipelineLoadError, match="only forward jumps"):
        Switch().load_json(j)


def test_jump_to_a_computed_target_is_refused_at_load():
    j = fixture_json("basic_l3")
    drop = next(a for a in j["actions"] if a["name"] == "MyIngress.drop")
    drop["primitives"].insert(0, {"op": "_jump", "parameters": [_f("ipv4", "ttl")]})
    with pytest.raises(PipelineLoadError, match="jump target must be a constant"):
        Switch().load_json(j)


def test_forward_jumps_still_run():
    """A p4c-style action: if (ttl == 0) { ttl = 7 } else { ttl = 9 }, as _jump_if_zero /
    _jump, then mark_to_drop is replaced by forwarding to port 3."""
    j = fixture_json("basic_l3")
    drop = next(a for a in j["actions"] if a["name"] == "MyIngress.drop")
    ttl = _f("ipv4", "ttl")
    drop["primitives"] = [
        {"op": "_jump_if_zero", "parameters": [
            {"type": "expression", "value": _e("d2b", None, _e("==", ttl, _hex(0)))}, _hex(3)]},
        {"op": "assign", "parameters": [ttl, _hex(7)]},
        {"op": "_jump", "parameters": [_hex(4)]},
        {"op": "assign", "parameters": [ttl, _hex(9)]},
        {"op": "assign", "parameters": [_f("standard_metadata", "egress_spec"), _hex(3)]},
    ]
    sw = Switch()
    sw.load_json(j)
    for ttl_in, ttl_out in ((0, 7), (5, 9)):
        pkt = bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2", ttl=ttl_in) / UDP())
        out = run_bounded(sw, 1, pkt)
        assert len(out) == 1 and out[0][0] == 3
        assert IP(out[0][1][14:]).ttl == ttl_out


@pytest.mark.parametrize("op", ["two_comp_mod", "sat_cast", "usat_cast"])
def test_cast_width_from_a_field_is_refused(op: str):
    j = _with_condition(_e("==", _e(op, _f("ipv4", "srcAddr"), _f("ipv4", "dstAddr")), _hex(0)))
    with pytest.raises(PipelineLoadError, match="cast width must be a constant"):
        Switch().load_json(j)


def test_deeply_nested_expression_is_a_clean_load_error():
    expr: dict = _f("ipv4", "ttl")
    for _ in range(5000):
        expr = _e("+", expr, _hex(1))
    with pytest.raises(PipelineLoadError, match="nested deeper"):
        Switch().load_json(_with_condition(_e("==", expr, _hex(0))))


def test_nesting_just_under_the_bound_loads():
    expr: dict = _f("ipv4", "ttl")
    for _ in range(MAX_EXPR_DEPTH // 2 - 4):  # two levels each: the wrapper and the op
        expr = _e("+", expr, _hex(1))
    Switch().load_json(_with_condition(_e("==", expr, _hex(0))))


def test_mark_to_drop_uses_the_switch_drop_port():
    """With --drop-port 100 (Switch(drop_port=100)), mark_to_drop writes 100, and a packet
    sent to 100 is dropped while port 511 is an ordinary port."""
    j = fixture_json("basic_l3")
    # drop unconditionally in ingress via the table default (ipv4_lpm misses)
    sw = Switch(drop_port=100)
    sw.load_json(copy.deepcopy(j))
    assert run_bounded(sw, 1, _packet("10.0.0.1", "10.0.0.2")) == []
    # the same action writing 511 explicitly is forwarded to port 511 on this switch
    drop = next(a for a in j["actions"] if a["name"] == "MyIngress.drop")
    drop["primitives"] = [{"op": "assign", "parameters": [
        _f("standard_metadata", "egress_spec"), _hex(511)]}]
    sw2 = Switch(drop_port=100)
    sw2.load_json(j)
    out = run_bounded(sw2, 1, _packet("10.0.0.1", "10.0.0.2"))
    assert [p for p, _ in out] == [511]

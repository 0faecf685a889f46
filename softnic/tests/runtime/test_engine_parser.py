"""Parser semantics: header stacks, stack_field keys, verify, lookahead, parser errors that do
not drop (v1model), push/pop primitives."""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from softnic.runtime.api import ActionCall, MatchKey, TableEntry
from softnic.tests.runtime.engine_helpers import load_switch

SRC_POP = 0x000000000A0A
SRC_PUSH = 0x000000000B0B


@pytest.fixture
def sw():
    s = load_switch("stack_parser")
    s.table_add("MyIngress.edit", TableEntry([MatchKey(SRC_POP)], ActionCall("MyIngress.pop")))
    s.table_add("MyIngress.edit", TableEntry([MatchKey(SRC_PUSH)],
                                             ActionCall("MyIngress.push")))
    return s


def eth(src: int = 1) -> bytes:
    return bytes.fromhex("000000000001") + src.to_bytes(6, "big") + b"\x88\x47"


def label(val: int, bos: int) -> bytes:
    return bytes([(val << 1) | bos])


IPV4 = bytes(IP(src="1.1.1.1", dst="2.2.2.2") / UDP() / b"data")


def run(sw, data: bytes) -> bytes:
    [(port, out)] = sw.process_packet(0, data)
    assert port == 1
    return out


def error_code(out: bytes) -> int:
    return int.from_bytes(out[12:14], "big")  # fwd() writes parser_error into etherType


def test_stack_and_lookahead_parse_cleanly(sw):
    data = eth() + label(1, 0) + label(2, 1) + IPV4
    out = run(sw, data)
    assert error_code(out) == 0
    assert out[14:] == data[14:]


def test_lookahead_without_match_accepts(sw):
    data = eth() + label(1, 1) + b"\x60" + bytes(39)
    out = run(sw, data)
    assert error_code(out) == 0 and out[14:] == data[14:]


def test_stack_overflow_is_stack_out_of_bounds_and_not_dropped(sw):
    data = eth() + label(1, 0) + label(2, 0) + label(3, 0) + label(4, 1) + IPV4
    out = run(sw, data)
    assert error_code(out) == 3
    assert out[14:] == data[14:]  # 3 extracted labels re-emitted, the rest is payload


def test_verify_raises_program_error(sw):
    data = eth() + label(1, 0) + label(0x7F, 1) + IPV4
    assert error_code(run(sw, data)) == 7


def test_too_short_is_packet_too_short(sw):
    data = eth() + label(1, 0)
    out = run(sw, data)
    assert error_code(out) == 1 and out[14:] == data[14:]


def test_pop_front_removes_first_label(sw):
    data = eth(SRC_POP) + label(1, 0) + label(2, 1) + IPV4
    out = run(sw, data)
    assert out[14:] == label(2, 1) + IPV4


def test_push_front_adds_label(sw):
    data = eth(SRC_PUSH) + label(1, 0) + label(2, 1) + IPV4
    out = run(sw, data)
    assert out[14:] == label(0x11, 0) + label(1, 0) + label(2, 1) + IPV4


def test_parse_non_mpls_ethernet(sw):
    data = bytes(Ether(type=0x0800)) + IPV4
    out = run(sw, data)
    assert out[12:14] == b"\x00\x00" and out[14:] == IPV4

"""Registers, hashes, counters, meters, direct counters, ternary + range tables."""

from __future__ import annotations

import zlib

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from softnic.runtime.api import ActionCall, MatchKey, TableEntry
from softnic.tests.runtime.engine_helpers import load_switch

STATS = "MyIngress.stats"
CLASSIFY = "MyIngress.classify"


@pytest.fixture
def sw():
    s = load_switch("stateful")
    s.table_add(STATS, TableEntry([MatchKey(0x0800)], ActionCall("MyIngress.do_stats", [])))
    return s


def pkt(src: str = "1.2.3.4", dst: str = "5.6.7.8", proto: int = 17, extra: int = 0) -> bytes:
    return bytes(Ether() / IP(src=src, dst=dst, proto=proto) / UDP() / (b"x" * extra))


def expected_idx(src: bytes, dst: bytes) -> int:
    return zlib.crc32(src + dst) % 1024


def test_crc32_hash_register_counter(sw):
    data = pkt()
    idx = expected_idx(bytes([1, 2, 3, 4]), bytes([5, 6, 7, 8]))
    for i in range(3):
        out = sw.process_packet(0, data)
        assert out[0][0] == 1
        assert IP(out[0][1][14:]).id == idx
        assert sw.register_read("MyIngress.reg", idx) == i + 1
    assert sw.counter_read("MyIngress.ctr", idx) == (3, 3 * len(data))
    assert sw.register_size("MyIngress.reg") == 1024
    assert sw.counter_size("MyIngress.ctr") == 1024
    sw.register_write("MyIngress.reg", idx, 41)
    sw.process_packet(0, data)
    assert sw.register_read("MyIngress.reg", idx) == 42
    sw.counter_write("MyIngress.ctr", idx, 0, 0)
    assert sw.counter_read("MyIngress.ctr", idx) == (0, 0)


def test_register_write_masks_to_width(sw):
    sw.register_write("MyIngress.reg", 0, (1 << 40) + 5)
    assert sw.register_read("MyIngress.reg", 0) == 5


def test_direct_counter_counts_hits_only(sw):
    sw.process_packet(0, pkt())
    sw.process_packet(0, pkt(extra=10))
    sw.process_packet(0, bytes(Ether(type=0x86DD) / (b"\x00" * 40)))  # miss, not counted
    assert sw.direct_counter_read(STATS, [MatchKey(0x0800)], 0) == (2, 2 * len(pkt()) + 10)
    [e] = sw.table_entries(STATS)
    assert (e.counter_packets, e.counter_bytes) == (2, 2 * len(pkt()) + 10)


def test_meter_colours_packets_two_rate_three_colour(sw):
    assert sw.meter_get("MyIngress.mtr", 0) is None
    colours = [IP(sw.process_packet(0, pkt())[0][1][14:]).tos for _ in range(2)]
    assert colours == [0, 0]  # unconfigured meter: green
    sw.meter_set("MyIngress.mtr", 0, (1, 1, 2, 2))  # packets/s, bursts in packets
    colours = [IP(sw.process_packet(0, pkt())[0][1][14:]).tos for _ in range(3)]
    assert colours == [0, 1, 2]  # green, yellow, red
    assert sw.meter_get("MyIngress.mtr", 0) == (1, 1, 2, 2)


def test_ternary_priority_and_range(sw):
    def ttl(proto: int, extra: int) -> int:
        return IP(sw.process_packet(0, pkt(proto=proto, extra=extra))[0][1][14:]).ttl

    # low priority: any protocol, any length
    sw.table_add(CLASSIFY, TableEntry([MatchKey(0, mask=0), None],
                                      ActionCall("MyIngress.set_ttl", [10]), priority=1))
    # high priority: UDP with totalLen in 28..40
    sw.table_add(CLASSIFY, TableEntry([MatchKey(17, mask=0xFF), MatchKey(28, high=40)],
                                      ActionCall("MyIngress.set_ttl", [20]), priority=5))
    assert ttl(17, 0) == 20  # totalLen 28
    assert ttl(17, 12) == 20  # 40
    assert ttl(17, 13) == 10  # 41: out of range
    assert ttl(6, 0) == 10
    # same key at an even higher priority wins
    sw.table_add(CLASSIFY, TableEntry([MatchKey(0x10, mask=0xF0), None],
                                      ActionCall("MyIngress.set_ttl", [30]), priority=9))
    assert ttl(17, 0) == 30
    sw.table_delete(CLASSIFY, [MatchKey(0x10, mask=0xF0), None], 9)
    assert ttl(17, 0) == 20

"""Programs in the style of the p4lang/tutorials exercises p4c-bm2-ss compiles and softnic once
refused (firewall, flowcache): our own corpus programs ``stateful_firewall.p4`` and
``flow_cache.p4``, compiled by softnic and run on the engine, forwarding as the exercises
describe. Expected packets follow from the programs' text (see their header comments), the
P4_16 spec and BMv2's documented v1model behaviour (clone_preserving_field_list copies the
listed metadata as it is at the end of ingress; egress port 511 / mark_to_drop drops).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from softnic.compiler.compile import compile_file
from softnic.runtime.api import ActionCall, MatchKey, PacketIn, TableEntry
from softnic.runtime.switch import Switch

FcCompiled = tuple[dict[str, Any], dict[str, str]]
CORPUS = Path(__file__).resolve().parent.parent / "corpus"
CPU_PORT = 510


def ip4(s: str) -> int:
    a, b, c, d = (int(x) for x in s.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def checksum_ok(ip: Any) -> bool:
    fresh = ip.copy()
    del fresh.chksum
    return IP(bytes(fresh)).chksum == ip.chksum


# ---------------------------------------------------------------------- stateful firewall

INSIDE = {1: "10.0.1.1", 2: "10.0.2.2"}
OUTSIDE = {3: "10.0.3.3", 4: "10.0.4.4"}


@pytest.fixture(scope="module")
def firewall_json() -> dict[str, Any]:
    j, _ = compile_file(CORPUS / "stateful_firewall.p4")
    return j


def firewall(j: dict[str, Any]) -> Switch:
    sw = Switch()
    sw.load_json(j)
    for port, addr in {**INSIDE, **OUTSIDE}.items():
        sw.table_add("FwIngress.routes", TableEntry(
            [MatchKey(ip4(addr), prefix_len=32)],
            ActionCall("FwIngress.route", [0x0A0000000000 + port, port])))
    for i in INSIDE:
        for o in OUTSIDE:
            sw.table_add("FwIngress.port_dir", TableEntry(
                [MatchKey(i), MatchKey(o)], ActionCall("FwIngress.set_dir", [0])))
            sw.table_add("FwIngress.port_dir", TableEntry(
                [MatchKey(o), MatchKey(i)], ActionCall("FwIngress.set_dir", [1])))
    return sw


def tcp(src: str, dst: str, sport: int, dport: int, flags: str) -> bytes:
    p = (Ether(dst="00:00:00:00:00:fe", src="00:00:00:00:00:01") /
         IP(src=src, dst=dst, ttl=64) / TCP(sport=sport, dport=dport, flags=flags) /
         Raw(b"payload"))
    return bytes(p)


def through(sw: Switch, port: int, pkt: bytes) -> list[tuple[int, Any]]:
    return [(p, Ether(d)) for p, d in sw.process_packet(port, pkt)]


def filter_bits(sw: Switch, name: str) -> int:
    return sum(sw.register_read(name, i) for i in range(sw.register_size(name)))


def test_firewall_outbound_syn_is_forwarded_and_opens_the_flow(
        firewall_json: dict[str, Any]) -> None:
    sw = firewall(firewall_json)
    out = through(sw, 1, tcp("10.0.1.1", "10.0.3.3", 40000, 80, "S"))
    assert [p for p, _ in out] == [3]
    e = out[0][1]
    assert e.dst == "0a:00:00:00:00:03" and e.src == "00:00:00:00:00:fe"
    assert e[IP].ttl == 63 and checksum_ok(e[IP])
    assert bytes(e[Raw]) == b"payload"
    # one bit set in each half of the Bloom filter
    assert filter_bits(sw, "FwIngress.filter_a") == 1
    assert filter_bits(sw, "FwIngress.filter_b") == 1


def test_firewall_reply_of_an_established_flow_is_forwarded(
        firewall_json: dict[str, Any]) -> None:
    sw = firewall(firewall_json)
    assert [p for p, _ in through(sw, 1, tcp("10.0.1.1", "10.0.3.3", 40000, 80, "S"))] == [3]
    out = through(sw, 3, tcp("10.0.3.3", "10.0.1.1", 80, 40000, "SA"))
    assert [p for p, _ in out] == [1]
    assert out[0][1][IP].ttl == 63 and checksum_ok(out[0][1][IP])
    # and later packets of the flow, both ways
    assert [p for p, _ in through(sw, 3, tcp("10.0.3.3", "10.0.1.1", 80, 40000, "A"))] == [1]
    assert [p for p, _ in through(sw, 1, tcp("10.0.1.1", "10.0.3.3", 40000, 80, "A"))] == [3]


def test_firewall_new_inbound_flow_is_dropped(firewall_json: dict[str, Any]) -> None:
    sw = firewall(firewall_json)
    assert through(sw, 4, tcp("10.0.4.4", "10.0.1.1", 5555, 22, "S")) == []
    # an established flow opens only its own 5-tuple: another port pair is still dropped
    assert [p for p, _ in through(sw, 1, tcp("10.0.1.1", "10.0.3.3", 40000, 80, "S"))] == [3]
    assert through(sw, 3, tcp("10.0.3.3", "10.0.1.1", 81, 40000, "SA")) == []
    assert through(sw, 3, tcp("10.0.3.3", "10.0.2.2", 80, 40000, "SA")) == []


def test_firewall_only_a_syn_opens_a_flow(firewall_json: dict[str, Any]) -> None:
    sw = firewall(firewall_json)
    # an outbound non-SYN packet is forwarded but does not open the flow
    assert [p for p, _ in through(sw, 2, tcp("10.0.2.2", "10.0.4.4", 1234, 443, "A"))] == [4]
    assert filter_bits(sw, "FwIngress.filter_a") == 0
    assert through(sw, 4, tcp("10.0.4.4", "10.0.2.2", 443, 1234, "A")) == []


def test_firewall_inside_traffic_and_non_tcp_are_only_routed(
        firewall_json: dict[str, Any]) -> None:
    sw = firewall(firewall_json)
    # inside to inside: port_dir misses, plain forwarding
    assert [p for p, _ in through(sw, 1, tcp("10.0.1.1", "10.0.2.2", 1, 2, "S"))] == [2]
    # UDP from outside is not filtered
    udp = bytes(Ether() / IP(src="10.0.3.3", dst="10.0.1.1", proto=17) / Raw(b"12345678"))
    assert [p for p, _ in through(sw, 3, udp)] == [1]
    # no route: the default action drops
    assert through(sw, 1, tcp("10.0.1.1", "192.168.0.1", 1, 2, "S")) == []


# ---------------------------------------------------------------------- flow cache


@pytest.fixture(scope="module")
def flow_cache_json() -> tuple[dict[str, Any], dict[str, str]]:
    j, res = compile_file(CORPUS / "flow_cache.p4")
    # what the P4Runtime server tells the switch from the P4Info
    ctrl = {c.name: c.type_name for c in res.controller_headers}
    return j, ctrl


def flow_cache(compiled: tuple[dict[str, Any], dict[str, str]]
               ) -> tuple[Switch, list[PacketIn]]:
    j, ctrl = compiled
    sw = Switch(cpu_port=CPU_PORT)
    sw.load_json(j)
    sw.set_controller_headers(ctrl["packet_in"], ctrl["packet_out"])
    punted: list[PacketIn] = []
    sw.set_packet_in_handler(punted.append)
    sw.clone_session_set(57, [(CPU_PORT, 0)])
    return sw, punted


def ip_pkt(ttl: int = 64) -> bytes:
    return bytes(Ether(dst="00:00:00:00:00:02", src="00:00:00:00:00:01") /
                 IP(src="10.0.1.1", dst="10.0.2.2", ttl=ttl, tos=0x01) /
                 TCP(sport=1000, dport=2000) / Raw(b"data"))


def cache_entry(sw: Switch, port: int, dec_ttl: int) -> None:
    sw.table_add("FcIngress.flow_cache", TableEntry(
        [MatchKey(6), MatchKey(ip4("10.0.1.1")), MatchKey(ip4("10.0.2.2"))],
        ActionCall("FcIngress.use_cached", [port, dec_ttl, 0x2E, 0x0000000000AA])))


def test_flow_cache_unknown_flow_goes_to_the_controller(flow_cache_json: FcCompiled) -> None:
    sw, punted = flow_cache(flow_cache_json)
    pkt = ip_pkt()
    assert sw.process_packet(1, pkt) == []  # the original is dropped
    assert len(punted) == 1
    # the metadata set after the clone call are the values at the end of ingress
    assert punted[0].metadata == {"in_port": 1, "reason": 1, "opcode": 0}
    assert punted[0].payload == pkt
    assert sw.counter_read("FcEgress.to_cpu_count", 2)[0] == 1  # 10.0.2.2 -> index 2


def test_flow_cache_hit_forwards_with_the_cached_rewrite(flow_cache_json: FcCompiled) -> None:
    sw, punted = flow_cache(flow_cache_json)
    cache_entry(sw, 2, 1)
    out = sw.process_packet(1, ip_pkt())
    assert [p for p, _ in out] == [2] and punted == []
    e = Ether(out[0][1])
    assert e.dst == "00:00:00:00:00:aa"
    assert e[IP].ttl == 63
    assert e[IP].tos == (0x2E << 2) | 0x01  # DSCP replaced, ECN bits kept
    assert checksum_ok(e[IP])
    assert bytes(e[Raw]) == b"data"


def test_flow_cache_ttl_decrement_saturates_and_is_optional(
        flow_cache_json: FcCompiled) -> None:
    sw, _ = flow_cache(flow_cache_json)
    cache_entry(sw, 2, 1)
    assert Ether(sw.process_packet(1, ip_pkt(ttl=0))[0][1])[IP].ttl == 0
    sw2, _ = flow_cache(flow_cache_json)
    cache_entry(sw2, 3, 0)
    out = sw2.process_packet(1, ip_pkt(ttl=9))
    assert out[0][0] == 3 and Ether(out[0][1])[IP].ttl == 9


def test_flow_cache_packet_out_to_a_port(flow_cache_json: FcCompiled) -> None:
    sw, punted = flow_cache(flow_cache_json)
    pkt = ip_pkt()
    out = sw.packet_out(pkt, {"opcode": 1, "pad": 0, "port": 3})
    assert out == [(3, pkt)] and punted == []  # controller header removed, packet untouched
    assert sw.counter_read("FcIngress.from_cpu_count", 3)[0] == 1


def test_flow_cache_packet_out_with_unknown_opcode_is_punted(
        flow_cache_json: FcCompiled) -> None:
    sw, punted = flow_cache(flow_cache_json)
    pkt = ip_pkt()
    assert sw.packet_out(pkt, {"opcode": 7, "pad": 0, "port": 3}) == []
    assert len(punted) == 1
    # the egress writes NOP as the opcode; the reason and input port come from ingress
    assert punted[0].metadata == {"in_port": CPU_PORT, "reason": 2, "opcode": 0}
    assert punted[0].payload == pkt

"""Corpus programs compiled by ``softnic compile`` and run on the engine, asserting exact bytes.

Every corpus program must compile (the compiler is in the tree, so a failure is a real failure)
and what it emits must load, since the JSON claims to be what p4c-bm2-ss writes.
"""

from __future__ import annotations

import zlib
from functools import cache
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from softnic.compiler.compile import compile_file
from softnic.runtime.api import ActionCall, Digest, MatchKey, PacketIn, TableEntry
from softnic.runtime.switch import Switch

CORPUS = Path(__file__).parent.parent / "corpus"


@cache
def compiled(name: str) -> dict:
    bmv2_json, _ = compile_file(str(CORPUS / f"{name}.p4"))
    return bmv2_json


def switch(name: str, **kw: object) -> Switch:
    sw = Switch(**kw)  # type: ignore[arg-type]
    sw.load_json(compiled(name))
    return sw


def udp_pkt(ttl: int = 64, chksum: int | None = None, **ipkw: object) -> Ether:
    u = UDP(sport=1234, dport=11211)
    if chksum is not None:
        u.chksum = chksum
    return (Ether(dst="00:00:00:00:00:01", src="00:00:00:00:00:02")
            / IP(src="10.0.0.1", dst="10.0.0.2", ttl=ttl, **ipkw) / u / Raw(b"get k\r\n"))


def rebuilt(p: Ether) -> bytes:
    """Bytes scapy produces with the IPv4 and UDP checksums recomputed."""
    q = Ether(bytes(p))
    del q[IP].chksum
    if UDP in q:
        del q[UDP].chksum
    return bytes(q)


def test_basic_l3():
    sw = switch("basic_l3")
    sw.table_add("MyIngress.ipv4_lpm", TableEntry([MatchKey(0x0A000000, prefix_len=8)],
                                                  ActionCall("MyIngress.ipv4_forward",
                                                             [0x0A0B0C0D0E0F, 4])))
    p = udp_pkt()
    [(port, data)] = sw.process_packet(1, bytes(p))
    exp = Ether(bytes(p))
    exp[Ether].src, exp[Ether].dst = "00:00:00:00:00:01", "0a:0b:0c:0d:0e:0f"
    exp[IP].ttl = 63
    del exp[IP].chksum
    assert (port, data) == (4, bytes(exp))


class TestChecksums:
    def test_udp_and_ipv4_checksums_recomputed(self):
        sw = switch("checksums")
        p = udp_pkt()
        [(port, data)] = sw.process_packet(0, bytes(p))
        q = Ether(bytes(p))
        q[IP].ttl = 63
        assert (port, data) == (1, rebuilt(q))

    def test_bad_ipv4_checksum_sets_checksum_error_and_drops(self):
        sw = switch("checksums")
        p = Ether(bytes(udp_pkt()))
        p[IP].chksum ^= 0x0101
        assert sw.process_packet(0, bytes(p)) == []

    def test_bad_udp_checksum_drops_zero_checksum_is_not_verified(self):
        sw = switch("checksums")
        p = Ether(bytes(udp_pkt()))
        p[UDP].chksum ^= 0x0101
        assert sw.process_packet(0, bytes(p)) == []
        out = sw.process_packet(0, bytes(udp_pkt(chksum=0)))
        q = Ether(bytes(udp_pkt()))
        q[IP].ttl = 63
        assert out == [(1, rebuilt(q))]

    def test_varbit_options_extracted_and_reemitted(self):
        sw = switch("checksums")
        p = udp_pkt(options=b"\x94\x04\x00\x00")  # router alert: ihl 6
        data = bytes(p)
        [(port, out)] = sw.process_packet(0, data)
        assert port == 1
        assert out[14 + 20:14 + 24] == b"\x94\x04\x00\x00"  # options kept in place
        assert out[14 + 24 + 8:] == data[14 + 24 + 8:]  # UDP payload untouched
        assert out[14 + 8] == 63  # ttl decremented: the parser went through the options

    def test_varbit_length_beyond_packet_is_too_short(self):
        sw = switch("checksums")
        p = bytes(udp_pkt())
        bad = p[:14] + bytes([0x4F]) + p[15:34]  # ihl 15: 40 option bytes that are not there
        [(port, out)] = sw.process_packet(0, bad)
        assert port == 1 and len(out) == len(bad)


class TestStacksAndUnions:
    def mpls(self, label: int, bos: int, ttl: int = 64) -> bytes:
        return ((label << 12) | (bos << 8) | ttl).to_bytes(4, "big")

    def test_mpls_stack_lookahead_union_v4(self):
        sw = switch("headers_stacks")
        ip = bytes(IP(src="1.1.1.1", dst="2.2.2.2", ttl=9) / UDP() / b"x")
        data = (bytes(Ether(type=0x8847)) + self.mpls(100, 0) + self.mpls(200, 1) + ip)
        [(port, out)] = sw.process_packet(0, data)
        assert port == 1
        # mpls[0].ttl - 1, ipv4 ttl - 1 (no checksum update in this program)
        assert out[14:18] == self.mpls(100, 0, 63)
        assert out[18:22] == self.mpls(200, 1, 64)
        assert out[22 + 8] == 8 and out[22 + 9:] == ip[9:]

    def test_push_and_pop(self):
        sw = switch("headers_stacks")
        sw.table_add("StackIngress.mpls_fib", TableEntry(
            [MatchKey(100)], ActionCall("StackIngress.push_label", [77])))
        sw.table_add("StackIngress.mpls_fib", TableEntry(
            [MatchKey(300)], ActionCall("StackIngress.pop_label", [])))
        ip = bytes(IP(ttl=9) / b"x")
        eth = bytes(Ether(type=0x8847))
        [(_, out)] = sw.process_packet(0, eth + self.mpls(100, 1) + ip)
        assert out[14:22] == self.mpls(77, 0, 63) + self.mpls(100, 1, 64)
        [(_, out)] = sw.process_packet(0, eth + self.mpls(300, 0) + self.mpls(400, 1) + ip)
        assert out[14:18] == self.mpls(400, 1, 63)

    def test_vlan_stack_and_ipv6_union_member(self):
        sw = switch("headers_stacks")
        from scapy.layers.inet6 import IPv6
        from scapy.layers.l2 import Dot1Q
        p = Ether() / Dot1Q(vlan=5) / Dot1Q(vlan=7, type=0x0800) / IP(ttl=3) / b"x"
        [(_, out)] = sw.process_packet(0, bytes(p))
        # vlan[1] folded into vlan[0] and removed; ipv4 ttl - 1
        q = Ether(out)
        assert q[Dot1Q].vlan == 7 and q[Dot1Q].type == 0x8100
        v6 = bytes(Ether(type=0x86DD) / IPv6(hlim=5) / b"y")
        [(_, out)] = sw.process_packet(0, v6)
        assert out[14 + 7] == 4 and out[:14 + 7] == v6[:14 + 7]


class TestCloneResubmit:
    def test_resubmit_counts_in_preserved_metadata(self):
        sw = switch("clone_resubmit")
        sw.table_add("RIngress.policy", TableEntry([MatchKey(0x0A000002, prefix_len=32)],
                                                   ActionCall("RIngress.do_resubmit", [])))
        [(port, out)] = sw.process_packet(0, bytes(udp_pkt()))
        assert port == 1 and IP(out[14:]).tos == 1  # resubmit_count preserved

    def test_i2e_clone_and_e2e_clone(self):
        sw = switch("clone_resubmit")
        sw.clone_session_set(5, [(7, 0)])
        sw.clone_session_set(11, [(8, 0)])
        sw.table_add("RIngress.policy", TableEntry([MatchKey(0x0A000002, prefix_len=32)],
                                                   ActionCall("RIngress.mirror", [3])))
        outs = dict(sw.process_packet(0, bytes(udp_pkt())))
        assert sorted(outs) == [1, 7]
        assert outs[7][12:14] == b"\x90\x00" and outs[1] == bytes(udp_pkt())
        # REgress E2E-clones original 0x88B5 packets (not its own clones): one copy each
        e2e = bytes(Ether(type=0x88B5) / (b"z" * 20))
        outs = sw.process_packet(0, e2e)
        assert sorted(outs) == [(1, e2e), (8, e2e)]

    def test_multicast_rid_in_src_mac(self):
        sw = switch("clone_resubmit")
        sw.mc_group_set(3, [(2, 0x21), (5, 0x22)])
        sw.table_add("RIngress.policy", TableEntry([MatchKey(0x0A000002, prefix_len=32)],
                                                   ActionCall("RIngress.multicast", [3])))
        outs = sorted(sw.process_packet(0, bytes(udp_pkt())))
        assert [(p, Ether(d).src) for p, d in outs] == [(2, "00:00:00:00:00:21"),
                                                        (5, "00:00:00:00:00:22")]

    def test_recirculate_twice_then_forward(self):
        sw = switch("clone_resubmit")
        [(port, out)] = sw.process_packet(0, bytes(udp_pkt(ttl=1)))
        assert port == 1 and out == bytes(udp_pkt(ttl=1))


class TestExterns:
    def test_hash_register_counter_meter(self):
        sw = switch("externs")
        p = bytes(udp_pkt())
        slot = zlib.crc32(bytes([10, 0, 0, 1, 10, 0, 0, 2])) % 1024
        for _ in range(3):
            assert sw.process_packet(3, p) == [(1, p)]
        assert sw.register_read("XIngress.hit_count", slot) == 3
        assert sw.counter_read("XIngress.port_packets", 3)[0] == 3
        assert sw.counter_read("XIngress.port_bytes", 3)[1] == 3 * len(p)
        sw.meter_set("XIngress.port_meter", 3, (1, 1, 1, 1))
        results = [sw.process_packet(3, p) for _ in range(3)]
        assert results == [[(1, p)], [], []]  # green, then red packets are dropped

    def test_truncate_long_packets(self):
        sw = switch("externs")
        big = bytes(Ether() / IP() / UDP() / (b"a" * 1600))
        [(port, out)] = sw.process_packet(0, big)
        assert port == 1 and out == big[:64]

    def test_assert_failure_drops_instead_of_aborting(self):
        sw = switch("externs")
        bad = bytearray(bytes(udp_pkt()))
        bad[14] = 0x65  # IPv4 version 6 fails assert(hdr.ipv4.version == 4)
        assert sw.process_packet(0, bytes(bad)) == []


class TestDigestPacketIO:
    def test_digest_default_action_and_packet_in(self):
        got_d: list[Digest] = []
        got_p: list[PacketIn] = []
        sw = switch("digest_packetio", cpu_port=255)
        sw.set_controller_headers("packet_in_header_t", "packet_out_header_t")
        sw.set_digest_handler(got_d.append)
        sw.set_packet_in_handler(got_p.append)
        frame = bytes(Ether(src="00:00:00:00:00:09", dst="00:00:00:00:00:05") / b"data")
        assert sw.process_packet(4, frame) == []
        assert got_d == [Digest("mac_learn_digest_t", {"srcAddr": 9, "ingress_port": 4})]
        assert got_p == [PacketIn(frame, {"ingress_port": 4, "_pad": 0})]

    def test_packet_out_exits_ingress(self):
        sw = switch("digest_packetio", cpu_port=255)
        sw.set_controller_headers("packet_in_header_t", "packet_out_header_t")
        frame = bytes(Ether() / b"data")
        assert sw.packet_out(frame, {"egress_port": 6}) == [(6, frame)]


class TestTablesAllKinds:
    T = "TIngress."

    def ip(self, src: str = "10.1.2.3", dst: str = "20.0.0.1", proto: str = "udp",
           dport: int = 53, tos: int = 0) -> bytes:
        from scapy.layers.inet import TCP
        l4 = UDP(dport=dport) if proto == "udp" else TCP(dport=dport)
        return bytes(Ether(src="00:00:00:00:00:02", dst="00:00:00:00:00:01")
                     / IP(src=src, dst=dst, tos=tos) / l4 / b"x")

    def test_l2_const_default_and_exact_hit(self):
        sw = switch("tables_all_kinds")
        frame = bytes(Ether(dst="00:00:00:00:00:07", type=0x1234) / b"x")
        assert sw.process_packet(1, frame) == []
        sw.table_add(self.T + "l2_fwd", TableEntry([MatchKey(7)],
                                                   ActionCall(self.T + "set_port", [3])))
        assert sw.process_packet(1, frame) == [(3, frame)]

    def test_acl_const_entries_deny_tcp_low_ports(self):
        sw = switch("tables_all_kinds")
        # meta.l4_dport is the TCP/UDP destination port: TCP from 10/8 to ports 0..1023 only
        assert sw.process_packet(1, self.ip(proto="tcp", dport=80)) == []
        assert sw.process_packet(1, self.ip(proto="tcp", dport=1023)) == []
        assert sw.process_packet(1, self.ip(proto="tcp", dport=1024))[0][0] == 2
        # port_map const entry (1, 0x0800) -> port 2 when the acl permits and the lpm misses
        assert sw.process_packet(1, self.ip(src="11.1.2.3", proto="tcp"))[0][0] == 2
        assert sw.process_packet(2, self.ip(proto="udp"))[0][0] == 1
        assert sw.process_packet(4, self.ip(proto="udp")) == []  # port_map default drop

    def test_lpm_direct_counter_and_optional_key(self):
        sw = switch("tables_all_kinds")
        lpm_key = [MatchKey(0x14000000, prefix_len=8)]
        sw.table_add(self.T + "ipv4_lpm", TableEntry(lpm_key, ActionCall(
            self.T + "counted_nexthop", [9])))
        sw.table_add(self.T + "opt_match", TableEntry(
            [None, MatchKey(17)], ActionCall(self.T + "rewrite_src", [0xAA]), priority=1))
        sw.table_add(self.T + "opt_match", TableEntry(
            [MatchKey(4), MatchKey(17)], ActionCall(self.T + "rewrite_src", [0xBB]),
            priority=2))
        out = sw.process_packet(1, self.ip())
        assert Ether(out[0][1]).src == "00:00:00:00:00:aa"
        out = sw.process_packet(1, self.ip(tos=4))
        assert Ether(out[0][1]).src == "00:00:00:00:00:bb"
        pkts, nbytes = sw.direct_counter_read(self.T + "ipv4_lpm", lpm_key, 0)
        assert (pkts, nbytes) == (2, 2 * len(self.ip()))


PROGRAMS = ["annotations", "basic_l3", "checksums", "clone_resubmit", "digest_packetio",
            "expressions", "externs", "headers_stacks", "parser_select", "switch_exit",
            "tables_all_kinds"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_fuzzed_packets_hit_no_engine_error(name):
    """Random and mutated frames through every corpus program: the engine may drop them but
    must never hit an internal error (an ``assert`` in the P4 program is allowed to fail)."""
    import random

    lines: list[str] = []
    sw = switch(name, cpu_port=255, trace=lines.append)
    sw.mc_group_set(1, [(1, 1), (2, 2)])
    sw.clone_session_set(5, [(3, 0)])
    rnd = random.Random(name)
    ip = bytes(udp_pkt())[14:]
    seeds = [bytes(udp_pkt()), bytes(Ether(type=0x8847) / (b"\x00\x01\x01\x40" + ip)),
             bytes(Ether(type=0x86DD) / (b"\x60" + bytes(60))), bytes(Ether() / b"zz")]
    for _ in range(300):
        data = bytearray(rnd.choice(seeds))
        for _ in range(rnd.randrange(4)):
            if data:
                data[rnd.randrange(len(data))] = rnd.randrange(256)
        data = data[:rnd.randrange(len(data) + 1)] if rnd.random() < 0.3 else data
        sw.process_packet(rnd.choice([0, 1, 255]), bytes(data))
        errors = [ln for ln in lines if "engine error" in ln and "AssertFailed" not in ln]
        assert not errors, errors
        lines.clear()


def test_log_msg_reaches_trace():
    lines: list[str] = []
    sw = switch("externs", trace=lines.append)
    sw.process_packet(0, bytes(udp_pkt()))
    slot = zlib.crc32(bytes([10, 0, 0, 1, 10, 0, 0, 2])) % 1024
    assert any(ln.endswith(f"slot {slot} hits 0") for ln in lines)

"""Ordinary forwarding: bridging on the destination MAC, IPv4 routing, drops, packet-out."""

from __future__ import annotations

import ptf.testutils as tu
from p4cache_ptf.base import (
    CLIENT_IP,
    CLIENT_MAC,
    CLIENT_PORT,
    NEXTHOP_MAC,
    SERVER2_IP,
    SERVER2_MAC,
    SERVER2_PORT,
    SERVER_IP,
    SERVER_MAC,
    SERVER_PORT,
    SWITCH_MAC,
    P4CacheTest,
)
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

from p4cache import dataplane as dp


class L2Bridge(P4CacheTest):
    """Frames to a known MAC leave that MAC's port byte for byte, whatever they carry."""

    def runTest(self) -> None:
        frames = [
            (CLIENT_PORT, SERVER_PORT, Ether(src=CLIENT_MAC, dst=SERVER_MAC)
             / IP(src=CLIENT_IP, dst=SERVER_IP) / UDP(sport=1234, dport=53) / Raw(b"dns?")),
            (SERVER_PORT, CLIENT_PORT, Ether(src=SERVER_MAC, dst=CLIENT_MAC)
             / IP(src=SERVER_IP, dst=CLIENT_IP) / TCP(sport=11211, dport=40000, flags="SA")),
            (CLIENT_PORT, SERVER2_PORT, Ether(src=CLIENT_MAC, dst=SERVER2_MAC)
             / IP(src=CLIENT_IP, dst=SERVER2_IP) / ICMP() / Raw(b"ping" * 10)),
            (SERVER2_PORT, CLIENT_PORT, Ether(src=SERVER2_MAC, dst=CLIENT_MAC)
             / ARP(op=2, hwsrc=SERVER2_MAC, psrc=SERVER2_IP, hwdst=CLIENT_MAC, pdst=CLIENT_IP)),
            # memcached over TCP is not looked into: bridged like anything else
            (CLIENT_PORT, SERVER_PORT, Ether(src=CLIENT_MAC, dst=SERVER_MAC)
             / IP(src=CLIENT_IP, dst=SERVER_IP) / TCP(sport=40001, dport=11211, flags="PA")
             / Raw(b"get k\r\n")),
            # a frame whose IPv4 TTL is 1 is bridged too (only routing looks at the TTL)
            (CLIENT_PORT, SERVER_PORT, Ether(src=CLIENT_MAC, dst=SERVER_MAC)
             / IP(src=CLIENT_IP, dst=SERVER_IP, ttl=1) / UDP(sport=9, dport=9)),
        ]
        for in_port, out_port, frame in frames:
            with self.subTest(frame=frame.summary()):
                self.expect_forwarded(frame, in_port, out_port)


class Ipv4Route(P4CacheTest):
    """A packet to the switch's MAC for a routed prefix: new MACs, TTL - 1, checksum fixed."""

    def runTest(self) -> None:
        for payload in (b"", b"x" * 100, dp.get_request(3, b"routed")):
            frame = (Ether(src=CLIENT_MAC, dst=SWITCH_MAC)
                     / IP(src=CLIENT_IP, dst="10.9.3.4", ttl=17, id=7)
                     / UDP(sport=5555, dport=11211 if payload else 7777) / Raw(payload))
            routed = Ether(bytes(frame))
            routed[Ether].src, routed[Ether].dst = SWITCH_MAC, NEXTHOP_MAC
            routed[IP].ttl = 16
            del routed[IP].chksum
            with self.subTest(payload=payload):
                self.send(CLIENT_PORT, frame)
                tu.verify_packet(self, bytes(Ether(bytes(routed))), SERVER2_PORT)
                tu.verify_no_other_packets(self)


class Drops(P4CacheTest):
    """No table entry, no forwarding: unknown MACs, unrouted addresses, expiring TTLs, bad
    checksums on routed packets."""

    def runTest(self) -> None:
        frames = [
            Ether(src=CLIENT_MAC, dst="02:00:00:00:00:77") / ARP(pdst=SERVER_IP),
            Ether(src=CLIENT_MAC, dst=SWITCH_MAC) / IP(src=CLIENT_IP, dst="10.8.0.1")
            / UDP(sport=1, dport=2),
            Ether(src=CLIENT_MAC, dst=SWITCH_MAC) / IP(src=CLIENT_IP, dst="10.9.0.1", ttl=1)
            / UDP(sport=1, dport=2),
            # routing rewrites the header: a corrupted one is dropped, not repaired
            Ether(src=CLIENT_MAC, dst=SWITCH_MAC) / IP(src=CLIENT_IP, dst="10.9.0.1", chksum=1)
            / UDP(sport=1, dport=2),
            Ether(src=CLIENT_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(pdst=SERVER_IP),
        ]
        for frame in frames:
            with self.subTest(frame=frame.summary()):
                self.send(CLIENT_PORT, frame)
                tu.verify_no_other_packets(self)
        self.assert_stats()


class PacketOutToPort(P4CacheTest):
    """A packet-out that is not a control datagram leaves the port its header names,
    unchanged, without going through the tables (no entry would send it there)."""

    def runTest(self) -> None:
        frame = bytes(Ether(src=SWITCH_MAC, dst="02:00:00:00:00:55")
                      / IP(src="10.0.0.254", dst="10.0.0.55") / UDP(sport=7, dport=7)
                      / Raw(b"from the controller"))
        for port in (CLIENT_PORT, SERVER_PORT, SERVER2_PORT):
            with self.subTest(port=port):
                self.p4rt.packet_out(frame, egress_port=port)
                tu.verify_packet(self, frame, port)
                tu.verify_no_other_packets(self)

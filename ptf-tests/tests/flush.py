"""Flushes: a datagram that may change items the switch cannot name invalidates every slot (of
every server) before it is forwarded, unchanged, to memcached.

Such datagrams are gat/gats (their keys follow the expiry time, possibly many), flush_all,
memcached's binary protocol, meta commands with a "b" flag (their key may be base64), writes whose
key hides behind more blanks than the parser reads, lines without a command word, any datagram
holding more than one command line (memcached runs them all), such as a storage command followed
by its data block, any first IPv4 fragment to the memcached port (the rest of the datagram is
out of sight), and any later IPv4 fragment of a UDP datagram (no UDP header: whatever its
destination; the fragment that completes the host's reassembly, when memcached runs the
datagram, is the first or one of these). One whole line of another command (version, an unknown
word) changes nothing and does not flush (passthrough.py). After a flush, a refill prepared
before it loses (STATUS_WRITTEN) until the slot is invalidated again with a newer version.

The same flush on request: OP_FLUSH, a control datagram without a body from a trusted agent or
the controller (a packet-out), acknowledged STATUS_APPLIED with its version (a request id) echoed.
"""

from __future__ import annotations

import socket
import struct
import time

import ptf
import ptf.testutils as tu
from p4cache_ptf.base import (
    CLIENT_IP,
    CLIENT_MAC,
    CLIENT_PORT,
    OUTSIDER_IP,
    SERVER2_IP,
    SERVER2_PORT,
    SERVER_IP,
    SERVER_MAC,
    SERVER_PORT,
    SERVERS,
    P4CacheTest,
)
from p4cache_ptf.memcached import MemcachedTest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from p4cache import dataplane as dp

KEYS = [(b"k", 1, SERVER2_IP), (b"k", 2, SERVER_IP), (b"other", 3, SERVER_IP)]


def binary_request(opcode: int, extras: bytes, key: bytes, value: bytes) -> bytes:
    """A memcached binary-protocol request: magic 0x80, then the 24-byte header's fields."""
    body = len(extras) + len(key) + len(value)
    return (struct.pack("!BBHBBHIIQ", 0x80, opcode, len(key), len(extras), 0, 0, body, 0, 0)
            + extras + key + value)


FLUSHING = [
    ("gat", b"gat 0 k\r\n"),
    ("gat, two keys", b"gat 100 k other\r\n"),
    ("gats", b"gats 0 k\r\n"),
    ("flush_all", b"flush_all\r\n"),
    ("flush_all delayed, noreply", b"flush_all 10 noreply\r\n"),
    ("binary protocol get", binary_request(0x00, b"", b"k", b"")),
    ("binary protocol set", binary_request(0x01, bytes(8), b"k", b"v")),
    ("binary protocol delete", binary_request(0x04, b"", b"k", b"")),
    ("write behind 5 blanks", b"delete     k\r\n"),
    ("set behind 9 blanks", b"set         k 0 0 1\r\nx\r\n"),
    ("storage command and its data block", b"set unrelated 0 0 3\r\nabc\r\n"),
    ("a write after a get", b"get a\r\ndelete k\r\n"),
    ("a write after a write", b"delete a\r\ndelete k\r\n"),
    ("a harmless command, then a write", b"version\r\ndelete k\r\n"),
    ("an unknown command ended by a bare LF", b"x\n"),
    ("an empty line", b"\r\n"),
    ("a line starting with a blank", b" version\r\n"),
    ("meta delete, base64 key", b"md aw== b\r\n"),  # aw== is k
    ("meta get, base64 key", b"mg aw== b v t\r\n"),
]


class FlushTest(P4CacheTest):
    def ask(self, key: bytes, server: str, rid: int) -> Packet:
        return self.get_frame(key, rid, dst_mac=SERVERS[server][1], dst_ip=server)

    def reply(self, key: bytes, slot: int) -> bytes:
        return dp.render_value_reply(key, slot, b"value of slot %d" % slot)


class FlushInvalidatesEverything(FlushTest):
    """Each flushing datagram is forwarded unchanged and counted; afterwards no slot answers,
    an old refill is refused, and a refill after a newer invalidation serves again."""

    def runTest(self) -> None:
        version = {slot: 1 for _, slot, _ in KEYS}
        for key, slot, server in KEYS:
            self.cache(key, slot, self.reply(key, slot), server=server)
        for i, (name, payload) in enumerate(FLUSHING, start=1):
            with self.subTest(case=name):
                for key, slot, server in KEYS:
                    self.expect_hit(self.ask(key, server, slot),
                                    dp.get_reply(slot, self.reply(key, slot)))
                self.expect_forwarded(self.udp_frame(dp.memcache_frame(i, payload)))
                self.assertEqual(self.stats()[dp.STAT_FLUSH], i, "flushes counted")
                for key, slot, server in KEYS:
                    self.expect_forwarded(self.ask(key, server, 100 + slot), CLIENT_PORT,
                                          SERVERS[server][0])
                    ack = self.ctrl(dp.read_datagram(slot), quiet=False)
                    self.assertEqual(ack.status, dp.STATUS_INVALID, f"slot {slot} after a flush")
                    # A fill prepared before the flush loses, whatever its version.
                    version[slot] += 1
                    ack = self.update(slot, version[slot], self.reply(key, slot), quiet=False)
                    self.assertEqual(ack.status, dp.STATUS_WRITTEN, f"slot {slot}: {ack}")
                    version[slot] = self.refill(slot, self.reply(key, slot), version[slot] + 1,
                                                server=server)
        n = len(FLUSHING)
        self.assert_stats(flush=n, hit=3 * n, miss=3 * n, update=3 + 6 * n, stale=3 * n)


class WriteAndFlushRaces(FlushTest):
    """An invalidation that is not newer than the slot does not undo a flush; a flush does not
    unmark `written` left by a write; invalidations after a flush apply to every slot."""

    def runTest(self) -> None:
        r = self.reply(b"k", 1)
        self.cache(b"k", 1, r, version=5)
        self.expect_forwarded(self.udp_frame(dp.memcache_frame(1, b"flush_all\r\n")))
        self.assertEqual(self.update(1, 5, b"").status, dp.STATUS_STALE)
        self.assertEqual(self.update(1, 6, r).status, dp.STATUS_WRITTEN)
        self.expect_forwarded(self.get_frame(b"k", 2))
        # A write, then a flush: one newer invalidation clears both.
        self.expect_forwarded(self.udp_frame(dp.memcache_frame(3, b"delete k\r\n")))
        self.expect_forwarded(self.udp_frame(dp.memcache_frame(4, b"gat 1 k\r\n")))
        self.assertEqual(self.update(1, 7, r).status, dp.STATUS_WRITTEN)
        self.assertEqual(self.update(1, 8, b"").status, dp.STATUS_APPLIED)
        self.assertEqual(self.update(1, 9, r).status, dp.STATUS_APPLIED)
        self.expect_hit(self.get_frame(b"k", 5), dp.get_reply(5, r))
        # A slot never filled before is subject to flushes too.
        self.expect_forwarded(self.udp_frame(dp.memcache_frame(6, b"flush_all\r\n")))
        self.assertEqual(self.update(77, 1, r).status, dp.STATUS_WRITTEN)
        self.assertEqual(self.update(77, 2, b"").status, dp.STATUS_APPLIED)
        self.assertEqual(self.update(77, 3, r).status, dp.STATUS_APPLIED)
        self.assert_stats(flush=3, update=5, stale=4, miss=1, hit=1, invalidate=1)


def fragments(frame: Packet, first_bytes: int) -> tuple[Packet, Packet]:
    """``frame``'s IPv4 datagram split in two fragments, the first holding ``first_bytes``
    (a multiple of 8) of the UDP datagram."""
    ip = frame[IP]
    data = bytes(ip.payload)
    head = Ether(src=frame[Ether].src, dst=frame[Ether].dst)
    ip_fields = {"src": ip.src, "dst": ip.dst, "id": 0x5151, "proto": ip.proto, "ttl": ip.ttl}
    return (head / IP(flags="MF", frag=0, **ip_fields) / Raw(data[:first_bytes]),
            head / IP(frag=first_bytes // 8, **ip_fields) / Raw(data[first_bytes:]))


class FirstFragmentFlushes(FlushTest):
    """`delete foo` split so that the first fragment holds only the UDP header: the switch sees
    no memcached frame header, but the host reassembles the write, so the first fragment flushes
    (forwarded unchanged); the second, with no UDP header, is forwarded unchanged and flushes too
    (a later fragment, LaterFragmentsFlush). foo is no longer served; a fill prepared before the
    flush loses. A first fragment to another port does not flush (its later one does)."""

    def runTest(self) -> None:
        foo = dp.render_value_reply(b"foo", 0, b"bar")
        self.cache(b"foo", 4, foo)
        self.expect_hit(self.get_frame(b"foo", 1), dp.get_reply(1, foo))
        dns = self.udp_frame(b"\x00\x01" * 20, dport=53)
        dns_first, dns_rest = fragments(dns, 8)
        self.expect_forwarded(dns_first)
        self.assert_stats(update=1, hit=1)
        self.expect_forwarded(dns_rest)
        self.assert_stats(update=1, hit=1, flush=1)
        self.refill(4, foo, 2)
        self.expect_hit(self.get_frame(b"foo", 2), dp.get_reply(2, foo))

        first, rest = fragments(self.udp_frame(dp.memcache_frame(2, b"delete foo\r\n")), 8)
        self.assertEqual(len(first[IP].payload), 8, "the first fragment holds the UDP header only")
        self.expect_forwarded(first)
        self.assert_stats(update=3, hit=2, flush=2)
        self.expect_forwarded(rest)
        self.assert_stats(update=3, hit=2, flush=3)
        self.expect_forwarded(self.get_frame(b"foo", 3))
        self.assertEqual(self.update(4, 4, foo).status, dp.STATUS_WRITTEN)
        self.refill(4, foo, 5)
        self.expect_hit(self.get_frame(b"foo", 4), dp.get_reply(4, foo))
        # The frame header in the first fragment, the line in the second: the same.
        first, rest = fragments(self.udp_frame(dp.memcache_frame(5, b"delete foo\r\n")), 16)
        self.expect_forwarded(first)
        self.expect_forwarded(rest)
        self.expect_forwarded(self.get_frame(b"foo", 6))
        self.assert_stats(update=5, stale=1, hit=3, miss=2, flush=5)


def split(frame: Packet, *cuts: int, ident: int = 0x5152) -> list[Packet]:
    """``frame``'s IPv4 datagram in fragments cut after each of ``cuts`` bytes of the UDP
    datagram (multiples of 8): MF set on all but the last."""
    ip = frame[IP]
    data = bytes(ip.payload)
    head = Ether(src=frame[Ether].src, dst=frame[Ether].dst)
    fields = {"src": ip.src, "dst": ip.dst, "id": ident, "proto": ip.proto, "ttl": ip.ttl}
    ends = [*cuts, len(data)]
    return [head / IP(flags="MF" if b < len(data) else 0, frag=a // 8, **fields) / Raw(data[a:b])
            for a, b in zip([0, *cuts], ends, strict=True)]


class LaterFragmentsFlush(FlushTest):
    """A later IPv4 fragment of a UDP datagram (offset not 0) carries no UDP header: the switch
    cannot tell whether it completes a write to memcached, which the host runs only once the
    last fragment to arrive is in, so each one flushes, forwarded unchanged and counted
    STAT_FLUSH: a middle fragment (MF set) and the last one, in any order (here the later ones
    before the first); the last fragment of a datagram to another host and port too. A later
    fragment of TCP does not flush."""

    def runTest(self) -> None:
        foo = dp.render_value_reply(b"foo", 0, b"bar")
        self.cache(b"foo", 4, foo)
        line = b"set foo 0 0 20\r\n" + b"N" * 20 + b"\r\n"
        first, middle, last = split(self.udp_frame(dp.memcache_frame(1, line)), 16, 32)
        self.assertEqual((middle[IP].flags, middle[IP].frag, last[IP].flags, last[IP].frag),
                         (1, 2, 0, 4))
        version = 1
        for i, frag in enumerate((middle, last, first), start=1):
            self.expect_hit(self.get_frame(b"foo", 10 + i), dp.get_reply(10 + i, foo))
            self.expect_forwarded(frag)
            self.assertEqual(self.stats()[dp.STAT_FLUSH], i, "flushes counted")
            self.expect_forwarded(self.get_frame(b"foo", 20 + i))
            self.assertEqual(self.update(4, version + 1, foo).status, dp.STATUS_WRITTEN)
            version = self.refill(4, foo, version + 2)
        self.assert_stats(update=7, stale=3, hit=3, miss=3, flush=3)

        # Some other UDP datagram to another host: its first fragment names port 53 and does
        # not flush, its last one names nothing and does.
        dns = self.udp_frame(b"\x00\x02" * 20, dst_ip=SERVER2_IP, dst_mac=SERVERS[SERVER2_IP][1],
                             dport=53)
        dns_first, dns_last = split(dns, 8)
        self.expect_forwarded(dns_first, out_port=SERVER2_PORT)
        self.assert_stats(update=7, stale=3, hit=3, miss=3, flush=3)
        self.expect_forwarded(dns_last, out_port=SERVER2_PORT)
        self.assert_stats(update=7, stale=3, hit=3, miss=3, flush=4)
        version = self.refill(4, foo, version + 1)
        # A TCP segment in fragments: neither fragment flushes.
        tcp = (Ether(src=CLIENT_MAC, dst=SERVER_MAC) / IP(src=CLIENT_IP, dst=SERVER_IP, ttl=63)
               / TCP(sport=40000, dport=dp.MEMCACHED_PORT) / Raw(b"delete foo\r\n" * 3))
        for frag in split(tcp, 16):
            self.expect_forwarded(frag)
        self.expect_hit(self.get_frame(b"foo", 30), dp.get_reply(30, foo))
        self.assert_stats(update=9, stale=3, hit=4, miss=3, flush=4)


class LateFragmentFlushes(MemcachedTest):
    """issue 20: a `set` split over two IPv4 fragments whose last one comes late, sent to the
    switch and to a real memcached. The first fragment flushes, but memcached still holds the
    old value until the last fragment is in, so the controller's refill in between reads and
    installs the old value and it is served (correctly, then). The last fragment flushes as it
    crosses the switch, before the host can reassemble the datagram: once memcached holds the
    new value, the old one is no longer served, a fill read before the last fragment is refused
    (STATUS_WRITTEN), and a refill serves the new value."""

    def memcached_fragments(self, payload: bytes, cut: int) -> list[bytes]:
        """``payload`` in a UDP datagram to the memcached of this test (loopback), as IPv4
        fragments cut after ``cut`` bytes of the UDP datagram."""
        ip = {"src": "127.0.0.1", "dst": "127.0.0.1", "id": 0x5353}
        data = bytes(IP(**ip) / UDP(sport=40998, dport=self.mc.port) / Raw(payload))[20:]
        return [bytes(IP(flags="MF", frag=0, proto=17, **ip) / Raw(data[:cut])),
                bytes(IP(frag=cut // 8, proto=17, **ip) / Raw(data[cut:]))]

    def to_memcached(self, fragment: bytes) -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW) as s:
            s.sendto(fragment, ("127.0.0.1", 0))

    def memcached_value(self, rid: int, want: bytes | None = None) -> bytes:
        """memcached's UDP answer to `get foo` (waiting up to 2 s for one holding ``want``)."""
        deadline = time.monotonic() + 2
        while True:
            got = self.mc.udp_get(b"foo", rid)
            if want is None or want in got or time.monotonic() > deadline:
                return got
            time.sleep(0.02)

    def runTest(self) -> None:
        self.mc.set(b"foo", b"old")
        old = self.memcached_value(1)[8:]
        self.assertEqual(old, dp.render_value_reply(b"foo", 0, b"old"))
        self.cache(b"foo", 4, old)
        self.expect_hit(self.get_frame(b"foo", 1), dp.get_reply(1, old))
        line = b"set foo 0 0 3 noreply\r\nNEW\r\n"
        first, last = fragments(self.udp_frame(dp.memcache_frame(2, line)), 16)
        mc_first, mc_last = self.memcached_fragments(dp.memcache_frame(2, line), 16)

        self.expect_forwarded(first)
        self.assert_stats(update=1, hit=1, flush=1)
        self.to_memcached(mc_first)
        time.sleep(0.2)
        self.assertEqual(self.memcached_value(3)[8:], old, "memcached waits for the last fragment")
        version = self.refill(4, old, 2)  # the controller's refill reads the old value
        self.expect_hit(self.get_frame(b"foo", 4), dp.get_reply(4, old))

        self.expect_forwarded(last)  # comes late
        self.assert_stats(update=3, hit=2, flush=2)
        self.to_memcached(mc_last)
        new = self.memcached_value(5, b"NEW")[8:]
        self.assertEqual(new, dp.render_value_reply(b"foo", 0, b"NEW"), "memcached ran the set")
        self.expect_forwarded(self.get_frame(b"foo", 6))  # not the old value: a miss
        self.assertEqual(self.update(4, version + 1, old).status, dp.STATUS_WRITTEN)
        self.refill(4, new, version + 2)
        self.expect_hit(self.get_frame(b"foo", 7), dp.get_reply(7, new))
        self.assert_stats(update=5, stale=1, hit=3, miss=1, flush=2)


class Base64KeyFlushes(MemcachedTest):
    """`md Zm9v b` deletes foo at memcached (Zm9v is base64 for foo; the switch reads the key
    "Zm9v"): the real memcached says so, and the switch flushes, so foo is no longer served."""

    def runTest(self) -> None:
        self.mc.set(b"foo", b"bar")
        reference = self.mc.udp_get(b"foo", 1)
        self.cache(b"foo", 4, dp.render_value_reply(b"foo", 0, b"bar"))
        self.expect_hit(self.get_frame(b"foo", 1), reference)
        request = dp.memcache_frame(2, b"md Zm9v b\r\n")
        self.assertEqual(self.mc.udp_request(request), dp.memcache_frame(2, b"HD\r\n"),
                         "memcached deleted foo")
        self.assertEqual(self.mc.udp_get(b"foo", 3), dp.memcache_frame(3, b"END\r\n"))
        self.expect_forwarded(self.udp_frame(request))
        self.expect_forwarded(self.get_frame(b"foo", 3))
        self.assert_stats(update=1, hit=1, miss=1, flush=1)


class FlushOpTest(FlushTest):
    """OP_FLUSH (op 4): a control datagram without a body that flushes like FLUSHING above."""

    def cache_all(self) -> None:
        for key, slot, server in KEYS:
            self.cache(key, slot, self.reply(key, slot), server=server)
            self.expect_hit(self.ask(key, server, slot), dp.get_reply(slot, self.reply(key, slot)))

    def assert_flushed(self, rid: int, version: int) -> None:
        """No slot of any server answers; OP_READ says invalid; a fill prepared before the flush
        (newer than the slots' ``version``, with bytes) is refused as written; the controller's
        refill then serves again (the slots end at ``version`` + 3)."""
        for key, slot, server in KEYS:
            self.expect_forwarded(self.ask(key, server, rid + slot), CLIENT_PORT,
                                  SERVERS[server][0])
            ack = self.ctrl(dp.read_datagram(slot))
            self.assertEqual(ack.status, dp.STATUS_INVALID, f"slot {slot} after OP_FLUSH")
            self.assertEqual(self.update(slot, version + 1, self.reply(key, slot)).status,
                             dp.STATUS_WRITTEN, f"slot {slot}: a fill across OP_FLUSH")
            self.refill(slot, self.reply(key, slot), version + 2, server=server)
            self.expect_hit(self.ask(key, server, rid + 10 + slot),
                            dp.get_reply(rid + 10 + slot, self.reply(key, slot)))

    def assert_acked(self, ack: dp.Ctrl, request_id: int) -> None:
        self.assertEqual((ack.op, ack.status), (dp.OP_FLUSH | dp.ACK_FLAG, dp.STATUS_APPLIED),
                         ack)
        self.assertEqual((ack.slot, ack.version, ack.length), (0, request_id, 0),
                         "OP_FLUSH acknowledgement: version (the request id) echoed")


class FlushOpFromAgent(FlushOpTest):
    """OP_FLUSH from a trusted agent (server2's, on its own port): acknowledged in place
    STATUS_APPLIED with the version echoed, counted STAT_FLUSH, and every slot of every server
    stops answering; a retransmission (same request id) flushes again and is acknowledged."""

    def runTest(self) -> None:
        self.cache_all()
        ack = self.ctrl(dp.flush_datagram(0xDEADBEEF), server=SERVER2_IP)
        self.assert_acked(ack, 0xDEADBEEF)
        self.assert_stats(flush=1, hit=3, update=3)
        self.assert_flushed(100, 1)
        self.assert_acked(self.ctrl(dp.flush_datagram(0xDEADBEEF)), 0xDEADBEEF)
        self.assert_stats(flush=2, hit=6, miss=3, update=9, stale=3)
        self.assert_flushed(200, 4)


class FlushOpFromController(FlushOpTest):
    """OP_FLUSH as a packet-out: acknowledged by a packet-in (nothing leaves a data port) and
    flushes as from an agent. Version 0 and 2^32 - 1 come back unchanged."""

    def runTest(self) -> None:
        self.cache_all()
        self.assert_acked(self.ctrl(dp.flush_datagram(0xFFFFFFFF), via="cpu"), 0xFFFFFFFF)
        self.assertIsNone(self.p4rt.get_packet_in(timeout=0.2), "unexpected packet-in")
        self.assert_stats(flush=1, hit=3, update=3)
        self.assert_flushed(100, 1)
        self.assert_acked(self.ctrl(dp.flush_datagram(0), via="cpu", server=SERVER2_IP), 0)
        self.assert_stats(flush=2, hit=6, miss=3, update=9, stale=3)
        self.assert_flushed(200, 4)


class FillAfterFlushOpRefused(FlushOpTest):
    """The controller's refill raced by the agent's OP_FLUSH (flush_all over TCP): reserve
    (invalidation at v), OP_FLUSH, fill at v + 1 -> STATUS_WRITTEN, whatever its version, and
    GETs keep going to memcached; a newer invalidation then lets the fill apply. An invalidation
    that is not newer does not undo the flush."""

    def runTest(self) -> None:
        r = self.reply(b"k", 2)
        self.add_lookup(b"k", 2)
        self.assertEqual(self.update(2, 10, b"").status, dp.STATUS_APPLIED)  # reserve
        self.assert_acked(self.ctrl(dp.flush_datagram(7)), 7)
        self.assertEqual(self.update(2, 11, r).status, dp.STATUS_WRITTEN)
        self.assertEqual(self.update(2, 0xFFFFFFFF, r).status, dp.STATUS_WRITTEN)
        self.assertEqual(self.update(2, 10, b"").status, dp.STATUS_STALE)
        self.assertEqual(self.update(2, 11, r).status, dp.STATUS_WRITTEN)
        self.expect_forwarded(self.get_frame(b"k", 1))
        self.assertEqual(self.ctrl(dp.read_datagram(2)).status, dp.STATUS_INVALID)
        self.refill(2, r, 12)
        self.expect_hit(self.get_frame(b"k", 2), dp.get_reply(2, r))
        self.assert_stats(flush=1, update=3, stale=4, miss=1, hit=1)


class UntrustedFlushOpDropped(FlushOpTest):
    """OP_FLUSH from anyone but a trusted agent on its own port (a client, an outsider, a
    server's address from another port) and an OP_FLUSH acknowledgement are dropped unanswered
    and counted STAT_UNTRUSTED; nothing is flushed."""

    def runTest(self) -> None:
        self.cache_all()
        ack = dp.CTRL_HDR.pack(dp.OP_FLUSH | dp.ACK_FLAG, dp.STATUS_APPLIED, 0, 5, 0)
        attempts = [
            ("client", CLIENT_PORT, CLIENT_IP, dp.flush_datagram(1)),
            ("outsider", SERVER2_PORT, OUTSIDER_IP, dp.flush_datagram(2)),
            ("server's address from the client's port", CLIENT_PORT, SERVER_IP,
             dp.flush_datagram(3)),
            ("server's address from server2's port", SERVER2_PORT, SERVER_IP,
             dp.flush_datagram(4)),
            ("an acknowledgement from the server", SERVER_PORT, SERVER_IP, ack),
        ]
        for name, port, src_ip, payload in attempts:
            with self.subTest(source=name):
                self.send(port, self.ctrl_frame(payload, src_ip=src_ip))
                tu.verify_no_other_packets(self)
        self.assert_stats(untrusted=len(attempts), hit=3, update=3)
        for key, slot, server in KEYS:
            self.expect_hit(self.ask(key, server, 50 + slot),
                            dp.get_reply(50 + slot, self.reply(key, slot)))
            self.assertEqual(self.ctrl(dp.read_datagram(slot)).status, dp.STATUS_VALID)


class FlushOpLength(FlushOpTest):
    """OP_FLUSH has no body: a UDP length other than 8 + 10 (bytes after the header, or a UDP
    length that says so) is acknowledged STATUS_BAD, with the header echoed, and flushes nothing.
    Ethernet padding after a right UDP length does not count: that one flushes."""

    def raw_ack(self, frame: Packet) -> dp.Ctrl:
        """Send ``frame`` from the server's port; the acknowledgement: ``frame`` turned around
        with the 10-byte header and nothing after it."""
        self.send(SERVER_PORT, frame)
        res = tu.dp_poll(self, port_number=SERVER_PORT, timeout=ptf.ptfutils.default_timeout)
        if not isinstance(res, self.dataplane.PollSuccess):
            self.fail(f"no acknowledgement for {bytes(frame).hex()}")
        tu.verify_no_other_packets(self)
        got = Ether(bytes(res.packet))
        payload = bytes(got[UDP].payload)
        self.assertEqual(len(payload), dp.CTRL_HDR.size, "acknowledgement is the header alone")
        self.assertEqual(bytes(res.packet), bytes(self.reply_frame(frame, payload)))
        return dp.parse_ctrl(payload)

    def runTest(self) -> None:
        self.cache_all()
        hdr = dp.flush_datagram(0x01020304)
        for name, payload in (("one byte of body", hdr + b"x"), ("8 bytes of body", hdr + bytes(8)),
                              ("a key", hdr + b"k\r\n")):
            with self.subTest(case=name):
                ack = self.ctrl(payload)
                self.assertEqual((ack.status, ack.version), (dp.STATUS_BAD, 0x01020304))
        # A UDP length one over the datagram (the frame ends first), and one short of the header.
        for udp_len in (8 + 11, 8 + 9):
            with self.subTest(udp_length=udp_len):
                frame = self.ctrl_frame(hdr)
                frame[UDP].len = udp_len
                ack = self.raw_ack(Ether(bytes(frame)))
                self.assertEqual((ack.op, ack.status, ack.version),
                                 (dp.OP_FLUSH | dp.ACK_FLAG, dp.STATUS_BAD, 0x01020304))
        self.assert_stats(hit=3, update=3)
        for key, slot, server in KEYS:
            self.expect_hit(self.ask(key, server, 50 + slot),
                            dp.get_reply(50 + slot, self.reply(key, slot)))
        # Ethernet padding: the IPv4 and UDP lengths say 10 bytes, the frame holds 18 more.
        padded = Ether(bytes(self.ctrl_frame(hdr)) + bytes(18))
        self.assert_acked(self.raw_ack(padded), 0x01020304)
        self.assert_stats(flush=1, hit=6, update=3)
        self.assert_flushed(100, 1)

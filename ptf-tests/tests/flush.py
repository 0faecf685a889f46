"""Flushes: a datagram that may change items the switch cannot name invalidates every slot (of
every server) before it is forwarded, unchanged, to memcached.

Such datagrams are gat/gats (their keys follow the expiry time, possibly many), flush_all,
memcached's binary protocol, meta commands with a "b" flag (their key may be base64), writes whose
key hides behind more blanks than the parser reads, lines without a command word, any datagram
holding more than one command line (memcached runs them all), such as a storage command followed
by its data block, and any first IPv4 fragment to the memcached port (the rest of the datagram is
out of sight). One whole line of another command (version, an unknown word) changes nothing and
does not flush (passthrough.py). After a flush, a refill prepared before it loses
(STATUS_WRITTEN) until the slot is invalidated again with a newer version.
"""

from __future__ import annotations

import struct

from p4cache_ptf.base import CLIENT_PORT, SERVER2_IP, SERVER_IP, SERVERS, P4CacheTest
from p4cache_ptf.memcached import MemcachedTest
from scapy.layers.inet import IP
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
    (forwarded unchanged); the second, with no UDP header, is forwarded unchanged and counts for
    nothing. foo is no longer served; a fill prepared before the flush loses. A first fragment to
    another port does not flush."""

    def runTest(self) -> None:
        foo = dp.render_value_reply(b"foo", 0, b"bar")
        self.cache(b"foo", 4, foo)
        self.expect_hit(self.get_frame(b"foo", 1), dp.get_reply(1, foo))
        dns = self.udp_frame(b"\x00\x01" * 20, dport=53)
        for frame in fragments(dns, 8):
            self.expect_forwarded(frame)
        self.assert_stats(update=1, hit=1)

        first, rest = fragments(self.udp_frame(dp.memcache_frame(2, b"delete foo\r\n")), 8)
        self.assertEqual(len(first[IP].payload), 8, "the first fragment holds the UDP header only")
        self.expect_forwarded(first)
        self.assert_stats(update=1, hit=1, flush=1)
        self.expect_forwarded(rest)
        self.assert_stats(update=1, hit=1, flush=1)
        self.expect_forwarded(self.get_frame(b"foo", 3))
        self.assertEqual(self.update(4, 2, foo).status, dp.STATUS_WRITTEN)
        self.refill(4, foo, 3)
        self.expect_hit(self.get_frame(b"foo", 4), dp.get_reply(4, foo))
        # The frame header in the first fragment, the line in the second: the same.
        first, rest = fragments(self.udp_frame(dp.memcache_frame(5, b"delete foo\r\n")), 16)
        self.expect_forwarded(first)
        self.expect_forwarded(rest)
        self.expect_forwarded(self.get_frame(b"foo", 6))
        self.assert_stats(update=3, stale=1, hit=2, miss=2, flush=2)


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

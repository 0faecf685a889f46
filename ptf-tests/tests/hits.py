"""Hits: the switch answers a cached key with exactly the bytes memcached itself sends.

Each item is stored in a real memcached (over TCP, pymemcache) and read back over UDP; the
controller's rendering of the item (p4cache.dataplane.render_value_reply) goes into a slot by a
control datagram, and the switch's reply to the same request must carry memcached's UDP payload
byte for byte, in the frame the client's request turned around.
"""

from __future__ import annotations

from p4cache_ptf.base import (
    CLIENT_IP,
    CLIENT_MAC,
    CLIENT_PORT,
    CLIENT_UDP_PORT,
    SERVER2_IP,
    SERVER2_MAC,
    SERVER2_PORT,
    SERVER_IP,
    SERVER_MAC,
    SERVER_PORT,
    SERVERS,
    SWITCH_MAC,
    ip_int,
)
from p4cache_ptf.memcached import MemcachedTest
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from p4cache import dataplane as dp

FLAGS_MAX = 2**32 - 1


def value_for_reply_len(key: bytes, flags: int, reply_len: int) -> bytes:
    """A value whose rendered reply is exactly ``reply_len`` bytes."""
    for n in range(reply_len, -1, -1):
        if len(dp.render_value_reply(key, flags, b"v" * n)) == reply_len:
            return bytes(0x41 + i % 26 for i in range(n))
    raise ValueError(f"no value gives a reply of {reply_len} bytes")


class HitMatchesMemcached(MemcachedTest):
    """Flags 0 and 2^32-1, an empty value, binary values: the reply is memcached's."""

    def runTest(self) -> None:
        items = [
            (b"plain", 0, b"hello world"),
            (b"flagsmax", FLAGS_MAX, b"v"),
            (b"flags1", 1, b"0123456789"),
            (b"empty", 0, b""),
            (b"emptyflagsmax", FLAGS_MAX, b""),
            (b"binary", 0, bytes(range(256))),  # every byte value, \r\n and NUL included
            (b"crlfend", 7, b"END\r\nVALUE x 0 1\r\n"),
            (b"utf8-\xc3\xa9", 0, "caf\u00e9 \u2615".encode()),
        ]
        for slot, (key, flags, value) in enumerate(items, start=1):
            with self.subTest(key=key, flags=flags, value_len=len(value)):
                self.check_item(key, flags, value, slot)
        n = len(items)
        self.assert_stats(hit=n, update=n)


class ReplySizeLimit(MemcachedTest):
    """A reply of exactly REPLY_MAX (512) bytes is served; one byte more is refused by the
    update (STATUS_BAD) and the key stays a miss."""

    def runTest(self) -> None:
        key = b"at-the-limit"
        value = value_for_reply_len(key, 0, dp.REPLY_MAX)
        ref = self.check_item(key, 0, value, slot=7)
        self.assertEqual(len(ref), 8 + dp.REPLY_MAX)

        key = b"over-the-limit"
        value = value_for_reply_len(key, FLAGS_MAX, dp.REPLY_MAX + 1)
        reply = dp.render_value_reply(key, FLAGS_MAX, value)
        self.assertEqual(len(reply), dp.REPLY_MAX + 1)
        with self.assertRaises(ValueError):
            dp.update_datagram(8, 1, reply)
        # The same update built by hand: the switch refuses it.
        raw = dp.CTRL_HDR.pack(dp.OP_UPDATE, 0, 8, 1, len(reply)) + reply
        ack = self.ctrl(raw)
        self.assertEqual(ack.status, dp.STATUS_BAD, ack)
        self.add_lookup(key, 8)
        self.expect_forwarded(self.get_frame(key, 9))
        self.assert_stats(hit=1, miss=1, update=1, stale=1)


class KeyLengths(MemcachedTest):
    """Keys of 1 and KMAX (64) bytes are served; a 65-byte key cannot be cached and its GET
    is forwarded, even when its first 64 bytes are a cached key."""

    def runTest(self) -> None:
        one = b"Z"
        kmax = bytes(range(0x21, 0x21 + dp.KMAX))  # 64 printable bytes, punctuation included
        self.assertEqual(len(kmax), dp.KMAX)
        self.check_item(one, 0, b"one", slot=1)
        self.check_item(kmax, 5, b"sixty-four", slot=2)

        over = kmax + b"!"
        with self.assertRaises(ValueError):
            dp.key_match(over)
        self.expect_forwarded(self.get_frame(over, 3))
        self.expect_forwarded(self.get_frame(b"ZZ", 4))
        self.assert_stats(hit=2, update=2, miss=1)  # the 65-byte GET is no candidate


class RequestIdEchoed(MemcachedTest):
    """The reply carries the request's id (and seq 0, total 1), whatever the id."""

    def runTest(self) -> None:
        key, value = b"rid", b"echo"
        self.mc.set(key, value, 3)
        self.cache(key, 9, dp.render_value_reply(key, 3, value))
        for rid in (0, 1, 0x00FF, 0x1234, 0x8000, 0xFFFF):
            with self.subTest(request_id=rid):
                reference = self.mc.udp_get(key, rid)
                self.assertEqual(reference[:2], rid.to_bytes(2, "big"))
                got = self.expect_hit(self.get_frame(key, rid, sport=20000 + rid % 1000,
                                                     ip_id=rid), reference)
                self.assertEqual(got[42:50], dp.MEMCACHE_HDR.pack(rid, 0, 1, 0))


class HitFromEveryPort(MemcachedTest):
    """A reply leaves by the port its request came in by, to the requester's addresses, for
    clients on the server's segment and behind the router (to the switch's MAC)."""

    def runTest(self) -> None:
        key, value = b"anyport", b"value"
        self.mc.set(key, value)
        self.cache(key, 11, dp.render_value_reply(key, 0, value))
        reference = self.mc.udp_get(key, 77)
        clients = [(CLIENT_PORT, CLIENT_MAC, CLIENT_IP, SERVER_MAC),
                   (CLIENT_PORT, CLIENT_MAC, CLIENT_IP, SWITCH_MAC),
                   (SERVER_PORT, SERVER_MAC, "10.0.0.20", SERVER_MAC),
                   (SERVER2_PORT, "02:00:00:00:00:31", "10.0.0.31", SWITCH_MAC)]
        for port, mac, ip, dst_mac in clients:
            with self.subTest(port=port, client=ip, dst_mac=dst_mac):
                frame = self.get_frame(key, 77, src_mac=mac, src_ip=ip, dst_mac=dst_mac,
                                       sport=33333, tos=0x10, flags="DF")
                self.expect_hit(frame, reference, port=port)
        self.assert_stats(hit=len(clients), update=1)
        packets, _ = self.p4rt.read_counter(dp.COUNTER_SLOT_HITS, 11)
        self.assertEqual(packets, len(clients))


class PerServerEntries(MemcachedTest):
    """Entries are per server: the same key cached for two servers serves each its own value;
    a key cached for one server is a miss, forwarded, when asked of another; writes and
    invalidations through one server leave the other's entry alone."""

    def runTest(self) -> None:
        key = b"shared-key"
        r1, r2 = dp.render_value_reply(key, 1, b"one"), dp.render_value_reply(key, 2, b"two")
        self.cache(key, 1, r1, server=SERVER_IP)
        only = b"only-on-one"
        r3 = dp.render_value_reply(only, 0, b"3")
        self.cache(only, 3, r3, server=SERVER_IP)
        self.expect_forwarded(self.get_frame(key, 1, dst_mac=SERVER2_MAC, dst_ip=SERVER2_IP),
                              CLIENT_PORT, SERVER2_PORT)
        self.cache(key, 2, r2, server=SERVER2_IP)

        def ask(server: str, k: bytes, rid: int) -> Packet:
            return self.get_frame(k, rid, dst_mac=SERVERS[server][1], dst_ip=server)

        self.expect_hit(ask(SERVER_IP, key, 2), dp.get_reply(2, r1))
        self.expect_hit(ask(SERVER2_IP, key, 3), dp.get_reply(3, r2))
        self.expect_hit(ask(SERVER_IP, only, 4), dp.get_reply(4, r3))
        self.expect_forwarded(ask(SERVER2_IP, only, 5), CLIENT_PORT, SERVER2_PORT)
        # A write to server2 invalidates server2's entry only.
        write = self.udp_frame(dp.memcache_frame(6, b"delete shared-key\r\n"),
                               dst_mac=SERVER2_MAC, dst_ip=SERVER2_IP)
        self.expect_forwarded(write, CLIENT_PORT, SERVER2_PORT)
        self.expect_forwarded(ask(SERVER2_IP, key, 7), CLIENT_PORT, SERVER2_PORT)
        self.expect_hit(ask(SERVER_IP, key, 8), dp.get_reply(8, r1))
        # OP_INVALIDATE_KEY from an agent invalidates its own server's entry only.
        self.assertEqual(self.ctrl(dp.invalidate_key_datagram(only), server=SERVER2_IP).status,
                         dp.STATUS_NOT_CACHED)
        self.expect_hit(ask(SERVER_IP, only, 9), dp.get_reply(9, r3))
        self.assertEqual(self.ctrl(dp.invalidate_key_datagram(only), server=SERVER_IP).status,
                         dp.STATUS_APPLIED)
        self.expect_forwarded(ask(SERVER_IP, only, 10))
        self.assert_stats(update=3, hit=5, miss=4, invalidate=2)


class EthernetPaddingNotReturned(MemcachedTest):
    """A short request padded to Ethernet's 60-byte minimum (or longer) is still a clean GET
    (the IPv4 and UDP lengths say where it ends), and the padding does not trail the reply."""

    def runTest(self) -> None:
        key, value = b"p", b"padded"
        self.mc.set(key, value)
        self.cache(key, 12, dp.render_value_reply(key, 0, value))
        reference = self.mc.udp_get(key, 5)
        request = self.get_frame(key, 5)
        self.assertLess(len(bytes(request)), 60)
        for pad in (60 - len(bytes(request)), 40):
            with self.subTest(pad=pad):
                padded = Ether(bytes(request) + b"\x00" * pad)
                got = self.expect_hit(padded, reference)
                self.assertEqual(len(got), 14 + 20 + 8 + len(reference))
        self.assert_stats(hit=2, update=1)


class KeysNeverCollide(MemcachedTest):
    """Keys sharing a prefix, or the same bytes at another length, are different entries."""

    def runTest(self) -> None:
        items = [(b"a", b"1"), (b"ab", b"22"), (b"abc", b"333"), (b"ba", b"4444"),
                 (b"abd", b"55555"), (b"b" * 64, b"six"), (b"b" * 63 + b"c", b"seven")]
        for slot, (key, value) in enumerate(items, start=20):
            self.mc.set(key, value)
            self.cache(key, slot, dp.render_value_reply(key, 0, value))
        for rid, (key, _) in enumerate(items, start=1):
            with self.subTest(key=key):
                self.expect_hit(self.get_frame(key, rid), self.mc.udp_get(key, rid))
        # Cached keys' prefixes and extensions are other keys: not answered.
        for key in (b"abcd", b"b", b"bb", b"b" * 63, b"abe", b"A"):
            with self.subTest(uncached=key):
                self.expect_forwarded(self.get_frame(key, 99))
        # An entry for the bytes of "xy" at length 3 (the key "\0xy", never parsed from a
        # request since NUL ends a key) must not answer "xy".
        self.assertEqual(self.ctrl(dp.update_datagram(40, 1, b"WRONG\r\n")).status,
                         dp.STATUS_APPLIED)
        self.p4rt.insert(dp.TABLE_LOOKUP, {"server_addr": ip_int(SERVER_IP), "key_len": 3,
                                           "key": int.from_bytes(b"xy", "big")},
                         "set_slot", {"slot": 40})
        self.expect_forwarded(self.get_frame(b"xy", 100))
        n = len(items)
        self.assert_stats(hit=n, miss=7, update=n + 1)
        hits = self.p4rt.read_counters(dp.COUNTER_SLOT_HITS)
        for slot in range(20, 20 + n):
            self.assertEqual(hits[slot][0], 1, f"slot_hits[{slot}]")
        self.assertEqual(hits[40][0], 0, "slot_hits[40]")


class MissForwardedReplyPassedBack(MemcachedTest):
    """A GET for a key the switch does not hold goes to the server unchanged, and the
    server's reply comes back to the client unchanged."""

    def runTest(self) -> None:
        key, value = b"notcached", b"from the server"
        self.mc.set(key, value, 9)
        request = self.get_frame(key, 0x0102)
        self.expect_forwarded(request, CLIENT_PORT, SERVER_PORT)
        answer = self.mc.udp_get(key, 0x0102)
        reply = self.udp_frame(answer, src_mac=SERVER_MAC, dst_mac=CLIENT_MAC, src_ip=SERVER_IP,
                               dst_ip=CLIENT_IP, sport=dp.MEMCACHED_PORT, dport=CLIENT_UDP_PORT)
        self.expect_forwarded(reply, SERVER_PORT, CLIENT_PORT)
        # The slot exists but holds nothing valid yet: still a miss.
        self.add_lookup(key, 3)
        self.expect_forwarded(self.get_frame(key, 0x0103))
        # Once filled, it is a hit.
        self.assertEqual(self.update(3, 1, dp.render_value_reply(key, 9, value)).status,
                         dp.STATUS_APPLIED)
        self.expect_hit(self.get_frame(key, 0x0104), self.mc.udp_get(key, 0x0104))
        self.assert_stats(miss=2, hit=1, update=1)

"""Requests the switch must not answer: anything but one clean single-key, single-datagram
``get <key>\\r\\n`` is forwarded to the server byte for byte, even when it names a cached key.

Each test caches ``k`` and a 64-byte key first, so answering would be possible; every case must
come out of the server's port unchanged, with no reply to the client, no hit and no miss counted
(none of them is a cache candidate). A clean GET at the end shows the cache was live all along.
"""

from __future__ import annotations

from p4cache_ptf.base import P4CacheTest
from scapy.layers.inet import IP, UDP, IPOption_NOP, IPOption_Router_Alert
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from p4cache import dataplane as dp

KEY = b"k"
KEY64 = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_"
assert len(KEY64) == dp.KMAX


class PassThroughTest(P4CacheTest):
    cases: list[tuple[str, Packet | bytes]] = []

    def cases_to_send(self) -> list[tuple[str, Packet | bytes]]:
        return self.cases

    def check_cases(self) -> None:
        self.cache(KEY, 1, dp.render_value_reply(KEY, 0, b"v"))
        self.cache(KEY64, 2, dp.render_value_reply(KEY64, 0, b"w"))
        for name, frame in self.cases_to_send():
            with self.subTest(case=name):
                self.expect_forwarded(frame)
        self.assert_stats(update=2)
        reply = dp.get_reply(1, dp.render_value_reply(KEY, 0, b"v"))
        self.expect_hit(self.get_frame(KEY, 1), reply)
        self.assert_stats(update=2, hit=1)


def body(payload: bytes, **kw: object) -> Packet:
    return P4CacheTest.udp_frame(payload, **kw)


class CommandShapes(PassThroughTest):
    """Long keys, several keys, gets, case, missing or odd keys. (gat, gats and mg are not
    here: mg invalidates like a write, gat and gats are dropped; see writes and unsafe.)"""

    cases = [
        ("key of KMAX+1 bytes starting with a cached key", body(dp.get_request(1, KEY64 + b"x"))),
        ("key of 250 bytes", body(dp.get_request(1, KEY64 * 3 + KEY64[:58]))),
        ("two keys", body(dp.memcache_frame(1, b"get k k\r\n"))),
        ("two cached keys", body(dp.memcache_frame(1, b"get k " + KEY64 + b"\r\n"))),
        ("gets", body(dp.memcache_frame(1, b"gets k\r\n"))),
        ("GET in capitals", body(dp.memcache_frame(1, b"GET k\r\n"))),
        ("get without key", body(dp.memcache_frame(1, b"get\r\n"))),
        ("get, blank, no key", body(dp.memcache_frame(1, b"get \r\n"))),
        ("tab instead of blank", body(dp.memcache_frame(1, b"get\tk\r\n"))),
        ("control byte after key", body(dp.memcache_frame(1, b"get k\x01\r\n"))),
        ("DEL after key", body(dp.memcache_frame(1, b"get k\x7f\r\n"))),
        ("NUL after key", body(dp.memcache_frame(1, b"get k\x00\r\n"))),
        ("command word too long", body(dp.memcache_frame(1, b"getgetget k\r\n"))),
        ("version", body(dp.memcache_frame(1, b"version\r\n"))),
    ]

    def runTest(self) -> None:
        self.check_cases()


class FrameHeaders(PassThroughTest):
    """Multi-datagram requests and non-zero reserved bytes in memcached's frame header."""

    cases = [
        ("total 2, seq 0", body(dp.memcache_frame(1, b"get k\r\n", seq=0, total=2))),
        ("total 2, seq 1", body(dp.memcache_frame(1, b"get k\r\n", seq=1, total=2))),
        ("seq 1, total 1", body(dp.memcache_frame(1, b"get k\r\n", seq=1, total=1))),
        ("total 0", body(dp.memcache_frame(1, b"get k\r\n", total=0))),
        ("reserved 1", body(dp.memcache_frame(1, b"get k\r\n", reserved=1))),
        ("reserved 0x8000", body(dp.memcache_frame(1, b"get k\r\n", reserved=0x8000))),
    ]

    def runTest(self) -> None:
        self.check_cases()


class Ipv4Shapes(PassThroughTest):
    """IPv4 options, fragments, a bad header checksum."""

    cases = [
        ("IPv4 option router alert",
         body(dp.get_request(1, KEY), options=[IPOption_Router_Alert()])),
        ("IPv4 options NOP x4", body(dp.get_request(1, KEY), options=[IPOption_NOP()] * 4)),
        ("more fragments", body(dp.get_request(1, KEY), flags="MF")),
        ("fragment offset 1", body(dp.get_request(1, KEY), frag=1)),
        ("last fragment, offset 185", body(dp.get_request(1, KEY), frag=185)),
        ("bad IPv4 checksum", body(dp.get_request(1, KEY), chksum=0xBEEF)),
        ("IPv4 version 5", body(dp.get_request(1, KEY), version=5)),
        ("IPv4 header length 4", body(dp.get_request(1, KEY), ihl=4)),
    ]

    def runTest(self) -> None:
        self.check_cases()


class LineEndings(PassThroughTest):
    """Only ``\\r\\n`` right after the key, and nothing after it, makes a candidate."""

    cases = [
        ("bytes after CRLF", body(dp.memcache_frame(1, b"get k\r\nX"))),
        ("second line", body(dp.memcache_frame(1, b"get k\r\nget k\r\n"))),
        ("empty line after", body(dp.memcache_frame(1, b"get k\r\n\r\n"))),
        ("bare LF", body(dp.memcache_frame(1, b"get k\n"))),
        ("CR without LF", body(dp.memcache_frame(1, b"get k\r"))),
        ("LF CR", body(dp.memcache_frame(1, b"get k\n\r"))),
        ("no line end", body(dp.memcache_frame(1, b"get k"))),
        ("blank before CRLF", body(dp.memcache_frame(1, b"get k \r\n"))),
        ("two blanks before key", body(dp.memcache_frame(1, b"get  k\r\n"))),
        ("blank before command", body(dp.memcache_frame(1, b" get k\r\n"))),
        ("CR CR LF", body(dp.memcache_frame(1, b"get k\r\r\n"))),
    ]

    def runTest(self) -> None:
        self.check_cases()


class Truncated(PassThroughTest):
    """Datagrams cut short, or whose IPv4/UDP lengths do not cover exactly the request."""

    def runTest(self) -> None:
        self.check_cases()

    def cases_to_send(self) -> list[tuple[str, Packet | bytes]]:
        full = bytes(self.get_frame(KEY, 1))
        cut = [(f"frame cut by {n} bytes", full[:-n]) for n in (1, 2, 3, 7, 9)]
        cut += [("frame cut in the frame header", full[:14 + 20 + 8 + 4]),
                ("frame cut after the UDP header", full[:14 + 20 + 8]),
                ("frame cut in the UDP header", full[:14 + 20 + 4]),
                ("frame cut in the IPv4 header", full[:14 + 10])]

        def lengths(ip_delta: int, udp_delta: int) -> bytes:
            f = Ether(full)
            f[IP].len += ip_delta
            f[UDP].len += udp_delta
            del f[IP].chksum, f[UDP].chksum
            return bytes(f)

        shapes = [
            ("UDP and IPv4 lengths 2 bytes over the frame", lengths(2, 2)),
            ("UDP length 1 short", lengths(0, -1)),
            ("UDP length 1 over", lengths(0, 1)),
            ("IPv4 length 1 short", lengths(-1, 0)),
            ("IPv4 length 1 over", lengths(1, 0)),
            ("only the frame header", bytes(body(dp.memcache_frame(1, b"")))),
            ("half a frame header", bytes(body(b"\x00\x01\x00\x00"))),
            ("empty UDP payload", bytes(body(b""))),
            ("get and blank", bytes(body(dp.memcache_frame(1, b"get ")))),
            ("get, blank, key prefix", bytes(body(dp.memcache_frame(1, b"get " + KEY64[:10])))),
        ]
        return cut + shapes

"""Requests the switch must not answer: anything but one clean single-key, single-datagram
``get <key>\\r\\n`` is forwarded to the server byte for byte, even when it names a cached key.

Each test caches ``k`` and a 64-byte key first, so answering would be possible; every case must
come out of the server's port unchanged, with no reply to the client and no hit or miss counted
(none is a cache candidate). memcached runs every command line of a datagram, so a datagram the
switch cannot read to its end as exactly one line *flushes* the cache (every slot invalidated,
STAT_FLUSH counted) before it goes on, unless that line is a read or a command that changes
nothing (version, an unknown word); each case says whether it flushes, and after a flush the
slots are refilled the way the controller does it. A clean GET at the end shows the cache was
live all along.
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
FLUSH, KEEP = True, False

Case = tuple[str, Packet | bytes, bool]  # name, frame, whether it flushes the cache


class PassThroughTest(P4CacheTest):
    cases: list[Case] = []

    def cases_to_send(self) -> list[Case]:
        return self.cases

    def check_cases(self) -> None:
        r1 = dp.render_value_reply(KEY, 0, b"v")
        r2 = dp.render_value_reply(KEY64, 0, b"w")
        self.cache(KEY, 1, r1)
        self.cache(KEY64, 2, r2)
        versions = {1: 1, 2: 1}
        flushes = 0
        for name, frame, flushes_cache in self.cases_to_send():
            with self.subTest(case=name):
                self.expect_forwarded(frame)
                flushes += flushes_cache
                self.assertEqual(self.stats()[dp.STAT_FLUSH], flushes,
                                 "flushes so far (this case " +
                                 ("should flush)" if flushes_cache else "should not flush)"))
            if flushes_cache:
                versions[1] = self.refill(1, r1, versions[1] + 1)
                versions[2] = self.refill(2, r2, versions[2] + 1)
        self.assert_stats(update=2 + 4 * flushes, flush=flushes)
        self.expect_hit(self.get_frame(KEY, 1), dp.get_reply(1, r1))
        self.expect_hit(self.get_frame(KEY64, 2), dp.get_reply(2, r2))
        self.assert_stats(update=2 + 4 * flushes, flush=flushes, hit=2)


def body(payload: bytes, **kw: object) -> Packet:
    return P4CacheTest.udp_frame(payload, **kw)


def line(text: bytes, **kw: object) -> Packet:
    return body(dp.memcache_frame(1, text), **kw)


class LineCases(PassThroughTest):
    """Cases that differ only in the command line(s) of one well-formed datagram."""

    lines: list[tuple[str, bytes, bool]] = []  # name, the datagram's text, whether it flushes

    def cases_to_send(self) -> list[Case]:
        return [(name, line(text), flushes) for name, text, flushes in self.lines]


class CommandShapes(LineCases):
    """Long keys, several keys, gets, capitals, missing or odd keys, unknown commands. One whole
    line of a command that changes nothing (memcached answers ERROR, or its version) does not
    flush; no command word, a word over CMD_MAX or more than one line does."""

    lines = [
        ("key of KMAX+1 bytes starting with a cached key", b"get " + KEY64 + b"x\r\n", KEEP),
        ("key of 250 bytes", b"get " + KEY64 * 3 + KEY64[:58] + b"\r\n", KEEP),
        ("two keys, line of 320 bytes", b"get k " + b"x" * 311 + b"\r\n", FLUSH),
        ("two keys", b"get k k\r\n", KEEP),
        ("two cached keys", b"get k " + KEY64 + b"\r\n", KEEP),
        ("gets", b"gets k\r\n", KEEP),
        ("gets, two keys", b"gets k " + KEY64 + b"\r\n", KEEP),
        ("get, blank, no key", b"get \r\n", KEEP),
        ("control byte after key", b"get k\x01\r\n", KEEP),
        ("DEL after key", b"get k\x7f\r\n", KEEP),
        ("NUL after key", b"get k\x00\r\n", KEEP),
        ("get without key", b"get\r\n", KEEP),
        ("tab instead of blank", b"get\tk\r\n", FLUSH),
        ("GET in capitals", b"GET k\r\n", KEEP),
        ("command word too long", b"getgetget k\r\n", FLUSH),
        ("version", b"version\r\n", KEEP),
        ("stats", b"stats\r\n", KEEP),
        ("stats items", b"stats items\r\n", KEEP),
        ("unknown command", b"foo bar\r\n", KEEP),
        ("unknown command of CMD_MAX bytes", b"abcdefgh\r\n", KEEP),
        ("command word of CMD_MAX+1 bytes", b"verbosity 1\r\n", FLUSH),
        ("version, blank first", b" version\r\n", FLUSH),
        ("empty line", b"\r\n", FLUSH),
        ("unknown command, bare LF", b"x\n", FLUSH),
        ("version, bare LF, flush_all", b"version\nflush_all\r\n", FLUSH),
        ("unknown command, bare LF in the rest, a write", b"foo bar\ndelete k\r\n", FLUSH),
        ("version, CR without LF", b"version\r", FLUSH),
        ("version twice", b"version\r\nversion\r\n", FLUSH),
        ("a write without a key", b"delete\r\n", FLUSH),
    ]

    def runTest(self) -> None:
        self.check_cases()


class FrameHeaders(PassThroughTest):
    """Multi-datagram requests and non-zero reserved bytes in memcached's frame header."""

    cases = [
        ("total 2, seq 0", body(dp.memcache_frame(1, b"get k\r\n", seq=0, total=2)), FLUSH),
        ("total 2, seq 1", body(dp.memcache_frame(1, b"get k\r\n", seq=1, total=2)), FLUSH),
        ("seq 1, total 1", body(dp.memcache_frame(1, b"get k\r\n", seq=1, total=1)), FLUSH),
        ("total 0", body(dp.memcache_frame(1, b"get k\r\n", total=0)), FLUSH),
        ("reserved 1", body(dp.memcache_frame(1, b"get k\r\n", reserved=1)), FLUSH),
        ("reserved 0x8000", body(dp.memcache_frame(1, b"get k\r\n", reserved=0x8000)), FLUSH),
    ]

    def runTest(self) -> None:
        self.check_cases()


class Ipv4Shapes(PassThroughTest):
    """IPv4 options, fragments, a bad header checksum, other versions and header lengths."""

    cases = [
        ("IPv4 option router alert",
         body(dp.get_request(1, KEY), options=[IPOption_Router_Alert()]), FLUSH),
        ("IPv4 options NOP x4", body(dp.get_request(1, KEY), options=[IPOption_NOP()] * 4),
         FLUSH),
        ("more fragments", body(dp.get_request(1, KEY), flags="MF"), FLUSH),
        # A later fragment has no UDP header: it may complete a write (flush.py).
        ("fragment offset 1", body(dp.get_request(1, KEY), frag=1), FLUSH),
        ("last fragment, offset 185", body(dp.get_request(1, KEY), frag=185), FLUSH),
        ("bad IPv4 checksum", body(dp.get_request(1, KEY), chksum=0xBEEF), KEEP),
        ("IPv4 version 5", body(dp.get_request(1, KEY), version=5), KEEP),
        ("IPv4 header length 4", body(dp.get_request(1, KEY), ihl=4), KEEP),
    ]

    def runTest(self) -> None:
        self.check_cases()


class LineEndings(LineCases):
    """Only ``\\r\\n`` right after the key, and nothing after it, makes a candidate; more
    lines, or a line that does not end, flush."""

    lines = [
        ("bytes after CRLF", b"get k\r\nX", FLUSH),
        ("second line", b"get k\r\nget k\r\n", FLUSH),
        ("a write after the get", b"get k\r\ndelete k\r\n", FLUSH),
        ("a bare LF ends the line early", b"get k x\ndelete k\r\n", FLUSH),
        ("empty line after", b"get k\r\n\r\n", FLUSH),
        ("bare LF", b"get k\n", FLUSH),
        ("CR without LF", b"get k\r", FLUSH),
        ("LF CR", b"get k\n\r", FLUSH),
        ("no line end", b"get k", FLUSH),
        ("no line end, as long as CRLF would be", b"get\x01k", FLUSH),
        ("blank before command", b" get k\r\n", FLUSH),
        ("blank before CRLF", b"get k \r\n", KEEP),
        ("two blanks before key", b"get  k\r\n", KEEP),
        ("CR CR LF", b"get k\r\r\n", KEEP),
    ]

    def runTest(self) -> None:
        self.check_cases()


class Truncated(PassThroughTest):
    """Datagrams cut short, or whose IPv4/UDP lengths do not cover exactly the request. Once
    memcached's frame header is there, the rest of the datagram is unknown: flush."""

    def runTest(self) -> None:
        self.check_cases()

    def cases_to_send(self) -> list[Case]:
        full = bytes(self.get_frame(KEY, 1))
        cut: list[Case] = [(f"frame cut by {n} bytes", full[:-n], FLUSH) for n in (1, 2, 3, 7)]
        cut += [("frame cut in the frame header", full[:14 + 20 + 8 + 4], KEEP),
                ("frame cut after the UDP header", full[:14 + 20 + 8], KEEP),
                ("frame cut in the UDP header", full[:14 + 20 + 4], KEEP),
                ("frame cut in the IPv4 header", full[:14 + 10], KEEP)]

        def lengths(ip_delta: int, udp_delta: int) -> bytes:
            f = Ether(full)
            f[IP].len += ip_delta
            f[UDP].len += udp_delta
            del f[IP].chksum, f[UDP].chksum
            return bytes(f)

        shapes: list[Case] = [
            ("UDP and IPv4 lengths 2 bytes over the frame", lengths(2, 2), FLUSH),
            ("UDP length 1 short", lengths(0, -1), FLUSH),
            ("UDP length 1 over", lengths(0, 1), FLUSH),
            ("IPv4 length 1 short", lengths(-1, 0), FLUSH),
            ("IPv4 length 1 over", lengths(1, 0), FLUSH),
            ("only the frame header", bytes(body(dp.memcache_frame(1, b""))), FLUSH),
            ("get and blank", bytes(line(b"get ")), FLUSH),
            ("get, blank, key prefix", bytes(line(b"get " + KEY64[:10])), FLUSH),
            ("half a frame header", bytes(body(b"\x00\x01\x00\x00")), KEEP),
            ("empty UDP payload", bytes(body(b"")), KEEP),
        ]
        return cut + shapes

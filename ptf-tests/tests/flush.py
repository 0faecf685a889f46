"""Commands the switch cannot follow are dropped (and counted STAT_UNSAFE), never forwarded:
gat/gats (their keys come after the expiry time, possibly many), flush_all (empties every
item), memcached's binary protocol, and writes whose key hides behind more blanks than the
parser reads. Forwarding them would let memcached change items the switch keeps serving.
"""

from __future__ import annotations

import struct

import ptf.testutils as tu
from p4cache_ptf.base import CLIENT_PORT, P4CacheTest

from p4cache import dataplane as dp

KEY = b"k"


def binary_request(opcode: int, extras: bytes, key: bytes, value: bytes) -> bytes:
    """A memcached binary-protocol request: magic 0x80, then the 24-byte header's fields."""
    body = len(extras) + len(key) + len(value)
    return (struct.pack("!BBHBBHIIQ", 0x80, opcode, len(key), len(extras), 0, 0, body, 0, 0)
            + extras + key + value)


UNSAFE = [
    ("gat", b"gat 0 k\r\n"),
    ("gat, two keys", b"gat 100 k other\r\n"),
    ("gats", b"gats 0 k\r\n"),
    ("flush_all", b"flush_all\r\n"),
    ("flush_all delayed, noreply", b"flush_all 10 noreply\r\n"),
    ("binary protocol get", binary_request(0x00, b"", KEY, b"")),
    ("binary protocol set", binary_request(0x01, bytes(8), KEY, b"v")),
    ("binary protocol delete", binary_request(0x04, b"", KEY, b"")),
    ("write behind 5 blanks", b"delete     k\r\n"),
    ("set behind 9 blanks", b"set         k 0 0 1\r\nx\r\n"),
]


class UnsafeDropped(P4CacheTest):
    def runTest(self) -> None:
        reply = dp.render_value_reply(KEY, 0, b"v")
        self.cache(KEY, 1, reply)
        for i, (name, line) in enumerate(UNSAFE):
            with self.subTest(case=name):
                self.send(CLIENT_PORT, self.udp_frame(dp.memcache_frame(i, line)))
                tu.verify_no_other_packets(self)
        self.assert_stats(unsafe=len(UNSAFE), update=1)
        # Nothing reached memcached, so nothing changed there: the entry stays valid.
        self.expect_hit(self.get_frame(KEY, 99), dp.get_reply(99, reply))

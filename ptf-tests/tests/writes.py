"""Writes seen in flight: a UDP write to a cached key stops the switch answering it.

For every write command memcached has: the key is a hit before, the write itself goes to the
server byte for byte, and the key is a miss after (forwarded, never answered stale).
"""

from __future__ import annotations

from p4cache_ptf.base import OUTSIDER_IP, P4CacheTest
from scapy.layers.inet import IPOption_NOP, IPOption_Router_Alert

from p4cache import dataplane as dp

# command -> the request line(s) for key K (memcached's ASCII protocol)
WRITES = {
    "set": b"set %s 0 0 1\r\nx\r\n",
    "add": b"add %s 0 0 1\r\nx\r\n",
    "replace": b"replace %s 5 0 2\r\nxy\r\n",
    "append": b"append %s 0 0 1\r\nx\r\n",
    "prepend": b"prepend %s 0 0 1\r\nx\r\n",
    "cas": b"cas %s 0 0 1 12345\r\nx\r\n",
    "incr": b"incr %s 1\r\n",
    "decr": b"decr %s 1\r\n",
    "delete": b"delete %s\r\n",
    "touch": b"touch %s 10\r\n",
    "ms": b"ms %s 1 T0\r\nx\r\n",
    "md": b"md %s q\r\n",
    "ma": b"ma %s N0 J13\r\n",
    "mg": b"mg %s v T30\r\n",  # a read, but flags can touch or vivify the item
}


class WriteTest(P4CacheTest):
    def cached_hit(self, key: bytes, slot: int, rid: int) -> bytes:
        """Cache ``key`` in ``slot`` and check it is answered; returns its reply payload."""
        reply = dp.render_value_reply(key, 0, b"old value of " + key)
        self.cache(key, slot, reply)
        self.expect_hit(self.get_frame(key, rid), dp.get_reply(rid, reply))
        return reply

    def check_invalidates(self, key: bytes, slot: int, write: bytes, **frame_kw: object) -> None:
        self.cached_hit(key, slot, rid=slot)
        self.expect_forwarded(self.udp_frame(dp.memcache_frame(0x7000 + slot, write),
                                             **frame_kw))
        self.expect_forwarded(self.get_frame(key, 0x100 + slot))


class EachWriteInvalidates(WriteTest):
    """set add replace append prepend cas incr decr delete touch ms md ma, and mg."""

    def runTest(self) -> None:
        for slot, (cmd, line) in enumerate(WRITES.items(), start=1):
            key = b"w-" + cmd.encode()
            with self.subTest(command=cmd):
                self.check_invalidates(key, slot, line % key)
        n = len(WRITES)
        self.assert_stats(hit=n, miss=n, invalidate=n, update=n)


class WriteShapesInvalidate(WriteTest):
    """Writes invalidate whatever their frame looks like: extra blanks before the key (up to
    SPACES_MAX), noreply, a client outside the allow-list, IPv4 options, a
    first fragment, a multi-datagram frame header, a line cut short."""

    def runTest(self) -> None:
        cases = [
            (b"delete  %s\r\n", {}),
            (b"delete   %s\r\n", {}),
            (b"delete    %s\r\n", {}),
            (b"set %s 0 0 1 noreply\r\nx\r\n", {}),
            (b"delete %s\r\n", {"src_ip": OUTSIDER_IP}),
            (b"incr %s 1\r\n", {"sport": 11211}),
            (b"delete %s\r\n", {"options": [IPOption_Router_Alert()]}),
            (b"touch %s 1\r\n", {"options": [IPOption_NOP()] * 40}),
            (b"set %s 0 0 2000\r\n" + b"x" * 100, {"flags": "MF"}),
            (b"delete %s", {}),
            (b"delete %s\r", {}),
            (b"delete %s 0\r\n", {}),
        ]
        for slot, (line, kw) in enumerate(cases, start=1):
            key = b"shape%d" % slot
            with self.subTest(write=line, frame=kw):
                self.check_invalidates(key, slot, line % key, **kw)
        # A write in a datagram that claims to be one of several still invalidates.
        key, slot = b"multi", 20
        self.cached_hit(key, slot, rid=1)
        self.expect_forwarded(self.udp_frame(dp.memcache_frame(9, b"set multi 0 0 1\r\nx\r\n",
                                                               seq=0, total=2)))
        self.expect_forwarded(self.get_frame(key, 2))
        n = len(cases) + 1
        self.assert_stats(hit=n, miss=n, invalidate=n, update=n)


class WritesToOtherKeys(WriteTest):
    """Writes to other keys, even ones sharing a prefix with the cached key, leave it cached;
    non-writes (get, gets, version) do not invalidate either."""

    def runTest(self) -> None:
        key = b"keep"
        reply = self.cached_hit(key, 5, rid=1)
        others = [b"delete kee\r\n", b"delete keep2\r\n", b"set keepx 0 0 1\r\nx\r\n",
                  b"incr kee 1\r\n", b"touch ke 1\r\n", b"md keeps\r\n",
                  b"gets keep\r\n", b"get keep keep\r\n", b"version\r\n", b"stats\r\n"]
        for i, line in enumerate(others):
            with self.subTest(line=line):
                self.expect_forwarded(self.udp_frame(dp.memcache_frame(i, line)))
        self.expect_hit(self.get_frame(key, 2), dp.get_reply(2, reply))
        self.assert_stats(hit=2, update=1)

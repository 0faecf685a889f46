"""Writes seen in flight: a UDP write to a cached key stops the switch answering it.

For every write command memcached has: the key is a hit before, the write itself goes to the
server byte for byte, and the key is a miss after (forwarded, never answered stale). A write
whose datagram holds more than its one command line (a storage command's data block, say)
flushes the whole cache as well (see flush.py); each case says whether it does.
"""

from __future__ import annotations

from p4cache_ptf.base import OUTSIDER_IP, P4CacheTest
from scapy.layers.inet import IPOption_NOP, IPOption_Router_Alert

from p4cache import dataplane as dp

FLUSH, KEEP = True, False

# The request line of each write command memcached has, for key %s. A storage command's data
# block is a second line: its datagram flushes the cache. mg is a read, but its flags can touch or
# vivify the item.
STORAGE_LINES = (b"set %s 0 0 1", b"add %s 0 0 1", b"replace %s 5 0 1", b"append %s 0 0 1",
                 b"prepend %s 0 0 1", b"cas %s 0 0 1 12345", b"ms %s 1 T0")
ONE_LINE_WRITES = (b"incr %s 1", b"decr %s 1", b"delete %s", b"touch %s 10", b"md %s q",
                   b"ma %s N0 J13", b"mg %s v T30")
# command -> (the request line(s) for key K, whether the datagram flushes the cache)
WRITES = {**{text.split()[0].decode(): (text + b"\r\nx\r\n", FLUSH) for text in STORAGE_LINES},
          **{text.split()[0].decode(): (text + b"\r\n", KEEP) for text in ONE_LINE_WRITES}}


class WriteTest(P4CacheTest):
    def setUp(self) -> None:
        P4CacheTest.setUp(self)
        self.flushes = 0

    def cached_hit(self, key: bytes, slot: int, rid: int) -> bytes:
        """Cache ``key`` in ``slot`` (invalidation, then fill: valid after earlier flushes
        too) and check it is answered; returns its reply."""
        reply = dp.render_value_reply(key, 0, b"old value of " + key)
        self.refill(slot, reply, 1)
        self.add_lookup(key, slot)
        self.expect_hit(self.get_frame(key, rid), dp.get_reply(rid, reply))
        return reply

    def check_invalidates(self, key: bytes, slot: int, write: bytes, flushes: bool,
                          **frame_kw: object) -> None:
        self.cached_hit(key, slot, rid=slot)
        self.expect_forwarded(self.udp_frame(dp.memcache_frame(0x7000 + slot, write),
                                             **frame_kw))
        self.flushes += flushes
        self.assertEqual(self.stats()[dp.STAT_FLUSH], self.flushes,
                         "flushes so far (this write " +
                         ("should flush)" if flushes else "should not flush)"))
        self.expect_forwarded(self.get_frame(key, 0x100 + slot))


class EachWriteInvalidates(WriteTest):
    """set add replace append prepend cas incr decr delete touch ms md ma, and mg."""

    def runTest(self) -> None:
        for slot, (cmd, (text, flushes)) in enumerate(WRITES.items(), start=1):
            key = b"w-" + cmd.encode()
            with self.subTest(command=cmd):
                self.check_invalidates(key, slot, text % key, flushes)
        n = len(WRITES)
        self.assert_stats(hit=n, miss=n, invalidate=n, update=2 * n, flush=self.flushes)


class WriteShapesInvalidate(WriteTest):
    """Writes invalidate whatever their frame looks like: extra blanks before the key (up to
    SPACES_MAX), noreply, a client outside the allow-list, IPv4 options, a first fragment, a
    multi-datagram frame header, a line cut short, more tokens, a meta command's base64 flag
    (which flushes too)."""

    def runTest(self) -> None:
        cases = [
            (b"delete  %s\r\n", {}, KEEP),
            (b"delete   %s\r\n", {}, KEEP),
            (b"delete    %s\r\n", {}, KEEP),
            (b"delete %s 0\r\n", {}, KEEP),
            (b"delete %s\r\n", {"src_ip": OUTSIDER_IP}, KEEP),
            (b"incr %s 1\r\n", {"sport": 11211}, KEEP),
            (b"set %s 0 0 1 noreply\r\nx\r\n", {}, FLUSH),
            (b"delete %s\r\n", {"options": [IPOption_Router_Alert()]}, FLUSH),
            (b"touch %s 1\r\n", {"options": [IPOption_NOP()] * 40}, FLUSH),
            (b"set %s 0 0 2000\r\n" + b"x" * 100, {"flags": "MF"}, FLUSH),
            (b"delete %s", {}, FLUSH),
            (b"delete %s\r", {}, FLUSH),
            # A meta command with a "b" flag names its key in base64: the key read is maybe not
            # the item's. A "b" after another command's key means nothing.
            (b"md %s b\r\n", {}, FLUSH),
            (b"mg %s v b\r\n", {}, FLUSH),
            (b"ma %s b MI\r\n", {}, FLUSH),
            (b"touch %s 10 b\r\n", {}, KEEP),
        ]
        for slot, (text, kw, flushes) in enumerate(cases, start=1):
            key = b"shape%d" % slot
            with self.subTest(write=text, frame=kw):
                self.check_invalidates(key, slot, text % key, flushes, **kw)
        # A write in a datagram that claims to be one of several invalidates and flushes.
        key, slot = b"multi", 20
        self.cached_hit(key, slot, rid=1)
        self.expect_forwarded(self.udp_frame(dp.memcache_frame(9, b"delete multi\r\n",
                                                               seq=0, total=2)))
        self.flushes += 1
        self.expect_forwarded(self.get_frame(key, 2))
        n = len(cases) + 1
        self.assert_stats(hit=n, miss=n, invalidate=n, update=2 * n, flush=self.flushes)


class WritesToOtherKeys(WriteTest):
    """Writes to other keys, even ones sharing a prefix with the cached key, leave it cached;
    reads (gets, multi-key get) do not invalidate either."""

    def runTest(self) -> None:
        key = b"keep"
        reply = self.cached_hit(key, 5, rid=1)
        others = [b"delete kee\r\n", b"delete keep2\r\n", b"incr kee 1\r\n", b"touch ke 1\r\n",
                  b"md keeps\r\n", b"ma keepkeep\r\n", b"mg keepx v\r\n", b"decr Keep 1\r\n",
                  b"gets keep\r\n", b"get keep keep\r\n", b"get keep2\r\n"]
        for i, text in enumerate(others):
            with self.subTest(line=text):
                self.expect_forwarded(self.udp_frame(dp.memcache_frame(i, text)))
        self.expect_hit(self.get_frame(key, 2), dp.get_reply(2, reply))
        self.assert_stats(hit=2, update=2, miss=1)  # the miss: get keep2

"""Counters read over P4Runtime: cache_stats (by STAT_* index) and per-slot slot_hits."""

from __future__ import annotations

import ptf.testutils as tu
from p4cache_ptf.base import CLIENT_PORT, OUTSIDER_IP, SERVER_MAC, P4CacheTest

from p4cache import dataplane as dp


class CountersCount(P4CacheTest):
    """Hits, misses, invalidations, applied and refused updates, untrusted datagrams and
    outsiders' GETs each land in their own cell; slot_hits counts packets and bytes of the
    requests each slot answered, and nothing for other slots."""

    def runTest(self) -> None:
        self.assert_stats()
        k1, k2 = b"count-one", b"count-two"
        r1, r2 = dp.render_value_reply(k1, 1, b"1"), dp.render_value_reply(k2, 2, b"22")
        self.cache(k1, 100, r1)
        self.cache(k2, 4095, r2)  # the last slot
        self.assertEqual(self.update(100, 1, r2).status, dp.STATUS_STALE)
        self.assert_stats(update=2, stale=1)

        f1, f2 = self.get_frame(k1, 1), self.get_frame(k2, 2, sport=40002)
        for _ in range(3):
            self.expect_hit(f1, dp.get_reply(1, r1))
        for _ in range(2):
            self.expect_hit(f2, dp.get_reply(2, r2))
        self.assert_stats(update=2, stale=1, hit=5)
        for i in range(4):
            self.expect_forwarded(self.get_frame(b"uncached%d" % i, i))
        self.expect_forwarded(self.udp_frame(dp.memcache_frame(5, b"delete count-one\r\n")))
        self.expect_forwarded(f1)  # now a miss
        self.expect_forwarded(self.get_frame(k2, 6, src_ip=OUTSIDER_IP))
        self.send(CLIENT_PORT, self.udp_frame(dp.update_datagram(4095, 9, b""),
                                              dport=dp.CACHE_CTRL_PORT, src_mac=SERVER_MAC))
        tu.verify_no_other_packets(self)
        self.assert_stats(update=2, stale=1, hit=5, miss=5, invalidate=1, not_allowed=1,
                          untrusted=1)

        hits = self.p4rt.read_counters(dp.COUNTER_SLOT_HITS)
        self.assertEqual(hits.pop(100), (3, 3 * len(bytes(f1))), "slot_hits[100]")
        self.assertEqual(hits.pop(4095), (2, 2 * len(bytes(f2))), "slot_hits[4095]")
        self.assertEqual({i: c for i, c in hits.items() if c != (0, 0)}, {},
                         "slot_hits of slots that answered nothing")
        self.assertEqual(self.p4rt.read_counter(dp.COUNTER_SLOT_HITS, 100),
                         (3, 3 * len(bytes(f1))))

"""Hot-key reports: a key missed HOT_THRESHOLD times within one epoch is reported by a digest
(server address, key length, key, its count of misses), again at exactly 2, 4, 8 and 16 times
that count in the same epoch, and again in a later epoch.

Epochs are 2^EPOCH_SHIFT microseconds of the switch's clock (about 1.05 s), which the tests
cannot read. They find an epoch boundary from the outside instead: a probe key is sent in bursts
of HOT_THRESHOLD misses; a report of it counting exactly HOT_THRESHOLD misses is its first burst
of an epoch, so the second such report comes from a burst in a new epoch, which has just begun.
"""

from __future__ import annotations

import time

import ptf.testutils as tu
from p4cache_ptf.base import CLIENT_PORT, OUTSIDER_IP, SERVER_IP, SERVER_PORT, P4CacheTest, ip_int

from p4cache import dataplane as dp

EPOCH_S = (1 << dp.EPOCH_SHIFT) / 1e6
# How long before we notice it an epoch may have begun: two bursts and the digest's delivery.
SYNC_SLACK_S = 0.2


class HotKeyTest(P4CacheTest):
    def setUp(self) -> None:
        P4CacheTest.setUp(self)
        self.p4rt.enable_digest(dp.DIGEST_HOT_KEY)
        self.reported = 0  # keys in every digest received
        self.counts: list[int] = []  # the counts of the last reports() call, in order

    def misses(self, key: bytes, n: int, **frame_kw: object) -> None:
        """Send ``n`` GETs of ``key`` and wait until all reached the server (were processed)."""
        frame = bytes(self.get_frame(key, 7, **frame_kw))
        for _ in range(n):
            self.send(CLIENT_PORT, frame)
        for _ in range(n):
            tu.verify_packet(self, frame, SERVER_PORT)

    def reports(self, wait: float) -> list[bytes]:
        """Keys reported by digests arriving within ``wait`` seconds."""
        keys = []
        self.counts = []
        deadline = time.monotonic() + wait
        while (left := deadline - time.monotonic()) > 0:
            d = self.p4rt.get_digest(timeout=left)
            if d is None:
                break
            self.assertEqual(d.name, dp.DIGEST_HOT_KEY)
            for data in d.data:
                self.assertEqual(set(data), {"server_addr", "key_len", "key", "count"},
                                 "digest members")
                self.assertEqual(data["server_addr"], ip_int(SERVER_IP), "digest server_addr")
                keys.append(dp.key_from_match(data["key_len"], data["key"]))
                self.counts.append(data["count"])
        self.reported += len(keys)
        return keys

    def epoch_start(self, probe: bytes) -> float:
        """Monotonic time just after a new epoch of the switch began (within SYNC_SLACK_S)."""
        seen = 0
        deadline = time.monotonic() + 3 * EPOCH_S + 1
        while time.monotonic() < deadline:
            self.misses(probe, dp.HOT_THRESHOLD)
            got = self.reports(0.03)
            self.assertLessEqual(set(got), {probe}, "only the probe is missing often")
            # The probe's count starts from zero each epoch: only a report at exactly T misses
            # is its first burst of an epoch (2T, 4T, ... are the same epoch's re-reports).
            if dp.HOT_THRESHOLD in self.counts:
                seen += 1
                if seen == 2:
                    return time.monotonic()
        self.fail(f"no second report of the probe key within {3 * EPOCH_S + 1:.1f} s")


class HotKeyDigest(HotKeyTest):
    """Reported at the HOT_THRESHOLD-th miss, not before, with its count; again at exactly
    2 and 4 times it (the levels go on to 16 times) and at no count in between; again in the
    next epoch."""

    def runTest(self) -> None:
        key = b"hot:key"
        t = dp.HOT_THRESHOLD
        for attempt in range(3):
            t0 = self.epoch_start(b"probe%d" % attempt)
            self.misses(key, t - 1)
            early, early_counts = self.reports(0.05), self.counts
            self.misses(key, 1)
            first, first_counts = self.reports(0.15), self.counts
            # T more: one report, at exactly 2T (any report in between would be listed too)
            self.misses(key, t)
            second, second_counts = self.reports(0.15), self.counts
            if time.monotonic() - t0 < EPOCH_S - SYNC_SLACK_S - 0.1:
                break
            # Too slow to be sure all of it fell in one epoch (a loaded machine): again.
            self.reported += len(self.p4rt.drain_digests())
        else:
            self.fail("could not send 2 HOT_THRESHOLD misses within one epoch in 3 attempts")
        self.assertEqual((early, early_counts), ([], []), f"reported before {t} misses")
        self.assertEqual((first, first_counts), ([key], [t]), f"report after {t} misses")
        self.assertEqual((second, second_counts), ([key], [2 * t]),
                         f"one more report, at {2 * t} misses")

        # The next epoch: reported again once it is hot again.
        time.sleep(max(0.0, t0 + EPOCH_S + 0.05 - time.monotonic()))
        self.misses(key, dp.HOT_THRESHOLD)
        self.assertEqual(self.reports(0.5), [key], "report in the next epoch")
        self.assertEqual(self.counts, [dp.HOT_THRESHOLD], "counting from zero again")
        self.assertLess(time.monotonic() - t0, 2 * EPOCH_S - SYNC_SLACK_S)
        self.assertEqual(self.reports(0.1), [])
        stats = self.stats()
        self.assertEqual(stats[dp.STAT_REPORT], self.reported, "digests counted in STAT_REPORT")
        self.assertEqual(stats[dp.STAT_HIT], 0)


class NoReportsForHitsOrOutsiders(HotKeyTest):
    """Hits are not misses, and clients outside the allow-list are not counted at all; a
    cached key whose slot is invalid misses and is counted like any other."""

    def runTest(self) -> None:
        cached = b"cached-hot"
        reply = dp.render_value_reply(cached, 0, b"v")
        self.cache(cached, 1, reply)
        n = 3 * dp.HOT_THRESHOLD
        frame = self.get_frame(cached, 1)
        for _ in range(n):
            self.expect_hit(frame, dp.get_reply(1, reply))
        self.misses(b"outsider-hot", n, src_ip=OUTSIDER_IP)
        self.assertEqual(self.reports(0.3), [])
        self.assert_stats(hit=n, not_allowed=n, update=1)
        # Invalidate the slot: the cached key now misses. Its first miss asks for a refill
        # (RefillAsk); after that it is counted like any other and reported when hot.
        self.assertEqual(self.update(1, 2, b"").status, dp.STATUS_APPLIED)
        self.misses(cached, 1)
        self.assertEqual(self.reports(0.5), [cached], "refill ask at the first miss")
        self.misses(cached, dp.HOT_THRESHOLD)
        got = self.reports(0.5)
        if not got:  # the misses straddled an epoch boundary: one more round settles it
            self.misses(cached, dp.HOT_THRESHOLD)
            got = self.reports(0.5)
        self.assertEqual(got, [cached])
        stats = self.stats()
        self.assertEqual((stats[dp.STAT_REPORT], stats[dp.STAT_REFILL]), (1, 1))


class RefillAsk(HotKeyTest):
    """A cached key whose slot cannot answer is reported at its first miss, once until the
    slot is filled again: after a write seen by the switch, an invalidation by an agent, and a
    flush. Keys not cached, cached keys that hit, and outsiders never ask; a reservation does
    not re-arm the ask, a fill does. Each case uses its own key and few misses, so no hot-key
    report (HOT_THRESHOLD misses in one epoch) can stand in for an ask."""

    def one_miss(self, key: bytes, rid: int, **kw: object) -> None:
        frame = self.get_frame(key, rid, **kw)
        self.send(CLIENT_PORT, frame)
        tu.verify_packet(self, frame, SERVER_PORT)

    def asks(self, key: bytes, what: str) -> None:
        """The first miss asks; two more do not."""
        self.one_miss(key, 1)
        self.assertEqual(self.reports(0.5), [key], f"refill ask after {what}")
        self.one_miss(key, 2)
        self.one_miss(key, 3)
        self.assertEqual(self.reports(0.2), [], f"a second ask after {what} before a fill")

    def cached(self, key: bytes, slot: int) -> bytes:
        reply = dp.render_value_reply(key, 0, b"v1")
        self.cache(key, slot, reply, version=1)
        self.expect_hit(self.get_frame(key, 9), dp.get_reply(9, reply))
        return reply

    def runTest(self) -> None:
        # Hits and a few misses of an uncached key ask nothing.
        self.cached(b"hits", 1)
        for rid in range(dp.HOT_THRESHOLD):
            self.expect_hit(self.get_frame(b"hits", rid),
                            dp.get_reply(rid, dp.render_value_reply(b"hits", 0, b"v1")))
        for rid in range(3):
            self.one_miss(b"not-cached", rid)
        self.assertEqual(self.reports(0.3), [], "hits and a few misses of an uncached key")

        # A write the switch sees on its way to memcached.
        self.cached(b"udp-write", 2)
        self.expect_forwarded(self.udp_frame(dp.memcache_frame(9, b"delete udp-write\r\n")))
        self.asks(b"udp-write", "a UDP delete")

        # An agent's invalidation; a fill re-arms the ask, a reservation alone does not.
        reply = self.cached(b"agent", 3)
        self.assertEqual(self.ctrl(dp.invalidate_key_datagram(b"agent")).status,
                         dp.STATUS_APPLIED)
        self.asks(b"agent", "an agent's invalidation")
        self.assertEqual(self.update(3, 2, b"").status, dp.STATUS_APPLIED)
        self.one_miss(b"agent", 4)
        self.assertEqual(self.reports(0.2), [], "ask re-armed by a reservation")
        self.assertEqual(self.update(3, 3, reply).status, dp.STATUS_APPLIED)
        self.expect_hit(self.get_frame(b"agent", 5), dp.get_reply(5, reply))
        self.assertEqual(self.ctrl(dp.invalidate_key_datagram(b"agent")).status,
                         dp.STATUS_APPLIED)
        self.one_miss(b"agent", 6)
        self.assertEqual(self.reports(0.5), [b"agent"], "no ask after a refill and a write")

        # Outsiders neither hit nor ask.
        self.cached(b"outsider", 4)
        self.assertEqual(self.ctrl(dp.invalidate_key_datagram(b"outsider")).status,
                         dp.STATUS_APPLIED)
        self.one_miss(b"outsider", 1, src_ip=OUTSIDER_IP)
        self.assertEqual(self.reports(0.2), [], "an outsider's GET asked for a refill")
        self.asks(b"outsider", "an outsider's GET")

        # A flush: every filled slot stops answering; each one's key asks once.
        self.cached(b"flush-a", 5)
        self.cached(b"flush-b", 6)
        self.assertEqual(self.ctrl(dp.flush_datagram(1)).status, dp.STATUS_APPLIED)
        self.asks(b"flush-a", "a flush")
        self.asks(b"flush-b", "a flush")
        self.assertEqual(self.stats()[dp.STAT_REFILL], self.reported, "asks in STAT_REFILL")
        self.assertEqual(self.stats()[dp.STAT_REPORT], 0, "asks are not hot-key reports")

"""Hot-key reports: a key missed HOT_THRESHOLD times within one epoch is reported once, by a
digest (server address, key length, key), and again in a later epoch.

Epochs are 2^EPOCH_SHIFT microseconds of the switch's clock (about 1.05 s), which the tests
cannot read. They find an epoch boundary from the outside instead: a probe key is sent in bursts
of HOT_THRESHOLD misses; it is reported in one epoch, and the next report of it can only come
from a burst in a new epoch, which has just begun.
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
        deadline = time.monotonic() + wait
        while (left := deadline - time.monotonic()) > 0:
            d = self.p4rt.get_digest(timeout=left)
            if d is None:
                break
            self.assertEqual(d.name, dp.DIGEST_HOT_KEY)
            for data in d.data:
                self.assertEqual(set(data), {"server_addr", "key_len", "key"}, "digest members")
                self.assertEqual(data["server_addr"], ip_int(SERVER_IP), "digest server_addr")
                keys.append(dp.key_from_match(data["key_len"], data["key"]))
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
            if got:
                seen += 1
                if seen == 2:
                    return time.monotonic()
        self.fail(f"no second report of the probe key within {3 * EPOCH_S + 1:.1f} s")


class HotKeyDigest(HotKeyTest):
    """Reported at the HOT_THRESHOLD-th miss, not before; once per epoch; again in the next."""

    def runTest(self) -> None:
        key = b"hot:key"
        for attempt in range(3):
            t0 = self.epoch_start(b"probe%d" % attempt)
            self.misses(key, dp.HOT_THRESHOLD - 1)
            early = self.reports(0.1)
            self.misses(key, 1)
            first = self.reports(0.2)
            if time.monotonic() - t0 < EPOCH_S - SYNC_SLACK_S - 0.1:
                break
            # Too slow to be sure all of it fell in one epoch (a loaded machine): again.
            self.reported += len(self.p4rt.drain_digests())
        else:
            self.fail("could not send HOT_THRESHOLD misses within one epoch in 3 attempts")
        self.assertEqual(early, [], f"reported before {dp.HOT_THRESHOLD} misses")
        self.assertEqual(first, [key], f"report after {dp.HOT_THRESHOLD} misses")

        # More misses in the same epoch: no more reports.
        while time.monotonic() - t0 < EPOCH_S - SYNC_SLACK_S - 0.1:
            self.misses(key, dp.HOT_THRESHOLD)
            self.assertEqual(self.reports(0.05), [], "second report within one epoch")

        # The next epoch: reported again once it is hot again.
        time.sleep(max(0.0, t0 + EPOCH_S + 0.05 - time.monotonic()))
        self.misses(key, dp.HOT_THRESHOLD)
        self.assertEqual(self.reports(0.5), [key], "report in the next epoch")
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
        # Invalidate the slot: the cached key now misses, and is reported when hot.
        self.assertEqual(self.update(1, 2, b"").status, dp.STATUS_APPLIED)
        self.misses(cached, dp.HOT_THRESHOLD)
        got = self.reports(0.5)
        if not got:  # the misses straddled an epoch boundary: one more round settles it
            self.misses(cached, dp.HOT_THRESHOLD)
            got = self.reports(0.5)
        self.assertEqual(got, [cached])
        self.assertEqual(self.stats()[dp.STAT_REPORT], 1)

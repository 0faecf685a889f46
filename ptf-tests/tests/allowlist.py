"""The client allow-list: only clients in client_allowlist are answered from the cache."""

from __future__ import annotations

from p4cache_ptf.base import OUTSIDER_IP, P4CacheTest, ip_int

from p4cache import dataplane as dp


class AllowList(P4CacheTest):
    """A GET for a cached key from a client outside the allow-list goes to the server
    unchanged and is counted STAT_NOT_ALLOWED (not a miss); adding the client's prefix makes
    it a hit, deleting the entry makes it a pass-through again."""

    def runTest(self) -> None:
        key = b"allowed?"
        reply = dp.render_value_reply(key, 0, b"yes")
        self.cache(key, 5, reply)

        for i, src in enumerate((OUTSIDER_IP, "10.0.1.1", "9.255.255.255", "10.0.0.0")):
            with self.subTest(client=src):
                frame = self.get_frame(key, i, src_ip=src)
                if src == "10.0.0.0":  # inside 10.0.0.0/24
                    self.expect_hit(frame, dp.get_reply(i, reply))
                else:
                    self.expect_forwarded(frame)
        self.expect_hit(self.get_frame(key, 9, src_ip="10.0.0.255"), dp.get_reply(9, reply))
        self.assert_stats(update=1, hit=2, not_allowed=3)

        net = {"src_addr": (ip_int("192.168.7.0"), 24)}
        self.p4rt.insert(dp.TABLE_ALLOWLIST, net, "allow_client")
        self.expect_hit(self.get_frame(key, 10, src_ip=OUTSIDER_IP), dp.get_reply(10, reply))
        self.p4rt.delete(dp.TABLE_ALLOWLIST, net, "allow_client")
        self.expect_forwarded(self.get_frame(key, 11, src_ip=OUTSIDER_IP))
        # An outsider's miss is not a miss either.
        self.expect_forwarded(self.get_frame(b"other", 12, src_ip=OUTSIDER_IP))
        self.assert_stats(update=1, hit=3, not_allowed=5)

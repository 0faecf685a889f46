"""Control datagrams: versioned updates, the `written` guard, packet-out, trust, other ops."""

from __future__ import annotations

import ptf.testutils as tu
from p4cache_ptf.base import (
    CLIENT_IP,
    CLIENT_PORT,
    OUTSIDER_IP,
    SERVER2_IP,
    SERVER2_PORT,
    SERVER_IP,
    SERVER_PORT,
    P4CacheTest,
)

from p4cache import dataplane as dp


def reply_of(key: bytes, value: bytes) -> bytes:
    return dp.render_value_reply(key, 0, value)


class UpdateTest(P4CacheTest):
    def assert_serves(self, key: bytes, reply: bytes, rid: int = 1) -> None:
        self.expect_hit(self.get_frame(key, rid), dp.get_reply(rid, reply))

    def assert_miss(self, key: bytes, rid: int = 1) -> None:
        self.expect_forwarded(self.get_frame(key, rid))

    def assert_status(self, ack: dp.Ctrl, status: int) -> None:
        self.assertEqual(ack.status_name, dp.STATUS_NAMES[status], ack)


class StaleUpdateIgnored(UpdateTest):
    """An update applies only if its version is newer than the slot's: equal or older ones are
    acknowledged STATUS_STALE and change nothing; a newer one replaces the reply."""

    def runTest(self) -> None:
        key, slot = b"versioned", 3
        a, b = reply_of(key, b"A"), reply_of(key, b"value B")
        self.add_lookup(key, slot)
        self.assert_status(self.update(slot, 5, a), dp.STATUS_APPLIED)
        self.assert_serves(key, a)
        self.assert_status(self.update(slot, 5, b), dp.STATUS_STALE)
        self.assert_status(self.update(slot, 4, b), dp.STATUS_STALE)
        self.assert_status(self.update(slot, 0, b), dp.STATUS_STALE)
        self.assert_serves(key, a)
        self.assert_status(self.update(slot, 6, b), dp.STATUS_APPLIED)
        self.assert_serves(key, b)
        self.assert_status(self.update(slot, 6, b""), dp.STATUS_STALE)  # stale invalidation
        self.assert_serves(key, b)
        self.assert_status(self.update(slot, 0xFFFFFFF0, b""), dp.STATUS_APPLIED)
        self.assert_miss(key)
        self.assert_status(self.update(slot, 0xFFFFFFF0, a), dp.STATUS_STALE)
        self.assert_status(self.update(slot, 0xFFFFFFFF, a), dp.STATUS_APPLIED)
        self.assert_serves(key, a)
        # Slots are independent: another slot starts from version 0.
        self.assert_status(self.update(slot + 1, 1, b), dp.STATUS_APPLIED)
        self.assert_serves(key, a)
        self.assert_stats(update=5, stale=5, hit=6, miss=1)


class WrittenRefusesRefill(UpdateTest):
    """After a write went by, an update with bytes is refused (STATUS_WRITTEN) until an
    invalidation (empty update) newer than the slot's version clears the mark."""

    def runTest(self) -> None:
        key, slot = b"racy", 4
        old, new = reply_of(key, b"old"), reply_of(key, b"new")
        self.cache(key, slot, old, version=1)
        self.assert_serves(key, old)
        self.expect_forwarded(self.udp_frame(dp.memcache_frame(1, b"delete racy\r\n")))
        self.assert_miss(key)
        # A refill fetched before the write must lose, whatever its version.
        self.assert_status(self.update(slot, 2, old), dp.STATUS_WRITTEN)
        self.assert_status(self.update(slot, 100, old), dp.STATUS_WRITTEN)
        self.assert_miss(key)
        # An invalidation that is not newer does not clear the mark.
        self.assert_status(self.update(slot, 1, b""), dp.STATUS_STALE)
        self.assert_status(self.update(slot, 3, new), dp.STATUS_WRITTEN)
        # A newer invalidation does; then only updates newer than it apply.
        self.assert_status(self.update(slot, 4, b""), dp.STATUS_APPLIED)
        self.assert_miss(key)
        self.assert_status(self.update(slot, 4, new), dp.STATUS_STALE)
        self.assert_status(self.update(slot, 5, new), dp.STATUS_APPLIED)
        self.assert_serves(key, new)
        # OP_INVALIDATE_KEY marks the slot written too.
        self.assert_status(self.ctrl(dp.invalidate_key_datagram(key)), dp.STATUS_APPLIED)
        self.assert_miss(key)
        self.assert_status(self.update(slot, 6, new), dp.STATUS_WRITTEN)
        self.assert_status(self.update(slot, 7, b""), dp.STATUS_APPLIED)
        self.assert_status(self.update(slot, 8, new), dp.STATUS_APPLIED)
        self.assert_serves(key, new)
        self.assert_stats(update=5, stale=6, invalidate=2, hit=3, miss=4)


class PacketOutUpdates(UpdateTest):
    """Control datagrams sent as P4Runtime packet-outs are acknowledged by packet-ins (and
    nothing leaves a data port)."""

    def runTest(self) -> None:
        key, slot = b"from-cpu", 9
        r1, r2 = reply_of(key, b"one"), reply_of(key, b"two" * 50)
        self.add_lookup(key, slot)
        self.assert_status(self.update(slot, 1, r1, via="cpu"), dp.STATUS_APPLIED)
        self.assert_serves(key, r1)
        self.assert_status(self.update(slot, 1, r2, via="cpu"), dp.STATUS_STALE)
        self.assert_status(self.update(slot, 2, r2, via="cpu"), dp.STATUS_APPLIED)
        self.assert_serves(key, r2)
        ack = self.ctrl(dp.read_datagram(slot), via="cpu")
        self.assert_status(ack, dp.STATUS_VALID)
        self.assertEqual((ack.version, ack.length), (2, len(r2)))
        self.assert_status(self.ctrl(dp.invalidate_key_datagram(key), via="cpu"),
                           dp.STATUS_APPLIED)
        self.assert_miss(key)
        self.assert_status(self.update(slot, 3, b"", via="cpu"), dp.STATUS_APPLIED)
        self.assert_status(self.update(slot, 4, r1, via="cpu"), dp.STATUS_APPLIED)
        self.assert_serves(key, r1)
        # A packet-out speaks for the server whose address it carries as its source.
        self.assert_status(self.ctrl(dp.invalidate_key_datagram(key), via="cpu",
                                     server=SERVER2_IP), dp.STATUS_NOT_CACHED)
        self.assert_serves(key, r1, rid=2)
        self.assertIsNone(self.p4rt.get_packet_in(timeout=0.2), "unexpected packet-in")
        self.assert_stats(update=4, stale=1, invalidate=1, hit=4, miss=1)


class UntrustedControlDropped(UpdateTest):
    """Control datagrams from a source not in trusted_agents (for the port it comes in by), and
    acknowledgements arriving from anywhere, go nowhere (not applied, not acknowledged, not
    forwarded) and are counted."""

    def runTest(self) -> None:
        key, slot = b"guarded", 6
        good, evil = reply_of(key, b"good"), reply_of(key, b"EVIL")
        self.cache(key, slot, good, version=1)
        self.assert_serves(key, good)
        ack_bytes = dp.CTRL_HDR.pack(dp.OP_UPDATE | dp.ACK_FLAG, dp.STATUS_APPLIED, slot, 99, 0)
        attempts = [
            ("client", CLIENT_PORT, CLIENT_IP, dp.update_datagram(slot, 99, evil)),
            ("client", CLIENT_PORT, CLIENT_IP, dp.update_datagram(slot, 99, b"")),
            ("client", CLIENT_PORT, CLIENT_IP, dp.invalidate_key_datagram(key)),
            ("client", CLIENT_PORT, CLIENT_IP, dp.read_datagram(slot)),
            ("outsider", SERVER2_PORT, OUTSIDER_IP, dp.update_datagram(slot, 100, evil)),
            ("server's neighbour", SERVER_PORT, "10.0.0.20", dp.update_datagram(slot, 100, b"")),
            ("ack from the server", SERVER_PORT, SERVER_IP, ack_bytes),
            ("ack with bytes", SERVER_PORT, SERVER_IP,
             dp.CTRL_HDR.pack(dp.OP_UPDATE | dp.ACK_FLAG, 0, slot, 101, len(evil)) + evil),
        ]
        for name, port, src_ip, payload in attempts:
            with self.subTest(source=name, op=payload[0]):
                self.send(port, self.ctrl_frame(payload, src_ip=src_ip))
                tu.verify_no_other_packets(self)
        self.assert_serves(key, good)
        # An acknowledgement sent as a packet-out is dropped too (no packet-in comes back).
        self.p4rt.packet_out(bytes(self.ctrl_frame(ack_bytes)), egress_port=SERVER_PORT)
        tu.verify_no_other_packets(self)
        self.assertIsNone(self.p4rt.get_packet_in(timeout=0.2))
        self.assert_stats(untrusted=len(attempts) + 1, update=1, hit=2)
        # The slot's version is still 1: the trusted agent's version 2 applies.
        self.assert_status(self.update(slot, 2, evil), dp.STATUS_APPLIED)


class SpoofedAgentAddress(UpdateTest):
    """trusted_agents holds (ingress port, address): a host that sends from a server's address
    through another port (the client's, the other server's) is no agent. Its updates,
    invalidations and reads are dropped unanswered and counted STAT_UNTRUSTED; the cache keeps
    serving the server's value, and the versions it sent are not used up."""

    def runTest(self) -> None:
        key, slot = b"foo", 1
        good, evil = reply_of(key, b"bar"), reply_of(key, b"EVIL")
        self.cache(key, slot, good, version=1)
        attempts = [
            ("update from the client's port", CLIENT_PORT, SERVER_IP,
             dp.update_datagram(slot, 2, evil)),
            ("update with a much newer version", CLIENT_PORT, SERVER_IP,
             dp.update_datagram(slot, 0xFFFFFFFF, evil)),
            ("invalidation from the client's port", CLIENT_PORT, SERVER_IP,
             dp.update_datagram(slot, 2, b"")),
            ("key invalidation from the client's port", CLIENT_PORT, SERVER_IP,
             dp.invalidate_key_datagram(key)),
            ("read from the client's port", CLIENT_PORT, SERVER_IP, dp.read_datagram(slot)),
            ("update from server2's port", SERVER2_PORT, SERVER_IP,
             dp.update_datagram(slot, 3, evil)),
            ("server2's address from the server's port", SERVER_PORT, SERVER2_IP,
             dp.update_datagram(slot, 3, evil)),
        ]
        for name, port, src_ip, payload in attempts:
            with self.subTest(attempt=name):
                self.send(port, self.ctrl_frame(payload, src_ip=src_ip))
                tu.verify_no_other_packets(self)  # no acknowledgement to the spoofer either
        self.assert_serves(key, good)
        self.assert_stats(untrusted=len(attempts), update=1, hit=1)
        # The slot is still at version 1: the agent's own version 2 applies.
        self.assert_status(self.update(slot, 2, b""), dp.STATUS_APPLIED)
        self.assert_status(self.update(slot, 3, evil), dp.STATUS_APPLIED)
        self.assert_serves(key, evil, rid=2)


class OtherControlOps(UpdateTest):
    """OP_READ, OP_INVALIDATE_KEY, and malformed control datagrams (STATUS_BAD)."""

    def runTest(self) -> None:
        key, slot = b"ops", 12
        r = reply_of(key, b"x" * 33)
        ack = self.ctrl(dp.read_datagram(slot))
        self.assert_status(ack, dp.STATUS_INVALID)
        self.assertEqual((ack.version, ack.length), (0, 0))
        self.cache(key, slot, r, version=7)
        ack = self.ctrl(dp.read_datagram(slot))
        self.assert_status(ack, dp.STATUS_VALID)
        self.assertEqual((ack.version, ack.length), (7, len(r)))
        self.assert_status(self.ctrl(dp.invalidate_key_datagram(b"not-cached")),
                           dp.STATUS_NOT_CACHED)
        self.assert_serves(key, r)

        hdr = dp.CTRL_HDR.pack
        bad = [
            ("reply longer than announced", hdr(dp.OP_UPDATE, 0, slot, 8, 5) + b"123456"),
            ("reply shorter than announced", hdr(dp.OP_UPDATE, 0, slot, 8, 9) + b"12345"),
            ("slot out of range", dp.update_datagram(dp.CACHE_SLOTS, 8, r)),
            ("slot 0xffff", dp.update_datagram(0xFFFF, 8, r)),
            ("read out of range", dp.read_datagram(dp.CACHE_SLOTS)),
            ("unknown op", hdr(9, 0, slot, 8, 0)),
            ("op 0", hdr(0, 0, slot, 8, 0)),
            ("invalidate key without CRLF", hdr(dp.OP_INVALIDATE_KEY, 0, 0, 0, 0) + key),
            ("invalidate key too long",
             hdr(dp.OP_INVALIDATE_KEY, 0, 0, 0, 0) + b"k" * (dp.KMAX + 1) + b"\r\n"),
            ("invalidate no key", hdr(dp.OP_INVALIDATE_KEY, 0, 0, 0, 0) + b"\r\n"),
        ]
        for name, payload in bad:
            with self.subTest(case=name):
                self.assert_status(self.ctrl(payload), dp.STATUS_BAD)
        # None of them touched the slot.
        self.assert_serves(key, r, rid=2)
        ack = self.ctrl(dp.read_datagram(slot))
        self.assertEqual((ack.status, ack.version, ack.length), (dp.STATUS_VALID, 7, len(r)))
        self.assert_status(self.ctrl(dp.invalidate_key_datagram(key)), dp.STATUS_APPLIED)
        ack = self.ctrl(dp.read_datagram(slot))
        self.assertEqual((ack.status, ack.version), (dp.STATUS_INVALID, 7))
        self.assert_miss(key)
        # Bad updates count as refused (stale) updates; the read/invalidate ones do not.
        self.assert_stats(update=1, stale=4, invalidate=1, hit=2, miss=1)


class AcksEchoRequestId(UpdateTest):
    """The host agent matches acknowledgements of OP_INVALIDATE_KEY and OP_FLUSH to its requests
    by `version`: whatever the status (applied, not cached, bad), from an agent or as a
    packet-out, the acknowledgement carries op | 0x80, the status, and slot, version and length
    exactly as sent (the switch does not use them for these ops), and nothing else."""

    def runTest(self) -> None:
        key, slot = b"echo", 21
        r = reply_of(key, b"v")
        hdr = dp.CTRL_HDR.pack
        versions = (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF)
        self.add_lookup(key, slot)
        v, rounds = 1, 0
        for via in ("agent", "cpu"):
            for ver in versions:
                with self.subTest(via=via, version=ver):
                    v = self.refill(slot, r, v + 1)
                    self.assert_serves(key, r, rid=rounds)
                    cases = [
                        (dp.invalidate_key_datagram(key, ver), dp.STATUS_APPLIED),
                        (dp.invalidate_key_datagram(b"not-cached", ver), dp.STATUS_NOT_CACHED),
                        (hdr(dp.OP_INVALIDATE_KEY, 0, 0, ver, 0) + key, dp.STATUS_BAD),
                        # slot and length mean nothing to these ops: they come back too
                        (hdr(dp.OP_INVALIDATE_KEY, 0, 0xBEEF, ver, 0x1234) + key + b"\r\n",
                         dp.STATUS_APPLIED),
                        (dp.flush_datagram(ver), dp.STATUS_APPLIED),
                        (hdr(dp.OP_FLUSH, 0, 0xBEEF, ver, 0x1234), dp.STATUS_APPLIED),
                        (dp.flush_datagram(ver) + b"x", dp.STATUS_BAD),
                    ]
                    for payload, status in cases:
                        sent = dp.parse_ctrl(payload)
                        ack = self.ctrl(payload, via=via)
                        self.assertEqual(
                            (ack.op, ack.status, ack.slot, ack.version, ack.length, ack.body),
                            (sent.op | dp.ACK_FLAG, status, sent.slot, ver, sent.length, b""),
                            f"acknowledgement of {payload.hex()} via {via}")
                    self.assert_miss(key, rid=rounds)
                    rounds += 1
        self.assertIsNone(self.p4rt.get_packet_in(timeout=0.2), "unexpected packet-in")
        self.assert_stats(update=2 * rounds, hit=rounds, invalidate=2 * rounds,
                          flush=2 * rounds, miss=rounds)

"""Control datagrams as packet-outs, acks as packet-ins: frames, matching, statuses, retries."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4cache import dataplane as dp
from p4cache.controller.p4rt import PipelineFiles, Switch
from p4cache.controller.promote import SET_SLOT, lookup_match
from p4cache.controller.updates import (
    AckTimeout,
    Endpoint,
    Updates,
    control_frame,
    parse_ack_frame,
)

from .conftest import SERVER_IP

EP = Endpoint(SERVER_IP, "02:00:00:00:00:01")


def test_control_frame_is_well_formed() -> None:
    payload = dp.update_datagram(3, 7, b"END\r\n")
    f = Ether(control_frame(EP, "10.0.0.254", "02:00:00:00:00:fe", 23456, payload, 99))
    assert f[IP].src == SERVER_IP and f[IP].dst == "10.0.0.254" and f[IP].ttl == 64
    assert f[UDP].sport == 23456 and f[UDP].dport == dp.CACHE_CTRL_PORT
    assert f[UDP].chksum == 0 and bytes(f[UDP].payload) == payload
    chk = f[IP].chksum
    del f[IP].chksum
    assert Ether(bytes(f))[IP].chksum == chk, "IPv4 header checksum"


def test_ack_frames_are_read_and_others_ignored() -> None:
    ack = dp.CTRL_HDR.pack(dp.OP_UPDATE | dp.ACK_FLAG, dp.STATUS_STALE, 3, 7, 5)
    frame = bytes(Ether() / IP(src="10.0.0.254", dst=SERVER_IP)
                  / UDP(sport=dp.CACHE_CTRL_PORT, dport=23456) / ack)
    a = parse_ack_frame(frame)
    assert a is not None and (a.server_ip, a.port) == (SERVER_IP, 23456)
    assert (a.ctrl.status, a.ctrl.slot, a.ctrl.version) == (dp.STATUS_STALE, 3, 7)
    req = dp.update_datagram(3, 7, b"")   # not an ack
    assert parse_ack_frame(bytes(Ether() / IP() / UDP(sport=dp.CACHE_CTRL_PORT) / req)) is None
    assert parse_ack_frame(bytes(Ether() / IP() / UDP(sport=11211) / ack)) is None
    assert parse_ack_frame(b"\x00" * 20) is None


class Rig:
    def __init__(self, sw: Switch) -> None:
        self.sw = sw
        self.drop_first = 0          # packet-outs to swallow (lost on the way)
        self.sent = 0
        self.up = Updates(self._send, "10.0.0.254", "02:00:00:00:00:fe", ack_timeout=0.05,
                          attempts=4)
        sw.start_stream(on_packet_in=lambda p: self.up.on_packet_in(p.payload),
                        on_digest=lambda d: None, on_lost=lambda w: None)

    def _send(self, frame: bytes) -> None:
        self.sent += 1
        if self.drop_first > 0:
            self.drop_first -= 1
            return
        self.sw.packet_out(frame)


@pytest.fixture
def rig(softnic, pipeline: PipelineFiles) -> Iterator[Rig]:
    sw = Switch(softnic.addr, pipeline)
    sw.connect()
    yield Rig(sw)
    sw.close()


def test_statuses_of_the_refill_protocol(rig: Rig) -> None:
    up, sw = rig.up, rig.sw
    reply = dp.render_value_reply(b"foo", 0, b"bar")
    assert up.update(EP, 4, 1, b"").status == dp.STATUS_APPLIED        # reserve
    sw.insert(sw.entry(dp.TABLE_LOOKUP, lookup_match(SERVER_IP, b"foo"), SET_SLOT,
                       {"slot": "4"}))
    r = up.read(EP, 4)
    assert (r.status, r.version, r.length) == (dp.STATUS_INVALID, 1, 0)
    # a write through the agent's gate
    assert up.request(EP, dp.invalidate_key_datagram(b"foo")).status == dp.STATUS_APPLIED
    assert up.update(EP, 4, 2, reply).status == dp.STATUS_WRITTEN       # fill loses
    assert up.read(EP, 4).version == 1, "a refused fill does not take the version"
    assert up.update(EP, 4, 1, b"").status == dp.STATUS_STALE           # not newer
    assert up.update(EP, 4, 3, b"").status == dp.STATUS_APPLIED         # reserve again
    assert up.update(EP, 4, 4, reply).status == dp.STATUS_APPLIED       # fill wins
    r = up.read(EP, 4)
    assert (r.status, r.version, r.length) == (dp.STATUS_VALID, 4, len(reply))
    assert up.request(EP, dp.invalidate_key_datagram(b"nope")).status == dp.STATUS_NOT_CACHED
    # another server's key is not this one's
    other = Endpoint("10.0.0.2")
    assert up.request(other, dp.invalidate_key_datagram(b"foo")).status == dp.STATUS_NOT_CACHED


def test_many_requests_at_once_are_matched_to_their_acks(rig: Rig) -> None:
    up = rig.up
    slots = list(range(100, 250))   # more than one window
    acks = up.request_many([(EP, dp.update_datagram(s, s, b"")) for s in slots])
    assert [a.status for a in acks] == [dp.STATUS_APPLIED] * len(slots)
    reads = up.read_many(EP, slots)
    assert {s: r.version for s, r in reads.items()} == {s: s for s in slots}


def test_a_lost_packet_out_is_sent_again(rig: Rig) -> None:
    rig.drop_first = 2
    ack = rig.up.update(EP, 9, 5, b"")
    assert ack.status == dp.STATUS_APPLIED
    assert rig.sent == 3 and rig.up.stats.retransmissions == 2


def test_no_ack_at_all_times_out(rig: Rig) -> None:
    rig.drop_first = 100
    with pytest.raises(AckTimeout, match="4 transmissions"):
        rig.up.read(EP, 1)
    assert rig.up.stats.timeouts == 1


def test_bad_datagrams_are_refused(rig: Rig) -> None:
    bad = dp.CTRL_HDR.pack(dp.OP_UPDATE, 0, dp.CACHE_SLOTS, 1, 0)    # slot out of range
    assert rig.up.request(EP, bad).status == dp.STATUS_BAD

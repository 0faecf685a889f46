"""Traffic manager: clone (I2E/E2E), resubmit, recirculate, multicast, digest (simple_switch.md)."""

from __future__ import annotations

import pytest
from scapy.layers.l2 import Ether

from softnic.runtime.api import ActionCall, Digest, MatchKey, TableEntry
from softnic.tests.runtime.engine_helpers import load_switch

DISPATCH = "MyIngress.dispatch"
OPS = {1: ("MyIngress.do_clone", [5]), 2: ("MyIngress.do_resubmit", []),
       3: ("MyIngress.do_mcast", [7]), 4: ("MyIngress.do_digest", []),
       5: ("MyIngress.do_recirc", []), 6: ("MyIngress.do_e2e", [])}


@pytest.fixture
def sw():
    s = load_switch("traffic")
    for op, (name, params) in OPS.items():
        s.table_add(DISPATCH, TableEntry([MatchKey(op)], ActionCall(name, params)))
    return s


def ctl_pkt(op: int) -> bytes:
    return bytes(Ether(dst="00:00:00:00:00:01", src="00:00:00:00:00:02", type=0x88B5)) + bytes(
        [op, 0, 0, 0, 0]) + b"payload"


def ctl(out: tuple[int, bytes]) -> tuple[int, int, int, int, int]:
    port, data = out
    return port, data[14], data[15], data[16], int.from_bytes(data[17:19], "big")


def test_i2e_clone_preserves_field_list(sw):
    sw.clone_session_set(5, [(4, 0)])
    outs = sw.process_packet(0, ctl_pkt(1))
    got = sorted(ctl(o) for o in outs)
    # (port, op, instance_type, tag, rid): clone is INGRESS_CLONE(1) with preserved tag
    assert got == [(1, 1, 0, 0x55, 0), (4, 1, 1, 0x55, 0)]
    # clone payload is the original packet, not ingress-modified
    assert all(o[1][19:] == b"payload" for o in outs)


def test_clone_without_session_makes_no_copy(sw):
    outs = sw.process_packet(0, ctl_pkt(1))
    assert [ctl(o) for o in outs] == [(1, 1, 0, 0x55, 0)]


def test_clone_session_truncates(sw):
    sw.clone_session_set(5, [(4, 0)], truncate_len=16)
    outs = dict(sw.process_packet(0, ctl_pkt(1)))
    assert len(outs[4]) == 16 and len(outs[1]) == len(ctl_pkt(1))


def test_resubmit_restarts_ingress_with_preserved_fields(sw):
    outs = sw.process_packet(3, ctl_pkt(2))
    assert [ctl(o) for o in outs] == [(2, 2, 6, 7, 0)]


def test_multicast_replicas_get_rid_and_replication_type(sw):
    sw.mc_group_set(7, [(2, 10), (3, 11)])
    outs = sorted(ctl(o) for o in sw.process_packet(0, ctl_pkt(3)))
    assert outs == [(2, 3, 5, 0, 10), (3, 3, 5, 0, 11)]
    assert sw.mc_groups() == {7: [(2, 10), (3, 11)]}
    sw.mc_group_delete(7)
    assert sw.process_packet(0, ctl_pkt(3)) == []


def test_digest_reaches_handler(sw):
    got: list[Digest] = []
    sw.set_digest_handler(got.append)
    outs = sw.process_packet(6, ctl_pkt(4))
    assert [o[0] for o in outs] == [1]
    assert got == [Digest("learn_t", {"a": 4, "b": 6})]


def test_recirculate_reenters_ingress_with_deparsed_packet(sw):
    outs = sw.process_packet(0, ctl_pkt(5))
    # first pass: egress stamps itype 0 and tag 9, recirculates; second pass: RECIRC (4)
    assert [ctl(o) for o in outs] == [(3, 5, 4, 9, 0)]


def test_e2e_clone(sw):
    sw.clone_session_set(5, [(4, 33)])
    outs = sorted(ctl(o) for o in sw.process_packet(0, ctl_pkt(6)))
    assert outs == [(1, 6, 0, 0, 0), (4, 6, 2, 0, 33)]


def test_const_default_cannot_change(sw):
    from softnic.runtime.api import InvalidArgument
    with pytest.raises(InvalidArgument):
        sw.table_set_default("tbl_stamp", ActionCall("MyEgress.stamp", []))

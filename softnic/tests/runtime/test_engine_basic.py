"""Engine tests on the basic L3 fixture: forwarding bytes, lpm, checksums, tables API, bad input,
tracing and table updates concurrent with packets."""

from __future__ import annotations

import random
import threading

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from softnic.runtime import api
from softnic.tests.runtime.engine_helpers import load_switch

LPM = "MyIngress.ipv4_lpm"
FWD = "MyIngress.ipv4_forward"


def fwd_entry(prefix: int, plen: int, mac: int, port: int) -> api.TableEntry:
    return api.TableEntry([api.MatchKey(prefix, prefix_len=plen)],
                          api.ActionCall(FWD, [mac, port]))


def pkt(dst: str = "10.1.1.1", ttl: int = 64, **kw: object) -> Ether:
    return (Ether(dst="00:00:00:00:00:01", src="00:00:00:00:00:02")
            / IP(src="1.2.3.4", dst=dst, ttl=ttl, **kw) / UDP(sport=1, dport=2) / Raw(b"hello"))


def expected(p: Ether, mac: str, ttl: int) -> bytes:
    e = p.copy()
    e[Ether].src = p[Ether].dst
    e[Ether].dst = mac
    e[IP].ttl = ttl
    del e[IP].chksum
    return bytes(Ether(bytes(e)))


@pytest.fixture
def sw():
    s = load_switch("basic_l3")
    s.table_add(LPM, fwd_entry(0x0A000000, 8, 0x0A0A0A0A0A0A, 2))
    s.table_add(LPM, fwd_entry(0x0A010100, 24, 0x112233445566, 3))
    return s


def test_forward_rewrites_macs_ttl_and_checksum(sw):
    p = pkt()
    out = sw.process_packet(1, bytes(p))
    assert out == [(3, expected(p, "11:22:33:44:55:66", 63))]
    # the checksum is the real IPv4 checksum (scapy recomputes it when deleted)
    got = IP(out[0][1][14:])
    chk = got.chksum
    del got.chksum
    assert IP(bytes(got)).chksum == chk != IP(bytes(p)[14:]).chksum


def test_longest_prefix_wins_and_shorter_prefix_used_otherwise(sw):
    assert sw.process_packet(1, bytes(pkt("10.1.1.9")))[0][0] == 3
    assert sw.process_packet(1, bytes(pkt("10.2.0.1")))[0][0] == 2
    sw.table_add(LPM, fwd_entry(0x0A010109, 32, 1, 7))
    assert sw.process_packet(1, bytes(pkt("10.1.1.9")))[0][0] == 7


def test_miss_runs_default_drop(sw):
    assert sw.process_packet(1, bytes(pkt("192.168.0.1"))) == []


def test_ttl_wraps_like_bit8(sw):
    p = pkt(ttl=0)
    out = sw.process_packet(1, bytes(p))
    assert IP(out[0][1][14:]).ttl == 255


def test_non_ipv4_skips_table_and_goes_to_port_0_unchanged(sw):
    arp = bytes(Ether(type=0x0806) / Raw(b"x" * 28))
    assert sw.process_packet(5, arp) == [(0, arp)]


def test_ip_options_are_payload_and_preserved(sw):
    p = pkt(options=b"\x01\x01\x01\x00")
    out = sw.process_packet(1, bytes(p))
    assert out[0][1][34:] == bytes(p)[34:]


@pytest.mark.parametrize("data", [b"", b"\x00", bytes(13), bytes(20), bytes(14 + 19),
                                  b"\xff" * 1500])
def test_bad_input_never_raises(sw, data):
    out = sw.process_packet(1, data)
    assert all(isinstance(port, int) and isinstance(b, bytes) for port, b in out)
    assert sw.stats.engine_errors == 0, sw.stats.last_error


def test_truncated_ipv4_is_forwarded_unparsed_with_parser_error(sw):
    data = bytes(pkt())[:20]  # ethernet + 6 bytes of IPv4: PacketTooShort in parse_ipv4
    out = sw.process_packet(1, data)
    # ipv4 invalid -> no table -> egress_spec 0; ethernet was extracted and is re-emitted
    assert out == [(0, data)]


def test_random_garbage_fuzz(sw):
    rnd = random.Random(7)
    for _ in range(500):
        n = rnd.randrange(0, 80)
        data = bytes(rnd.randrange(256) for _ in range(n))
        if n > 13 and rnd.random() < 0.5:
            data = data[:12] + b"\x08\x00" + data[14:]
        sw.process_packet(rnd.randrange(8), data)
    assert sw.stats.engine_errors == 0, sw.stats.last_error
    assert sw.stats.assert_failures == 0


def test_table_api_errors_and_readback(sw):
    with pytest.raises(api.AlreadyExists):
        sw.table_add(LPM, fwd_entry(0x0A000000, 8, 1, 1))
    with pytest.raises(api.NotFound):
        sw.table_modify(LPM, fwd_entry(0x0B000000, 8, 1, 1))
    with pytest.raises(api.InvalidArgument):
        sw.table_add(LPM, fwd_entry(0x0B000000, 8, 1 << 48, 1))  # mac wider than 48 bits
    with pytest.raises(api.InvalidArgument):
        sw.table_add(LPM, api.TableEntry([api.MatchKey(1, prefix_len=8)],
                                         api.ActionCall("nope", [])))
    with pytest.raises(api.NotFound):
        sw.table_add("no.such.table", fwd_entry(0, 0, 0, 0))
    entries = sw.table_entries(LPM)
    assert sorted(e.key[0].prefix_len for e in entries) == [8, 24]
    sw.table_modify(LPM, fwd_entry(0x0A010100, 24, 0x112233445566, 9))
    assert sw.process_packet(1, bytes(pkt()))[0][0] == 9
    sw.table_delete(LPM, [api.MatchKey(0x0A010100, prefix_len=24)], 0)
    assert sw.process_packet(1, bytes(pkt()))[0][0] == 2
    sw.table_clear(LPM)
    assert sw.table_entries(LPM) == []
    assert sw.process_packet(1, bytes(pkt())) == []


def test_default_action_set_get_reset(sw):
    assert sw.table_get_default(LPM) == api.ActionCall("MyIngress.drop", [])
    sw.table_set_default(LPM, api.ActionCall(FWD, [0xAABBCCDDEEFF, 6]))
    out = sw.process_packet(1, bytes(pkt("172.16.0.1")))
    assert out[0][0] == 6 and out[0][1][:6] == bytes.fromhex("aabbccddeeff")
    sw.table_reset_default(LPM)
    assert sw.process_packet(1, bytes(pkt("172.16.0.1"))) == []


def test_trace_reports_parser_table_and_port():
    lines: list[str] = []
    s = load_switch("basic_l3", trace=lines.append)
    s.table_add(LPM, fwd_entry(0x0A000000, 8, 1, 4))
    s.process_packet(1, bytes(pkt()))
    text = "\n".join(lines)
    for needle in ("Parser state 'start'", "Extracting header 'ipv4'",
                   "Applying table 'MyIngress.ipv4_lpm'", "hit",
                   "Action entry is MyIngress.ipv4_forward",
                   "Primitive hdr.ipv4.ttl = hdr.ipv4.ttl - 1",
                   "Transmitting packet of size 47 out of port 4"):
        assert needle in text
    lines.clear()
    s.process_packet(1, bytes(pkt("9.9.9.9")))
    assert any("miss" in ln for ln in lines) and any("Dropping" in ln for ln in lines)


def test_table_updates_are_atomic_with_packets(sw):
    stop = threading.Event()
    errors: list[BaseException] = []

    def churn() -> None:
        try:
            i = 0
            while not stop.is_set():
                sw.table_add(LPM, fwd_entry(0x0A010101, 32, 1, 5))
                sw.table_delete(LPM, [api.MatchKey(0x0A010101, prefix_len=32)], 0)
                i += 1
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=churn)
    t.start()
    data = bytes(pkt())
    try:
        for _ in range(3000):
            out = sw.process_packet(1, data)
            assert len(out) == 1 and out[0][0] in (3, 5)
    finally:
        stop.set()
        t.join()
    assert not errors

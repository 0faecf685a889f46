"""ports.py: raw AF_PACKET ports moving real frames between veth-attached namespaces."""

from __future__ import annotations

import time

import pytest

from softnic.netns import Topology, require_netns
from softnic.runtime.pcap import read_pcap
from softnic.runtime.ports import PortError, PortSet, parse_port_spec

ETYPE = 0x88B5  # IEEE "local experimental": nothing else on the link uses it
H1_MAC = bytes.fromhex("080000000111")
H2_MAC = bytes.fromhex("080000000222")


def frame(dst: bytes, src: bytes, payload: bytes) -> bytes:
    return dst + src + ETYPE.to_bytes(2, "big") + payload


def wait_for(cond, timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


@pytest.mark.parametrize("spec,expected", [("1@veth1", (1, "veth1")), ("0x10@eth0", (16, "eth0")),
                                           ("511@a", (511, "a"))])
def test_parse_port_spec_ok(spec: str, expected: tuple[int, str]) -> None:
    assert parse_port_spec(spec) == expected


@pytest.mark.parametrize("spec", ["veth1", "@veth1", "1@", "x@veth1", "512@veth1",
                                  "1@averyveryverylongname"])
def test_parse_port_spec_bad(spec: str) -> None:
    with pytest.raises(ValueError):
        parse_port_spec(spec)


def test_unknown_interface_is_a_clear_error() -> None:
    require_netns()
    ps = PortSet({1: "lo", 2: "nosuchif0"})
    with pytest.raises(PortError, match="nosuchif0.*does not exist"):
        ps.open()
    assert ps.ports == {}  # the port opened before the failure was closed again


@pytest.fixture(scope="module")
def topo():
    with Topology(2) as t:
        yield t


def _portset(topo: Topology, **kw) -> PortSet:
    return PortSet({h.port: h.switch_ifname for h in topo.hosts}, **kw)


def test_forwarding_exact_and_once(topo: Topology) -> None:
    """Frames from h1 reach h2 byte for byte, each processed once (our own sends ignored)."""
    h1, h2 = topo.hosts
    seen: list[tuple[int, bytes]] = []

    def handler(port: int, data: bytes) -> list[tuple[int, bytes]]:
        seen.append((port, data))
        return [(2 if port == 1 else 1, data)]

    frames = [frame(H2_MAC, H1_MAC, bytes([i]) * (46 + i)) for i in range(20)]
    with _portset(topo) as ps:
        ps.start(handler)
        cap = h2.capture(ETYPE, timeout=2.0, count=len(frames))
        h1.send_frames(frames)
        got = cap.frames()
        assert got == frames
        assert wait_for(lambda: ps.stats()[2].tx == len(frames))
        assert ps.stats()[1].rx == len(frames)
        assert ps.stats()[2].rx == 0  # frames sent out of port 2 did not come back in
    assert [p for p, _ in seen] == [1] * len(frames)
    assert [d for _, d in seen] == frames


def test_bad_packet_does_not_stop_the_loop(topo: Topology) -> None:
    h1, h2 = topo.hosts

    def handler(port: int, data: bytes) -> list[tuple[int, bytes]]:
        if data[14:18] == b"BOOM":
            raise ValueError("malformed")
        return [(2, data)]

    good = frame(H2_MAC, H1_MAC, b"good" + bytes(60))
    with _portset(topo) as ps:
        ps.start(handler)
        cap = h2.capture(ETYPE, timeout=1.5)
        h1.send_frames([frame(H2_MAC, H1_MAC, b"BOOM" + bytes(60)), good])
        assert cap.frames() == [good]
        assert ps.stats()[1].handler_errors == 1


def test_oversize_and_unknown_egress_are_counted_not_fatal(topo: Topology) -> None:
    h1, h2 = topo.hosts

    def handler(port: int, data: bytes) -> list[tuple[int, bytes]]:
        return [(2, data + bytes(3000)), (7, data), (2, data)]  # MTU 1500: first is too big

    f = frame(H2_MAC, H1_MAC, b"x" * 50)
    with _portset(topo) as ps:
        ps.start(handler)
        cap = h2.capture(ETYPE, timeout=1.5)
        h1.send_frames([f])
        assert cap.frames() == [f]
        st = ps.stats()[2]
        assert (st.tx, st.tx_oversize) == (1, 1)
        assert ps.unknown_egress == 1
        assert ps.ports[2].mtu == 1500


def test_transmit_from_another_thread(topo: Topology) -> None:
    """transmit() is what packet-out uses: a frame goes straight out of the given port."""
    _h1, h2 = topo.hosts
    f = frame(H2_MAC, H1_MAC, b"packet-out" + bytes(50))
    with _portset(topo) as ps:
        ps.start(lambda port, data: [])
        cap = h2.capture(ETYPE, timeout=1.0)
        assert ps.transmit(2, f) is True
        assert ps.transmit(9, f) is False
        assert cap.frames() == [f]


def test_pcap_dir_records_in_and_out(topo: Topology, tmp_path) -> None:
    h1, h2 = topo.hosts
    f = frame(H2_MAC, H1_MAC, b"pcap" + bytes(60))
    with _portset(topo, pcap_dir=tmp_path) as ps:
        ps.start(lambda port, data: [(2, data)])
        cap = h2.capture(ETYPE, timeout=1.0)
        h1.send_frames([f])
        assert cap.frames() == [f]
    ins = [d for _, d in read_pcap(tmp_path / f"{h1.switch_ifname}_in.pcap")
           if d[12:14] == ETYPE.to_bytes(2, "big")]
    outs = [d for _, d in read_pcap(tmp_path / f"{h2.switch_ifname}_out.pcap")]
    assert ins == [f]
    assert outs == [f]
    assert read_pcap(tmp_path / f"{h2.switch_ifname}_in.pcap") == []


def test_outgoing_filter_fallback_for_old_kernels(topo: Topology) -> None:
    """Without PACKET_IGNORE_OUTGOING the loop must itself skip the frames it transmitted."""
    h1, h2 = topo.hosts
    frames = [frame(H2_MAC, H1_MAC, bytes([i]) * 60) for i in range(5)]
    with _portset(topo) as ps:
        for port in ps.ports.values():
            port.sock.setsockopt(263, 23, 0)  # turn PACKET_IGNORE_OUTGOING off again
            port.filter_outgoing = True
        ps.start(lambda port, data: [(2 if port == 1 else 1, data)])
        cap = h2.capture(ETYPE, timeout=1.5)
        h1.send_frames(frames)
        assert cap.frames() == frames
        assert ps.stats()[1].rx == len(frames)
        assert ps.stats()[2].rx == 0


def test_frames_come_through_the_rx_ring(topo: Topology) -> None:
    """On veth the fast path (PACKET_RX_RING) is in use, keeps order and loses nothing."""
    h1, h2 = topo.hosts
    frames = [frame(H2_MAC, H1_MAC, bytes([i]) * (60 + 100 * i)) for i in range(12)]
    with _portset(topo) as ps:
        ring = ps.ports[1].ring
        assert ring is not None
        ps.start(lambda port, data: [(2, data)] if port == 1 else [])
        cap = h2.capture(ETYPE, timeout=1.5)
        h1.send_frames(frames)
        assert cap.frames() == frames
        assert ps.stats()[1].rx >= len(frames)
        assert ps.stats()[1].rx_truncated == 0
        assert ring.index == ps.stats()[1].rx  # every frame came out of the ring, in turn

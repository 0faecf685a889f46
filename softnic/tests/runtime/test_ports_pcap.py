"""pcap.py: files we write are valid classic pcap (read back by us and by scapy)."""

from __future__ import annotations

import struct

import pytest
from scapy.utils import rdpcap

from softnic.runtime.pcap import PcapWriter, read_pcap


def test_roundtrip_and_scapy_reads_it(tmp_path) -> None:
    frames = [bytes(range(60)), b"\xff" * 14 + b"payload", bytes(1514)]
    path = tmp_path / "x.pcap"
    with PcapWriter(path) as w:
        for i, f in enumerate(frames):
            w.write(f, ts=1000.25 + i)
    got = read_pcap(path)
    assert [d for _, d in got] == frames
    assert [round(t, 2) for t, _ in got] == [1000.25, 1001.25, 1002.25]
    pkts = rdpcap(str(path))
    assert [bytes(p) for p in pkts] == frames
    assert pkts[0].time == pytest.approx(1000.25)


def test_global_header_is_ethernet_v2_4(tmp_path) -> None:
    path = tmp_path / "h.pcap"
    PcapWriter(path, snaplen=128).close()
    magic, major, minor, _tz, _sig, snap, link = struct.unpack("<IHHiIII", path.read_bytes())
    assert (magic, major, minor, snap, link) == (0xA1B2C3D4, 2, 4, 128, 1)


def test_snaplen_truncates_but_keeps_original_length(tmp_path) -> None:
    path = tmp_path / "s.pcap"
    with PcapWriter(path, snaplen=20) as w:
        w.write(bytes(100), ts=1.0)
    raw = path.read_bytes()
    _sec, _usec, caplen, origlen = struct.unpack_from("<IIII", raw, 24)
    assert (caplen, origlen) == (20, 100)
    assert read_pcap(path) == [(1.0, bytes(20))]


def test_rejects_garbage(tmp_path) -> None:
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"not a pcap file at all, really")
    with pytest.raises(ValueError, match="not a microsecond pcap"):
        read_pcap(bad)

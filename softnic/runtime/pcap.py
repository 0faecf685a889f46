"""Minimal pcap (libpcap classic format) writer for ``softnic run --pcap-dir``.

BMv2 writes one file per interface and direction (``<iface>_in.pcap``, ``<iface>_out.pcap``) so
that a test can look at exactly what entered and left the switch. We do the same. The classic
format is tiny (a 24-byte global header, then a 16-byte record header per packet), so writing it
ourselves avoids a dependency and keeps the hot path cheap: one ``struct.pack_into`` into a reused
buffer plus two buffered writes.
"""

from __future__ import annotations

import struct
import time
from pathlib import Path
from typing import BinaryIO

PCAP_MAGIC_USEC = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1
DEFAULT_SNAPLEN = 262144

_GLOBAL = struct.Struct("<IHHiIII")
_RECORD = struct.Struct("<IIII")


class PcapWriter:
    """Append Ethernet frames to a pcap file; flushed on :meth:`flush` / :meth:`close`."""

    def __init__(self, path: str | Path, snaplen: int = DEFAULT_SNAPLEN) -> None:
        self.path = Path(path)
        self.snaplen = snaplen
        self._f: BinaryIO = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        self._f.write(_GLOBAL.pack(PCAP_MAGIC_USEC, 2, 4, 0, 0, snaplen, LINKTYPE_ETHERNET))
        self._hdr = bytearray(_RECORD.size)
        self.count = 0

    def write(self, data: bytes | memoryview, ts: float | None = None) -> None:
        if ts is None:
            ts = time.time()
        sec = int(ts)
        usec = int((ts - sec) * 1_000_000)
        caplen = min(len(data), self.snaplen)
        _RECORD.pack_into(self._hdr, 0, sec, usec, caplen, len(data))
        self._f.write(self._hdr)
        self._f.write(data[:caplen] if caplen < len(data) else data)
        self.count += 1

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()

    def __enter__(self) -> PcapWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_pcap(path: str | Path) -> list[tuple[float, bytes]]:
    """Read a classic little- or big-endian microsecond pcap; returns (timestamp, frame) pairs.

    Used by tests to check what ``--pcap-dir`` recorded, without depending on scapy's reader.
    """
    raw = Path(path).read_bytes()
    if len(raw) < _GLOBAL.size:
        raise ValueError(f"{path}: too short for a pcap header")
    magic_le = struct.unpack_from("<I", raw, 0)[0]
    if magic_le == PCAP_MAGIC_USEC:
        order = "<"
    elif struct.unpack_from(">I", raw, 0)[0] == PCAP_MAGIC_USEC:
        order = ">"
    else:
        raise ValueError(f"{path}: not a microsecond pcap file (magic {magic_le:#x})")
    rec = struct.Struct(order + "IIII")
    out: list[tuple[float, bytes]] = []
    off = _GLOBAL.size
    while off + rec.size <= len(raw):
        sec, usec, caplen, _origlen = rec.unpack_from(raw, off)
        off += rec.size
        if off + caplen > len(raw):
            raise ValueError(f"{path}: truncated record at offset {off}")
        out.append((sec + usec / 1e6, raw[off:off + caplen]))
        off += caplen
    return out

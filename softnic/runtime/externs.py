"""Stateful externs (registers, counters, meters) and the hash / checksum algorithms.

They are plain Python objects shared between the generated action code (which binds their
bound methods or lists as constants at load time) and the control-plane API of the switch.
"""

from __future__ import annotations

import random
import time
import zlib
from collections.abc import Callable

GREEN, YELLOW, RED = 0, 1, 2


class RegisterArray:
    def __init__(self, name: str, size: int, bitwidth: int) -> None:
        self.name = name
        self.size = size
        self.bitwidth = bitwidth
        self.mask = (1 << bitwidth) - 1
        self.cells = [0] * size


class CounterArray:
    """Counts packets and bytes per index; BMv2 counters always count both."""

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.size = size
        self.packets = [0] * size
        self.bytes = [0] * size

    def count(self, index: int, nbytes: int) -> None:
        if 0 <= index < self.size:
            self.packets[index] += 1
            self.bytes[index] += nbytes


class Meter:
    """Two-rate three-colour marker (RFC 2698), colour-blind, as BMv2 meters.

    Rates are in units (bytes or packets) per second and bursts in units, the P4Runtime
    convention. An unconfigured meter marks everything GREEN, as BMv2 does.
    """

    __slots__ = ("config", "tc", "tp", "last")

    def __init__(self) -> None:
        self.config: tuple[int, int, int, int] | None = None
        self.tc = 0.0
        self.tp = 0.0
        self.last = 0.0

    def set(self, config: tuple[int, int, int, int] | None) -> None:
        self.config = config
        if config is not None:
            self.tc = float(config[1])
            self.tp = float(config[3])
            self.last = time.monotonic()

    def execute(self, units: int, now: float) -> int:
        cfg = self.config
        if cfg is None:
            return GREEN
        cir, cburst, pir, pburst = cfg
        dt = now - self.last
        if dt > 0:
            self.last = now
            self.tc = min(float(cburst), self.tc + dt * cir)
            self.tp = min(float(pburst), self.tp + dt * pir)
        if self.tp < units:
            return RED
        if self.tc < units:
            self.tp -= units
            return YELLOW
        self.tp -= units
        self.tc -= units
        return GREEN


class MeterArray:
    def __init__(self, name: str, size: int, unit_bytes: bool) -> None:
        self.name = name
        self.size = size
        self.unit_bytes = unit_bytes
        self.meters = [Meter() for _ in range(size)]

    def execute(self, index: int, nbytes: int) -> int:
        if not 0 <= index < self.size:
            return GREEN
        return self.meters[index].execute(nbytes if self.unit_bytes else 1, time.monotonic())


# -- hash algorithms: bytes -> int ------------------------------------------------------------

def _crc_table(poly_reflected: int, width: int) -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly_reflected if c & 1 else c >> 1
        table.append(c & ((1 << width) - 1))
    return table


_CRC16_TABLE = _crc_table(0xA001, 16)  # CRC-16/ARC: poly 0x8005 reflected, init 0, xorout 0


def crc16(data: bytes) -> int:
    crc = 0
    tab = _CRC16_TABLE
    for b in data:
        crc = (crc >> 8) ^ tab[(crc ^ b) & 0xFF]
    return crc


def crc32(data: bytes) -> int:
    return zlib.crc32(data)


def csum16(data: bytes) -> int:
    """Internet checksum (RFC 1071) of ``data``, zero-padded to an even length."""
    if len(data) & 1:
        data += b"\x00"
    s = sum(memoryview(data).cast("H"))  # native order: the ones'-complement sum is order-free
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    s = ~s & 0xFFFF
    return ((s & 0xFF) << 8) | (s >> 8) if _LITTLE else s


_LITTLE = memoryview(b"\x01\x00").cast("H")[0] == 1


def xor16(data: bytes) -> int:
    if len(data) & 1:
        data += b"\x00"
    r = 0
    for i in range(0, len(data), 2):
        r ^= (data[i] << 8) | data[i + 1]
    return r


def identity(data: bytes) -> int:
    return int.from_bytes(data[:8], "big")


def rand_hash(data: bytes) -> int:
    return random.getrandbits(64)


HASH_ALGOS: dict[str, Callable[[bytes], int]] = {
    "crc16": crc16,
    "crc16_custom": crc16,
    "crc32": crc32,
    "crc32_custom": crc32,
    "csum16": csum16,
    "cksum16": csum16,
    "xor16": xor16,
    "identity": identity,
    "random": rand_hash,
}

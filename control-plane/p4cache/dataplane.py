"""What the P4 program in ``p4src/`` expects on the wire, as Python.

These constants mirror ``p4src/shared/size.p4`` and ``p4src/shared/define.p4`` (a test reads the
P4 files and checks that they agree). The functions build and read the packets the data plane
understands: memcached UDP requests and replies, and the cache's control datagrams
(docs/update-protocol.md).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

# -- sizes (p4src/shared/size.p4)
KMAX = 64
KEY_BITS = 512
CMD_MAX = 8
SPACES_MAX = 4
REST_MAX = 255
REPLY_MAX = 512
CACHE_SLOTS = 4096
SKETCH_WIDTH = 16384
BLOOM_WIDTH = 32768
HOT_THRESHOLD = 8
EPOCH_SHIFT = 20
# The largest admission threshold T: hot_keys.p4 reports again at 16 T, in a 16-bit count.
THRESHOLD_MAX = 0xFFFF // 16

# -- protocol values (p4src/shared/define.p4)
MEMCACHED_PORT = 11211
CACHE_CTRL_PORT = 11311
CPU_PORT = 255

OP_UPDATE = 1
OP_INVALIDATE_KEY = 2
OP_READ = 3
OP_FLUSH = 4
ACK_FLAG = 0x80

STATUS_APPLIED = 1
STATUS_STALE = 2
STATUS_WRITTEN = 3
STATUS_BAD = 4
STATUS_NOT_CACHED = 5
STATUS_VALID = 6
STATUS_INVALID = 7
STATUS_NAMES = {
    STATUS_APPLIED: "applied", STATUS_STALE: "stale", STATUS_WRITTEN: "written",
    STATUS_BAD: "bad", STATUS_NOT_CACHED: "not-cached", STATUS_VALID: "valid",
    STATUS_INVALID: "invalid",
}

STAT_HIT = 0
STAT_MISS = 1
STAT_INVALIDATE = 2
STAT_UPDATE = 3
STAT_STALE = 4
STAT_REPORT = 5
STAT_UNTRUSTED = 6
STAT_NOT_ALLOWED = 7
STAT_FLUSH = 8
STAT_REFILL = 9
STATS_SIZE = 10
IPV4_OPTION_WORDS = 10

# P4Runtime names of what the controller touches.
TABLE_LOOKUP = "CacheIngress.lookup.cache_lookup"
TABLE_ALLOWLIST = "CacheIngress.lookup.client_allowlist"
TABLE_AGENTS = "CacheIngress.control_trust.trusted_agents"
TABLE_L2 = "CacheIngress.forwarding.l2_forward"
TABLE_ROUTE = "CacheIngress.forwarding.ipv4_route"
COUNTER_STATS = "CacheIngress.stats.cache_stats"
COUNTER_SLOT_HITS = "CacheIngress.stats.slot_hits"
DIGEST_HOT_KEY = "hot_key_digest_t"

MEMCACHE_HDR = struct.Struct("!HHHH")  # request id, sequence, total datagrams, reserved
CTRL_HDR = struct.Struct("!BBHIH")  # op, status, slot, version, length


def check_key(key: bytes) -> None:
    """Raise ValueError unless ``key`` is a key the switch can cache (1..KMAX printable bytes)."""
    if not 1 <= len(key) <= KMAX:
        raise ValueError(f"key of {len(key)} bytes: the switch caches keys of 1..{KMAX} bytes")
    bad = [b for b in key if b <= 0x20 or b == 0x7F]
    if bad:
        raise ValueError(f"key {key!r} holds a blank or control byte ({bad[0]:#04x})")


def key_match(key: bytes) -> tuple[int, int]:
    """The cache_lookup match value of ``key``: (key length, key bytes as a big-endian integer)."""
    check_key(key)
    return len(key), int.from_bytes(key, "big")


def lookup_key(server: str | int, key: bytes) -> tuple[int, int, int]:
    """The full cache_lookup match: (server IPv4 address, key length, key value). A value is
    only served for requests to the server it came from."""
    if isinstance(server, str):
        server = int.from_bytes(bytes(int(x) for x in server.split(".")), "big")
    return (server, *key_match(key))


def key_from_match(key_len: int, key_value: int) -> bytes:
    """Inverse of :func:`key_match` (for digests and table read-back)."""
    if not 0 < key_len <= KMAX:
        raise ValueError(f"key length {key_len} out of range 1..{KMAX}")
    return key_value.to_bytes(KMAX, "big")[KMAX - key_len:]


def render_value_reply(key: bytes, flags: int, value: bytes) -> bytes:
    """The text memcached sends for a ``get`` of one item: VALUE line, data, END."""
    if not 0 <= flags < 1 << 32:
        raise ValueError(f"flags {flags} do not fit memcached's 32 bits")
    return b"VALUE %s %d %d\r\n%s\r\nEND\r\n" % (key, flags, len(value), value)


def chunk_sizes(length: int) -> list[int]:
    """The chunks the switch stores a reply of ``length`` bytes in, in wire order: one per set bit
    of (length - 1) from 256 down to 1, then the tail byte."""
    if not 1 <= length <= REPLY_MAX:
        raise ValueError(f"reply of {length} bytes: a slot holds 1..{REPLY_MAX}")
    rest = length - 1
    return [1 << b for b in range(8, -1, -1) if rest >> b & 1] + [1]


def memcache_frame(request_id: int, body: bytes, seq: int = 0, total: int = 1,
                   reserved: int = 0) -> bytes:
    """A memcached UDP datagram: the 8-byte frame header, then ``body``."""
    return MEMCACHE_HDR.pack(request_id, seq, total, reserved) + body


def get_request(request_id: int, key: bytes) -> bytes:
    """The UDP payload of a single-key ``get``."""
    return memcache_frame(request_id, b"get " + key + b"\r\n")


def get_reply(request_id: int, reply: bytes) -> bytes:
    """The UDP payload memcached (and the switch, on a hit) sends back for one datagram."""
    return memcache_frame(request_id, reply)


@dataclass(frozen=True)
class Ctrl:
    """A control datagram's header (and, for OP_UPDATE, the reply bytes that follow)."""

    op: int
    slot: int = 0
    version: int = 0
    length: int = 0
    status: int = 0
    body: bytes = b""

    @property
    def is_ack(self) -> bool:
        return bool(self.op & ACK_FLAG)

    @property
    def status_name(self) -> str:
        return STATUS_NAMES.get(self.status, f"status {self.status}")


def update_datagram(slot: int, version: int, reply: bytes) -> bytes:
    """OP_UPDATE: store ``reply`` in ``slot`` at ``version`` (empty ``reply``: invalidate).
    The bytes follow the header in order: the chunks are contiguous in wire order."""
    if reply:
        chunk_sizes(len(reply))  # validates the length
    return CTRL_HDR.pack(OP_UPDATE, 0, slot, version, len(reply)) + reply


def invalidate_key_datagram(key: bytes, version: int = 0) -> bytes:
    """OP_INVALIDATE_KEY: invalidate the slot serving ``key`` (whatever it is). The switch
    ignores ``version`` and echoes it in the acknowledgement: a sender's request id."""
    check_key(key)
    return CTRL_HDR.pack(OP_INVALIDATE_KEY, 0, 0, version, 0) + key + b"\r\n"


def flush_datagram(version: int) -> bytes:
    """OP_FLUSH: every slot stops answering (the cache generation moves on), as for a datagram
    the switch cannot read. No body; ``version`` is echoed in the acknowledgement (a request
    id)."""
    return CTRL_HDR.pack(OP_FLUSH, 0, 0, version, 0)


def read_datagram(slot: int) -> bytes:
    """OP_READ: ask for the slot's version, length and state."""
    return CTRL_HDR.pack(OP_READ, 0, slot, 0, 0)


def parse_ctrl(payload: bytes) -> Ctrl:
    """Read a control datagram or acknowledgement (the UDP payload)."""
    if len(payload) < CTRL_HDR.size:
        raise ValueError(f"control datagram of {len(payload)} bytes, header is {CTRL_HDR.size}")
    op, status, slot, version, length = CTRL_HDR.unpack_from(payload)
    return Ctrl(op=op, slot=slot, version=version, length=length, status=status,
                body=payload[CTRL_HDR.size:])

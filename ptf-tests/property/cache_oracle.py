"""Reference model of the cache switch: what it must do with one frame.

Written from the behaviour rules of the data plane (the brief of the bad-input issue, updated by
the review of p4src in cfe033f; the protocol comments of ``p4src/shared/define.p4`` and the
control datagrams) and from memcached's text protocol, not from the P4 code: it parses frames its
own way and keeps its own copy of the slot registers. The tests run every frame through the engine
and through this model and require the same output frames, byte for byte, and the same register
contents afterwards.

Rules the model applies (``predict``):

* The switch looks into UDP only in IPv4 (version 4, IHL >= 5, options skipped) datagrams that
  start in the frame (fragment offset 0). A frame shorter than an Ethernet header is dropped.
  Anything the switch does not answer, consume or drop below leaves unchanged by the port of its
  destination MAC (l2 table), or is dropped when the MAC is unknown (the tests install no routes).
* GET (answered): UDP to 11211, IHL 5, MF 0, IPv4 header checksum right, UDP length ==
  8 + 8 + len("get <key>\r\n") and IPv4 total length == UDP length + 20, frame header seq 0 /
  total 1 / reserved 0, the line exactly ``get <key>\r\n`` with a key of 1..64 bytes each
  > 0x20 and != 0x7f; bytes after the IPv4 datagram (Ethernet padding) are allowed, the UDP
  checksum is not looked at (docs/dataplane.md, Limits). Answered iff
  the source is in the allow-list, (destination server, key) is cached and its slot valid: the
  same frame back out of the ingress port with MACs, IPs and ports swapped, TTL 64, IPv4 checksum
  recomputed, UDP checksum 0, lengths of the reply, request id echoed, seq 0, total 1, then the
  stored reply, and nothing after it.
* The command word is the bytes after the 8-byte frame header up to a byte <= 0x20 or 0x7f. A
  command line of fewer than 4 bytes that ends the frame is not looked at (the switch reads the
  first 4 bytes at once; no write is that short, memcached refuses a bare ``gat``).
  Unsafe (dropped, whoever sends it): gat, gats, anything starting ``flush_al`` (the switch reads
  8 bytes of a word: flush_all), the binary protocol (first byte 0x80), and a write command
  followed by more than 4 blanks (the key could be any).
* Write (invalidates, then forwarded): set add replace append prepend cas incr decr delete touch
  ms md ma mg, from anyone, in a first fragment too; the frame header is skipped whatever it
  holds; 1..4 blanks (0x20); the key: the bytes up to a byte <= 0x20, 0x7f or the end of the
  frame. Lengths, checksums and what follows the key are not looked at (conservative). If
  (destination server, key) is cached: slot valid = 0, written = 1.
* Control (UDP to 11311, at least the 10-byte header): an acknowledgement (op & 0x80) is dropped,
  and so is a datagram with IPv4 options or MF set (an acknowledgement made from it in place
  would be malformed) and anything from a source that is neither a trusted agent nor the CPU.
  Otherwise it is
  acknowledged (header only, op | 0x80, a status) out of the ingress port, or to the CPU as a
  packet-in when it came as a packet-out; OP_UPDATE / OP_INVALIDATE_KEY (key looked up for the
  source, the server the agent speaks for) / OP_READ act on the slot as docs/update-protocol.md
  and define.p4 describe (versions must grow, a written slot refuses a refill until
  invalidated, lengths must match).
* A packet-out that is not a control datagram leaves by the port it names, unchanged.

``deviations`` names rules the data plane under test is known to break (see KNOWN_DEVIATIONS);
the model then predicts what the data plane does instead, so the rest can still be checked (the
rig accepts either prediction, so a fix landing does not break the suite; the strict xfail tests
of test_known_deviations.py say when one has). ``Oracle(deviations=frozenset())`` is the strict
model.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from cache_wire import ipv4_header_checksum

KMAX = 64
CACHE_SLOTS = 4096
REPLY_MAX = 512
MEMCACHED_PORT = 11211
CTRL_PORT = 11311
CPU_PORT = 255
MAX_BLANKS = 4
REPLY_TTL = 64

WRITE_COMMANDS = frozenset(
    b"set add replace append prepend cas incr decr delete touch ms md ma mg".split())
UNSAFE_WORDS = frozenset({b"gat", b"gats"})
UNSAFE_PREFIX = b"flush_al"
BINARY_MAGIC = 0x80

OP_UPDATE, OP_INVALIDATE_KEY, OP_READ = 1, 2, 3
ACK_FLAG = 0x80
(STATUS_APPLIED, STATUS_STALE, STATUS_WRITTEN, STATUS_BAD, STATUS_NOT_CACHED, STATUS_VALID,
 STATUS_INVALID) = range(1, 8)

# Rules the data plane under test breaks, by name (each with a strict xfail test in
# test_known_deviations.py that turns into a failure once the data plane is fixed). None open:
# the ones found so far are fixed (p4src cfe033f, fb1562d) and kept there as regressions.
KNOWN_DEVIATIONS: frozenset[str] = frozenset()

# Register arrays of the slot state and of the stored reply (cells per slot, cell width).
# A reply of n bytes is stored as one chunk per set bit of (n - 1), 256 bytes down to 1, then a
# tail byte; a chunk of 8 bytes or more is a run of 64-bit cells.
PREFIX = "CacheIngress.slots."
STATE_REGS = ("slot_valid", "slot_written", "slot_version", "slot_len")
CHUNK_REGS = {256: ("store_c256", 32, 8), 128: ("store_c128", 16, 8), 64: ("store_c64", 8, 8),
              32: ("store_c32", 4, 8), 16: ("store_c16", 2, 8), 8: ("store_c8", 1, 8),
              4: ("store_c4", 1, 4), 2: ("store_c2", 1, 2), 1: ("store_c1", 1, 1)}
TAIL_REG = ("store_tail", 1, 1)
REG_CELLS = {**{r: 1 for r in STATE_REGS}, **{n: k for n, k, _ in CHUNK_REGS.values()},
             TAIL_REG[0]: 1}
REGISTERS = tuple(REG_CELLS)


def valid_key(key: bytes) -> bool:
    return 1 <= len(key) <= KMAX and all(b > 0x20 and b != 0x7F for b in key)


def chunk_layout(length: int) -> list[tuple[int, tuple[str, int, int]]]:
    """(byte count, register) of each piece of a stored reply of ``length`` bytes, wire order."""
    rest = length - 1
    out = [(size, CHUNK_REGS[size]) for size in (256, 128, 64, 32, 16, 8, 4, 2, 1)
           if rest & size]
    return out + [(1, TAIL_REG)]


@dataclass
class Verdict:
    """What the switch must do with one frame."""

    kind: str  # answered | forwarded | dropped | acked | sent (a packet-out that leaves)
    reason: str
    outputs: list[tuple[int, bytes]] = field(default_factory=list)
    packet_ins: list[bytes] = field(default_factory=list)
    writes: list[tuple[str, int, int]] = field(default_factory=list)  # register, index, value
    slot: int | None = None  # slot answered / invalidated / updated
    status: int | None = None  # of a control datagram's acknowledgement


@dataclass
class Ip:
    """An IPv4 header as read from a frame at ``off`` (Ethernet header already checked)."""

    raw: bytes
    version: int
    ihl: int
    total_len: int
    mf: int
    frag: int
    proto: int
    src: int
    dst: int
    checksum_ok: bool
    end: int  # offset of what follows the header (options included)


@dataclass
class Udp:
    ip: Ip
    sport: int
    dport: int
    length: int
    checksum: int
    at: int  # offset of the UDP header in the frame
    body: bytes  # every frame byte after the UDP header (lengths not applied)


class Oracle:
    """``keys`` maps (server IPv4 address, key) to a slot, as cache_lookup does."""

    def __init__(self, *, l2: dict[bytes, int], allow: list[tuple[int, int]], agents: set[int],
                 keys: dict[tuple[int, bytes], int],
                 deviations: frozenset[str] = KNOWN_DEVIATIONS) -> None:
        self.l2 = dict(l2)
        self.allow = list(allow)
        self.agents = set(agents)
        self.keys = dict(keys)
        self.deviations = frozenset(deviations)
        self.regs: dict[str, list[int]] = {n: [0] * (CACHE_SLOTS * k) for n, k in
                                           REG_CELLS.items()}

    # -- state helpers
    def slot_state(self, slot: int) -> dict[str, int]:
        return {n: self.regs[n][slot] for n in STATE_REGS}

    def stored_reply(self, slot: int) -> bytes:
        """The reply the slot holds, read back from the model's cells."""
        out = b""
        for size, (name, cells, width) in chunk_layout(self.regs["slot_len"][slot]):
            if cells > 1 or width == 8:
                words = self.regs[name][slot * cells:(slot + 1) * cells]
                out += b"".join(w.to_bytes(8, "big") for w in words)
            else:
                out += self.regs[name][slot].to_bytes(size, "big")
        return out

    @staticmethod
    def store_writes(slot: int, reply: bytes) -> list[tuple[str, int, int]]:
        writes = []
        pos = 0
        for size, (name, cells, width) in chunk_layout(len(reply)):
            piece = reply[pos:pos + size]
            pos += size
            for i in range(cells):
                writes.append((name, slot * cells + i,
                               int.from_bytes(piece[i * width:(i + 1) * width], "big")))
        return writes

    def commit(self, verdict: Verdict) -> None:
        for name, index, value in verdict.writes:
            self.regs[name][index] = value

    def allowed(self, src: int) -> bool:
        return any(plen == 0 or (src ^ net) >> (32 - plen) == 0 for net, plen in self.allow)

    # -- parsing
    @staticmethod
    def read_ip(frame: bytes, off: int) -> Ip | None:
        if len(frame) < off + 20:
            return None
        h = frame[off:off + 20]
        vi, _, total, _, ff, _, proto, csum = struct.unpack_from("!BBHHHBBH", h)
        ihl = vi & 15
        return Ip(raw=h, version=vi >> 4, ihl=ihl, total_len=total, mf=ff >> 13 & 1,
                  frag=ff & 0x1FFF, proto=proto, src=int.from_bytes(h[12:16], "big"),
                  dst=int.from_bytes(h[16:20], "big"),
                  checksum_ok=ipv4_header_checksum(h) == csum, end=off + 4 * ihl)

    @staticmethod
    def read_udp(frame: bytes, ip: Ip) -> Udp | None:
        at = ip.end
        if (ip.version != 4 or ip.ihl < 5 or ip.proto != 17 or ip.frag != 0
                or len(frame) < at + 8):
            return None
        sport, dport, length, csum = struct.unpack_from("!HHHH", frame, at)
        return Udp(ip=ip, sport=sport, dport=dport, length=length, checksum=csum, at=at,
                   body=frame[at + 8:])

    def udp_of(self, frame: bytes) -> Udp | None:
        """The UDP datagram the switch looks into, if any (first fragments and options too)."""
        if len(frame) < 14 or frame[12:14] != b"\x08\x00":
            return None
        ip = self.read_ip(frame, 14)
        return None if ip is None else self.read_udp(frame, ip)

    @staticmethod
    def command_word(line: bytes) -> bytes:
        j = 0
        while j < len(line) and line[j] > 0x20 and line[j] != 0x7F:
            j += 1
        return line[:j]

    # -- the verdicts
    def predict(self, port: int, frame: bytes) -> Verdict:
        """A frame received on data port ``port``."""
        if len(frame) < 14:
            return Verdict("dropped", "runt frame (no Ethernet header)")
        out_port = self.l2.get(frame[:6])
        if out_port is None:
            plain = Verdict("dropped", "unknown destination MAC")
        else:
            plain = Verdict("forwarded", "not for the cache", outputs=[(out_port, frame)])
        u = self.udp_of(frame)
        if u is None:
            return plain
        if u.dport == CTRL_PORT and len(u.body) >= 10:
            refused = self.refused_control(u)
            if refused:
                return Verdict("dropped", refused)
            if u.ip.src not in self.agents:
                return Verdict("dropped", "control datagram from an untrusted source")
            return self.control(frame, u, port, to_cpu=False)
        if u.dport != MEMCACHED_PORT:
            return plain
        get = self.get_verdict(frame, u, port)
        if get is not None:
            return get
        line = u.body[8:]
        if len(line) < 4:  # the switch reads the first 4 bytes in one go ("get "): no write is
            return plain   # that short, and memcached refuses a bare "gat"
        word = self.command_word(line)
        if line[:1] == bytes([BINARY_MAGIC]):
            return Verdict("dropped", "unsafe: binary protocol")
        if word in UNSAFE_WORDS:
            return Verdict("dropped", f"unsafe: {word.decode()}")
        if word.startswith(UNSAFE_PREFIX):
            return Verdict("dropped", "unsafe: flush_all (or a word starting flush_al)")
        if word not in WRITE_COMMANDS or line[len(word):len(word) + 1] != b" ":
            return plain
        i = len(word)
        while i < len(line) and line[i] == 0x20:
            i += 1
        if i - len(word) > MAX_BLANKS:
            return Verdict("dropped", "unsafe: write with more than 4 blanks")
        key = self.command_word(line[i:])
        slot = self.keys.get((u.ip.dst, key))
        if not key:
            plain.reason = "write without a key"
        elif slot is None:
            plain.reason = "write to a key not cached"
        else:
            plain.reason = f"write {word.decode()} to a cached key: slot invalidated"
            plain.slot = slot
            plain.writes = [("slot_valid", slot, 0), ("slot_written", slot, 1)]
        return plain

    def predict_packet_out(self, frame: bytes, egress: int) -> Verdict:
        """A frame the controller sends (packet-out naming ``egress``)."""
        u = self.udp_of(frame)
        if u is not None and u.dport == CTRL_PORT and len(u.body) >= 10:
            refused = self.refused_control(u)
            if refused:
                return Verdict("dropped", refused)
            return self.control(frame, u, CPU_PORT, to_cpu=True)
        return Verdict("sent", "packet-out", outputs=[(egress, frame)])

    def refused_control(self, u: Udp) -> str | None:
        """Why a control datagram is dropped whoever sent it, if it is."""
        if u.body[0] & ACK_FLAG:
            return "stray acknowledgement"
        if u.ip.ihl != 5 or u.ip.mf:
            return "control datagram with IPv4 options or in a fragment"
        return None

    def get_verdict(self, frame: bytes, u: Udp, port: int) -> Verdict | None:
        """The verdict on a clean GET (answered or a forwarded miss); None if not a clean GET."""
        ip = u.ip
        if ip.ihl != 5 or ip.mf or not ip.checksum_ok:
            return None
        line_len = u.length - 16
        if line_len < 7 or len(u.body) < 8 + line_len or ip.total_len != u.length + 20:
            return None
        rid, seq, total, reserved = struct.unpack_from("!HHHH", u.body)
        if (seq, total, reserved) != (0, 1, 0):
            return None
        line = u.body[8:8 + line_len]
        key = line[4:-2]
        if not (line.startswith(b"get ") and line.endswith(b"\r\n") and valid_key(key)):
            return None
        slot = self.keys.get((ip.dst, key))
        if not self.allowed(ip.src):
            why = "GET from a client outside the allow-list"
        elif slot is None:
            why = "GET miss: key not cached"
        elif not self.regs["slot_valid"][slot]:
            why = "GET miss: slot invalid"
        else:
            reply = self.stored_reply(slot)
            payload = struct.pack("!HHHH", rid, 0, 1, 0) + reply
            return Verdict("answered", "GET hit", slot=slot,
                           outputs=[(port, self.turn_around(frame, u, payload))])
        out_port = self.l2.get(frame[:6])
        if out_port is None:
            return Verdict("dropped", why + " (unknown destination MAC)")
        return Verdict("forwarded", why, outputs=[(out_port, frame)])

    def turn_around(self, frame: bytes, u: Udp, payload: bytes) -> bytes:
        """The frame sent back to the requester (plain IPv4: the rules only turn around
        datagrams with IHL 5, not fragments), carrying ``payload`` as its UDP payload."""
        ip = u.ip
        h = bytearray(ip.raw)
        struct.pack_into("!H", h, 2, 20 + 8 + len(payload))
        h[8] = REPLY_TTL
        h[12:16], h[16:20] = ip.raw[16:20], ip.raw[12:16]
        struct.pack_into("!H", h, 10, ipv4_header_checksum(bytes(h)))
        uh = struct.pack("!HHHH", u.dport, u.sport, 8 + len(payload), 0)
        return frame[6:12] + frame[0:6] + frame[12:14] + bytes(h) + uh + payload

    def control(self, frame: bytes, u: Udp, port: int, *, to_cpu: bool) -> Verdict:
        op, _, slot, version, length = struct.unpack_from("!BBHIH", u.body)
        ack_version, ack_len = version, length
        v = Verdict("acked", "")
        if op == OP_UPDATE:
            if length > REPLY_MAX:
                status, v.reason = STATUS_BAD, "update longer than a slot"
            elif len(u.body) < 10 + length:
                status, v.reason = STATUS_BAD, "update cut short"
            elif u.length != 8 + 10 + length:
                status, v.reason = STATUS_BAD, "update length does not match the UDP length"
            elif slot >= CACHE_SLOTS:
                status, v.reason = STATUS_BAD, "update of a slot out of range"
            elif version <= self.regs["slot_version"][slot]:
                status, v.reason = STATUS_STALE, "stale update"
            elif length and self.regs["slot_written"][slot]:
                status, v.reason = STATUS_WRITTEN, "refill of a written slot refused"
            else:
                status, v.slot = STATUS_APPLIED, slot
                v.writes = [("slot_version", slot, version), ("slot_len", slot, length)]
                if length == 0:
                    v.reason = "invalidation applied"
                    v.writes += [("slot_valid", slot, 0), ("slot_written", slot, 0)]
                else:
                    v.reason = "update applied"
                    v.writes += self.store_writes(slot, u.body[10:10 + length])
                    v.writes.append(("slot_valid", slot, 1))
        elif op == OP_INVALIDATE_KEY:
            rest = u.body[10:]
            key = self.command_word(rest)
            hit = self.keys.get((u.ip.src, key))  # the agent speaks for its server
            if not valid_key(key) or rest[len(key):len(key) + 2] != b"\r\n":
                status, v.reason = STATUS_BAD, "invalidation with a malformed key"
            elif hit is None:
                status, v.reason = STATUS_NOT_CACHED, "invalidation of a key not cached"
            else:
                status, v.slot = STATUS_APPLIED, hit
                v.reason = "key invalidated"
                v.writes = [("slot_valid", hit, 0), ("slot_written", hit, 1)]
        elif op == OP_READ:
            if slot >= CACHE_SLOTS:
                status, v.reason = STATUS_BAD, "read of a slot out of range"
            else:
                valid = self.regs["slot_valid"][slot]
                status = STATUS_VALID if valid else STATUS_INVALID
                ack_version = self.regs["slot_version"][slot]
                ack_len = self.regs["slot_len"][slot]
                v.reason = "slot read"
        else:
            status, v.reason = STATUS_BAD, "unknown control op"
        v.status = status
        ack = self.turn_around(frame, u, struct.pack("!BBHIH", op | ACK_FLAG, status, slot,
                                                     ack_version, ack_len))
        if to_cpu:
            v.packet_ins = [ack]
        else:
            v.outputs = [(port, ack)]
        return v

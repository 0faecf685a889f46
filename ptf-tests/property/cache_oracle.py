"""Reference model of the cache switch: what it must do with one frame.

Written from the behaviour rules of the data plane (the brief of the bad-input issue, updated by
the review of p4src in cfe033f, by the flush rules of 854b3a7 and by e30b69f: trust by port and
address, first fragments, base64 meta keys, harmless one-line commands; and by issue 20: later
UDP fragments flush; docs/dataplane.md,
"Writes in flight, and flushes", docs/update-protocol.md; the protocol comments of
``p4src/shared/define.p4``) and from memcached's text protocol, not from the P4 code: it reads
frames its own way and keeps its own copy of the slot registers, the cache generation and the
global counters. The tests run every frame through the engine and through this model and require
the same output frames, byte for byte, and the same register and counter contents afterwards.

Rules the model applies (``predict``):

* The switch looks into UDP only in IPv4 (version 4, IHL >= 5, options skipped) datagrams that
  start in the frame (fragment offset 0); of a later fragment it reads only the IPv4 header
  (it flushes, below). A frame shorter than an Ethernet header is dropped.
  Anything the switch does not answer, consume or drop below leaves unchanged by the port of its
  destination MAC (l2 table), or is dropped when the MAC is unknown (the tests install no routes).
  Nothing sent to the memcached port is dropped for what it says (since 854b3a7).
* The command line of a datagram to 11211 (``read_line``), after its 8-byte frame header (a
  datagram without a whole frame header is not looked at): ``get `` at once (4 bytes), else the
  command word, up to a blank, a control byte, DEL or CMD_MAX = 8 bytes, where a ``\r`` ends the
  word and starts the rest of the line (a command without arguments, ``version\r\n``, is one whole
  line); then 0..4 blanks (a 5th one: the switch stops reading); the key, up to a blank, a control
  byte or DEL (a key longer than 64 bytes is not one: its remainder is part of the rest); the rest
  of the line up to the first ``\r\n``, at most REST_MAX = 255 bytes, where a bare ``\n`` ends
  it (memcached's line end: another line follows); then ``\r\n``. The switch stops reading where
  the frame ends (it looks 1, 2 or 4 bytes ahead and must find them in the frame).
* One line: the line was read to its ``\r\n``, IHL 5, MF clear, frame header seq 0 / total 1 /
  reserved 0, and UDP length == 8 + 8 + line and IPv4 total length == 20 + 8 + 8 + line (bytes
  after the IPv4 datagram, Ethernet padding, are allowed). memcached runs every line of a
  datagram, and a line also ends at a bare ``\n`` (memcached 1.6.18 runs ``get a\ndelete b\r\n``
  as two commands).
* GET (answered): ``get`` on one line, IPv4 header checksum right, exactly one blank, a key of
  1..64 bytes and nothing else on the line; the UDP checksum is not looked at
  (docs/dataplane.md, Limits). Answered iff the source is in the allow-list, (destination server,
  key) is cached and its slot answers (valid and of the current cache generation): the same frame
  back out of the ingress port with MACs, IPs and ports swapped, TTL 64, IPv4 checksum
  recomputed, UDP checksum 0, lengths of the reply, request id echoed, seq 0, total 1, then the
  stored reply, and nothing after it. Any other ``get`` and ``gets`` are reads: forwarded.
* Write (invalidates, then forwarded): set add replace append prepend cas incr decr delete touch
  ms md ma mg followed by a blank, from anyone, whatever the frame header, lengths and checksums
  say (a first fragment or IPv4 options too). If the key is 1..64 bytes and (destination server,
  key) is cached: slot valid = 0, written = 1.
* Flush (docs/dataplane.md, "Writes in flight, and flushes"): a datagram that may change items
  the switch cannot name. That is a ``get`` / ``gets`` that is not one line; a write that is not
  one line or has no key (so every storage command with its data block), or a meta command (ms md
  ma mg) with a ``b`` anywhere in the rest of its line (the key may be base64: ``md Zm9v b``
  deletes ``foo``); flush_all, gat, gats and the binary protocol whatever follows; any other
  datagram that is not one line, or whose line starts with a blank, a control byte or ``\r``
  (no command word); and any UDP datagram to 11211 in a first fragment (MF set), even one whose
  frame header is not in it (the rest of the datagram is out of sight); and every later
  fragment of a UDP datagram (version 4, protocol 17, fragment offset not 0: no UDP header, so
  to any destination and port, whatever its IHL, lengths or checksum), since the fragment that
  completes the host's reassembly, when memcached runs the datagram, is the first or one of
  these. One whole line with
  another command word (``version``, ``stats``, ``foo bar``: memcached changes nothing) does not
  flush. A flush moves ``cache_generation`` on by one (64 bits: it never wraps in practice); the
  datagram is forwarded unchanged.
* Control (UDP to 11311, at least the 10-byte header): an acknowledgement (op & 0x80) is dropped,
  and so is a datagram with IPv4 options or MF set (an acknowledgement made from it in place
  would be malformed) and anything that is neither from a trusted agent, (ingress port, source
  address) as installed, nor from the CPU: a trusted address arriving by another port is spoofed.
  Otherwise it is acknowledged (header only, op | 0x80, a status) out of the ingress port, or to
  the CPU as a packet-in when it came as a packet-out; OP_UPDATE / OP_INVALIDATE_KEY (key looked
  up for the source, the server the agent speaks for) / OP_READ act on the slot as
  docs/update-protocol.md and define.p4 describe: versions must grow; an invalidation (OP_UPDATE
  of length 0) clears `written` and stamps the slot with the current generation; a refill is
  refused (written) if a write or a flush came since; OP_READ says valid only for a slot that
  answers. OP_FLUSH (op 4) has no body: with a UDP length of exactly 8 + 10 it is a flush like a
  flushing memcached datagram (generation + 1, counted as a flush) acknowledged applied, else
  bad. Every acknowledgement but OP_READ's carries slot, version and length as they were sent
  (the version is the agent's request id).
* A packet-out that is not a control datagram leaves by the port it names, unchanged (nothing in
  it is looked at: no flush, no invalidation).
* Counters (cache_stats): hit, miss, invalidate, update, stale, untrusted, not-allowed and flush
  as define.p4 names them; the digest counters (hot-key reports, refill asks) are not modelled.

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
CMD_MAX = 8
REST_MAX = 255
CACHE_SLOTS = 4096
REPLY_MAX = 512
MEMCACHED_PORT = 11211
CTRL_PORT = 11311
CPU_PORT = 255
MAX_BLANKS = 4
REPLY_TTL = 64
MASK32 = 0xFFFFFFFF
MASK64 = (1 << 64) - 1

WRITE_COMMANDS = frozenset(
    b"set add replace append prepend cas incr decr delete touch ms md ma mg".split())
READ_COMMANDS = frozenset({b"get", b"gets"})
BINARY_MAGIC = 0x80

OP_UPDATE, OP_INVALIDATE_KEY, OP_READ, OP_FLUSH = 1, 2, 3, 4
ACK_FLAG = 0x80
(STATUS_APPLIED, STATUS_STALE, STATUS_WRITTEN, STATUS_BAD, STATUS_NOT_CACHED, STATUS_VALID,
 STATUS_INVALID) = range(1, 8)

# cache_stats indices (define.p4). STAT_REPORT and STAT_REFILL count digests: not modelled.
(STAT_HIT, STAT_MISS, STAT_INVALIDATE, STAT_UPDATE, STAT_STALE, STAT_REPORT, STAT_UNTRUSTED,
 STAT_NOT_ALLOWED, STAT_FLUSH, STAT_REFILL) = range(10)
STATS_SIZE = 10
MODELLED_STATS = tuple(i for i in range(STATS_SIZE) if i not in (STAT_REPORT, STAT_REFILL))
STATS_COUNTER = "CacheIngress.stats.cache_stats"

# Rules the data plane under test breaks, by name (each with a strict xfail test in
# test_known_deviations.py that turns into a failure once the data plane is fixed).
#
# BARE_LF: memcached ends a line at "\n" whether "\r" precedes it or not, and runs every line of
# a datagram (1.6.18: `get zz\ndelete hello\r\n` deletes hello). The switch reads the rest of the
# line up to "\r\n" only, so a bare "\n" after the key hides a second command: no flush. With the
# deviation the model reads on past a bare "\n" as the switch does; strictly it is a second line.
BARE_LF = "bare-lf-hides-a-second-line"
KNOWN_DEVIATIONS: frozenset[str] = frozenset()  # BARE_LF fixed in the commit after 93900cb

# Register arrays of the slot state and of the stored reply (cells per slot, cell width).
# A reply of n bytes is stored as one chunk per set bit of (n - 1), 256 bytes down to 1, then a
# tail byte; a chunk of 8 bytes or more is a run of 64-bit cells. cache_generation is one cell.
PREFIX = "CacheIngress.slots."
STATE_REGS = ("slot_valid", "slot_written", "slot_version", "slot_len", "slot_generation")
GENERATION = "cache_generation"
CHUNK_REGS = {256: ("store_c256", 32, 8), 128: ("store_c128", 16, 8), 64: ("store_c64", 8, 8),
              32: ("store_c32", 4, 8), 16: ("store_c16", 2, 8), 8: ("store_c8", 1, 8),
              4: ("store_c4", 1, 4), 2: ("store_c2", 1, 2), 1: ("store_c1", 1, 1)}
TAIL_REG = ("store_tail", 1, 1)
REG_CELLS = {**{r: 1 for r in STATE_REGS}, **{n: k for n, k, _ in CHUNK_REGS.values()},
             TAIL_REG[0]: 1}  # cells per slot
REG_SIZES = {**{n: k * CACHE_SLOTS for n, k in REG_CELLS.items()}, GENERATION: 1}
REGISTERS = tuple(REG_SIZES)


def valid_key(key: bytes) -> bool:
    return 1 <= len(key) <= KMAX and all(b > 0x20 and b != 0x7F for b in key)


def ends_word(b: int) -> bool:
    """A blank, a control byte or DEL: the end of a command word or a key."""
    return b <= 0x20 or b == 0x7F


def chunk_layout(length: int) -> list[tuple[int, tuple[str, int, int]]]:
    """(byte count, register) of each piece of a stored reply of ``length`` bytes, wire order."""
    rest = length - 1
    out = [(size, CHUNK_REGS[size]) for size in (256, 128, 64, 32, 16, 8, 4, 2, 1)
           if rest & size]
    return out + [(1, TAIL_REG)]


@dataclass
class Line:
    """What the switch reads of the command line of a memcached datagram."""

    word: bytes = b""
    blanks: int = 0  # the "get " read at once counts its blank
    key: bytes = b""  # at most KMAX bytes (key_long: it went on)
    key_long: bool = False
    rest: bytes = b""  # after the key, up to "\r\n"
    stop: str = "cut"  # why reading ended: crlf | cut | word | blanks | rest | lf

    @property
    def size(self) -> int:
        """Bytes read, "\r\n" included."""
        return len(self.word) + self.blanks + len(self.key) + len(self.rest) + 2


def read_line(data: bytes, *, bare_lf_ends: bool) -> Line:
    """Read the command line at the start of ``data`` (every frame byte after the memcached frame
    header) as the rules say the switch does. ``bare_lf_ends``: a "\n" in the rest ends the
    reading (memcached's line end) instead of being read as part of the line."""
    ln = Line()
    n = len(data)
    if n < 4:  # "get " is looked for in the first 4 bytes at once
        return ln
    bare_word = False  # a word ended by "\r": no blanks, no key, the rest starts there
    if data[:4] == b"get ":
        ln.word, ln.blanks, i = b"get", 1, 4
    else:
        i = 0
        while True:
            if i >= n:
                ln.word = data[:i]
                return ln
            if data[i] == 0x20:
                break
            if data[i] == 0x0D:  # a command without arguments ("version\r\n"), or an empty line
                bare_word = True
                break
            if ends_word(data[i]) or i == CMD_MAX:
                ln.word, ln.stop = data[:i], "word"
                return ln
            i += 1
        ln.word = data[:i]
    while not bare_word:  # blanks
        if i >= n:
            return ln
        if data[i] != 0x20:
            break
        if ln.blanks == MAX_BLANKS:
            ln.stop = "blanks"
            return ln
        ln.blanks += 1
        i += 1
    j = i  # the key
    while not bare_word:
        if j >= n:
            ln.key = data[i:j]
            return ln
        if ends_word(data[j]):
            break
        if j - i == KMAX:
            ln.key_long = True
            break
        j += 1
    ln.key, r = data[i:j], j
    while True:  # the rest of the line
        if n - r < 2:
            ln.rest = data[j:r]
            return ln
        if data[r:r + 2] == b"\r\n":
            ln.rest, ln.stop = data[j:r], "crlf"
            return ln
        if bare_lf_ends and data[r] == 0x0A:
            ln.rest, ln.stop = data[j:r], "lf"
            return ln
        if r - j == REST_MAX:
            ln.rest, ln.stop = data[j:r], "rest"
            return ln
        r += 1


FIRST_FRAGMENT = "a first fragment: the rest of the datagram is out of sight"
LATER_FRAGMENT = "a later UDP fragment: it may complete a datagram the switch could not read"

STOP_REASONS = {"cut": "the frame ends inside the line",
                "word": "no blank after the command word",
                "blanks": "more than 4 blanks",
                "rest": "the line goes on past REST_MAX",
                "lf": "a bare \\n: another line follows"}


@dataclass
class Verdict:
    """What the switch must do with one frame."""

    kind: str  # answered | forwarded | dropped | acked | sent (a packet-out that leaves)
    reason: str
    outputs: list[tuple[int, bytes]] = field(default_factory=list)
    packet_ins: list[bytes] = field(default_factory=list)
    writes: list[tuple[str, int, int]] = field(default_factory=list)  # register, index, value
    counts: list[int] = field(default_factory=list)  # cache_stats indices counted
    slot: int | None = None  # slot answered / invalidated / updated
    status: int | None = None  # of a control datagram's acknowledgement
    flush: str | None = None  # why the datagram flushed the cache


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
    """``keys`` maps (server IPv4 address, key) to a slot, as cache_lookup does; ``agents`` holds
    the (ingress port, source address) pairs of trusted_agents."""

    def __init__(self, *, l2: dict[bytes, int], allow: list[tuple[int, int]],
                 agents: set[tuple[int, int]],
                 keys: dict[tuple[int, bytes], int],
                 deviations: frozenset[str] = KNOWN_DEVIATIONS) -> None:
        self.l2 = dict(l2)
        self.allow = list(allow)
        self.agents = set(agents)
        self.keys = dict(keys)
        self.deviations = frozenset(deviations)
        self.regs: dict[str, list[int]] = {n: [0] * size for n, size in REG_SIZES.items()}
        self.stats = [0] * STATS_SIZE

    # -- state helpers
    @property
    def generation(self) -> int:
        return self.regs[GENERATION][0]

    def answers(self, slot: int) -> bool:
        """The slot answers GETs: valid, and invalidated last in the current generation."""
        return bool(self.regs["slot_valid"][slot]) and \
            self.regs["slot_generation"][slot] == self.generation

    def slot_state(self, slot: int) -> dict[str, int]:
        return {**{n: self.regs[n][slot] for n in STATE_REGS}, GENERATION: self.generation}

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
        for i in verdict.counts:
            self.stats[i] += 1

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

    def later_udp_fragment(self, frame: bytes) -> bool:
        """An IPv4 (version 4) fragment of a UDP datagram that does not start the datagram
        (fragment offset not 0), whatever its destination, header length or checksum."""
        if len(frame) < 14 or frame[12:14] != b"\x08\x00":
            return False
        ip = self.read_ip(frame, 14)
        return ip is not None and ip.version == 4 and ip.frag != 0 and ip.proto == 17

    def udp_of(self, frame: bytes) -> Udp | None:
        """The UDP datagram the switch looks into, if any (first fragments and options too)."""
        if len(frame) < 14 or frame[12:14] != b"\x08\x00":
            return None
        ip = self.read_ip(frame, 14)
        return None if ip is None else self.read_udp(frame, ip)

    @staticmethod
    def command_word(line: bytes) -> bytes:
        j = 0
        while j < len(line) and not ends_word(line[j]):
            j += 1
        return line[:j]

    def read_line(self, u: Udp) -> Line:
        return read_line(u.body[8:], bare_lf_ends=BARE_LF not in self.deviations)

    @staticmethod
    def not_one_line(u: Udp, ln: Line) -> str | None:
        """None if the datagram is exactly the one command line read, else why not."""
        if ln.stop != "crlf":
            return STOP_REASONS[ln.stop]
        if u.ip.ihl != 5:
            return "IPv4 options"
        if u.ip.mf:
            return "a first fragment"
        if u.body[2:8] != b"\x00\x00\x00\x01\x00\x00":
            return "frame header seq / total / reserved"
        if u.length != 16 + ln.size or u.ip.total_len != 36 + ln.size:
            return "UDP / IPv4 length not the line's (more lines, or bytes missing)"
        return None

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
        if self.later_udp_fragment(frame):
            plain.reason = "a later IPv4 fragment of a UDP datagram"
            self.flush(plain, LATER_FRAGMENT)
            return plain
        u = self.udp_of(frame)
        if u is None:
            return plain
        if u.dport == CTRL_PORT and len(u.body) >= 10:
            refused = self.refused_control(u)
            if refused:
                return Verdict("dropped", refused, counts=[STAT_UNTRUSTED])
            if (port, u.ip.src) not in self.agents:
                spoofed = any(src == u.ip.src for _, src in self.agents)
                return Verdict("dropped", "control datagram from a trusted agent's address on "
                               "another port (spoofed)" if spoofed else
                               "control datagram from an untrusted source",
                               counts=[STAT_UNTRUSTED])
            return self.control(frame, u, port, to_cpu=False)
        if u.dport != MEMCACHED_PORT:
            return plain
        if len(u.body) < 8:
            plain.reason = "memcached datagram cut inside its frame header"
            if u.ip.mf:
                self.flush(plain, FIRST_FRAGMENT)
            return plain
        return self.memcached(frame, u, port, plain)

    def memcached(self, frame: bytes, u: Udp, port: int, v: Verdict) -> Verdict:
        """A datagram to the memcached port whose frame header was read. ``v``: the frame
        forwarded (or dropped, unknown MAC) unchanged, to which the effects are added."""
        ln = self.read_line(u)
        broken = self.not_one_line(u, ln)
        word = ln.word.decode("latin-1")
        if ln.word == b"get":
            if (broken is None and u.ip.checksum_ok and ln.blanks == 1 and ln.key
                    and not ln.key_long and not ln.rest):
                return self.get_verdict(frame, u, port, ln.key, v)
            v.reason = "read: a get that is no cache candidate"
            flush = broken
        elif ln.word == b"gets":
            v.reason = "read: gets"
            flush = broken
        elif ln.word in WRITE_COMMANDS:
            slot = None if ln.key_long else self.keys.get((u.ip.dst, ln.key))
            if not ln.key:
                v.reason = "write without a key"
            elif slot is None:
                v.reason = "write to a key not cached"
            else:
                v.reason = f"write {word} to a cached key: slot invalidated"
                v.slot = slot
                v.writes = [("slot_valid", slot, 0), ("slot_written", slot, 1)]
                v.counts.append(STAT_INVALIDATE)
            flush = broken or (None if ln.key else "write without a key")
            if flush is None and len(ln.word) == 2 and b"b" in ln.rest:
                flush = "a meta command with a b after its key (a base64 key?)"
        else:
            flush = self.other_command(u, ln, broken)
            v.reason = ("neither a read nor a write" if flush else
                        "one whole line of another command (version, an unknown word)")
        if u.ip.mf:
            flush = FIRST_FRAGMENT
        if flush is not None:
            self.flush(v, flush)
        return v

    def flush(self, v: Verdict, why: str) -> None:
        v.flush = why
        v.reason += "; flush: " + why
        v.writes.append((GENERATION, 0, (self.generation + 1) & MASK64))
        v.counts.append(STAT_FLUSH)

    @staticmethod
    def other_command(u: Udp, ln: Line, broken: str | None) -> str | None:
        """Why a datagram that is neither a read nor a write flushes, if it does."""
        data = u.body[8:]
        if data[:1] == bytes([BINARY_MAGIC]):
            return "binary protocol"
        if ln.word in (b"gat", b"gats"):
            return "gat / gats"
        if ln.word == b"flush_al":
            return "flush_all (or a word starting flush_al)"
        if ln.stop == "cut" and not ln.word and len(data) < 4:
            return "the frame ends before a command word"
        if data[:1] == b" ":
            return "a line starting with a blank"
        if not ln.word:
            return "an empty line or a control byte first"
        return broken  # one whole line of another command (version, stats, ...) changes nothing

    def predict_packet_out(self, frame: bytes, egress: int) -> Verdict:
        """A frame the controller sends (packet-out naming ``egress``)."""
        u = self.udp_of(frame)
        if u is not None and u.dport == CTRL_PORT and len(u.body) >= 10:
            refused = self.refused_control(u)
            if refused:
                return Verdict("dropped", refused, counts=[STAT_UNTRUSTED])
            return self.control(frame, u, CPU_PORT, to_cpu=True)
        return Verdict("sent", "packet-out", outputs=[(egress, frame)])

    @staticmethod
    def refused_control(u: Udp) -> str | None:
        """Why a control datagram is dropped whoever sent it, if it is."""
        if u.body[0] & ACK_FLAG:
            return "stray acknowledgement"
        if u.ip.ihl != 5 or u.ip.mf:
            return "control datagram with IPv4 options or in a fragment"
        return None

    def get_verdict(self, frame: bytes, u: Udp, port: int, key: bytes, v: Verdict) -> Verdict:
        """A cache candidate: answered, or forwarded as a miss (``v``)."""
        ip = u.ip
        slot = self.keys.get((ip.dst, key))
        if not self.allowed(ip.src):
            why, count = "GET from a client outside the allow-list", STAT_NOT_ALLOWED
        elif slot is None:
            why, count = "GET miss: key not cached", STAT_MISS
        elif not self.regs["slot_valid"][slot]:
            why, count = "GET miss: slot invalid", STAT_MISS
        elif not self.answers(slot):
            why, count = "GET miss: slot of an older generation (flushed)", STAT_MISS
        else:
            reply = self.stored_reply(slot)
            rid = u.body[:2]
            payload = rid + b"\x00\x00\x00\x01\x00\x00" + reply
            return Verdict("answered", "GET hit", slot=slot, counts=[STAT_HIT],
                           outputs=[(port, self.turn_around(frame, u, payload))])
        v.reason = why if v.outputs else why + " (unknown destination MAC)"
        v.counts.append(count)
        return v

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
            elif length and self.regs["slot_generation"][slot] != self.generation:
                status, v.reason = STATUS_WRITTEN, "refill across a flush refused"
            else:
                status, v.slot = STATUS_APPLIED, slot
                v.writes = [("slot_version", slot, version), ("slot_len", slot, length)]
                if length == 0:
                    v.reason = "invalidation applied"
                    v.writes += [("slot_valid", slot, 0), ("slot_written", slot, 0),
                                 ("slot_generation", slot, self.generation)]
                else:
                    v.reason = "update applied"
                    v.writes += self.store_writes(slot, u.body[10:10 + length])
                    v.writes.append(("slot_valid", slot, 1))
            v.counts.append(STAT_UPDATE if status == STATUS_APPLIED else STAT_STALE)
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
                v.counts.append(STAT_INVALIDATE)
        elif op == OP_READ:
            if slot >= CACHE_SLOTS:
                status, v.reason = STATUS_BAD, "read of a slot out of range"
            else:
                status = STATUS_VALID if self.answers(slot) else STATUS_INVALID
                ack_version = self.regs["slot_version"][slot]
                ack_len = self.regs["slot_len"][slot]
                v.reason = "slot read"
        elif op == OP_FLUSH:
            if u.length != 8 + 10:
                status, v.reason = STATUS_BAD, "flush request with a body (UDP length not 18)"
            else:
                status, v.reason = STATUS_APPLIED, "flush requested"
                self.flush(v, "OP_FLUSH from the controller or an agent")
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

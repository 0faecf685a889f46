"""Random and mutated memcached / control datagrams for the fuzz run (``test_fuzz_datagrams``).

Everything is drawn from one ``random.Random(seed)``, so a seed and a count name a run exactly.
A datagram is a valid or near-valid seed (GET, write, control datagram, other memcached command,
command lines built to sit on the flush rules' edges, a datagram (mostly a memcached one) split
into two or three IPv4 fragments sent one after the other, in order or the later ones first,
random bytes) from a client, a stranger, a trusted agent on
its own port or a trusted agent's address on another port (spoofed), sent into a data port or as
a packet-out, then 0..4 mutations (bit flips,
byte sets to edge values, inserts, deletes, splices with a recent frame, truncation, padding,
header-field pokes), then half the time the IPv4/UDP lengths and the IPv4 checksum are made
consistent again so the mutation reaches the memcached / control parser instead of being stopped
by the first length check.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

import cache_oracle as co
import cache_rig as rg
import cache_wire as w

EDGE_BYTES = (0x00, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x21, 0x7E, 0x7F, 0x80, 0xFF)
# After a write's key: one line (no flush), a data block or more lines (flush), malformed.
WRITE_TAILS = (b" 0 0 5\r\nhello\r\n", b"\r\n", b"\r\n", b" 0\r\n", b" 1\r\n", b"",
               b" ", b" noreply\r\n", b"\x00", b"\x7f", b"\t0", b"\n", b" 0\ndelete k\r\n",
               b" b\r\n", b" 0 b\r\n", b" v b T30\r\n")  # b: a meta command's base64 flag
# Lines for datagrams of several lines (memcached runs them all), joined by \r\n or a bare \n.
LINES = (b"get k", b"get zz", b"gets k", b"delete k", b"delete hello", b"touch k 0",
         b"incr k 1", b"flush_all", b"version", b"", b" delete k", b"set k 0 0 1", b"x",
         b"md k", b"mg k v", b"get k hello", b"md k b", b"mg k b v", b"md aGVsbG8= b",
         b"stats", b"foo bar", b"get", b"version\r")
OTHER_LINES = (b"gets k\r\n", b"get k hello\r\n", b"gat 0 k\r\n", b"gats 0 k\r\n", b"gat",
               b"mg k v\r\n", b"mn\r\n", b"flush_all\r\n", b"flush_all 10 noreply\r\n",
               b"flush_al", b"version\r\n", b"stats\r\n", b"get \r\n", b"get\r\n",
               b"GET k\r\n", b"get  k\r\n", b"get k\n", b"get k\r\n\r\n", b"\r\n", b"",
               b"\x80\x01\x00\x01\x08\x00\x00\x00\x00\x00\x00\x0a" + bytes(20) + b"kv",
               b"\x80\x00\x00\x01" + bytes(20) + b"k",
               # harmless on one whole line (no flush), or not
               b"foo bar\r\n", b"x\n", b"x\r\n", b"ab\r\n", b"shutdown\r\n", b"abcdefgh\r\n",
               b"verbosity 1\r\n", b"\rversion\r\n", b"version\r", b"version\r\r\n",
               b"stats items\r\n", b"mn\r\n", b"me k\r\n", b"bget k\r\n",
               # meta commands naming their key in base64 (aGVsbG8= is hello)
               b"md aGVsbG8= b\r\n", b"mg aGVsbG8= b v\r\n", b"ma aGVsbG8= b\r\n",
               b"md k b\r\n", b"md k Obar\r\n", b"ms aGVsbG8= 1 b\r\nx\r\n")
IP_FIELDS = ((0, 1), (1, 1), (2, 2), (4, 2), (6, 2), (8, 1), (9, 1), (10, 2), (12, 4), (16, 4))


@dataclass
class Datagram:
    frame: bytes
    port: int | None  # data port, or None for a packet-out
    egress: int = rg.CLIENT_PORT  # packet-out's port
    origin: str = ""
    slot: int | None = None  # a get seed's slot (before mutation): the driver may refill it


class Corpus:
    def __init__(self, rng: random.Random, model: co.Oracle) -> None:
        self.rng = rng
        self.model = model
        self.recent: list[bytes] = []
        self.keys = sorted({k for _, k in rg.LOOKUP})
        self.last: tuple[int, bytes] = (0, b"")  # (server, key) of the last frame / key drawn
        self.pending: list[Datagram] = []  # the rest of a fragmented datagram, sent next

    # -- pieces
    def key(self) -> bytes:
        k = self._key()
        self.last = (self.last[0], k)
        return k

    def _key(self) -> bytes:
        r = self.rng.random()
        if r < 0.7:
            return self.rng.choice(self.keys)
        if r < 0.8:  # a cached key and more: another key (past 64 bytes: too long to cache)
            return self.rng.choice(self.keys) + bytes(
                self.rng.randrange(0x21, 0x7F) for _ in range(self.rng.choice((1, 1, 2, 8))))
        if r < 0.9:
            return self.rng.choice(rg.UNCACHED)
        n = self.rng.choice((1, 2, 8, 63, 64, 65, 70))
        return bytes(self.rng.randrange(0x21, 0x100) for _ in range(n)).replace(b"\x7f", b"z")

    def source(self) -> tuple[int, bytes, int]:
        """(source IP, source MAC, data port)."""
        r = self.rng.random()
        if r < 0.52:
            return self.rng.choice(rg.CLIENTS), w.CLIENT_MAC, rg.CLIENT_PORT
        if r < 0.67:
            return rg.SERVER_IP, w.SERVER_MAC, rg.SERVER_PORT
        if r < 0.72:
            return rg.SERVER2_IP, w.SERVER2_MAC, rg.SERVER2_PORT
        if r < 0.77:
            return rg.AGENT_IP, w.AGENT_MAC, rg.AGENT_PORT
        if r < 0.82:  # a trusted agent's address from another port: spoofed
            ip = self.rng.choice(sorted(rg.AGENT_PORTS))
            port = self.rng.choice([p for p in rg.DATA_PORTS if p != rg.AGENT_PORTS[ip]])
            return ip, self.rng.choice((w.CLIENT_MAC, w.SERVER_MAC)), port
        return self.rng.choice(rg.STRANGERS), w.UNKNOWN_MAC, self.rng.choice(rg.DATA_PORTS)

    def frame(self, payload: bytes, dport: int, src: int, smac: bytes) -> bytes:
        r = self.rng.random()
        dst, dmac = (rg.SERVER_IP, w.SERVER_MAC) if r < 0.8 else (rg.SERVER2_IP, w.SERVER2_MAC)
        if self.rng.random() < 0.1:
            dmac = self.rng.choice((w.UNKNOWN_MAC, w.CLIENT_MAC, b"\xff" * 6))
        self.last = (dst, self.last[1])
        return w.udp_frame(payload, src=src, dst=dst, sport=self.rng.randrange(1, 65536),
                           dport=dport, eth_dst=dmac, eth_src=smac,
                           ident=self.rng.randrange(65536))

    def mc_hdr(self) -> bytes:
        fields = [self.rng.randrange(65536), 0, 1, 0]
        if self.rng.random() < 0.15:  # one of seq / total / reserved off
            fields[self.rng.randrange(1, 4)] = self.rng.choice((0, 1, 2, 0x100, 0xFFFF))
        return w.memcache_hdr(*fields)

    # -- seeds
    def get(self) -> bytes:
        return self.mc_hdr() + b"get " + self.key() + b"\r\n"

    def write(self) -> bytes:
        cmd = self.rng.choice(sorted(co.WRITE_COMMANDS))
        blanks = b" " * self.rng.choice((1, 1, 1, 2, 3, 4, 5, 6))
        return self.mc_hdr() + cmd + blanks + self.key() + self.rng.choice(WRITE_TAILS)

    def lines(self) -> bytes:
        """Command lines on the edges of the flush rules: several lines (joined by \\r\\n or
        a bare \\n), blanks before the command, keys and lines around KMAX and REST_MAX."""
        rng = self.rng
        r = rng.random()
        if r < 0.5:
            sep = rng.choice((b"\r\n", b"\r\n", b"\n"))
            body = sep.join(rng.choice(LINES) for _ in range(rng.choice((1, 2, 2, 3))))
            body = body.replace(b" k", b" " + self.key(), 1)
            return self.mc_hdr() + body + rng.choice((b"\r\n", b"\r\n", b"\n", b""))
        if r < 0.7:
            lead = b" " * rng.choice((1, 1, 2, 5))
            return self.mc_hdr() + lead + rng.choice(LINES) + b"\r\n"
        word = rng.choice((b"get", b"get", b"gets", b"delete", b"touch", b"md", b"set"))
        key = rng.choice((self.key(), b"L" * rng.choice((63, 64, 65, 200, 250, 319, 320))))
        rest = (b" k" * 200)[:rng.choice((0, 1, 2, 190, 191, 254, 255, 256, 300))]
        return self.mc_hdr() + word + b" " + key + rest + rng.choice((b"\r\n", b"\r\n", b""))

    def version(self, slot: int) -> int:
        cur = self.model.regs["slot_version"][slot % co.CACHE_SLOTS]
        r = self.rng.random()
        if r < 0.6:
            return (cur + 1) & 0xFFFFFFFF
        if r < 0.8:
            return self.rng.choice((cur, max(cur - 1, 0), 0, 0xFFFFFFFF))
        return self.rng.randrange(1 << 32)

    def update(self) -> bytes:
        r = self.rng.random()
        if r < 0.7:
            slot = self.rng.choice(list(rg.LOOKUP.values()))
        elif r < 0.9:
            slot = self.rng.randrange(co.CACHE_SLOTS)
        else:
            slot = self.rng.choice((co.CACHE_SLOTS, co.CACHE_SLOTS + 1, 0xFFFF))
        n = self.rng.choice((0, 1, 2, 3, 7, 8, 9, 16, 31, 64, 100, 255, 256, 257, 511, 512,
                             self.rng.randrange(1, 513)))
        body = bytes(self.rng.randrange(256) for _ in range(n))
        length = n
        if self.rng.random() < 0.1:
            length = self.rng.choice((n + 1, max(n - 1, 0), 513, 0xFFFF))
        return w.ctrl_hdr(co.OP_UPDATE, slot, self.version(slot), length) + body

    def ctrl_other(self) -> bytes:
        op = self.rng.choice((co.OP_INVALIDATE_KEY, co.OP_INVALIDATE_KEY, co.OP_READ, 0,
                              0x81, co.OP_FLUSH, 0xFF))
        slot = self.rng.choice((self.rng.choice(list(rg.LOOKUP.values())),
                                self.rng.randrange(0x10000)))
        hdr = w.ctrl_hdr(op, slot, self.rng.randrange(1 << 32), self.rng.randrange(4))
        if op == co.OP_INVALIDATE_KEY:
            return hdr + self.key() + self.rng.choice((b"\r\n", b"\r\n", b"\n", b"", b" \r\n"))
        if op == co.OP_FLUSH and self.rng.random() < 0.3:  # a body: refused (bad)
            return hdr + self.rng.randbytes(self.rng.choice((1, 2, 8)))
        return hdr

    def seed(self) -> Datagram:
        rng = self.rng
        src, smac, port = self.source()
        r = rng.random()
        if r < 0.22:
            if rng.random() < 0.7:
                src, smac, port = rng.choice(rg.CLIENTS), w.CLIENT_MAC, rg.CLIENT_PORT
            payload = self.get()
            f = self.frame(payload, co.MEMCACHED_PORT, src, smac)
            return Datagram(f, port, origin="get", slot=rg.LOOKUP.get(self.last))
        if r < 0.36:
            return Datagram(self.frame(self.write(), co.MEMCACHED_PORT, src, smac), port,
                            origin="write")
        if r < 0.40:
            return Datagram(self.frame(self.lines(), co.MEMCACHED_PORT, src, smac), port,
                            origin="lines")
        if r < 0.43:
            return self.fragmented(src, smac, port)
        if r < 0.62:
            payload = self.update() if rng.random() < 0.6 else self.ctrl_other()
            if rng.random() < 0.35:  # from the controller, in the name of a server
                server = rng.choice((rg.SERVER_IP, rg.SERVER2_IP, rg.AGENT_IP))
                f = self.frame(payload, co.CTRL_PORT, server, w.AGENT_MAC)
                return Datagram(f, None, rng.choice(rg.DATA_PORTS), origin="ctrl packet-out")
            return Datagram(self.frame(payload, co.CTRL_PORT, src, smac), port, origin="ctrl")
        if r < 0.70:
            return Datagram(self.frame(self.mc_hdr() + rng.choice(OTHER_LINES),
                                       co.MEMCACHED_PORT, src, smac), port, origin="other cmd")
        if r < 0.82:
            n = rng.choice((0, 1, 7, 8, 9, 10, 11, 20, rng.randrange(0, 200),
                            rng.choice((0, 1472, 8972)) if rng.random() < 0.05 else 0))
            dport = rng.choice((co.MEMCACHED_PORT, co.CTRL_PORT, 53, rng.randrange(65536)))
            f = self.frame(rng.randbytes(n), dport, src, smac)
            if rng.random() < 0.2:
                return Datagram(f, None, rng.choice(rg.DATA_PORTS), origin="random udp packet-out")
            return Datagram(f, port, origin="random udp")
        n = rng.choice((0, 1, 13, 14, 20, 33, 34, 41, 42, 60, rng.randrange(0, 300)))
        if rng.random() < 0.01:  # full-size and jumbo frames
            n = rng.choice((1514, 9018))
        data = rng.randbytes(n)
        if n >= 14 and rng.random() < 0.5:
            data = rng.choice(list(rg.L2)) + data[6:12] + b"\x08\x00" + data[14:]
        if rng.random() < 0.15:
            return Datagram(data, None, rng.choice(rg.DATA_PORTS), origin="random packet-out")
        return Datagram(data, rng.choice(rg.DATA_PORTS), origin="random bytes")

    def fragmented(self, src: int, smac: bytes, port: int) -> Datagram:
        """A datagram split into two or three IPv4 fragments: mostly a memcached one (a get, a
        write, lines), now and then one to another UDP port or a TCP segment (protocol 6: its
        later fragments do not flush). One fragment is returned, the others come next
        (``self.pending``): in order, or the later ones first (the host completes the datagram at
        whichever arrives last), and one of them is lost now and then."""
        rng = self.rng
        payload = rng.choice((self.get, self.write, self.lines))()
        dport = co.MEMCACHED_PORT if rng.random() < 0.85 else rng.choice((53, 11311, 4789))
        f = self.frame(payload, dport, src, smac)
        ip, dgram = bytearray(f[14:34]), f[34:]
        if rng.random() < 0.1:
            ip[9] = 6
        words = rng.choice((1, 1, 2, 3, max(1, (len(dgram) - 1) // 8)))
        cut = min(8 * words, len(dgram))
        ends = [cut] if cut < len(dgram) else []
        if ends and rng.random() < 0.3 and len(dgram) - cut > 8:  # a middle fragment too
            ends.append(cut + 8 * rng.randrange(1, (len(dgram) - cut + 7) // 8))
        ends.append(len(dgram))

        def fragment(a: int, b: int) -> Datagram:
            h = bytearray(ip)
            flags_frag = (0x2000 if b < len(dgram) or a == 0 else 0) | a // 8  # MF
            struct.pack_into("!HHH", h, 2, 20 + b - a, struct.unpack_from("!H", h, 4)[0],
                             flags_frag)
            struct.pack_into("!H", h, 10, w.ipv4_header_checksum(bytes(h)))
            which = "first" if a == 0 else "last" if b == len(dgram) else "middle"
            return Datagram(f[:14] + bytes(h) + dgram[a:b], port, origin=f"fragment ({which})")

        pieces = [fragment(a, b) for a, b in zip([0, *ends[:-1]], ends, strict=True)]
        if len(pieces) > 1 and rng.random() < 0.25:  # the later fragments arrive first
            pieces = pieces[1:] + pieces[:1]
        if len(pieces) > 1 and rng.random() < 0.1:  # one is lost
            del pieces[rng.randrange(len(pieces))]
        self.pending.extend(pieces[1:])
        return pieces[0]

    # -- mutations
    def mutate(self, f: bytes) -> bytes:
        rng = self.rng
        payload_only = len(f) > 42 and rng.random() < 0.6
        lo = 42 if payload_only else 0
        b = bytearray(f)
        op = rng.randrange(9)
        if op == 0 and len(b) > lo:  # bit flips
            for _ in range(rng.choice((1, 1, 2, 3, 8))):
                i = rng.randrange(lo, len(b))
                b[i] ^= 1 << rng.randrange(8)
        elif op == 1 and len(b) > lo:  # a byte set to an edge value
            b[rng.randrange(lo, len(b))] = rng.choice(EDGE_BYTES + (rng.randrange(256),))
        elif op == 2:  # insert
            i = rng.randrange(lo, len(b) + 1)
            ins = bytes(rng.choice(EDGE_BYTES) if rng.random() < 0.5 else rng.randrange(256)
                        for _ in range(rng.choice((1, 1, 2, 4, 8))))
            b[i:i] = ins
        elif op == 3 and len(b) > lo:  # delete a range
            i = rng.randrange(lo, len(b))
            del b[i:i + rng.choice((1, 1, 2, 4, 16))]
        elif op == 4 and self.recent:  # splice with a recent frame
            other = rng.choice(self.recent)
            i = rng.randrange(lo, len(b) + 1)
            j = rng.randrange(0, len(other) + 1)
            b = b[:i] + bytearray(other[j:])
        elif op == 5:  # truncate
            b = b[:rng.randrange(0, len(b) + 1)]
        elif op == 6:  # Ethernet padding / trailing garbage
            b += bytes(rng.choice((0, rng.randrange(256))) for _ in range(rng.randrange(1, 40)))
        elif op == 7 and len(b) >= 34:  # poke an IPv4 header field
            off, size = rng.choice(IP_FIELDS)
            v = rng.choice((0, 1, 5, 6, 15, 0x20, 0x40, 0x45, 0x46, 0x65, 0xFF, 0x2000, 0x4000,
                            rng.randrange(1 << (8 * size))))
            b[14 + off:14 + off + size] = (v & ((1 << (8 * size)) - 1)).to_bytes(size, "big")
        elif len(b) >= 42:  # poke a UDP header field
            off = rng.choice((34, 36, 38, 40))
            v = rng.choice((0, 11211, 11311, rng.randrange(65536), len(b) - 34, len(b) - 33))
            b[off:off + 2] = (v & 0xFFFF).to_bytes(2, "big")
        return bytes(b)

    @staticmethod
    def fixup(f: bytes) -> bytes:
        """IPv4 total length, UDP length and IPv4 checksum made to match the frame again."""
        if len(f) < 42 or f[12:14] != b"\x08\x00" or f[14] & 15 != 5:
            return f
        b = bytearray(f)
        struct.pack_into("!H", b, 16, len(f) - 14)
        struct.pack_into("!H", b, 38, len(f) - 34)
        struct.pack_into("!H", b, 24, w.ipv4_header_checksum(bytes(b[14:34])))
        return bytes(b)

    def next(self) -> Datagram:
        if self.pending:
            d = self.pending.pop(0)
            self.recent.append(d.frame)
            return d
        d = self.seed()
        if self.rng.random() < 0.75:
            for _ in range(self.rng.choice((1, 1, 1, 2, 3, 4))):
                d.frame = self.mutate(d.frame)
            d.origin += " mutated"
            if self.rng.random() < 0.5:
                d.frame = self.fixup(d.frame)
                d.origin += " fixed-up"
        self.recent.append(d.frame)
        if len(self.recent) > 64:
            self.recent.pop(0)
        return d

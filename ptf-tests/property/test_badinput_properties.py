"""Property tests (hypothesis) of the cache pipeline against bad and near-valid input.

Every frame goes through ``Rig.send`` / ``Rig.send_out``, which checks the engine against the
reference model (cache_oracle): no engine error, exactly the model's output frames, slot registers
exactly the model's, counters too. On top of that each test states what it expects of its own
input (answered or not, slot invalidated or not, cache flushed or not, read off the engine), so a
model that agreed with a broken pipeline on everything would still be caught here.

Examples per test: ``P4CACHE_PROPERTY_EXAMPLES`` (default 150). Runs are derandomized (the same
examples every run); ``P4CACHE_PROPERTY_SEED=<int>`` draws a different fixed set instead.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field, replace

import cache_oracle as co
import cache_wire as w
import pytest
from cache_rig import (
    AGENT_IP,
    AGENT_PORT,
    CACHED,
    CACHED2,
    CLIENT_PORT,
    CLIENTS,
    DATA_PORTS,
    SERVER2_IP,
    SERVER2_PORT,
    SERVER_IP,
    SERVER_PORT,
    STRANGERS,
    UNCACHED,
    Rig,
)
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("P4CACHE_PROPERTY_EXAMPLES", "150"))
SEED = os.environ.get("P4CACHE_PROPERTY_SEED")
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    derandomize=SEED is None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def property_test(f):
    f = SETTINGS(f)
    return seed(int(SEED))(f) if SEED is not None else f


KEYS = sorted(CACHED)
cached_keys = st.sampled_from(KEYS)
replies = st.binary(min_size=1, max_size=co.REPLY_MAX)
ports16 = st.integers(1, 0xFFFF)
write_commands = st.sampled_from(sorted(co.WRITE_COMMANDS))

# Tails after the key: one line (the write invalidates its key, no flush), a data block (a
# second line: flush), and malformed ones.
ONE_LINE_TAILS = [b"\r\n", b" 0\r\n", b" 1 noreply\r\n", b" noreply\r\n", b" 0 0 1 \x01\r\n"]
DATA_BLOCK_TAILS = [b" 0 0 1\r\nx\r\n", b" 0 0 5\r\nhello\r\n", b" 0 0 5 noreply\r\nhel\nlo\r\n"]
WRITE_TAILS = [b" 0 0 5\r\nhello\r\n", b" 0\r\n", b" 1 noreply\r\n", b"\r\n", b"", b" ",
               b" b\r\n", b" v b\r\n", b" T30 b q\r\n", b" 0 0 1 b\r\nx\r\n",  # meta: base64 key
               b"\t", b"\x00", b"\x7f", b"\x01garbage", b" \xff\xfe", b"\n", b"\r", b" 1\n",
               b"\r\n\r\n", b" 0\r\ndelete hello\r\n"]


@dataclass(kw_only=True)
class MemcachedFrame:
    """An Ethernet / IPv4 / UDP frame around a memcached payload, well-formed unless a field says
    otherwise (the fields every request frame of these tests can get wrong)."""

    src: int = CLIENTS[0]
    dst: int = SERVER_IP
    sport: int = 40000
    dport: int = co.MEMCACHED_PORT
    udp_len_delta: int = 0
    ip_len_delta: int = 0
    udp_checksum: int | str = 0  # an int, or "right"
    ip: dict = field(default_factory=dict)  # ipv4() fields: version, ihl, options, flags, ...
    checksum_delta: int = 0
    ethertype: int = w.ETHERTYPE_IPV4
    eth_dst: bytes = w.SERVER_MAC
    pad: bytes = b""

    def wrap(self, payload: bytes) -> bytes:
        seg = w.udp(payload, sport=self.sport, dport=self.dport,
                    length=8 + len(payload) + self.udp_len_delta)
        if self.udp_checksum == "right":
            seg = seg[:6] + struct.pack("!H", w.udp_checksum(self.src, self.dst, seg)) + seg[8:]
        elif self.udp_checksum:
            seg = seg[:6] + struct.pack("!H", self.udp_checksum) + seg[8:]
        fields = dict(self.ip)
        opts = fields.get("options", b"")
        fields.setdefault("total_len", 20 + len(opts) + len(seg) + self.ip_len_delta)
        pkt = w.ipv4(seg, src=self.src, dst=self.dst, **fields)
        if self.checksum_delta:
            c = (int.from_bytes(pkt[10:12], "big") + self.checksum_delta) & 0xFFFF
            pkt = pkt[:10] + c.to_bytes(2, "big") + pkt[12:]
        return w.ether(pkt, dst=self.eth_dst, ethertype=self.ethertype) + self.pad


@dataclass
class Get(MemcachedFrame):
    """A ``get`` request frame, well-formed unless a field says otherwise."""

    key: bytes
    rid: int = 7
    line: bytes | None = None
    seq: int = 0
    total: int = 1
    reserved: int = 0
    cut: int | None = None

    def frame(self) -> bytes:
        line = b"get " + self.key + b"\r\n" if self.line is None else self.line
        f = self.wrap(w.memcache_hdr(self.rid, self.seq, self.total, self.reserved) + line)
        return f if self.cut is None else f[:self.cut]


def ensure_valid(rig: Rig, key: bytes, reply: bytes | None = None) -> None:
    slot = CACHED[key]
    if reply is not None or not rig.model.answers(slot):
        rig.fill(slot, reply or b"VALUE " + key + b" 0 1\r\nv\r\nEND\r\n")


def flushed(rig: Rig, before: int) -> bool:
    """Did the engine's cache generation move since ``before``?"""
    return rig.generation() != before


def _first_token(data: bytes) -> bytes:
    end = next((i for i, b in enumerate(data) if b <= 0x20 or b == 0x7F), len(data))
    return data[:end]


@dataclass
class LineRule:
    """What the rules say of a datagram holding exactly ``line`` after a right frame header, with
    right lengths and no IPv4 options (worked out with string operations, not the model's reader).
    """

    word: bytes
    blanks: int
    token: bytes  # the first token after the blanks (the key, if at most 64 bytes)
    one_line: bool  # exactly one command line, read to its end by the switch
    bare_lf: bool  # one line to the switch, but a bare "\n" in it: memcached sees two
    flush: bool  # strictly (a bare "\n" flushes)
    invalidates: bytes | None  # the key a write invalidates (if cached)

    @classmethod
    def of(cls, line: bytes) -> LineRule:
        word = _first_token(line)
        after = line[len(word):]
        blanks = len(after) - len(after.lstrip(b" "))
        token = _first_token(after[blanks:])
        # What follows the key up to the end: the rest of the line, "\r\n", more. A word ended by
        # "\r" (a command without arguments) has neither blanks nor key: its rest starts there.
        bare_word = after[:1] == b"\r"
        tail = after if bare_word else after[blanks + min(len(token), co.KMAX):]
        end = tail.find(b"\r\n")
        one = (1 <= len(word) <= co.CMD_MAX and (bare_word or 1 <= blanks <= co.MAX_BLANKS)
               and 0 <= end == len(tail) - 2 and end <= co.REST_MAX
               and len(line) >= 4)  # the switch looks 4 bytes ahead for "get " first
        rest = tail[:end] if one else b""
        bare_lf = one and b"\n" in rest
        if word in (b"get", b"gets"):
            flush = not one or bare_lf
        elif word in co.WRITE_COMMANDS:
            flush = (not one or bare_lf or not token
                     or len(word) == 2 and b"b" in rest)  # a meta command's base64 key
        elif word in (b"gat", b"gats") or word[:8] == b"flush_al" or line[:1] == b"\x80":
            flush = True  # they change items the switch cannot name
        else:  # another command: harmless on one whole line (memcached changes nothing)
            flush = not one or bare_lf
        write = word in co.WRITE_COMMANDS and 1 <= blanks <= co.MAX_BLANKS and not bare_word
        return cls(word, blanks, token, one, bare_lf, flush,
                   token if write and token and len(token) <= co.KMAX else None)

    def expect_flush(self, rig: Rig) -> bool | None:
        """Flush expected, or None where a known deviation makes the data plane differ."""
        if self.bare_lf and co.BARE_LF in rig.model.deviations:
            return None
        return self.flush


def udp_payload(frame: bytes) -> bytes:
    ihl = frame[14] & 15
    return frame[14 + 4 * ihl + 8:]


# -- 1. clean GETs of cached keys are answered with exactly the stored reply


@property_test
@given(key=cached_keys, reply=replies, rid=st.integers(0, 0xFFFF), src=st.sampled_from(CLIENTS),
       sport=ports16, pad=st.binary(max_size=40), ttl=st.integers(0, 255),
       tos=st.integers(0, 255), df=st.booleans(), udp_csum=st.booleans())
def test_clean_get_is_answered_with_the_stored_reply(rig, key, reply, rid, src, sport, pad, ttl,
                                                     tos, df, udp_csum):
    ensure_valid(rig, key, reply)
    g = Get(key, rid=rid, src=src, sport=sport, pad=pad, udp_checksum="right" if udp_csum else 0,
            ip={"ttl": ttl, "tos": tos, "flags": 2 if df else 0})
    req = g.frame()
    gen = rig.generation()
    v = rig.send(CLIENT_PORT, req)
    assert v.kind == "answered", v.reason
    assert not flushed(rig, gen)
    # What the client gets, read off the frame without the model.
    [(port, out)] = v.outputs
    assert port == CLIENT_PORT
    assert out[:6] == req[6:12] and out[6:12] == req[:6]
    assert out[26:30] == req[30:34] and out[30:34] == req[26:30]
    sp, dp_, ulen, ucsum = struct.unpack_from("!HHHH", out, 34)
    assert (sp, dp_, ucsum) == (co.MEMCACHED_PORT, sport, 0)
    assert udp_payload(out) == w.memcache_hdr(rid) + reply
    assert ulen == 16 + len(reply) and len(out) == 14 + 20 + ulen  # no padding after the reply
    assert int.from_bytes(out[16:18], "big") == 20 + ulen
    assert w.ipv4_header_checksum(out[14:34]) == int.from_bytes(out[24:26], "big")


# -- 2. GETs with one field off


def get_case(name: str, expect: bool | None, flush: bool | None, **changes):
    return st.just((name, expect, flush, changes))


RULE = "rule"  # flushes as LineRule says of the line sent (it depends on the key)

COMMAND_SPELLINGS = {  # the command word as sent before the key: flushes? (an unknown word on
    # one whole line does not: memcached answers ERROR and changes nothing)
    b"GET ": False, b"Get ": False, b"gEt ": False, b"gets ": False, b"gat ": True,
    b"ge ": False, b"getx ": False, b"xget ": False, b" get ": True, b"get  ": False,
    b"get\t": True, b"get\x00": True, b"get": RULE, b"\r\nget ": True, b"\rget ": True,
    b"getgetget ": True, b"gets\r\nget ": True}
LINE_ENDINGS = {  # what follows the key: flushes? (the line must be read to its \r\n, alone)
    b"\n": True, b"\r": True, b"\r\r\n": False, b"\n\r": True, b" \r\n": False,
    b"\r\n\r\n": True, b"\r\nX": True, b"\t\r\n": False, b"\x00\r\n": False, b"\x7f\r\n": False,
    b"": True, b"\r\n ": True, b"\r\nget k\r\n": True, b"\r\ndelete hello\r\n": True}


def _case_strategies():
    """(what is off, answered?, flushed?, Get fields). None: the model decides (the change may
    turn the key into another cached key, or the rule is a known deviation)."""
    yes, no = True, False
    edge_bytes = st.sampled_from([0x00, 0x01, 0x09, 0x0D, 0x1F, 0x20, 0x7F])
    return [
        # benign: still a clean GET
        st.builds(lambda r: ("request id", yes, no, {"rid": r}), st.integers(0, 0xFFFF)),
        st.builds(lambda p: ("source port", yes, no, {"sport": p}), ports16),
        st.builds(lambda b: ("Ethernet padding", yes, no, {"pad": b}),
                  st.binary(min_size=1, max_size=60)),
        st.builds(lambda m: ("destination MAC", yes, no, {"eth_dst": m}),
                  st.sampled_from([w.UNKNOWN_MAC, w.CLIENT_MAC, w.AGENT_MAC])),
        st.builds(lambda a: ("destination IP (another server)", None, no, {"dst": a}),
                  st.one_of(st.just(SERVER2_IP), st.integers(1, 0xDFFFFFFF))),
        st.builds(lambda a: ("allowed source", yes, no, {"src": a}), st.sampled_from(CLIENTS)),
        st.builds(lambda f: ("DF / reserved flag", yes, no, {"ip": {"flags": f}}),
                  st.sampled_from([2, 4, 6])),
        st.builds(lambda t: ("TTL", yes, no, {"ip": {"ttl": t}}), st.integers(0, 255)),
        get_case("right UDP checksum", yes, no, udp_checksum="right"),
        # the command line: a read (forwarded), flushing if it is not exactly one line
        st.builds(lambda c: ("command spelling", no, COMMAND_SPELLINGS[c],
                             {"line": c + b"KEY\r\n"}), st.sampled_from(list(COMMAND_SPELLINGS))),
        st.builds(lambda t: ("line ending", no, LINE_ENDINGS[t], {"line": b"get KEY" + t}),
                  st.sampled_from(list(LINE_ENDINGS))),
        st.builds(lambda k2: ("second key", no, no, {"line": b"get KEY " + k2 + b"\r\n"}),
                  st.sampled_from(KEYS)),
        st.builds(lambda n: ("many keys (REST_MAX)", no, n > co.REST_MAX,
                             {"line": b"get KEY" + (b" k" * 200)[:n] + b"\r\n"}),
                  st.sampled_from([1, 2, 254, 255, 256, 300])),
        st.builds(lambda i, b: ("key byte blank/control/DEL", no, no, {"key_byte": (i, b)}),
                  st.integers(0, 63), edge_bytes),
        # a bare \n after the key: memcached runs what follows as a second command
        st.builds(lambda i: ("key byte \\n", no, None, {"key_byte": (i, 0x0A)}),
                  st.integers(0, 63)),
        st.builds(lambda i, b: ("key byte changed", None, no, {"key_byte": (i, b)}),
                  st.integers(0, 63), st.integers(0x21, 0xFF)),
        st.builds(lambda b: ("key one byte longer", None, no, {"key_extra": b}),
                  st.integers(0x21, 0xFF)),
        get_case("key one byte shorter", None, no, key_cut=1),
        st.builds(lambda n: ("key of 65..250 bytes", no, n - co.KMAX > co.REST_MAX,
                             {"line": b"get " + b"K" * n + b"\r\n"}),
                  st.sampled_from([65, 66, 200, 250, 319, 320])),
        get_case("empty key", no, no, line=b"get \r\n"),
        # the frame header
        st.builds(lambda s: ("frame header seq", no, yes, {"seq": s}), st.integers(1, 0xFFFF)),
        st.builds(lambda t: ("frame header total", no, yes, {"total": t}),
                  st.integers(0, 0xFFFF).filter(lambda t: t != 1)),
        st.builds(lambda r: ("frame header reserved", no, yes, {"reserved": r}),
                  st.integers(1, 0xFFFF)),
        # lengths
        st.builds(lambda d: ("UDP length", no, yes, {"udp_len_delta": d}),
                  st.integers(-30, 30).filter(bool)),
        st.builds(lambda d: ("IPv4 total length", no, yes, {"ip_len_delta": d}),
                  st.integers(-30, 30).filter(bool)),
        st.builds(lambda d, b: ("trailing bytes inside the datagram", no, yes,
                                {"udp_len_delta": d, "ip_len_delta": d, "pad": b}),
                  st.integers(1, 8), st.binary(min_size=8, max_size=8)),
        st.builds(lambda n: ("frame cut short", no, None, {"cut_from_end": n}),
                  st.integers(1, 20)),
        # IPv4 / Ethernet
        st.builds(lambda d: ("IPv4 checksum", no, no, {"checksum_delta": d}),
                  st.integers(1, 0xFFFE)),
        st.builds(lambda n: ("IPv4 options", no, yes, {"ip": {"options": b"\x01" * (4 * n)}}),
                  st.integers(1, 10)),
        st.builds(lambda n: ("IHL below 5", no, no, {"ip": {"ihl": n}}), st.integers(0, 4)),
        get_case("more fragments", no, yes, ip={"flags": 1}),
        st.builds(lambda o: ("fragment offset (a later fragment: flushes)", no, yes,
                             {"ip": {"frag": o}}), st.integers(1, 0x1FFF)),
        st.builds(lambda p: ("IP protocol", no, no, {"ip": {"proto": p}}),
                  st.integers(0, 255).filter(lambda p: p != 17)),
        st.builds(lambda t: ("EtherType", no, no, {"ethertype": t}),
                  st.sampled_from([0x86DD, 0x8100, 0x0806, 0x0801, 0x0000])),
        st.builds(lambda p: ("destination port", no, no, {"dport": p}),
                  ports16.filter(lambda p: p not in (co.MEMCACHED_PORT, co.CTRL_PORT))),
        get_case("destination port 11311 (control)", None, no, dport=co.CTRL_PORT),
        st.builds(lambda a: ("source outside the allow-list", no, no, {"src": a}),
                  st.sampled_from(STRANGERS)),
        st.builds(lambda v: ("IPv4 version", no, no, {"ip": {"version": v}}),
                  st.integers(0, 15).filter(lambda v: v != 4)),
        st.builds(lambda c: ("wrong UDP checksum (not verified: docs/dataplane.md, Limits)",
                             yes, no, {"udp_checksum": c}), st.integers(1, 0xFFFF)),
    ]


get_cases = st.one_of(_case_strategies())


def apply_case(key: bytes, changes: dict) -> Get:
    changes = dict(changes)
    k = key
    if "key_byte" in changes:
        i, b = changes.pop("key_byte")
        i %= len(k)
        k = k[:i] + bytes([b]) + k[i + 1:]
    if "key_extra" in changes:
        k = k + bytes([changes.pop("key_extra")])
    if changes.pop("key_cut", 0):
        k = k[:-1]
    cut_from_end = changes.pop("cut_from_end", None)
    if "line" in changes:
        changes["line"] = changes["line"].replace(b"KEY", key)
    g = Get(k, **changes)
    if cut_from_end is not None:
        g = replace(g, cut=max(0, len(g.frame()) - cut_from_end))
    return g


@property_test
@given(key=cached_keys, case=get_cases)
def test_get_with_one_field_off(rig, key, case):
    name, expect, flush, changes = case
    ensure_valid(rig, key)
    for other in KEYS:  # a changed key may name another cached key: its slot is valid too
        ensure_valid(rig, other)
    g = apply_case(key, changes)
    if flush == RULE:
        flush = LineRule.of(g.line).expect_flush(rig)
    gen = rig.generation()
    v = rig.send(CLIENT_PORT, g.frame())
    if expect is not None:
        assert (v.kind == "answered") == expect, f"{name}: model says {v.kind} ({v.reason})"
    if flush is not None:
        assert flushed(rig, gen) == flush, f"{name}: model says {v.reason}"
    if v.kind != "answered":
        assert v.kind != "dropped" or g.eth_dst == w.UNKNOWN_MAC or g.dport == co.CTRL_PORT, \
            v.reason
        assert not v.writes or v.flush and v.writes == [(co.GENERATION, 0, rig.generation())]
    if flushed(rig, gen):  # no slot answers any more
        assert not any(rig.answers(s) for s in CACHED.values())
        assert rig.send(CLIENT_PORT, Get(key).frame()).kind == "forwarded"


@property_test
@given(key=st.sampled_from(sorted(set(CACHED) | set(CACHED2))), rid=st.integers(0, 0xFFFF),
       write=st.booleans(), cmd=write_commands, tail=st.sampled_from(ONE_LINE_TAILS))
def test_values_are_served_and_invalidated_per_server(rig, key, rid, write, cmd, tail):
    """cache_lookup holds (server, key): a GET to server 2 is answered from server 2's slot only,
    and a one-line write to one server's key leaves the other server's slot alone."""
    for k in CACHED:
        ensure_valid(rig, k)
    for k, slot in CACHED2.items():
        if not rig.model.answers(slot):
            rig.fill(slot, b"server 2 " + k)
    if write:
        gen = rig.generation()
        v = rig.send(CLIENT_PORT, Write(cmd, key, dst=SERVER2_IP, tail=tail).frame())
        assert v.slot == CACHED2.get(key)
        assert not flushed(rig, gen), v.reason
        if key in CACHED:
            assert rig.answers(CACHED[key])
    g = Get(key, rid=rid, dst=SERVER2_IP, eth_dst=w.SERVER2_MAC)
    v = rig.send(CLIENT_PORT, g.frame())
    assert (v.kind == "answered") == (key in CACHED2 and not write), v.reason
    if v.kind == "answered":
        assert v.slot == CACHED2[key]


# -- 3. writes with one field off: invalidate exactly the slot of the key, or nothing; flush
# whenever the datagram is not exactly one command line with a key

@dataclass
class Write(MemcachedFrame):
    cmd: bytes
    key: bytes
    blanks: int = 1
    tail: bytes = b" 0\r\n"
    hdr: tuple = (9, 0, 1, 0)
    cut_after_key: int | None = None  # cut the frame this many bytes after the key's start

    def frame(self) -> bytes:
        head = w.memcache_hdr(*self.hdr) + self.cmd + b" " * self.blanks
        f = self.wrap(head + self.key + self.tail)
        if self.cut_after_key is not None:
            key_at = len(f) - len(self.pad) - len(self.tail) - len(self.key)
            f = f[:key_at + self.cut_after_key]
        return f


def _write_cases():
    """(what is off, invalidates the key?, flushes?, Write fields); None: the model decides."""
    yes, no = True, False
    return [
        st.builds(lambda n: ("1..4 blanks", yes, RULE, {"blanks": n}), st.integers(1, 4)),
        st.builds(lambda n: ("more than 4 blanks (the key is not read: flush)", no, yes,
                             {"blanks": n}), st.integers(5, 9)),
        get_case("no blank (another command word, on one line or not)", no, RULE, blanks=0),
        st.builds(lambda t: ("whatever follows the key", yes, RULE, {"tail": t}),
                  st.sampled_from(WRITE_TAILS)),
        st.builds(lambda t: ("key continues", None, RULE, {"key_extra": t}),
                  st.binary(min_size=1, max_size=4).filter(lambda t: t[0] > 0x20 and t[0] != 0x7F)),
        st.builds(lambda h: ("bad frame header", yes, yes, {"hdr": h}),
                  st.tuples(st.integers(0, 0xFFFF), st.integers(1, 9), st.integers(0, 9),
                            st.integers(1, 0xFFFF))),
        st.builds(lambda d: ("IPv4 checksum (not looked at for writes)", yes, RULE,
                             {"checksum_delta": d}), st.integers(1, 0xFFFE)),
        st.builds(lambda d: ("UDP length", yes, yes, {"udp_len_delta": d}),
                  st.integers(-40, 40).filter(bool)),
        st.builds(lambda d: ("IPv4 total length", yes, yes, {"ip_len_delta": d}),
                  st.integers(-40, 40).filter(bool)),
        st.builds(lambda v: ("IPv4 version not 4 (not IPv4: no host takes it)", no, no,
                             {"ip": {"version": v}}), st.integers(0, 15).filter(lambda v: v != 4)),
        st.builds(lambda b: ("Ethernet padding", yes, RULE, {"pad": b}),
                  st.binary(min_size=1, max_size=30)),
        get_case("frame ends right after the key", yes, yes, tail=b""),
        st.builds(lambda n: ("frame ends inside the key", None, yes, {"cut_after_key": n}),
                  st.integers(0, 63)),
        st.builds(lambda a: ("from anyone", yes, RULE, {"src": a}),
                  st.sampled_from(CLIENTS + STRANGERS + (AGENT_IP,))),
        st.builds(lambda o: ("later fragment (flushes)", no, yes, {"ip": {"frag": o}}),
                  st.integers(1, 0x1FFF)),
        st.builds(lambda p: ("IP protocol", no, no, {"ip": {"proto": p}}),
                  st.integers(0, 255).filter(lambda p: p != 17)),
        st.builds(lambda p: ("destination port", no, no, {"dport": p}),
                  ports16.filter(lambda p: p not in (co.MEMCACHED_PORT, co.CTRL_PORT))),
        get_case("first fragment (MF)", yes, yes, ip={"flags": 1}),
        st.builds(lambda n: ("IPv4 options", yes, yes, {"ip": {"options": b"\x01" * (4 * n)}}),
                  st.integers(1, 10)),
        get_case("to another server", no, RULE, dst=SERVER2_IP),
        st.builds(lambda t: ("65-byte key starting with a cached 64-byte key", no, RULE,
                             {"key": b"K" * 64 + t}), st.binary(min_size=1, max_size=3).filter(
            lambda t: all(b > 0x20 and b != 0x7F for b in t))),
    ]


write_cases = st.one_of(_write_cases())


@property_test
@given(key=cached_keys, cmd=write_commands, case=write_cases, other=cached_keys,
       tail=st.sampled_from(ONE_LINE_TAILS + DATA_BLOCK_TAILS))
def test_write_with_one_field_off(rig, key, cmd, case, other, tail):
    name, expect, flush, changes = case
    slot = CACHED[key]
    ensure_valid(rig, key)
    ensure_valid(rig, other)
    changes = dict(changes)
    changes.setdefault("tail", tail)
    wkey = changes.pop("key", key) + changes.pop("key_extra", b"")
    if "cut_after_key" in changes:
        changes["cut_after_key"] %= len(wkey)
    if flush == RULE:
        line = cmd + b" " * changes.get("blanks", 1) + wkey + changes["tail"]
        flush = LineRule.of(line).expect_flush(rig)
    gen = rig.generation()
    v = rig.send(CLIENT_PORT, Write(cmd, wkey, **changes).frame())
    assert v.kind == "forwarded", v.reason
    if expect is not None:
        assert (v.slot == slot) == expect, f"{name}: model says {v.reason}"
    if flush is not None:
        assert flushed(rig, gen) == flush, f"{name}: model says {v.reason}"
    # the check already compared every register; say it in terms of the slots too
    assert rig.cells("slot_valid")[slot] == (0 if v.slot == slot else 1)
    assert rig.cells("slot_written")[slot] == (1 if v.slot == slot else 0)
    if other != key and v.slot != CACHED[other]:
        assert rig.answers(CACHED[other]) == (not flushed(rig, gen))


@property_test
@given(cmd=st.one_of(write_commands, st.sampled_from(
           [b"SET", b"Set", b"get", b"gets", b"gat", b"gats", b"mn", b"flush_all", b"flush_al",
            b"flush_alx", b"sets", b"settt", b"verbosity", b"incr\x00", b"s\xe5t", b"\x80",
            b"\x80\x01", b"", b"\r\n", b"\n", b"version", b"stats", b"x", b"bget", b"me",
            b"version\r", b"md\r"])),
       key=st.one_of(cached_keys, st.sampled_from(UNCACHED),
                     st.binary(min_size=1, max_size=70)), blanks=st.integers(0, 6),
       tail=st.sampled_from(WRITE_TAILS + ONE_LINE_TAILS + DATA_BLOCK_TAILS))
def test_write_like_lines(rig, cmd, key, blanks, tail):
    """Any command word, any key bytes: a write command with 1..4 blanks and a cached key
    invalidates that key's slot and nothing else; anything but exactly one get, gets, keyed
    write or harmless line (LineRule) flushes; nothing is dropped."""
    for k in KEYS:
        ensure_valid(rig, k)
    line = cmd + b" " * blanks + key + tail
    rule = LineRule.of(line)
    gen = rig.generation()
    v = rig.send(CLIENT_PORT, Write(cmd, key, blanks=blanks, tail=tail).frame())
    assert v.kind in ("answered", "forwarded"), v.reason
    if v.kind == "answered":  # "get" + key + "\r\n" is a clean GET
        assert line == b"get " + key + b"\r\n" and key in CACHED
    else:
        assert v.slot == CACHED.get(rule.invalidates), v.reason
    expect = rule.expect_flush(rig)
    if expect is not None:
        assert flushed(rig, gen) == expect, v.reason


# -- 4. control datagrams


def ctrl_payloads():
    slots = st.one_of(st.sampled_from(sorted(CACHED.values())), st.integers(0, 0xFFFF))
    versions = st.one_of(st.integers(0, 0xFFFFFFFF), st.sampled_from([0, 1, 2, 0xFFFFFFFF]))
    update = st.builds(
        lambda slot, ver, body, dlen, cut: (
            w.ctrl_hdr(co.OP_UPDATE, slot, ver, max(0, len(body) + dlen))
            + body)[:None if cut is None else 10 + cut],
        slots, versions, st.binary(max_size=co.REPLY_MAX), st.sampled_from([0, 0, 0, 1, -1, 600]),
        st.one_of(st.none(), st.integers(0, 600)))
    inval = st.builds(lambda key, end: w.ctrl_hdr(co.OP_INVALIDATE_KEY) + key + end,
                      st.one_of(cached_keys, st.sampled_from(UNCACHED), st.binary(max_size=70)),
                      st.sampled_from([b"\r\n", b"\r\n", b"\n", b"\r", b"", b" \r\n", b"\r\nxx"]))
    read = st.builds(lambda slot, rest: w.ctrl_hdr(co.OP_READ, slot) + rest, slots,
                     st.binary(max_size=4))
    flush = st.builds(lambda slot, ver, length, body: w.ctrl_hdr(co.OP_FLUSH, slot, ver, length)
                      + body, slots, versions, st.sampled_from([0, 0, 1, 0xFFFF]),
                      st.one_of(st.just(b""), st.binary(max_size=12)))
    other = st.builds(lambda op, rest: bytes([op]) + rest,
                      st.integers(0, 255), st.binary(max_size=30))
    return st.one_of(update, inval, read, flush, other)


# Who sends a control datagram: (source address, port it comes in by; None: a packet-out),
# and whether the switch takes it from there. trusted_agents holds (port, address): an agent's
# address from any other port is spoofed.
CTRL_SENDERS = {
    "agent": (SERVER_IP, SERVER_PORT, True),
    "agent of server 2": (SERVER2_IP, SERVER2_PORT, True),
    "trusted non-server": (AGENT_IP, AGENT_PORT, True),
    "packet-out": (SERVER_IP, None, True),
    "client": (CLIENTS[0], CLIENT_PORT, False),
    "stranger": (STRANGERS[0], SERVER2_PORT, False),
    "server's address from the client's port": (SERVER_IP, CLIENT_PORT, False),
    "server's address from server 2's port": (SERVER_IP, SERVER2_PORT, False),
    "agent's address from the server's port": (AGENT_IP, SERVER_PORT, False),
}


@property_test
@given(payload=ctrl_payloads(), via=st.sampled_from(list(CTRL_SENDERS)),
       newer=st.booleans(), udp_len_delta=st.sampled_from([0, 0, 0, 1, -1]))
def test_control_datagrams(rig, payload, via, newer, udp_len_delta):
    if newer and payload[:1] == bytes([co.OP_UPDATE]) and len(payload) >= 10:
        slot = int.from_bytes(payload[2:4], "big") % co.CACHE_SLOTS
        ver = rig.next_version(slot) + 1  # a version the slot has not seen
        payload = payload[:4] + ver.to_bytes(4, "big") + payload[8:]
    src, port, trusted = CTRL_SENDERS[via]
    seg = w.udp(payload, sport=5000, dport=co.CTRL_PORT,
                length=8 + len(payload) + udp_len_delta)
    frame = w.ether(w.ipv4(seg, src=src, dst=SERVER_IP), src=w.AGENT_MAC)
    before = {n: list(rig.cells(n)) for n in co.STATE_REGS}
    stats = list(rig.counts())
    gen = rig.generation()
    if port is None:
        v = rig.send_out(frame, SERVER_PORT)
    else:
        v = rig.send(port, frame)
    # Only a trusted OP_FLUSH without a body flushes (by the UDP length, as the switch reads it).
    flush = (trusted and len(payload) >= 10 and payload[0] == co.OP_FLUSH
             and 8 + len(payload) + udp_len_delta == 8 + 10)
    if len(payload) < 10:
        assert v.kind in ("forwarded", "sent"), v.reason  # not a control datagram at all
    elif payload[0] & co.ACK_FLAG or not trusted:
        assert v.kind == "dropped" and not v.writes
        assert all(rig.cells(n) == before[n] for n in co.STATE_REGS)
        assert rig.counts()[co.STAT_UNTRUSTED] == stats[co.STAT_UNTRUSTED] + 1
    else:
        assert v.kind == "acked" and v.status is not None
        [(out_port, ack)] = v.outputs or [(None, v.packet_ins[0])]  # packet-out: a packet-in
        assert out_port == port
        if v.status != co.STATUS_APPLIED:
            assert all(rig.cells(n) == before[n] for n in co.STATE_REGS)
        # Acknowledgements are the header alone; but for OP_READ, slot, version and length
        # come back as sent (the version is a request id for OP_INVALIDATE_KEY and OP_FLUSH).
        sent_op, _, slot, ver, length = struct.unpack_from("!BBHIH", payload)
        got = struct.unpack("!BBHIH", udp_payload(ack))
        assert got[0] == sent_op | co.ACK_FLAG and got[1] == v.status
        if sent_op != co.OP_READ:
            assert got[2:] == (slot, ver, length)
        if sent_op == co.OP_FLUSH:
            assert v.status == (co.STATUS_APPLIED if flush else co.STATUS_BAD)
    assert flushed(rig, gen) == flush, v.reason
    assert rig.counts()[co.STAT_FLUSH] == stats[co.STAT_FLUSH] + flush


@property_test
@given(line=st.one_of(st.sampled_from([b"delete hello\r\n", b"get hello\r\n", b"version\r\n",
                                       b"set hello 0 0 5\r\nhello\r\n", b"md aGVsbG8= b\r\n"]),
                      st.binary(max_size=60)),
       words=st.integers(1, 4), dport=st.sampled_from([co.MEMCACHED_PORT, co.MEMCACHED_PORT, 53]),
       src=st.sampled_from(CLIENTS + STRANGERS), options=st.booleans())
def test_a_first_fragment_flushes(rig, line, words, dport, src, options):
    """A UDP datagram to the memcached port split into IPv4 fragments: the first one (MF set,
    offset 0) flushes whatever it holds after the UDP header (no memcached frame header, part of
    it, part of a line), since the host reassembles what the switch cannot see; to another port
    it does not. The rest, which carries no UDP header, is forwarded unchanged and flushes
    whatever the port (issue 20: the fragment completing the reassembly may be that one)."""
    for k in KEYS:
        ensure_valid(rig, k)
    dgram = w.udp(w.memcache_hdr(5) + line, sport=40004, dport=dport)
    cut = 8 * words  # fragment offsets count 8-byte units
    fields = {"src": src, "dst": SERVER_IP, "ident": 0x5151,
              "options": b"\x01" * 4 if options else b""}
    first = w.ether(w.ipv4(dgram[:cut], flags=1, **fields))
    gen = rig.generation()
    v = rig.send(CLIENT_PORT, first)
    assert v.kind == "forwarded" and v.outputs == [(SERVER_PORT, first)], v.reason
    assert flushed(rig, gen) == (dport == co.MEMCACHED_PORT), v.reason
    if len(dgram) > cut:
        gen = rig.generation()
        answering = [s for s in CACHED.values() if rig.answers(s)]
        rest = w.ether(w.ipv4(dgram[cut:], frag=words, **fields))
        v = rig.send(CLIENT_PORT, rest)
        assert v.kind == "forwarded" and v.outputs == [(SERVER_PORT, rest)], v.reason
        assert flushed(rig, gen), v.reason
        assert not any(rig.answers(s) for s in answering)


# -- 5. anything at all in the UDP payload, and sequences of operations


@property_test
@given(payload=st.binary(max_size=120), dport=st.sampled_from([co.MEMCACHED_PORT, co.CTRL_PORT]),
       src=st.sampled_from(CLIENTS + STRANGERS + (AGENT_IP, SERVER_IP)),
       port=st.sampled_from(DATA_PORTS),
       out=st.booleans())
def test_arbitrary_udp_payload(rig, payload, dport, src, port, out):
    frame = w.udp_frame(payload, src=src, dst=SERVER_IP, sport=12345, dport=dport)
    if out:
        rig.send_out(frame, port)
    else:
        rig.send(port, frame)


FLUSHING_LINES = [b"flush_all\r\n", b"get zz\r\ndelete hello\r\n", b"version\r\nversion\r\n",
                  b" delete k\r\n", b"set k 0 0 1\r\nx\r\n", b"gat 0 k\r\n", b"\r\n",
                  b"md aGVsbG8= b\r\n", b"x\n"]
FLUSHING = [w.udp_frame(w.memcache_hdr(3) + line, src=CLIENTS[0], dst=SERVER_IP, sport=40002,
                        dport=co.MEMCACHED_PORT) for line in FLUSHING_LINES]
# `delete hello` split after the UDP header: the first fragment holds no memcached frame header.
FLUSHING.append(w.ether(w.ipv4(w.udp(w.memcache_hdr(3) + b"delete hello\r\n", sport=40002,
                                     dport=co.MEMCACHED_PORT)[:8],
                               src=CLIENTS[0], dst=SERVER_IP, flags=1)))
# Later fragments (issue 20): the rest of that `delete hello`, and the last fragment of some UDP
# datagram to a client, which the switch cannot tell from a memcached one.
FLUSHING.append(w.ether(w.ipv4(w.udp(w.memcache_hdr(3) + b"delete hello\r\n", sport=40002,
                                     dport=co.MEMCACHED_PORT)[8:],
                               src=CLIENTS[0], dst=SERVER_IP, frag=1)))
FLUSHING.append(w.ether(w.ipv4(b"z" * 40, src=SERVER_IP, dst=CLIENTS[0], flags=1, frag=185),
                        dst=w.CLIENT_MAC, src=w.SERVER_MAC))
HARMLESS_LINES = [b"version\r\n", b"stats\r\n", b"foo bar\r\n", b"get\r\n", b"mn\r\n",
                  b"GET hello\r\n"]

op_strategy = st.one_of(
    st.tuples(st.just("get"), st.one_of(cached_keys, st.sampled_from(UNCACHED)),
              st.sampled_from(CLIENTS + STRANGERS)),
    st.tuples(st.just("write"), write_commands, st.one_of(cached_keys, st.sampled_from(UNCACHED))),
    st.tuples(st.just("update"), cached_keys, st.binary(max_size=64), st.integers(-1, 2)),
    st.tuples(st.just("invalidate"), st.one_of(cached_keys, st.sampled_from(UNCACHED))),
    st.tuples(st.just("read"), cached_keys),
    st.tuples(st.just("flush"), st.sampled_from(FLUSHING)),
    st.tuples(st.just("flush request"), st.sampled_from(["agent", "packet-out"]),
              st.integers(0, 0xFFFFFFFF)),
    st.tuples(st.just("harmless"), st.sampled_from(HARMLESS_LINES)),
    st.tuples(st.just("spoofed update"), cached_keys, st.sampled_from([CLIENT_PORT, SERVER2_PORT])),
)


@property_test
@given(ops=st.lists(op_strategy, min_size=1, max_size=25))
def test_sequences_of_operations(rig, ops):
    """Interleaved GETs, writes, flushes, harmless commands and control datagrams (some from a
    spoofed agent address): the model and the switch stay in step (the check after each frame), a
    key answers iff its slot is valid and of the current generation, a flush stops every slot, a
    harmless command (version, an unknown word) and a spoofed update change nothing, and a refill
    is applied only to a slot invalidated since the last flush."""
    # Slots not invalidated (OP_UPDATE, length 0) since a flush of this example: no refill of
    # them may be applied.
    unstamped: set[int] = set()
    for op in ops:
        if op[0] == "get":
            _, key, src = op
            slot = CACHED.get(key)
            answers = slot is not None and src in CLIENTS and rig.model.answers(slot)
            v = rig.send(CLIENT_PORT, Get(key, src=src).frame())
            assert (v.kind == "answered") == answers
        elif op[0] == "write":
            rig.send(CLIENT_PORT, Write(op[1], op[2]).frame())
        elif op[0] == "update":
            _, key, body, dv = op
            slot = CACHED[key]
            ver = max(0, rig.next_version(slot) + dv)
            payload = w.ctrl_hdr(co.OP_UPDATE, slot, ver, len(body)) + body
            v = rig.send_out(rig.ctrl_frame(payload), CLIENT_PORT)
            if v.status == co.STATUS_APPLIED:
                if body:
                    assert slot not in unstamped, "a refill applied across a flush"
                else:
                    unstamped.discard(slot)
        elif op[0] == "invalidate":
            payload = w.ctrl_hdr(co.OP_INVALIDATE_KEY) + op[1] + b"\r\n"
            rig.send(SERVER_PORT, rig.ctrl_frame(payload))
        elif op[0] == "flush":
            gen = rig.generation()
            v = rig.send(CLIENT_PORT, op[1])
            assert v.kind == "forwarded" and rig.generation() == (gen + 1) & co.MASK64
            assert not any(rig.answers(s) for s in CACHED.values())
            unstamped = set(CACHED.values())
        elif op[0] == "flush request":
            # OP_FLUSH from the server's agent or the controller: the same flush, acknowledged.
            _, via, request_id = op
            gen = rig.generation()
            frame = rig.ctrl_frame(w.ctrl_hdr(co.OP_FLUSH, version=request_id))
            v = rig.send(SERVER_PORT, frame) if via == "agent" else rig.send_out(frame,
                                                                                 CLIENT_PORT)
            assert v.kind == "acked" and v.status == co.STATUS_APPLIED, v.reason
            ack = (v.outputs[0][1] if v.outputs else v.packet_ins[0])
            assert struct.unpack_from("!I", udp_payload(ack), 4)[0] == request_id
            assert rig.generation() == (gen + 1) & co.MASK64
            assert not any(rig.answers(s) for s in CACHED.values())
            unstamped = set(CACHED.values())
        elif op[0] == "harmless":
            answering = [s for s in CACHED.values() if rig.answers(s)]
            v = rig.send(CLIENT_PORT, w.udp_frame(w.memcache_hdr(3) + op[1], src=CLIENTS[0],
                                                  dst=SERVER_IP, sport=40002,
                                                  dport=co.MEMCACHED_PORT))
            assert v.kind == "forwarded" and v.flush is None
            assert all(rig.answers(s) for s in answering)
        elif op[0] == "spoofed update":
            # The server's address from another port: dropped, whatever the version.
            _, key, port = op
            slot = CACHED[key]
            before = rig.model.slot_state(slot)
            payload = w.ctrl_hdr(co.OP_UPDATE, slot, rig.next_version(slot) + 5, 4) + b"EVIL"
            v = rig.send(port, rig.ctrl_frame(payload))
            assert v.kind == "dropped" and rig.model.slot_state(slot) == before
        else:
            slot = CACHED[op[1]]
            v = rig.send_out(rig.ctrl_frame(w.ctrl_hdr(co.OP_READ, slot)), CLIENT_PORT)
            assert v.status == (co.STATUS_VALID if rig.answers(slot) else co.STATUS_INVALID)


# -- 6. the flush rules, on command lines built from their parts


printable = st.binary(min_size=1, max_size=1).filter(lambda b: b[0] > 0x20 and b[0] != 0x7F)
line_keys = st.one_of(
    cached_keys, st.sampled_from(UNCACHED), st.just(b""),
    st.builds(lambda c, n: c * n, printable,
              st.sampled_from([63, 64, 65, 100, 200, 250, 319, 320])))
line_rests = st.one_of(
    st.just(b""), st.sampled_from([b" 0", b" 0 0 5", b" noreply", b" k hello", b" \x00", b"\t1",
                                   b" b", b" v b", b" T30 b q", b"b", b" Obar"]),
    st.builds(lambda n: (b" k" * 200)[:n], st.sampled_from([1, 2, 190, 191, 254, 255, 256])))


@property_test
@given(lead=st.sampled_from([b"", b"", b"", b"", b" ", b"  ", b"\r\n", b"\n", b"\r"]),
       word=st.sampled_from([b"get", b"gets", b"set", b"delete", b"incr", b"touch", b"cas", b"md",
                             b"mg", b"ms", b"ma", b"flush_all", b"flush_al", b"gat", b"gats",
                             b"version", b"stats", b"mn", b"me", b"GET", b"\x80", b"foo",
                             b"shutdown", b"verbosity", b"x"]),
       blanks=st.sampled_from([0, 1, 1, 1, 2, 4, 5]), key=line_keys, rest=line_rests,
       end=st.sampled_from([b"\r\n", b"\r\n", b"\r\n", b"\n", b"", b"\r", b"\r\r\n"]),
       more=st.sampled_from([b"", b"", b"", b"delete hello\r\n", b"\r\n", b"x", b"\n",
                             b"get k\r\n", b"\ndelete hello\r\n"]),
       header_ok=st.sampled_from([True, True, True, False]))
def test_command_lines_flush_or_not(rig, lead, word, blanks, key, rest, end, more, header_ok):
    """A datagram built from a command line's parts: it flushes iff it is not exactly one
    `get`, `gets`, keyed-write (no `b` after a meta command's key) or other harmless line (an
    unknown word, `version`: not flush_all, gat, gats or binary); a write invalidates its key; a
    clean `get` is answered."""
    ensure_valid(rig, b"hello")
    if key in CACHED:
        ensure_valid(rig, key)
    line = lead + word + b" " * blanks + key + rest + end + more
    rule = LineRule.of(line)
    hdr = w.memcache_hdr(5) if header_ok else w.memcache_hdr(5, reserved=1)
    frame = w.udp_frame(hdr + line, src=CLIENTS[1], dst=SERVER_IP, sport=40003,
                        dport=co.MEMCACHED_PORT)
    gen = rig.generation()
    hello = rig.answers(CACHED[b"hello"])
    v = rig.send(CLIENT_PORT, frame)
    clean = header_ok and line == b"get " + key + b"\r\n" and key in CACHED
    assert (v.kind == "answered") == bool(clean), v.reason
    assert v.kind != "dropped", v.reason
    if v.kind != "answered":
        assert v.slot == CACHED.get(rule.invalidates), v.reason
    expect = True if not header_ok else rule.expect_flush(rig)
    if expect is not None:
        assert flushed(rig, gen) == expect, f"{line!r}: model says {v.reason}"
    if flushed(rig, gen) or rule.invalidates == b"hello":
        assert not rig.answers(CACHED[b"hello"])
    else:
        assert rig.answers(CACHED[b"hello"]) == hello


def test_the_suite_saw_every_verdict(rig):
    """The examples above reached every branch of the model (runs last in this module)."""
    if rig.sent < 500:
        pytest.skip("counts what the other tests of the module sent: run the whole module")
    kinds = rig.tally.kinds
    for kind in ("answered", "forwarded", "acked", "dropped", "sent"):
        assert kinds.get(kind, 0) > 0, kinds
    assert rig.tally.flushes and rig.model.stats[co.STAT_FLUSH] == rig.counts()[co.STAT_FLUSH]
    for why in (co.FIRST_FRAGMENT, co.LATER_FRAGMENT):
        assert rig.tally.flushes.get(why, 0) > 0, rig.tally.flushes
    assert rig.tally.reasons.get("flush requested", 0) > 0, rig.tally.reasons  # OP_FLUSH
    assert rig.sw.stats.engine_errors == 0 and rig.sw.stats.assert_failures == 0

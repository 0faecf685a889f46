"""How a P4 table is held in BPF maps: the one description the generator and the engine share.

* exact (and ``valid``) keys: a BPF hash map. The key is every key field as 64-bit words
  (least significant word first), the value an :data:`entry value <ValueLayout>`.
* one ``lpm`` field, the others exact: an LPM trie. Its key is ``u32 prefixlen`` then the
  exact fields, then the lpm field, each big-endian in whole bytes (a field whose width is not a
  multiple of 8 is left-aligned, so its prefix starts at the first bit).
* any ternary, range or optional field: an array of ``max_size`` entries kept sorted by
  priority (highest first) by the engine, searched in order with ``bpf_loop``; each slot holds a
  used flag, value / mask / high words per key field and the entry value.
* every table with a key has a one-entry array holding its default action; a keyless table
  whose default action is constant is compiled into a direct call.

An entry value is ``u32 action id, u32 pad, u64 packets, u64 bytes`` (the direct counter) then
the action's parameters as 64-bit words.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from softnic.compiler.xdp.errors import XdpUnsupported
from softnic.compiler.xdp.words import limbs
from softnic.runtime.api import MatchKey

EXACT, LPM, SEARCH = "exact", "lpm", "search"
VALUE_HEADER = 24  # action id + pad + packets + bytes
ENTRY_USED = 8  # used flag + pad, before a search entry's key words


@dataclass
class KeyField:
    match_type: str  # exact, lpm, ternary, range, optional, valid
    width: int


@dataclass
class ActionSig:
    aid: int
    name: str
    widths: list[int]

    def words(self) -> list[int]:
        """Word offset of each parameter within the parameter words."""
        out, n = [], 0
        for w in self.widths:
            out.append(n)
            n += limbs(w)
        return out

    @property
    def nwords(self) -> int:
        return sum(limbs(w) for w in self.widths)


@dataclass
class TableSpec:
    name: str
    cname: str  # C identifier chosen by the generator (never taken from the JSON)
    kind: str  # EXACT, LPM or SEARCH
    keys: list[KeyField]
    size: int
    actions: dict[int, ActionSig] = field(default_factory=dict)
    param_words: int = 0

    @property
    def value_size(self) -> int:
        return VALUE_HEADER + 8 * max(1, self.param_words)

    @property
    def key_words(self) -> int:
        return sum(limbs(k.width) for k in self.keys)

    @property
    def lpm_bytes(self) -> int:
        return sum((k.width + 7) // 8 for k in self.keys)

    @property
    def key_size(self) -> int:
        if self.kind == LPM:
            return 4 + self.lpm_bytes
        return 8 * max(1, self.key_words)

    @property
    def entry_size(self) -> int:
        """Bytes of one slot of a SEARCH table's array."""
        return ENTRY_USED + 3 * 8 * max(1, self.key_words) + self.value_size


def table_kind(keys: list[KeyField], where: str) -> str:
    kinds = [k.match_type for k in keys]
    if any(k in ("ternary", "range", "optional") for k in kinds):
        return SEARCH
    nlpm = kinds.count("lpm")
    if nlpm > 1:
        return SEARCH
    if nlpm == 1:
        return LPM
    for k in kinds:
        if k not in ("exact", "valid"):
            raise XdpUnsupported(f"the match kind {k!r}", where)
    return EXACT


# -- packing (used by the engine; the generator emits the same layouts in C) -------------------
def _words(v: int, width: int) -> bytes:
    return b"".join(struct.pack("<Q", (v >> (64 * i)) & ((1 << 64) - 1))
                    for i in range(limbs(width)))


def pack_value(t: TableSpec, aid: int, params: list[int], packets: int = 0,
               nbytes: int = 0) -> bytes:
    sig = t.actions[aid]
    body = b"".join(_words(p & ((1 << w) - 1), w) for p, w in zip(params, sig.widths, strict=False))
    body = body.ljust(8 * max(1, t.param_words), b"\0")
    return struct.pack("<IIQQ", aid, 0, packets, nbytes) + body


def unpack_counters(value: bytes) -> tuple[int, int]:
    _, _, pk, nb = struct.unpack_from("<IIQQ", value)
    return pk, nb


def pack_exact_key(t: TableSpec, key: list[MatchKey | None]) -> bytes:
    out = b"".join(_words(mk.value if mk is not None else 0, kf.width)
                   for kf, mk in zip(t.keys, key, strict=False))
    return out.ljust(t.key_size, b"\0")


def lpm_order(t: TableSpec) -> list[int]:
    """Key field indices in trie order: exact fields, then the lpm field."""
    return sorted(range(len(t.keys)), key=lambda i: t.keys[i].match_type == "lpm")


def pack_lpm_key(t: TableSpec, key: list[MatchKey | None]) -> bytes:
    data = b""
    plen = 0
    for i in lpm_order(t):
        kf, mk = t.keys[i], key[i]
        nb = (kf.width + 7) // 8
        pad = 8 * nb - kf.width
        v = mk.value if mk is not None else 0
        data += (v << pad).to_bytes(nb, "big")
        if kf.match_type == "lpm":
            plen += mk.prefix_len if mk is not None and mk.prefix_len is not None else 0
        else:
            plen += 8 * nb
    return struct.pack("<I", plen) + data


def pack_search_entry(t: TableSpec, key: list[MatchKey | None], aid: int, params: list[int],
                      packets: int = 0, nbytes: int = 0) -> bytes:
    vals, masks, his = b"", b"", b""
    for kf, mk in zip(t.keys, key, strict=False):
        full = (1 << kf.width) - 1
        lo = hi = mask = 0
        if mk is not None:
            if kf.match_type == "ternary":
                lo, mask = mk.value, mk.mask if mk.mask is not None else full
            elif kf.match_type == "lpm":
                pl = mk.prefix_len if mk.prefix_len is not None else kf.width
                mask = full ^ ((1 << (kf.width - pl)) - 1) if pl else 0
                lo = mk.value
            elif kf.match_type == "range":
                lo, hi = mk.value, mk.high if mk.high is not None else full
            else:  # exact, optional, valid
                lo, mask = mk.value, full
        elif kf.match_type == "range":
            lo, hi = 0, full
        vals += _words(lo & mask if kf.match_type != "range" else lo, kf.width)
        masks += _words(mask, kf.width)
        his += _words(hi, kf.width)
    kw = 8 * max(1, t.key_words)
    return (struct.pack("<II", 1, 0) + vals.ljust(kw, b"\0") + masks.ljust(kw, b"\0")
            + his.ljust(kw, b"\0") + pack_value(t, aid, params, packets, nbytes))

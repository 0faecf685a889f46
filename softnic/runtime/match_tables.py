"""Match-action tables: entry storage per match kind and the lookup used per packet.

Lookup structures are chosen so the per-packet cost stays small in CPython:
exact tables are one dict lookup; lpm tables (one lpm field, any exact fields) keep one dict per
prefix length and probe lengths longest-first; ternary / range / optional tables keep entries
sorted by priority (P4Runtime: higher number wins; ties: first installed wins) and test
``key & mask == value`` on the whole key packed into one int, range fields checked separately.
"""

from __future__ import annotations

import bisect
import itertools
import time
from collections.abc import Callable
from typing import Any

from softnic.runtime.api import (
    ActionCall,
    AlreadyExists,
    InvalidArgument,
    MatchKey,
    NotFound,
    TableEntry,
)
from softnic.runtime.externs import Meter

_seq = itertools.count()


class Entry:
    __slots__ = ("ident", "mk", "priority", "aid", "params", "fn", "data", "next", "counter",
                 "meter", "value", "mask", "ranges", "is_const", "sort", "last_hit", "idle_ns",
                 "aged")

    def __init__(self) -> None:
        self.counter = [0, 0]
        self.meter: Meter | None = None
        self.ranges: tuple = ()
        self.is_const = False
        # Idle timeout (P4Runtime ``idle_timeout_ns``; 0: none): the time.monotonic() of the
        # last hit (or of the insertion), and whether the current expiry has been reported.
        self.last_hit = 0.0
        self.idle_ns = 0
        self.aged = False


class Table:
    """One table; ``lookup(F)`` returns the matching :class:`Entry` or None."""

    def __init__(self, name: str, kinds: list[str], widths: list[int], match_type: str,
                 key_tup: Callable, key_int: Callable, actions: dict[str, Any],
                 max_size: int) -> None:
        self.name = name
        self.kinds = kinds
        self.widths = widths
        self.key_tup = key_tup
        self.key_int = key_int
        self.actions = actions  # action name -> ActionInfo (from codegen)
        self.max_size = max_size
        self.with_counters = False
        self.meter_target: int | None = None  # slot written with the direct meter colour
        self.meter_bytes = True
        self.entries: dict[Any, Entry] = {}
        self.immutable = False  # JSON 'entries' make the table const
        if all(k in ("exact", "valid") for k in kinds):
            self.mode = "exact"
        elif match_type == "lpm" or (all(k in ("exact", "valid", "lpm") for k in kinds)
                                     and kinds.count("lpm") == 1):
            self.mode = "lpm"
        else:
            self.mode = "ternary"
        self.single = len(kinds) == 1
        self.lpm_pos = kinds.index("lpm") if "lpm" in kinds else -1
        self.exact: dict[Any, Entry] = {}
        self.by_plen: dict[int, dict[Any, Entry]] = {}
        self.plens: list[tuple[int, int, dict]] = []  # (plen, mask, dict), longest first
        self.sorted: list[Entry] = []
        self.lookup: Callable[[list[int]], Entry | None] = {
            "exact": self._lookup_exact, "lpm": self._lookup_lpm,
            "ternary": self._lookup_ternary}[self.mode]
        if self.mode == "exact" and self.single:
            self.lookup = self._lookup_exact_single
        self.ageing = False  # hits are time-stamped (see enable_ageing)
        # the entries that have an idle timeout, kept by set_idle_timeout and remove: what a
        # sweep looks at (never the whole table)
        self.timed: dict[Any, Entry] = {}

    # -- idle timeout ------------------------------------------------------------------------
    def enable_ageing(self) -> None:
        """Time-stamp every hit from now on (a table whose entries have an idle timeout).

        Only such tables pay for it, and only one clock read and one attribute store per hit:
        the lookup is wrapped, ``TableNode.apply`` is unchanged. Finding expired entries is the
        sweeper's job (:meth:`sweep_idle`), never the packet path's.
        """
        if self.ageing:
            return
        inner = self.lookup
        now = time.monotonic

        def lookup(f: list[int]) -> Entry | None:
            e = inner(f)
            if e is not None:
                e.last_hit = now()
            return e

        self.lookup = lookup
        self.ageing = True

    def set_idle_timeout(self, e: Entry, timeout_ns: int, reset: bool) -> None:
        """Give ``e`` an idle timeout (0: none); ``reset`` (an insert) starts its idle time now."""
        if timeout_ns:
            self.enable_ageing()
        if reset:
            e.last_hit = time.monotonic()
        if timeout_ns != e.idle_ns:
            e.aged = False
        e.idle_ns = timeout_ns
        if timeout_ns and self.entries.get(e.ident) is e:
            self.timed[e.ident] = e
        else:
            self.timed.pop(e.ident, None)

    def sweep_idle(self, now: float, entries: list[Entry] | None = None) -> list[Entry]:
        """Entries whose idle time has passed their timeout and were not already reported as
        expired at the previous sweep (BMv2's AgeingMonitor: one report per expiry; an entry
        hit since then can expire, and be reported, again). Cost: one pass over ``entries``
        (default: every entry with a timeout, :attr:`timed`); entries no longer in the table
        are skipped."""
        out: list[Entry] = []
        for e in list(self.timed.values()) if entries is None else entries:
            if not e.idle_ns or self.entries.get(e.ident) is not e:
                continue
            if (now - e.last_hit) * 1e9 >= e.idle_ns:
                if not e.aged:
                    e.aged = True
                    out.append(e)
            else:
                e.aged = False
        return out

    # -- lookup ------------------------------------------------------------------------------
    def _lookup_exact_single(self, f: list[int]) -> Entry | None:
        return self.exact.get(self.key_int(f))

    def _lookup_exact(self, f: list[int]) -> Entry | None:
        return self.exact.get(self.key_tup(f))

    def _lookup_lpm(self, f: list[int]) -> Entry | None:
        if self.single:
            k = self.key_int(f)
            for _, mask, d in self.plens:
                e = d.get(k & mask)
                if e is not None:
                    return e
            return None
        k = self.key_tup(f)
        p = self.lpm_pos
        for _, mask, d in self.plens:
            e = d.get(k[:p] + (k[p] & mask,) + k[p + 1:])
            if e is not None:
                return e
        return None

    def _lookup_ternary(self, f: list[int]) -> Entry | None:
        k = self.key_int(f)
        kt = None
        for e in self.sorted:
            if k & e.mask == e.value:
                if e.ranges:
                    if kt is None:
                        kt = self.key_tup(f)
                    if not all(lo <= kt[i] <= hi for i, lo, hi in e.ranges):
                        continue
                return e
        return None

    # -- entry construction ------------------------------------------------------------------
    def normalise(self, key: list[MatchKey | None]) -> tuple[tuple, int, int, tuple]:
        """(identity, packed value, packed mask, range checks) of an API match key."""
        if len(key) != len(self.kinds):
            raise InvalidArgument(
                f"table '{self.name}': key has {len(key)} fields, expected {len(self.kinds)}")
        ident = []
        value = mask = 0
        ranges = []
        for i, (kind, w, mk) in enumerate(zip(self.kinds, self.widths, key, strict=True)):
            full = (1 << w) - 1
            value <<= w
            mask <<= w
            if kind in ("exact", "valid"):
                if mk is None:
                    raise InvalidArgument(f"table '{self.name}': exact field {i} needs a value")
                v, m = mk.value, full
                ident.append(v)
            elif kind == "lpm":
                plen = w if mk is None else (mk.prefix_len if mk.prefix_len is not None else w)
                if mk is None:
                    plen = 0
                if not 0 <= plen <= w:
                    raise InvalidArgument(f"table '{self.name}': bad prefix length {plen}")
                m = full ^ ((1 << (w - plen)) - 1)
                v = (mk.value if mk else 0) & m
                ident.append((v, plen))
            elif kind == "ternary":
                m = 0 if mk is None else (full if mk.mask is None else mk.mask & full)
                v = (mk.value if mk else 0) & m
                ident.append((v, m))
            elif kind == "optional":
                wildcard = mk is None or mk.mask == 0
                m = 0 if wildcard else full
                v = 0 if wildcard else mk.value  # type: ignore[union-attr]
                ident.append(None if wildcard else v)
            elif kind == "range":
                lo = 0 if mk is None else mk.value
                hi = full if mk is None or mk.high is None else mk.high
                if lo > hi:
                    raise InvalidArgument(f"table '{self.name}': empty range {lo}..{hi}")
                if not 0 <= lo <= hi <= full:
                    raise InvalidArgument(f"table '{self.name}': range {lo:#x}..{hi:#x} does "
                                          f"not fit field {i} ({w} bits)")
                v = m = 0
                ident.append((lo, hi))
                if (lo, hi) != (0, full):
                    ranges.append((i, lo, hi))
            else:  # pragma: no cover - codegen rejects other kinds
                raise InvalidArgument(kind)
            if not 0 <= v <= full:
                raise InvalidArgument(
                    f"table '{self.name}': value {v:#x} does not fit field {i} ({w} bits)")
            value |= v
            mask |= m
        return tuple(ident), value, mask, tuple(ranges)

    def make_entry(self, key: list[MatchKey | None], action: ActionCall, priority: int,
                   resolve_next: Callable[[str], Any]) -> Entry:
        ident, value, mask, ranges = self.normalise(key)
        e = Entry()
        e.mk = list(key)
        e.priority = priority if self.mode == "ternary" else 0
        e.ident = (ident, e.priority) if self.mode == "ternary" else ident
        e.value, e.mask, e.ranges = value, mask, ranges
        self.bind_action(e, action, resolve_next)
        e.sort = (-e.priority, next(_seq))
        return e

    def bind_action(self, e: Entry, action: ActionCall, resolve_next: Callable[[str], Any]) -> None:
        info = self.actions.get(action.name)
        if info is None:
            raise InvalidArgument(f"table '{self.name}': action '{action.name}' not allowed")
        if len(action.params) != len(info.param_widths):
            raise InvalidArgument(f"action '{action.name}' takes {len(info.param_widths)} "
                                  f"parameters, got {len(action.params)}")
        for p, w in zip(action.params, info.param_widths, strict=True):
            if not 0 <= p < (1 << w):
                raise InvalidArgument(f"action '{action.name}': parameter {p} exceeds {w} bits")
        e.aid = info.aid
        e.params = list(action.params)
        e.fn = info.fn
        e.data = tuple(action.params)
        e.next = resolve_next(action.name)

    # -- storage -----------------------------------------------------------------------------
    def insert(self, e: Entry) -> None:
        if e.ident in self.entries:
            raise AlreadyExists(f"table '{self.name}': entry already exists")
        if len(self.entries) >= self.max_size > 0:
            raise InvalidArgument(f"table '{self.name}' is full ({self.max_size} entries)")
        self.entries[e.ident] = e
        if self.mode == "exact":
            self.exact[e.ident[0] if self.single else e.ident] = e
        elif self.mode == "lpm":
            p = self.lpm_pos
            v, plen = e.ident[p]
            k = v if self.single else e.ident[:p] + (v,) + e.ident[p + 1:]
            d = self.by_plen.get(plen)
            if d is None:
                d = self.by_plen[plen] = {}
                self._rebuild_plens()
            d[k] = e
        else:
            bisect.insort(self.sorted, e, key=lambda x: x.sort)

    def _rebuild_plens(self) -> None:
        w = self.widths[self.lpm_pos]
        full = (1 << w) - 1
        self.plens = [(pl, full ^ ((1 << (w - pl)) - 1), d)
                      for pl, d in sorted(self.by_plen.items(), reverse=True)]

    def find(self, key: list[MatchKey | None], priority: int) -> Entry:
        ident = self.normalise(key)[0]
        if self.mode == "ternary":
            ident = (ident, priority)
        e = self.entries.get(ident)
        if e is None:
            raise NotFound(f"table '{self.name}': no such entry")
        return e

    def remove(self, e: Entry) -> None:
        del self.entries[e.ident]
        self.timed.pop(e.ident, None)
        if self.mode == "exact":
            del self.exact[e.ident[0] if self.single else e.ident]
        elif self.mode == "lpm":
            p = self.lpm_pos
            v, plen = e.ident[p]
            k = v if self.single else e.ident[:p] + (v,) + e.ident[p + 1:]
            d = self.by_plen[plen]
            del d[k]
            if not d:
                del self.by_plen[plen]
                self._rebuild_plens()
        else:
            self.sorted.remove(e)

    def clear(self) -> None:
        for e in list(self.entries.values()):
            if not e.is_const:
                self.remove(e)

    def to_api(self, e: Entry) -> TableEntry:
        names = {i.aid: n for n, i in self.actions.items()}
        cfg = e.meter.config if e.meter is not None else None
        return TableEntry(key=list(e.mk), action=ActionCall(names[e.aid], list(e.params)),
                          priority=e.priority, counter_packets=e.counter[0],
                          counter_bytes=e.counter[1], meter_config=cfg, is_const=e.is_const,
                          idle_timeout_ns=e.idle_ns, last_hit=e.last_hit)

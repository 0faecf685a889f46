"""What the controller believes the switch caches: which (server, key) is in which slot, in
which phase of its life, the version last written to each slot, and TTL deadlines.

Owned by the worker thread (worker.py); nothing else changes it.
"""

from __future__ import annotations

import enum
import heapq
from dataclasses import dataclass, field


class Phase(enum.Enum):
    RESERVED = "reserved"   # a round queued: the slot is invalidated, then the entry installed
    FETCHING = "fetching"   # entry installed, slot invalid, agent fetch under way
    FILLED = "filled"       # the slot holds the reply (until a write or flush invalidates it)
    EVICTING = "evicting"   # entry being deleted, slot being invalidated


@dataclass(eq=False)
class Entry:
    """One (server, key) with a slot. Identity matters: a fetch result names the Entry it was
    started for, and is dropped if that Entry is no longer the one in the cache."""

    server: str
    key: bytes
    slot: int
    phase: Phase = Phase.RESERVED
    score: float = 0.0              # candidate hotness (misses/s) when admitted
    started: float = 0.0            # monotonic: the digest that started this promotion
    attempts: int = 0               # reserve/fetch/fill rounds
    installed: bool = False         # the cache_lookup entry exists on the switch
    deadline: float | None = None   # monotonic: leave the switch before this (TTL - margin)
    fetch_sent: float = 0.0         # monotonic: when the current fetch was sent
    filled_at: float | None = None
    reply_len: int = 0
    ttl: int = -1

    @property
    def ident(self) -> tuple[str, bytes]:
        return self.server, self.key


@dataclass
class CacheState:
    slots: int
    entries: dict[tuple[str, bytes], Entry] = field(default_factory=dict)
    by_slot: dict[int, Entry] = field(default_factory=dict)
    versions: dict[int, int] = field(default_factory=dict)  # slot -> last version sent/read
    _deadlines: list[tuple[float, int, Entry]] = field(default_factory=list)  # a heap
    # Slots whose entry is not FILLED (a promotion or eviction under way): kept as phases
    # change (set_phase), so the policy's question "which slots are busy" costs nothing.
    busy: set[int] = field(default_factory=set)

    def add(self, e: Entry) -> None:
        if e.ident in self.entries:
            raise ValueError(f"{e.server} {e.key!r} is already cached")
        if e.slot in self.by_slot:
            raise ValueError(f"slot {e.slot} already holds {self.by_slot[e.slot].key!r}")
        self.entries[e.ident] = e
        self.by_slot[e.slot] = e
        if e.phase is not Phase.FILLED:
            self.busy.add(e.slot)

    def remove(self, e: Entry) -> None:
        if self.entries.get(e.ident) is e:
            del self.entries[e.ident]
        if self.by_slot.get(e.slot) is e:
            del self.by_slot[e.slot]
            self.busy.discard(e.slot)

    def set_phase(self, e: Entry, phase: Phase) -> None:
        e.phase = phase
        if self.by_slot.get(e.slot) is e:
            if phase is Phase.FILLED:
                self.busy.discard(e.slot)
            else:
                self.busy.add(e.slot)

    def get(self, server: str, key: bytes) -> Entry | None:
        return self.entries.get((server, key))

    def current(self, e: Entry) -> bool:
        """``e`` is still the cache's entry for its key (not evicted, flushed or replaced)."""
        return self.entries.get(e.ident) is e

    def in_phase(self, *phases: Phase) -> list[Entry]:
        return [e for e in self.entries.values() if e.phase in phases]

    def keys_for(self, server: str) -> set[bytes]:
        return {e.key for e in self.entries.values() if e.server == server}

    def set_deadline(self, e: Entry, deadline: float | None) -> None:
        e.deadline = deadline
        if deadline is not None:
            heapq.heappush(self._deadlines, (deadline, id(e), e))

    def _live(self, d: float, e: Entry) -> bool:
        return self.current(e) and e.phase is Phase.FILLED and e.deadline == d

    def next_deadline(self) -> float | None:
        """The earliest TTL deadline of a filled entry (heap entries of entries since removed,
        refilled or re-timed are dropped on the way)."""
        while self._deadlines and not self._live(self._deadlines[0][0], self._deadlines[0][2]):
            heapq.heappop(self._deadlines)
        return self._deadlines[0][0] if self._deadlines else None

    def due(self, now: float) -> list[Entry]:
        """Filled entries whose deadline has come."""
        out = []
        while (d := self.next_deadline()) is not None and d <= now:
            out.append(heapq.heappop(self._deadlines)[2])
        return out

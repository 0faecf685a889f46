"""The admission rule: a free slot if there is one; else the coldest cached key gives its slot
up, but only to a candidate that is hotter (by ``hotter_factor``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Admit:
    slot: int


@dataclass(frozen=True)
class Evict:
    victim: int          # the slot to empty first; the candidate takes it afterwards
    victim_rate: float


@dataclass(frozen=True)
class Reject:
    reason: str


Decision = Admit | Evict | Reject


def coldest(rates: Mapping[int, float]) -> tuple[int, float] | None:
    """The slot with the fewest hits/s (ties: the lowest slot, to be deterministic)."""
    if not rates:
        return None
    slot = min(rates, key=lambda s: (rates[s], s))
    return slot, rates[slot]


def choose(candidate: float, free_slot: int | None, evictable: Mapping[int, float],
           hotter_factor: float = 1.0) -> Decision:
    """``candidate``: the key's misses/s; ``evictable``: hits/s of the slots that could give
    way (filled ones, not those with a promotion under way)."""
    if free_slot is not None:
        return Admit(free_slot)
    c = coldest(evictable)
    if c is None:
        return Reject("no free slot and nothing evictable (all promotions under way)")
    slot, rate = c
    if candidate > rate * hotter_factor:
        return Evict(slot, rate)
    return Reject(f"candidate {candidate:.2f}/s is not hotter than the coldest slot {slot} "
                  f"({rate:.2f}/s)")

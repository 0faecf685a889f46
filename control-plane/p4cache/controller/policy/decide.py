"""The admission rule: a free slot if there is one; else the coldest *measured* cached key
gives its slot up, but only to a candidate that is hotter (by ``hotter_factor``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
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
    full: bool = True    # False: nothing could be evicted at all (all slots busy/unmeasured)


Decision = Admit | Evict | Reject


def coldest(rates: Mapping[int, float],
            order: Callable[[int], Hashable] | None = None) -> tuple[int, float] | None:
    """The slot with the fewest hits/s. Ties: ``order(slot)`` (lower first), else the highest
    slot (the most recently allocated: slots are handed out lowest first, and the first
    promotions are the hottest keys, so a tie must not fall on them)."""
    if not rates:
        return None
    if order is None:
        slot = min(rates, key=lambda s: (rates[s], -s))
    else:
        slot = min(rates, key=lambda s: (rates[s], order(s), -s))
    return slot, rates[slot]


def choose(candidate: float, free_slot: int | None, evictable: Mapping[int, float],
           hotter_factor: float = 1.0,
           order: Callable[[int], Hashable] | None = None) -> Decision:
    """``candidate``: the key's misses/s; ``evictable``: hits/s of the slots that could give
    way (filled and measured ones, not those with a promotion under way)."""
    if free_slot is not None:
        return Admit(free_slot)
    c = coldest(evictable, order)
    if c is None:
        return Reject("no free slot and nothing evictable (promotions under way or keys not "
                      "measured yet)", full=False)
    slot, rate = c
    if candidate > rate * hotter_factor:
        return Evict(slot, rate)
    return Reject(f"candidate {candidate:.2f}/s is not hotter than the coldest slot {slot} "
                  f"({rate:.2f}/s)")

"""The policy as the controller uses it: hotness in, decisions out, still without I/O."""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from .decide import Decision, choose
from .frequency import SlotFrequency
from .hotness import CandidateHotness
from .slots import SlotAllocator


class PromotionPolicy:
    def __init__(self, slots: int, alpha: float, threshold: int, epoch_s: float,
                 hotter_factor: float = 1.0) -> None:
        self.slots = SlotAllocator(slots)
        self.frequency = SlotFrequency(alpha)
        self.hotness = CandidateHotness(alpha, threshold, epoch_s)
        self.hotter_factor = hotter_factor

    def candidate(self, key: Hashable) -> float:
        """A digest for ``key``: its hotness now."""
        return self.hotness.report(key)

    def decide(self, score: float, busy: set[int]) -> Decision:
        """Where a candidate of ``score`` misses/s goes. Slots in ``busy`` (promotions or
        evictions under way) are never chosen as victims. An Admit has taken its slot."""
        evictable = {s: r for s, r in self.frequency.rates().items() if s not in busy}
        free = self.slots.allocate()
        return choose(score, free, evictable, self.hotter_factor)

    def filled(self, slot: int, count: int | None, score: float) -> None:
        """``slot`` now serves a key promoted at ``score``; its hits counter reads ``count``."""
        self.frequency.start(slot, count, score)

    def freed(self, slot: int) -> None:
        self.frequency.stop(slot)
        self.slots.release(slot)

    def end_epoch(self, slot_hits: Mapping[int, int], dt: float) -> None:
        self.frequency.observe(slot_hits, dt)
        self.hotness.end_epoch()

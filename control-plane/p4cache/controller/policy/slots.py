"""Which of the switch's slots are free (the controller may use ``slots`` of them)."""

from __future__ import annotations

import heapq


class SlotAllocator:
    """Free slots, handed out lowest first (deterministic, easy to read in a dump)."""

    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("a cache needs at least one slot")
        self.slots = slots
        self._free = list(range(slots))
        self._is_free = [True] * slots

    def allocate(self) -> int | None:
        while self._free:
            slot = heapq.heappop(self._free)
            if self._is_free[slot]:
                self._is_free[slot] = False
                return slot
        return None

    def take(self, slot: int) -> None:
        """Mark ``slot`` used (recovery: an entry the switch already has)."""
        if not 0 <= slot < self.slots:
            raise ValueError(f"slot {slot} is outside 0..{self.slots - 1}")
        if not self._is_free[slot]:
            raise ValueError(f"slot {slot} is already in use")
        self._is_free[slot] = False

    def release(self, slot: int) -> None:
        if self._is_free[slot]:
            raise ValueError(f"slot {slot} released twice")
        self._is_free[slot] = True
        heapq.heappush(self._free, slot)

    def is_free(self, slot: int) -> bool:
        return self._is_free[slot]

    @property
    def free_count(self) -> int:
        return sum(self._is_free)

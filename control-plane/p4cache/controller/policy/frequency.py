"""Hit rate of each cached slot: an exponential moving average over epochs of the deltas of
the switch's ``slot_hits`` counter (GETs answered from that slot)."""

from __future__ import annotations

from collections.abc import Mapping


class SlotFrequency:
    """Per-slot hits/s. A slot is tracked from the moment it holds a key (:meth:`start`) until
    it is given up (:meth:`stop`); counts of other slots are ignored."""

    def __init__(self, alpha: float) -> None:
        if not 0 < alpha <= 1:
            raise ValueError(f"EMA weight {alpha} is not in (0, 1]")
        self.alpha = alpha
        self._rate: dict[int, float] = {}
        self._last: dict[int, int] = {}

    def start(self, slot: int, count: int | None, rate: float) -> None:
        """Track ``slot`` from its current counter value ``count`` (None: the next observation
        is the baseline) at an initial estimate of ``rate`` hits/s (the candidate's hotness,
        so a key just promoted is not the coldest at once)."""
        self._rate[slot] = rate
        if count is None:
            self._last.pop(slot, None)
        else:
            self._last[slot] = count

    def stop(self, slot: int) -> None:
        self._rate.pop(slot, None)
        self._last.pop(slot, None)

    def observe(self, counts: Mapping[int, int], dt: float) -> None:
        """One epoch of ``dt`` seconds ended and the counters read ``counts`` (slot -> hits
        since the switch started)."""
        if dt <= 0:
            return
        for slot, rate in self._rate.items():
            if slot not in counts:
                continue
            now = counts[slot]
            last = self._last.get(slot)
            self._last[slot] = now
            if last is None:
                continue  # first reading after start(count=None): baseline only
            delta = now - last if now >= last else now  # the counter was reset (new switch)
            self._rate[slot] = self.alpha * (delta / dt) + (1 - self.alpha) * rate

    def rate(self, slot: int) -> float:
        return self._rate.get(slot, 0.0)

    def rates(self) -> dict[int, float]:
        return dict(self._rate)

    def __contains__(self, slot: int) -> bool:
        return slot in self._rate

"""The policy as the controller uses it: hotness in, decisions out, still without I/O."""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from .admission import AdmissionChange, AdmissionThreshold
from .decide import Admit, Decision, choose
from .frequency import SlotFrequency
from .hotness import CandidateHotness
from .slots import SlotAllocator

COLD_QUANTILE = 0.1
STRONG_COUNT = 8   # misses in one epoch that make a report strong evidence (hotness.score)


class PromotionPolicy:
    def __init__(self, slots: int, alpha: float, threshold: int, epoch_s: float,
                 hotter_factor: float = 1.0, admission: AdmissionThreshold | None = None
                 ) -> None:
        """``threshold``: the data plane's report threshold to start from; ``epoch_s``: its
        epoch (a report stands for threshold / epoch_s misses/s)."""
        self.slots = SlotAllocator(slots)
        self.frequency = SlotFrequency(alpha)
        self.hotness = CandidateHotness(alpha, strong=STRONG_COUNT / epoch_s)
        self.epoch_s = epoch_s
        self.hotter_factor = hotter_factor
        self.admission = admission or AdmissionThreshold(threshold, epoch_s, hotter_factor)

    def candidate(self, key: Hashable, count: int = 0) -> float:
        """A digest reporting ``key`` (not a refill ask) after ``count`` misses in the data
        plane's current epoch (0: unknown, the admission threshold): its hotness now."""
        self.admission.reported()
        per = count / self.epoch_s if count > 0 else self.admission.per_report()
        return self.hotness.report(key, per)

    def coldest(self, busy: set[int]) -> float | None:
        """Hits/s at the cold end of the measured cached keys that could give their slot up:
        the ``COLD_QUANTILE`` quantile, not the minimum, which among many keys asked for a
        few times a second is a key that drew no hit in its last epoch by chance (a report
        threshold set from it would let every lukewarm key report). When the hot set moves,
        most cached keys go cold together and the quantile falls with them."""
        rates = sorted(r for s, r in self.frequency.measured().items() if s not in busy)
        if not rates:
            return None
        return rates[min(len(rates) - 1, int(COLD_QUANTILE * len(rates)))]

    def admit(self, now: float, busy: set[int], backlog: int = 0) -> AdmissionChange | None:
        """The admission threshold's next value, if it should change (see .admission)."""
        return self.admission.update(now, self.slots.free_count, self.coldest(busy), backlog)

    def decide(self, score: float, busy: set[int], reported: float | None = None) -> Decision:
        """Where a candidate of ``score`` misses/s goes. Slots in ``busy`` (promotions or
        evictions under way) are never chosen as victims, nor are slots whose key has not been
        measured for a whole epoch yet. ``reported``: when the candidate was last reported
        (None: now); a key found cold only by evidence that begins after that is no victim
        for it (the hot set moved: candidates of the old one must not take the slots).
        An Admit has taken its slot."""
        free = self.slots.allocate()
        if free is not None:
            return Admit(free)
        f = self.frequency
        evictable = {s: r for s, r in f.measured().items() if s not in busy
                     and (reported is None or f.cold_since(s) <= reported)}
        return choose(score, None, evictable, self.hotter_factor, self.frequency.order)

    def reported_cached(self, slot: int, count: int) -> None:
        """A cached key not measured yet was reported again (its miss count went on before its
        fill): its estimate is at least ``count`` misses an epoch."""
        self.frequency.raise_estimate(slot, count / self.epoch_s)

    def filled(self, slot: int, count: int | None, score: float) -> None:
        """``slot`` now serves a key promoted at ``score``; its hits counter reads ``count``."""
        self.frequency.start(slot, count, score)

    def evicted(self, key: Hashable, slot: int) -> None:
        """The key in ``slot`` leaves the cache: it keeps its measured rate as its hotness."""
        if self.frequency.is_measured(slot):
            self.hotness.remember(key, self.frequency.rate(slot))

    def freed(self, slot: int) -> None:
        self.frequency.stop(slot)
        self.slots.release(slot)

    def end_epoch(self, slot_hits: Mapping[int, int], dt: float,
                  now: float | None = None) -> None:
        self.frequency.observe(slot_hits, dt, now)
        self.hotness.end_epoch()

    def probe(self, slot_hits: Mapping[int, int], now: float) -> list[int]:
        """Counters read between epochs: the slots whose key went cold (see
        :meth:`SlotFrequency.probe`)."""
        return self.frequency.probe(slot_hits, now)


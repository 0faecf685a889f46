"""Hotness of keys that are not cached, from the switch's hot-key digests.

The data plane sends at most one digest per key and data-plane epoch, when the key's count-min
estimate of misses in that epoch reaches HOT_THRESHOLD. So one digest says "at least
``threshold`` misses in one epoch", a lower bound of ``threshold / epoch`` misses/s. Over
controller epochs this is averaged (EMA) like the slots' hit rates, so the two compare.

A key that leaves the cache keeps its measured hit rate as its hotness (:meth:`remember`),
decaying like any other average: a key evicted while hot (a flush, a TTL, or a mistake) is
judged on what it was measured at when it reports again, not on the digests' lower bound, so
it can come back.
"""

from __future__ import annotations

from collections.abc import Hashable


class CandidateHotness:
    def __init__(self, alpha: float, threshold: int, epoch_s: float,
                 forget_below: float = 0.05) -> None:
        self.alpha = alpha
        self.per_report = threshold / epoch_s  # misses/s one digest in an epoch stands for
        self.forget_below = forget_below
        self._rate: dict[Hashable, float] = {}
        self._reports: dict[Hashable, int] = {}
        self._epoch = 0
        self._seen: dict[Hashable, int] = {}   # key -> the epoch of its last digest

    def report(self, key: Hashable) -> float:
        """A digest for ``key`` arrived; returns its hotness now."""
        self._reports[key] = self._reports.get(key, 0) + 1
        self._seen[key] = self._epoch
        return self.score(key)

    def recent(self, key: Hashable) -> bool:
        """``key`` was reported in this epoch or the one just ended: its score is as fresh as
        the cached keys' last measurement, so the two may be compared."""
        return self._epoch - self._seen.get(key, -2) <= 1

    def score(self, key: Hashable) -> float:
        """Misses/s: the average over past epochs, or this epoch's reports if that is more
        (a key that just became hot is judged on what it does now)."""
        now = self._reports.get(key, 0) * self.per_report
        return max(self._rate.get(key, 0.0), now)

    def remember(self, key: Hashable, rate: float) -> None:
        """``key`` left the cache measured at ``rate`` hits/s: its hotness is at least that
        (then it decays like any average until it is reported again)."""
        if rate >= self.forget_below:
            self._rate[key] = max(self._rate.get(key, 0.0), rate)

    def end_epoch(self) -> None:
        """Fold this epoch's reports into the averages; forget keys that went cold."""
        keys = set(self._rate) | set(self._reports)
        for key in keys:
            sample = self._reports.get(key, 0) * self.per_report
            rate = self.alpha * sample + (1 - self.alpha) * self._rate.get(key, 0.0)
            if rate < self.forget_below:
                self._rate.pop(key, None)
            else:
                self._rate[key] = rate
        self._reports.clear()
        self._epoch += 1
        self._seen = {k: e for k, e in self._seen.items() if self._epoch - e <= 1}

    def forget(self, key: Hashable) -> None:
        self._rate.pop(key, None)
        self._reports.pop(key, None)
        self._seen.pop(key, None)

    def __len__(self) -> int:
        return len(set(self._rate) | set(self._reports))

"""Hotness of keys that are not cached, from the switch's hot-key digests.

The data plane sends at most one digest per key and data-plane epoch, when the key's count-min
estimate of misses in that epoch reaches HOT_THRESHOLD. So one digest says "at least
``threshold`` misses in one epoch", a lower bound of ``threshold / epoch`` misses/s. Over
controller epochs this is averaged (EMA) like the slots' hit rates, so the two compare.
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

    def report(self, key: Hashable) -> float:
        """A digest for ``key`` arrived; returns its hotness now."""
        self._reports[key] = self._reports.get(key, 0) + 1
        return self.score(key)

    def score(self, key: Hashable) -> float:
        """Misses/s: the average over past epochs, or this epoch's reports if that is more
        (a key that just became hot is judged on what it does now)."""
        now = self._reports.get(key, 0) * self.per_report
        return max(self._rate.get(key, 0.0), now)

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

    def forget(self, key: Hashable) -> None:
        self._rate.pop(key, None)
        self._reports.pop(key, None)

    def __len__(self) -> int:
        return len(set(self._rate) | set(self._reports))

"""Hotness of keys that are not cached, from the switch's hot-key digests.

The data plane sends a digest for a key once per data-plane epoch when the key's count-min
estimate of misses in that epoch reaches the admission threshold T (:mod:`.admission`), and
again at 2T, 4T, 8T and 16T. A digest carries the count c: "at least c misses in one epoch", a
lower bound of ``c / epoch`` misses/s, which the caller passes with each report. Over
controller epochs this is averaged (EMA) like the slots' hit rates, so the two compare.

A key that leaves the cache keeps its measured hit rate as its hotness (:meth:`remember`),
decaying like any other average: a key evicted while hot (a flush, a TTL, or a mistake) is
judged on what it was measured at when it reports again, not on the digests' lower bound, so
it can come back.
"""

from __future__ import annotations

from collections.abc import Hashable


class CandidateHotness:
    def __init__(self, alpha: float, forget_below: float = 0.05, strong: float = 8.0) -> None:
        self.alpha = alpha
        self.strong = strong
        self.forget_below = forget_below
        self._rate: dict[Hashable, float] = {}
        self._reports: dict[Hashable, float] = {}  # this epoch: the reports' misses/s, summed
        self._epoch = 0
        self._seen: dict[Hashable, int] = {}   # key -> the epoch of its last digest

    def report(self, key: Hashable, per_report: float) -> float:
        """A digest for ``key`` arrived, standing for ``per_report`` misses/s (the misses it
        counted over the epoch); returns the key's hotness now. Reports of one epoch are
        levels of one count (T, 2T, 4T, ...), so the epoch's evidence is their largest."""
        self._reports[key] = max(self._reports.get(key, 0.0), per_report)
        self._seen[key] = self._epoch
        return self.score(key)

    def recent(self, key: Hashable) -> bool:
        """``key`` was reported in this epoch or the one just ended: its score is as fresh as
        the cached keys' last measurement, so the two may be compared."""
        return self._epoch - self._seen.get(key, -2) <= 1

    def score(self, key: Hashable) -> float:
        """Misses/s: the average over past epochs, or this epoch's reports if that is more
        (a key that just became hot is judged on what it does now) and they are strong
        evidence: at least ``strong`` misses/s. A weaker report (a low admission threshold:
        one miss in an epoch is a coin toss for a key asked for every few seconds) counts as
        what the average would be if the epoch ended now, so a key must report in epoch after
        epoch to look as hot as its first report claims."""
        now = self._reports.get(key, 0.0)
        past = self._rate.get(key, 0.0)
        if now >= self.strong:
            return max(past, now)
        return max(past, self.alpha * now + (1 - self.alpha) * past)

    def remember(self, key: Hashable, rate: float) -> None:
        """``key`` left the cache measured at ``rate`` hits/s: its hotness is at least that
        (then it decays like any average until it is reported again)."""
        if rate >= self.forget_below:
            self._rate[key] = max(self._rate.get(key, 0.0), rate)

    def end_epoch(self) -> None:
        """Fold this epoch's reports into the averages; forget keys that went cold."""
        keys = set(self._rate) | set(self._reports)
        for key in keys:
            sample = self._reports.get(key, 0.0)
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

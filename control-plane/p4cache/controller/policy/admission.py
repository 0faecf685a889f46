"""The admission threshold: how many misses in one data-plane epoch make the switch report a key.

The data plane reports a key (a digest with its count, once per epoch, and again at 2T, 4T, 8T
and 16T) once its count-min estimate of misses in the current epoch reaches the threshold T,
the parameter of the `admission` table's default action (hot_keys.p4). A report is therefore
evidence of a miss rate of at least T / E, E being the data-plane epoch. This module chooses
T; it holds no I/O and no clock (the caller passes ``now``), so every rule is testable alone.

The rule, checked every time the controller looks (``update``):

1. **Overload first.** If the reports of the last window came faster than ``budget`` per
   second, or the controller's queue of unhandled digests is more than half full, T doubles
   (up to ``hi``), and it is not lowered again for one epoch. Reports are only ever dropped
   where the queue is full, and those drops are counted by the caller; doubling T halves (at
   least) the keys that can qualify, so the queue drains.
2. **Free slots: lower.** While slots are free, and the reports seen since T last changed are
   fewer than the free slots (what T lets through will not fill them), T halves, at most once
   every ``settle_s`` (a quarter of an epoch by default). Halving from HOT_THRESHOLD reaches
   1 in three steps, and at every step the keys that miss most qualify first (lowering T mid-epoch
   reports every key whose count already reaches it at its next miss), so free slots fill
   hottest first; the lukewarm keys let in at a low T are replaced under rule 3 once measured.
3. **Full: follow the cold end.** With no free slot, T is set so that a report is evidence of
   a key hotter than the cold end of the cache: r_cold, the 10th percentile of the measured
   cached keys' hit rates (``PromotionPolicy.coldest``; not the minimum, which among many
   keys asked for a few times a second is one that drew no hit by chance). T is the smallest
   count that a key asked for at ``hotter_factor * r_cold`` reaches in one epoch with
   probability at most ``FALSE_REPORT`` (a Poisson quantile), clamped to [lo, hi]. A report at
   that T stands for at least T / E misses/s, more than the coldest key's rate, which is what
   the promotion rule asks of a candidate before it evicts the coldest (decide.choose).
   T moves towards that target by at most a factor of two every ``settle_s``, up or down:
   the cold end is measured on keys that may have gone cold since (the hot set moved, and the
   probes have not caught up), and a T that jumped up with it would shut out the new hot set's
   marginal keys for a whole epoch; a T that jumped down would let the lukewarm keys that
   report first take the slots before the hotter ones.

Why it converges. While slots are free, T only goes down (rule 1 aside) until the slots are
full or T = lo; each step admits the next band of keys by miss rate. Once full, each eviction
replaces the coldest measured key by one reported at T, that is (up to the estimate's noise)
hotter (by its report); the cold end r_cold therefore does not go down, nor does T, and the
process stops when no key outside the cache misses T times an epoch: the cache holds the keys
above the marginal rate, the top K. Digests are then only the noise at that margin, and the
Poisson margin keeps keys as cold as the cold end from reporting in
more than one epoch in ten. When the hot set moves, the cached keys' measured rates fall,
r_cold falls, T follows it down and the new hot keys, which are far above it, are reported at
their first few misses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

FALSE_REPORT = 0.1  # at most this share of epochs may report a key no hotter than the coldest


def poisson_quantile(mean: float, p: float) -> int:
    """The smallest t with P(X >= t) <= 1 - p for X ~ Poisson(mean), i.e. one more than the
    p-quantile (normal approximation with continuity correction above a mean of 100)."""
    if mean <= 0:
        return 1
    if mean > 100:
        z = 1.2816 if p == 0.9 else _z(p)
        return math.floor(mean + z * math.sqrt(mean) + 0.5) + 1
    term = cdf = math.exp(-mean)
    k = 0
    while cdf < p:
        k += 1
        term *= mean / k
        cdf += term
    return k + 1


def _z(p: float) -> float:
    """The standard normal p-quantile (bisection on erf; p in (0.5, 1))."""
    lo, hi = 0.0, 10.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@dataclass(frozen=True)
class AdmissionChange:
    """T moved: from ``old`` to ``new``, for ``why`` (one of "overload", "free", "full")."""

    old: int
    new: int
    why: str


class AdmissionThreshold:
    def __init__(self, initial: int, epoch_s: float, hotter_factor: float = 1.0,
                 lo: int = 1, hi: int = 4095, settle_s: float | None = None,
                 budget: float = 2000.0, backlog_max: int = 4096) -> None:
        if not 1 <= lo <= hi:
            raise ValueError(f"threshold bounds [{lo}, {hi}] are empty or below 1")
        settle_s = epoch_s / 4 if settle_s is None else settle_s
        if epoch_s <= 0 or settle_s < 0 or budget <= 0 or backlog_max < 1:
            raise ValueError("epoch, settle time, budget and backlog must be positive")
        self.value = min(hi, max(lo, initial))
        self.epoch_s = epoch_s
        self.hotter_factor = hotter_factor
        self.lo = lo
        self.hi = hi
        self.settle_s = settle_s
        self.budget = budget
        self.backlog_max = backlog_max
        self._changed_at = float("-inf")
        self._overload_until = float("-inf")
        self._since_change = 0          # reports since T last changed
        self._window = 0                # reports since the last update()
        self._window_at: float | None = None
        self.changes = 0
        self.overloads = 0

    def per_report(self) -> float:
        """Misses/s that one report at the current T stands for."""
        return self.value / self.epoch_s

    def reported(self) -> None:
        """One digest reporting a key (not a refill ask) arrived."""
        self._since_change += 1
        self._window += 1

    def target_full(self, coldest: float) -> int:
        """T for a full cache whose coldest measured key serves ``coldest`` hits/s: the
        smallest count that a key asked for at ``hotter_factor * coldest`` reaches in one epoch
        with probability at most ``FALSE_REPORT`` (Poisson arrivals), so a report is evidence
        of a hotter key and not the luck of one as cold as the coldest."""
        t = poisson_quantile(self.hotter_factor * coldest * self.epoch_s, 1 - FALSE_REPORT)
        return min(self.hi, max(self.lo, t))

    def update(self, now: float, free: int, coldest: float | None,
               backlog: int = 0) -> AdmissionChange | None:
        """Look at the state: ``free`` slots, the ``coldest`` measured cached key's hits/s
        (None: nothing measured or evictable yet), ``backlog`` digests queued unhandled.
        Returns the change to push to the switch, if any."""
        window, self._window = self._window, 0
        since, self._window_at = self._window_at, now
        rate = 0.0 if since is None or now <= since else window / (now - since)
        if rate > self.budget or backlog > self.backlog_max // 2:
            self._overload_until = now + self.epoch_s
            self.overloads += 1
            return self._set(now, min(self.hi, self.value * 2), "overload")
        if free > 0:
            if (now < self._overload_until or now - self._changed_at < self.settle_s
                    or self._since_change >= free):
                return None
            return self._set(now, max(self.lo, self.value // 2), "free")
        if coldest is None:
            return None
        target = self.target_full(coldest)
        if now < self._overload_until or now - self._changed_at < self.settle_s:
            return None
        return self._set(now, max(self.value // 2, min(self.value * 2, target)), "full")

    def _set(self, now: float, new: int, why: str) -> AdmissionChange | None:
        if new == self.value:
            return None
        old, self.value = self.value, new
        self._changed_at = now
        self._since_change = 0
        self.changes += 1
        return AdmissionChange(old, new, why)

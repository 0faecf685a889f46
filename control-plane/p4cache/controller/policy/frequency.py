"""Hit rate of each cached slot: an exponential moving average over epochs of the deltas of
the switch's ``slot_hits`` counter (GETs answered from that slot).

A slot's rate is *measured* only once one whole epoch of its counter has been seen: the first
reading after :meth:`SlotFrequency.start` is a baseline, the second gives the first delta.
Until then the rate is the candidate's estimate, and :meth:`SlotFrequency.measured` leaves the
slot out, so a key just filled is never taken for the coldest on an estimate (the hottest keys
are promoted first and would otherwise be the first victims). The first measurement replaces
the estimate outright; after that the EMA takes over, except that a rate that collapses (an
epoch's sample below ``collapse`` times the average: the key is no longer asked for, e.g. the
hot set moved on) is taken at once instead of halving epoch by epoch.

Between epochs, :meth:`SlotFrequency.probe` looks for keys that went cold, when the controller
has a hotter candidate it cannot place: each measured slot gets a window of its own, long
enough to expect ``SIGNIFICANT`` hits at its rate (0.03 s for a key at 300/s, 1 s at 8/s), and a
window with fewer than ``collapse`` times the hits expected takes the rate down at once (with 8
hits expected, fewer than 2 happen by chance with a probability of 0.3 %).
"""

from __future__ import annotations

from collections.abc import Mapping

SIGNIFICANT = 8.0  # hits a probe window must expect before it may declare a key cold


class SlotFrequency:
    """Per-slot hits/s. A slot is tracked from the moment it holds a key (:meth:`start`) until
    it is given up (:meth:`stop`); counts of other slots are ignored."""

    def __init__(self, alpha: float, collapse: float = 0.25) -> None:
        if not 0 < alpha <= 1:
            raise ValueError(f"EMA weight {alpha} is not in (0, 1]")
        if not 0 <= collapse < 1:
            raise ValueError(f"collapse ratio {collapse} is not in [0, 1)")
        self.alpha = alpha
        self.collapse = collapse
        self._rate: dict[int, float] = {}
        self._last: dict[int, int] = {}
        self._sample: dict[int, float] = {}   # the last epoch's hits/s, once measured
        self._seq: dict[int, int] = {}        # fill order (larger: filled later)
        self._n = 0
        self._window: dict[int, tuple[int, float]] = {}  # probe window: (count, time) at start
        self._probed_cold: set[int] = set()   # taken down by a probe since the last epoch
        self._cold_since: dict[int, float] = {}  # when the evidence of a collapse begins

    def start(self, slot: int, count: int | None, rate: float) -> None:
        """Track ``slot`` from its current counter value ``count`` (None: the next observation
        is the baseline) at an initial estimate of ``rate`` hits/s (the candidate's hotness).
        The slot is not :meth:`measured` until a whole epoch of its counter has been seen."""
        self._rate[slot] = rate
        self._sample.pop(slot, None)
        self._n += 1
        self._seq[slot] = self._n
        if count is None:
            self._last.pop(slot, None)
        else:
            self._last[slot] = count

    def raise_estimate(self, slot: int, rate: float) -> None:
        """A slot not measured yet is estimated at ``rate`` hits/s if that is more than its
        estimate so far (a later report of its key counted more misses)."""
        if slot in self._rate and slot not in self._sample:
            self._rate[slot] = max(self._rate[slot], rate)

    def stop(self, slot: int) -> None:
        self._window.pop(slot, None)
        self._probed_cold.discard(slot)
        self._cold_since.pop(slot, None)
        self._rate.pop(slot, None)
        self._last.pop(slot, None)
        self._sample.pop(slot, None)
        self._seq.pop(slot, None)

    def observe(self, counts: Mapping[int, int], dt: float, now: float | None = None) -> None:
        """One epoch of ``dt`` seconds ended and the counters read ``counts`` (slot -> hits
        since the switch started). ``now`` (any clock, the one :meth:`probe` gets) starts new
        probe windows."""
        if dt <= 0:
            return
        cold, self._probed_cold = self._probed_cold, set()
        for slot, rate in self._rate.items():
            if slot not in counts:
                continue
            count = counts[slot]
            last = self._last.get(slot)
            self._last[slot] = count
            if last is None:
                continue  # first reading after start(count=None): baseline only
            delta = count - last if count >= last else count  # reset counter (new switch)
            sample = delta / dt
            # A sample is evidence of a changed rate only when enough hits were expected for
            # their absence to mean something: a key at 2 hits/s sees none in a second 13 % of
            # the time. Below that, the sample goes into the average like any other.
            significant = max(rate, sample) * dt >= SIGNIFICANT
            if significant and (slot not in self._sample or sample < self.collapse * rate):
                if slot in self._sample and now is not None:
                    self._cold_since[slot] = min(self._cold_since.get(slot, now), now - dt)
                self._rate[slot] = sample  # the first measurement, or the key went cold
            elif slot in cold:
                # A probe saw it go cold during this epoch: the epoch's hits from before that
                # must not bring it back up.
                self._rate[slot] = min(rate, sample)
            else:
                self._rate[slot] = self.alpha * sample + (1 - self.alpha) * rate
            self._sample[slot] = sample
            if now is not None:
                self._window[slot] = (counts[slot], now)

    def probe(self, counts: Mapping[int, int], now: float) -> list[int]:
        """Counters read between epochs, at ``now``: measured slots whose window expected at
        least ``SIGNIFICANT`` hits and got fewer than ``collapse`` times that are taken down to
        what the window saw. Returns those slots. A window that is long enough starts again
        either way; a shorter one goes on."""
        cold = []
        for slot, rate in self._rate.items():
            if slot not in self._sample or slot not in counts:
                continue
            start = self._window.get(slot)
            if start is None or counts[slot] < start[0]:
                self._window[slot] = (counts[slot], now)
                continue
            c0, t0 = start
            elapsed = now - t0
            expected = rate * elapsed
            if elapsed <= 0 or expected < SIGNIFICANT:
                continue
            got = counts[slot] - c0
            self._window[slot] = (counts[slot], now)
            if got < self.collapse * expected:
                self._rate[slot] = got / elapsed
                self._cold_since[slot] = min(self._cold_since.get(slot, t0), t0)
                self._probed_cold.add(slot)
                cold.append(slot)
        return cold

    def cold_since(self, slot: int) -> float:
        """When the evidence that the key in ``slot`` went cold begins (the start of the window
        or epoch that found it; -inf if none did). A candidate last reported before then was
        rejected against the key's earlier, hotter measurement, and has no newer evidence."""
        return self._cold_since.get(slot, float("-inf"))

    def rate(self, slot: int) -> float:
        return self._rate.get(slot, 0.0)

    def rates(self) -> dict[int, float]:
        return dict(self._rate)

    def is_measured(self, slot: int) -> bool:
        return slot in self._sample

    def measured(self) -> dict[int, float]:
        """Rates of the slots with at least one whole epoch measured (the only eviction
        candidates)."""
        return {s: r for s, r in self._rate.items() if s in self._sample}

    def order(self, slot: int) -> tuple[float, int]:
        """Tie-break among equal rates, lower first: the last epoch's sample, then the most
        recently filled (never the lowest slot, which holds the first, hottest promotions)."""
        return self._sample.get(slot, 0.0), -self._seq.get(slot, 0)

    def __contains__(self, slot: int) -> bool:
        return slot in self._rate

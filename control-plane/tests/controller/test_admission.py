"""The admission threshold's rule (policy/admission.py), without I/O: each rule on its own, then
the whole policy driven by a simulated Zipf workload, where the cache must converge to (nearly)
the optimal static top-K and the reports must die down once it has."""

from __future__ import annotations

import bisect
import math
import random

import pytest

from p4cache.controller.policy import (
    AdmissionThreshold,
    Admit,
    Evict,
    PromotionPolicy,
)
from p4cache.controller.policy.admission import FALSE_REPORT, poisson_quantile
from p4cache.workload.generator import Zipf

E = 1.048576  # the data plane's epoch, 2^20 µs


def test_free_slots_halve_the_threshold_once_per_settle_time_down_to_the_floor():
    a = AdmissionThreshold(8, E, settle_s=0.25)
    steps = []
    for i in range(20):
        ch = a.update(now=0.1 * i, free=100, coldest=None)
        if ch is not None:
            assert ch.why == "free" and ch.new == ch.old // 2
            steps.append((round(0.1 * i, 1), ch.new))
    assert steps == [(0.0, 4), (0.3, 2), (0.6, 1)]
    assert a.value == 1


def test_free_slots_are_not_chased_while_the_reports_at_this_threshold_would_fill_them():
    a = AdmissionThreshold(8, E, settle_s=0.0)
    for _ in range(5):
        a.reported()
    assert a.update(now=0.0, free=5, coldest=None) is None, "5 reports for 5 free slots"
    assert a.update(now=1.0, free=6, coldest=None).new == 4


def poisson_tail(mean: float, t: int) -> float:
    """P(X >= t), X ~ Poisson(mean)."""
    term = cdf = math.exp(-mean)
    for k in range(1, t):
        term *= mean / k
        cdf += term
    return 1 - cdf


@pytest.mark.parametrize("mean", [0.05, 0.37, 1.0, 4.2, 31.5, 99.0])
def test_the_full_cache_threshold_is_the_poisson_quantile_of_the_cold_end(mean):
    t = poisson_quantile(mean, 1 - FALSE_REPORT)
    assert poisson_tail(mean, t) <= FALSE_REPORT
    assert t == 1 or poisson_tail(mean, t - 1) > FALSE_REPORT, "the smallest such count"


def test_a_full_cache_moves_the_threshold_towards_the_cold_end_by_doubling_or_halving():
    a = AdmissionThreshold(2, E, hotter_factor=1.5, settle_s=0.25)
    target = poisson_quantile(1.5 * 20.0 * E, 0.9)
    assert target == 40
    steps = []
    for i in range(20):
        ch = a.update(now=0.1 * i, free=0, coldest=20.0)
        if ch is not None:
            assert ch.why == "full"
            steps.append(ch.new)
    assert steps == [4, 8, 16, 32, 40], "doubling at most once per settle time, then the target"
    assert a.per_report() > 1.5 * 20.0, "a report stands for a hotter key than the victim"
    low = poisson_quantile(1.5 * 1.0 * E, 0.9)
    got = [a.update(now=10 + 0.3 * i, free=0, coldest=1.0) for i in range(6)]
    assert [c.new for c in got if c] == [20, 10, 5, low]
    # nothing measured yet: unchanged
    assert a.update(now=50.0, free=0, coldest=None) is None


def test_the_cold_end_is_a_low_quantile_of_the_measured_rates_not_the_minimum():
    p = PromotionPolicy(20, alpha=0.5, threshold=8, epoch_s=E)
    for s in range(20):
        assert isinstance(p.decide(100.0, busy=set()), Admit)
        p.filled(s, 0, 1.0)
    p.end_epoch({s: 10 * s for s in range(20)}, 1.0)   # slot s: 10*s hits/s, slot 0 none
    assert p.coldest(busy=set()) == 20.0
    assert p.coldest(busy={0, 1, 2}) == 40.0  # 17 left: the second coldest


def test_the_threshold_stays_within_its_bounds():
    a = AdmissionThreshold(8, E, lo=2, hi=16, settle_s=0.0)
    for i in range(10):
        a.update(now=float(i), free=10, coldest=None)
    assert a.value == 2
    for i in range(10):
        a.update(now=20.0 + i, free=0, coldest=1e6)
    assert a.value == 16
    assert AdmissionThreshold(100, E, lo=1, hi=16).value == 16
    with pytest.raises(ValueError):
        AdmissionThreshold(8, E, lo=4, hi=2)


def test_too_many_reports_or_a_long_queue_raise_it_and_hold_it_up_for_an_epoch():
    a = AdmissionThreshold(4, E, budget=100.0, backlog_max=1000, settle_s=0.0)
    a.update(now=0.0, free=1000, coldest=None)            # baseline of the report rate
    assert a.value == 2
    for _ in range(50):
        a.reported()
    ch = a.update(now=0.1, free=1000, coldest=None)       # 500 reports/s > 100
    assert (ch.new, ch.why) == (4, "overload")
    assert a.update(now=0.5, free=1000, coldest=None) is None, "held for an epoch"
    assert a.update(now=1.2, free=1000, coldest=None).new == 2
    ch = a.update(now=1.3, free=1000, coldest=None, backlog=501)
    assert (ch.new, ch.why) == (4, "overload")
    assert a.overloads == 2


class Sim:
    """The switch and the workload, reduced to what the policy sees: per-epoch miss counts
    (exact, so no sketch error), one report per key and epoch at the threshold, per-slot hit
    counters read once a controller epoch. Promotions take effect at once."""

    def __init__(self, k: int, skew: float, rate: float, keys: int = 10_000,
                 seed: int = 1) -> None:
        self.z = Zipf(keys, skew)
        w = [r ** -skew for r in range(1, keys + 1)]
        total = sum(w)
        acc = 0.0
        self.cdf = []
        for x in w:
            acc += x / total
            self.cdf.append(acc)
        self.k = k
        self.rate = rate
        self.rng = random.Random(seed)
        self.policy = PromotionPolicy(k, alpha=0.5, threshold=8, epoch_s=E)
        self.slot_of: dict[int, int] = {}
        self.key_in: dict[int, int] = {}
        self.hits = [0] * k
        self.reports = 0

    def draw(self) -> int:
        return min(len(self.cdf) - 1, bisect.bisect_left(self.cdf, self.rng.random()))

    def run(self, seconds: float, measure_from: float) -> tuple[float, list[int]]:
        dt = 0.1
        t = 0.0
        epoch = -1
        misses: dict[int, int] = {}
        reported: set[int] = set()
        served = asked = 0
        next_tick = 1.0
        reports_per_s = []
        last_reports = 0
        while t < seconds:
            e = int(t / E)
            if e != epoch:
                epoch, misses, reported = e, {}, set()
            for _ in range(int(self.rate * dt)):
                key = self.draw()
                if t >= measure_from:
                    asked += 1
                slot = self.slot_of.get(key)
                if slot is not None:
                    self.hits[slot] += 1
                    if t >= measure_from:
                        served += 1
                    continue
                n = misses[key] = misses.get(key, 0) + 1
                th = self.policy.admission.value
                if (n >= th and key not in reported) or n in (2 * th, 4 * th, 8 * th, 16 * th):
                    reported.add(key)   # as hot_keys.p4: at T once, again at 2T ... 16T
                    self.reports += 1
                    self.consider(key, n)
            t += dt
            self.policy.admit(t, busy=set())
            if t >= next_tick:
                counts = {s: self.hits[s] for s in self.policy.frequency.rates()}
                self.policy.end_epoch(counts, 1.0, t)
                next_tick += 1.0
                reports_per_s.append(self.reports - last_reports)
                last_reports = self.reports
        return served / asked, reports_per_s

    def consider(self, key: int, count: int) -> None:
        p = self.policy
        if key in self.slot_of:
            p.reported_cached(self.slot_of[key], count)
            return
        d = p.decide(p.candidate(key, count), busy=set())
        if isinstance(d, Admit):
            slot = d.slot
        elif isinstance(d, Evict):
            slot = d.victim
            old = self.key_in.pop(slot)
            del self.slot_of[old]
            p.evicted(old, slot)
            p.frequency.stop(slot)
        else:
            return
        p.hotness.forget(key)
        self.slot_of[key] = slot
        self.key_in[slot] = key
        p.filled(slot, self.hits[slot], 0.0)


@pytest.mark.parametrize("k,skew,rate", [
    (64, 0.99, 6000.0), (1024, 0.99, 6000.0), (1024, 0.9, 3000.0), (256, 0.9, 3000.0),
])
def test_the_cache_converges_to_near_the_optimal_top_k_and_the_reports_die_down(k, skew, rate):
    sim = Sim(k, skew, rate)
    share, reports = sim.run(seconds=20.0, measure_from=12.0)
    optimal = sim.z.top_share(k)
    assert share >= 0.9 * optimal, (share, optimal, sim.policy.admission.value)
    assert len(sim.slot_of) == k, "every slot used"
    # Once full, reports are the noise at the margin: far fewer than at the start.
    assert max(reports[-5:]) < max(reports[:5]), reports


def test_with_the_threshold_fixed_at_8_a_large_cache_stays_mostly_empty():
    """The fault this rule removes (issue 20): the fixed threshold of 8 misses an epoch admits
    only the keys asked for 8 times a second, however many slots are free."""
    sim = Sim(1024, 0.9, 3000.0)
    sim.policy.admission.lo = sim.policy.admission.hi = 8
    share, _ = sim.run(seconds=12.0, measure_from=8.0)
    assert len(sim.slot_of) < 300
    assert share < 0.9 * sim.z.top_share(1024)

"""The promotion policy, alone (pure: no switch, no clock)."""

from __future__ import annotations

import pytest

from p4cache.controller.policy import (
    Admit,
    CandidateHotness,
    Evict,
    PromotionPolicy,
    Reject,
    SlotAllocator,
    SlotFrequency,
    choose,
)


def test_frequency_is_an_ema_of_counter_deltas() -> None:
    f = SlotFrequency(alpha=0.5)
    f.start(3, count=100, rate=8.0)
    f.observe({3: 120}, dt=1.0)            # 20 hits/s
    assert f.rate(3) == pytest.approx(0.5 * 20 + 0.5 * 8)
    f.observe({3: 120}, dt=2.0)            # idle
    assert f.rate(3) == pytest.approx(7.0)
    f.observe({3: 5}, dt=1.0)              # the counter restarted (new switch): 5 hits
    assert f.rate(3) == pytest.approx(0.5 * 5 + 0.5 * 7)
    f.observe({4: 1000}, dt=1.0)           # untracked slots are ignored
    assert 4 not in f


def test_frequency_baseline_when_the_count_is_unknown() -> None:
    f = SlotFrequency(alpha=1.0)
    f.start(1, count=None, rate=3.0)
    f.observe({1: 500}, dt=1.0)            # first reading: baseline only
    assert f.rate(1) == 3.0
    f.observe({1: 510}, dt=1.0)
    assert f.rate(1) == 10.0
    f.stop(1)
    assert f.rate(1) == 0.0 and 1 not in f


def test_candidate_hotness_from_digests() -> None:
    h = CandidateHotness(alpha=0.5, threshold=8, epoch_s=1.0)
    assert h.report("k") == 8.0            # one digest: >= 8 misses this epoch
    assert h.report("k") == 16.0
    h.end_epoch()
    assert h.score("k") == pytest.approx(8.0)  # EMA: 0.5 * 16
    h.end_epoch()
    assert h.score("k") == pytest.approx(4.0)
    for _ in range(10):
        h.end_epoch()
    assert len(h) == 0, "cold candidates are forgotten"


def test_slot_allocator() -> None:
    a = SlotAllocator(3)
    a.take(1)
    assert [a.allocate(), a.allocate(), a.allocate()] == [0, 2, None]
    a.release(2)
    assert a.allocate() == 2
    with pytest.raises(ValueError):
        a.take(2)
    a.release(0)
    with pytest.raises(ValueError):
        a.release(0)
    assert a.free_count == 1


def test_admission_rule() -> None:
    assert choose(1.0, 5, {0: 100.0}) == Admit(5)
    assert choose(10.0, None, {0: 3.0, 1: 2.0, 2: 2.0}) == Evict(1, 2.0)  # coldest, lowest
    assert isinstance(choose(2.0, None, {0: 3.0, 1: 2.0}), Reject)        # not hotter
    assert isinstance(choose(3.0, None, {0: 2.0}, hotter_factor=2.0), Reject)
    assert choose(5.0, None, {0: 2.0}, hotter_factor=2.0) == Evict(0, 2.0)
    assert isinstance(choose(99.0, None, {}), Reject)                     # all busy


def test_policy_keeps_busy_slots_and_frees_slots() -> None:
    p = PromotionPolicy(slots=2, alpha=0.5, threshold=8, epoch_s=1.0)
    assert p.decide(8.0, busy=set()) == Admit(0)
    assert p.decide(8.0, busy=set()) == Admit(1)
    p.filled(0, 0, 8.0)
    p.filled(1, 0, 8.0)
    p.end_epoch({0: 40, 1: 2}, 1.0)        # slot 0: 24/s, slot 1: 5/s
    assert p.decide(6.0, busy=set()) == Evict(1, pytest.approx(5.0))
    assert isinstance(p.decide(6.0, busy={1}), Reject), "a slot under way is no victim"
    p.freed(1)
    assert p.decide(0.1, busy=set()) == Admit(1)

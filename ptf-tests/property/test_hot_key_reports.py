"""Hot-key reports on the rig's clock (hot_keys.p4): a key not cached, missed again and again
within one epoch, is reported by a digest {server_addr, key_len, key, count} at exactly the T-th
miss (T: the admission table's threshold) and again at exactly 2T, 4T, 8T and 16T misses, each
digest carrying the count of misses so far; nothing before T, between the levels or after 16T;
each report counted in cache_stats[STAT_REPORT]; a new epoch counts from zero. The reference
model (cache_oracle) does not model digests, so this is the check of the report levels and the
count, on softnic's engine and on the xdp engine with the Python engine as its twin (every
frame's digests equal on both).

The rig's clock moves TICK_US per frame and the engines read it, so the epoch of every miss is
known: each run starts at an epoch boundary and stays far inside the epoch (2^EPOCH_SHIFT µs is
about 1000 frames).
"""

from __future__ import annotations

import pytest
from cache_rig import CLIENTS, SERVER_IP, TICK_US, Rig

from p4cache import dataplane as dp
from softnic.runtime.api import ActionCall

ADMISSION = "CacheIngress.hot_keys.admission"
SET_ADMISSION = "CacheIngress.hot_keys.set_admission"
EPOCH_US = 1 << dp.EPOCH_SHIFT
# hot_key_digest_t's members in order. An engine names a digest's values after the fields
# of its learn list (the count is the local `estimate`), and P4Runtime takes them in order.
MEMBERS = ("server_addr", "key_len", "key", "count")


def set_threshold(rig: Rig, t: int) -> None:
    for sw in (rig.sw, rig.twin):
        if sw is not None:
            sw.table_set_default(ADMISSION, ActionCall(SET_ADMISSION, [t]))


def to_epoch_start(rig: Rig) -> None:
    """The next frame is the first of a new epoch."""
    rig.clock = ((rig.clock // EPOCH_US) + 1) * EPOCH_US - TICK_US


def reports(rig: Rig, key: bytes, n: int) -> list[tuple[int, int]]:
    """(miss number, digest count) of every digest while ``key`` misses ``n`` times."""
    out = []
    for i in range(1, n + 1):
        v = rig.send(1, rig.get_frame(key, rid=i & 0xFFFF, src=CLIENTS[0]))
        assert v.kind == "forwarded", v
        for d in rig.digests:
            assert d.name == "hot_key_digest_t", d
            assert len(d.fields) == len(MEMBERS), d.fields
            f = dict(zip(MEMBERS, d.fields.values(), strict=True))
            assert (f["server_addr"], f["key_len"]) == (SERVER_IP, len(key)), f
            assert f["key"] == int.from_bytes(key, "big"), f
            out.append((i, f["count"]))
    return out


def check_levels(rig: Rig, t: int, key: bytes) -> None:
    set_threshold(rig, t)
    levels = [(m, m) for m in (t, 2 * t, 4 * t, 8 * t, 16 * t)]
    stat = dp.STAT_REPORT
    for epoch in range(2):  # the second epoch counts from zero again
        to_epoch_start(rig)
        first = rig.clock + TICK_US
        before = rig.counts()[stat]
        n = 16 * t + t + 3  # past the last level
        assert (first + n * TICK_US) // EPOCH_US == first // EPOCH_US, "run leaves the epoch"
        assert reports(rig, key, n) == levels, f"threshold {t}, epoch {epoch}"
        assert rig.counts()[stat] - before == len(levels)


@pytest.mark.parametrize("engine", ["softnic", "xdp"])
def test_reported_at_t_and_exactly_2t_4t_8t_16t_with_count(engine: str) -> None:
    if engine == "xdp":
        from softnic.runtime.xdp.libbpf import missing_requirements
        missing = missing_requirements()
        if missing:
            pytest.skip("the xdp engine cannot run here: " + "; ".join(missing))
    rig = Rig(engine=engine, twin=engine == "xdp")
    if rig.twin is None:  # the rig puts the engines on its clock only for twins
        rig.sw._now_us = lambda: rig.clock
    try:
        check_levels(rig, dp.HOT_THRESHOLD, b"hot:default")  # the program's default
        check_levels(rig, 3, b"hot:three")
        check_levels(rig, 1, b"hot:one")
        assert rig.differences == 0
        if rig.twin is not None:
            state = rig.twin_state_problem()
            assert state is None, state
    finally:
        if engine == "xdp":
            rig.sw.close()

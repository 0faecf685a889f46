"""``p4cache-bench gate`` runs end to end on the lab (tiny counts) and writes well-formed results.

The full benchmark takes a few minutes; this runs ``--quick`` with fewer requests so the command
keeps working: real softnic, memcached, agent and controller in network namespaces (root only).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from p4cache_bench.cachelab import pct
from p4cache_bench.gate import VARIANTS

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def test_percentile_is_nearest_rank() -> None:
    xs = list(range(1, 101))
    assert pct(xs, 50) == 50 and pct(xs, 99) == 99 and pct(xs, 100) == 100 and pct([7], 99) == 7


def test_gate_quick(bench_quick, tmp_path: Path) -> None:  # noqa: ANN001 - the fixture
    res, _ = bench_quick("gate", "--requests", "120", "--rounds", "2", "--hot-keys", "3",
                         "--rehot", "1", "--verified", "3", "--plot", str(tmp_path), plot=False)
    assert res["machine"]["cpus"] >= 1
    gl = res["gate_latency"]
    assert not gl["errors"], gl["errors"]
    for v in VARIANTS:
        r = gl["variants"][v]
        for target in ("direct", "agent"):
            assert r[target]["n"] == 120, (v, target)
            assert 0 < r[target]["p50_us"] <= r[target]["p99_us"], (v, target)
        # only gated sets of the watched (cached) key invalidate, each exactly once
        assert r["invalidations_per_gated_request"] == (1.0 if v == "set_cached" else 0.0), v
    assert gl["variants"]["set_cached"]["agent"]["p50_us"] > 0
    assert gl["set_cached_verified"]["agent"]["n"] >= 1
    assert gl["set_watched_isolated"]["agent"]["n"] == gl["set_cached_verified"]["agent"]["n"]
    # the get-cached key stayed cached around the measurement
    for rnd in gl["rounds"]:
        for probe in ("get_cached_probe", "get_cached_probe_after"):
            # every reply that came back was the switch's (a lost one is allowed: busy machine)
            assert 0 < rnd[probe]["switch"] == rnd[probe]["replies"] <= rnd[probe]["sent"], rnd
    assert res["agent"]["latency"]["invalidate"]["p50_us"] > 0
    h = res["time_to_hot"]
    assert h["n"] == 3 and h["failed"] == 0 and h["p50_ms"] > 0, h
    assert all(s["value_ok"] and s["phase_after"] == "filled" for s in h["samples"]), h
    r = res["rehot"]
    assert r["n"] == 1 and r["p50_ms"] > 0 and r["stale_switch_replies"] == 0, r
    assert r["all_cached_before_set"], r
    c = res["reply_classification"]
    assert c["switch_replies_seen"] > 0
    # replies with UDP checksum 0 are the switch's. The switch's hit counter (read after the
    # client stopped reading) is between what the client read and the GETs it sent: a reply
    # lost on the way or arriving after a stream stopped (more of them on a busy machine)
    # counts only on the switch's side; a client count above the switch's would mean
    # memcached's replies taken for the switch's
    seen, counted = c["switch_replies_seen"], c["switch_hit_counter_delta"]
    assert seen <= counted <= c["gets_sent"], c
    assert res["target"]["added_p50_us_max"] == 100
    assert (tmp_path / "gate_latency.png").stat().st_size > 0
    assert (tmp_path / "time_to_hot.png").stat().st_size > 0

"""``p4cache-bench latency --quick`` runs on the real lab and writes sane results.

Real softnic, memcached, agent and controller in network namespaces (root only): hits come from
the switch, misses and no-cache GETs from memcached, every reply carries the right key.
"""

from __future__ import annotations

import os

import pytest

from p4cache_bench.latency import CLASSES

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def test_latency_quick(bench_quick) -> None:  # noqa: ANN001 - the conftest's fixture
    res, png = bench_quick("latency", "--rounds", "300")
    assert len(res["machine"]["loadavg_at_start"]) == 3
    assert res["lab"]["promotion"]["all_cached"], res["lab"]
    c = res["classes"]
    for name in CLASSES:
        r = c[name]
        # every GET answered or timed out (0.5 s; a busy machine times out more, so how many
        # did is not asserted, only that some were answered)
        assert r["n"] + r["timeouts"] == 300 and r["n"] > 0, (name, r)
        assert 0 < r["min_us"] <= r["p50_us"] <= r["p99_us"], (name, r)
        assert r["wrong_value"] == 0, (name, r)
    # who answered: the switch all the hits, memcached every miss and no-cache GET
    assert c["hit"]["answered_by_switch"] == c["hit"]["n"]
    assert c["miss"]["answered_by_switch"] == 0 and c["nocache"]["answered_by_switch"] == 0
    # the switch's hit counter (read after the last reply) counted every hit the client got
    # and at most the hit GETs sent: a timed-out hit may have been answered and the reply lost
    assert c["hit"]["n"] <= res["switch_hit_counter_delta"] <= c["hit"]["n"] + c["hit"]["timeouts"]
    t = res["target"]
    assert t["hit_over_miss_p50"] > 0 and t["hit_p50_over_miss_p50_max"] == 0.5
    assert png.stat().st_size > 0

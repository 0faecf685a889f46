"""``p4cache-bench etc --quick`` runs ETC's mix through the whole system and its history passes
the linearizability checker.

Real softnic, memcached (two servers), agents and controller in network namespaces (root
only); about 20 s.
"""

from __future__ import annotations

import os

import pytest

from p4cache_bench.etc import LAT_KINDS, _value

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def test_values_are_unique_and_sized() -> None:
    assert _value(3, 17, 40) == b"3.17." + b"x" * 35
    assert _value(3, 17, 2) == b"3.17"          # never shorter than its unique tag
    assert _value(1, 1, 10) != _value(1, 2, 10)


def test_etc_quick(bench_quick) -> None:  # noqa: ANN001 - the conftest's fixture
    res, png = bench_quick("etc")
    assert len(res["machine"]["loadavg_at_end"]) == 3
    w = res["workload"]
    c = w["counts"]
    # each client paces one operation at a time (150/s for 8 s): a busy machine makes each take
    # longer, so the count is a lower bound far below the paced one, for the mix's proportions
    assert w["operations"] > 300, w
    # ETC's mix: mostly GETs, a quarter DELETEs, few SETs
    total = c["get"] + c["set"] + c["delete"]
    assert 0.6 < c["get"] / total < 0.85 and 0.15 < c["delete"] / total < 0.33, c
    # GETs not answered within 0.25 s are "unknown" to the checker: more of them on a busy
    # machine, so only most GETs must have been answered
    assert c["fill"] > 0 and c["get_unknown"] < 0.5 * c["get"], c
    assert 0 < w["hit_share"] < 1, w
    for k in LAT_KINDS:
        x = w["latency_us"][k]
        assert x["n"] > 0 and 0 < x["p50_us"] <= x["p99_us"], (k, x)
    sy = res["system"]
    assert sy["controller"]["promotions"] > 0, sy
    assert sy["agents"].get("invalidate_sent", 0) > 0, sy
    # the switch's hit counter saw at least the hits the clients classified as the switch's
    assert sy["switch_counters"]["hit"] >= c["switch_replies"] > 0, (sy, c)
    co = res["coherence"]
    assert co["linearizable"] is True, co
    assert co["operations"] == w["operations"] and not co["timed_out"], co
    assert png.stat().st_size > 0

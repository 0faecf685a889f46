"""``p4cache-bench hitshare --quick`` runs on the real lab and writes sane results.

Real softnic, memcached, agent and controller in network namespaces (root only); two cache sizes
at Zipf 0.99 with short warm-up and measurement, so the command keeps working.
"""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def test_hitshare_quick(bench_quick) -> None:  # noqa: ANN001 - the conftest's fixture
    res, png = bench_quick("hitshare")
    assert len(res["machine"]["loadavg_at_start"]) == 3
    pts = res["points"]
    assert [(p["size"], p["skew"]) for p in pts] == [(16, 0.99), (256, 0.99)]
    for p in pts:
        m = p["measured"]
        assert m["sent"] > 1000 and m["not_value"] == 0, p
        assert m["switch"] + m["memcached"] + m["lost"] == m["sent"], p
        assert 0.0 <= p["share"] <= 1.0 and 0.0 < p["optimal"] <= 1.0, p
        assert m["switch"] > 0, p          # the switch answered some GETs
        assert p["cached_keys"] <= p["size"], p
        # replies with UDP checksum 0 are the switch's: its own hit counter agrees
        seen, counted = p["client_switch_replies"], p["switch_hit_counter_delta"]
        assert seen <= counted <= seen + 50, p
    assert res["target"]["skew"] == 0.99 and res["target"]["ratio_min"] == 0.9
    assert png.stat().st_size > 0

"""``p4cache-bench hotin --quick`` runs on the real lab and writes sane results.

Real softnic, memcached, agent and controller in network namespaces (root only): the switch
serves the hot set before the change and serves the new one after it.
"""

from __future__ import annotations

import os

import pytest

from bench.hotin import recovery

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def test_recovery_times_are_to_the_end_of_the_bin() -> None:
    sh = [0.5] * 10 + [0.1, 0.2, 0.5, 0.3, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    r = recovery(sh, 10, 0.5)
    assert r["first_bin_s"] == 0.3 and r["sustained_s"] == 0.5 and r["lowest_share_after"] == 0.1


def test_hotin_quick(bench_quick) -> None:  # noqa: ANN001 - the conftest's fixture
    res, png = bench_quick("hotin")
    assert len(res["machine"]["loadavg_at_start"]) == 3
    (v,) = res["variants"]
    assert v["sent"] > 1000
    assert all(0.0 <= x <= 1.0 for x in v["shares"] if x is not None)
    (c,) = v["changes"]
    assert 0.0 < c["steady_share_before"] <= 1.0
    assert c["share_last_3s_after"] > 0.0    # the new hot set is served
    assert v["controller"]["promotions"] > 0
    seen, counted = v["client_switch_replies"], v["switch_hit_counter_delta"]
    assert seen <= counted <= seen + 50, v
    assert png.stat().st_size > 0

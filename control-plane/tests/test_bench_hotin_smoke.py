"""``p4cache-bench hotin --quick`` runs on the real lab and writes sane results.

Real softnic, memcached, agent and controller in network namespaces (root only): the switch
serves the hot set before the change and serves the new one after it.
"""

from __future__ import annotations

import os

import pytest

from p4cache_bench.hotin import recovery

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def test_recovery_times_are_to_the_end_of_the_bin() -> None:
    sh = [0.5] * 10 + [0.1, 0.2, 0.5, 0.3, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    r = recovery(sh, 10, 0.5)
    assert r["first_bin_s"] == 0.3 and r["sustained_s"] == 0.5 and r["lowest_share_after"] == 0.1


def test_hotin_quick(bench_quick) -> None:  # noqa: ANN001 - the conftest's fixture
    # Structure and invariants only: the shares and recovery times are the benchmark's result
    # and move with the machine's load.
    res, png = bench_quick("hotin")
    assert len(res["machine"]["loadavg_at_start"]) == 3
    s = res["settings"]
    (v,) = res["variants"]
    bins = v["bins"]
    # open loop: every scheduled GET is sent, however late (4 s before + 4 s after the change)
    assert v["sent"] == sum(b[0] for b in bins) == int(s["rate"] * (s["before_s"] + s["every_s"]))
    # per bin, each GET answered at most once, by the switch or memcached (the rest was lost)
    assert all(b[1] + b[2] <= b[0] for b in bins), bins
    assert v["lost"] == sum(b[0] - b[1] - b[2] for b in bins) >= 0, v
    assert all(0.0 <= x <= 1.0 for x in v["shares"] if x is not None)
    (c,) = v["changes"]
    assert c["at_s"] == s["before_s"]
    assert 0.0 < c["steady_share_before"] <= 1.0     # the switch served the first hot set
    assert 0.0 < c["share_last_3s_after"] <= 1.0     # and something after the change
    rc = c["recovery"]
    # both are rounded to 4 places from the same unrounded share
    assert abs(rc["bar"] - 0.9 * c["steady_share_before"]) <= 1e-4, rc
    for t in ("first_bin_s", "sustained_s"):        # a time after the change, or never
        assert rc[t] is None or 0 < rc[t] <= s["every_s"], rc
    assert rc["sustained_s"] is None or rc["first_bin_s"] <= rc["sustained_s"], rc
    assert v["controller"]["promotions"] > 0
    # replies with UDP checksum 0 are the switch's. The switch's hit counter (read after the
    # client stopped reading) is between what the client read and what it sent: a reply the
    # switch sent but the client lost (a busy machine) counts only on the switch's side; a
    # client count above the switch's would mean memcached's replies taken for the switch's.
    seen, counted = v["client_switch_replies"], v["switch_hit_counter_delta"]
    assert seen == sum(b[1] for b in bins)
    assert 0 < seen <= counted <= v["sent"], v
    assert png.stat().st_size > 0

"""``p4cache-bench loadbalance --quick`` runs end to end on the lab and writes sane results.

Real softnic, memcached (four servers, each with its nftables rate limit), agents and controller
in network namespaces (root only); about 30 s.
"""

from __future__ import annotations

import os

import pytest

from p4cache_bench.cachelab import limit_ruleset

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def test_limit_rule_drops_above_the_rate_and_counts_both() -> None:
    rules = limit_ruleset(250, 25, 11211)
    assert "limit rate over 250/second burst 25 packets counter drop" in rules
    assert rules.endswith("udp dport 11211 counter accept")


def test_loadbalance_quick(bench_quick) -> None:  # noqa: ANN001 - the conftest's fixture
    res, png = bench_quick("loadbalance")
    assert len(res["machine"]["loadavg_at_start"]) == 3
    assert len(res["machine"]["loadavg_at_end"]) == 3
    servers = res["lab"]["servers"]
    assert len(servers) == 4
    nc, c = res["no_cache"], res["cache"]
    assert not nc["controller_running"]
    # Rates, loss and shares are the benchmark's results and move with the machine's load;
    # what is asserted holds by construction, loss or not.
    for step in nc["steps"]:
        # without the controller nothing is promoted: every GET that did not reach a server
        # (switch_share = 1 - at servers / sent) went unanswered, so it is within the loss
        # (below 0 only by a few of the previous step's GETs arriving late)
        assert step["switch_share"] is not None, step
        assert -0.02 <= step["switch_share"] <= step["loss"] + 1e-4, step
        assert step["not_value_replies"] == 0, step
        assert 0 < step["answered_rps"] <= step["offered_rps"], step
    # the hottest server gets more than a fair share: the ring and Zipf predicted it
    assert res["expected"]["max_share"] > 0.25
    # with the cache the switch answers a good part of the GETs
    assert res["warm_up"]["cache_after"]["cached"] > 10, res["warm_up"]
    for step in c["steps"]:
        assert step["not_value_replies"] == 0, step
        assert set(step["per_server"]) == set(servers)
        assert 0 < step["answered_rps"] <= step["offered_rps"], step
    # more GETs missed the servers than went unanswered: the switch answered the difference
    first = c["steps"][0]
    assert first["switch_share"] > first["loss"], first
    t = res["target"]
    assert t["gain_min"] == 3.0 and t["no_cache_rps"] > 0
    assert t["met"] == (t["gain"] is not None and t["gain"] >= 3.0)
    assert png.stat().st_size > 0

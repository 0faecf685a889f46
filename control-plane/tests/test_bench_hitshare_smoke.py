"""``p4cache-bench hitshare --quick`` runs on the real lab and writes sane results.

Real softnic, memcached, agent and controller in network namespaces (root only); two cache sizes
at Zipf 0.99 with short warm-up and measurement, so the command keeps working.
"""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def test_hitshare_quick(bench_quick) -> None:  # noqa: ANN001 - the conftest's fixture
    # Structure and invariants only: the shares themselves are the benchmark's result and move
    # with the machine's load (a busy machine loses replies and promotes later).
    res, png = bench_quick("hitshare")
    assert len(res["machine"]["loadavg_at_start"]) == 3
    pts = res["points"]
    assert [(p["size"], p["skew"]) for p in pts] == [(16, 0.99), (256, 0.99)]
    s = res["settings"]
    for p in pts:
        m = p["measured"]
        # open loop: every scheduled GET is sent, however late (2 s warm-up + 2 s measured)
        assert p["sent"] == int(s["rate"] * (s["warmup_s"] + s["measure_s"])), p
        assert 0 < m["sent"] <= p["sent"], p
        assert m["not_value"] == 0, p          # every reply, whoever sent it, is the value
        # each GET answered at most once, by one of the two; the rest was lost (loss is allowed)
        assert m["lost"] >= 0 and m["switch"] + m["memcached"] + m["lost"] == m["sent"], p
        assert p["share"] == round(m["switch"] / m["sent"], 4), p
        assert 0.0 <= p["share"] <= 1.0 and 0.0 < p["optimal"] <= 1.0, p
        assert all(0.0 <= x <= 1.0 for x in p["per_second"]), p
        assert p["cached_keys"] <= p["size"], p
        assert p["controller"]["promotions"] > 0, p
        # replies with UDP checksum 0 are the switch's. The switch's hit counter (read after
        # the client stopped reading) is between what the client read and what it sent: a
        # reply the switch sent but the client lost (a busy machine) counts only on the
        # switch's side, so the client's count may be lower, never higher: a higher one would
        # mean memcached's replies were taken for the switch's. The switch answered some GETs.
        seen, counted = p["client_switch_replies"], p["switch_hit_counter_delta"]
        assert 0 < seen <= counted <= p["sent"], p
    assert res["target"]["skew"] == 0.99 and res["target"]["ratio_min"] == 0.9
    assert png.stat().st_size > 0

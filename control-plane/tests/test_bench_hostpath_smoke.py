"""``p4cache-bench hostpath --quick`` runs on the real labs and writes sane results.

Two labs (the xdp engine on memcached's interface, the Python engine as the switch), the Go load
generator and live-frame test runs in the server's namespace: root, the xdp engine's requirements
and a built p4cache-loadgen, else skipped.
"""

from __future__ import annotations

import os

import pytest

from p4cache_bench.hostpath import CONFIGS, LIVE

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def _skip_without_xdp_or_loadgen() -> None:
    from p4cache.workload import loadgen
    from softnic.runtime.xdp import libbpf

    if missing := libbpf.missing_requirements():
        pytest.skip(f"the xdp engine cannot run here: {missing}")
    try:
        loadgen.find_binary()
    except loadgen.LoadgenNotBuilt as e:
        pytest.skip(str(e))


def test_hostpath_quick(bench_quick) -> None:  # noqa: ANN001 - the conftest's fixture
    _skip_without_xdp_or_loadgen()
    res, png = bench_quick("hostpath")
    assert len(res["machine"]["loadavg_at_start"]) == 3
    med = res["medians"]
    for c in CONFIGS:
        assert med[c]["max_rate_under_1pct_loss"] > 0, (c, med[c])
        assert 0 < med[c]["gets_answered_per_s_at_max"] <= 1.05 * med[c][
            "max_rate_under_1pct_loss"], (c, med[c])
    # who answered: the ceiling only the program, memcached alone never the program
    assert med["ceiling"]["switch_share_at_max"] > 0.95
    assert med["memcached"]["switch_share_at_max"] == 0.0
    assert med["xdp"]["hit_p50_us"] > 0 and med["xdp"]["miss_p50_us"] > 0
    rep = res["repetitions"][0]
    assert rep["memcached_attached"] is False  # the program was off eth0
    runs = rep["live"]["runs"]
    assert set(runs) == set(LIVE)
    for name, r in runs.items():
        assert r["client_rx"] > 0 and r["frames_run"] >= r["client_rx"] * 0.99, (name, r)
    # hits only: the program answered (memcached saw few of them); memcached alone: every
    # reply at the client is one memcached counted
    assert runs["live_hits"]["memcached_gets"] < 0.1 * runs["live_hits"]["client_rx"]
    assert abs(runs["live_memcached"]["client_rx"] - runs["live_memcached"]["memcached_gets"]) \
        <= 0.02 * runs["live_memcached"]["client_rx"] + 50
    v = res["verdict"]
    assert v["over_memcached_live"] > 0 and v["hit_p50_over_miss_p50"] > 0
    assert png.stat().st_size > 0

"""``p4cache-bench pps --quick``: softnic's side of softnic against BMv2 on the cache's program,
with BMv2 measured or marked skipped (it is not installable here). Root only (veth); about 15 s.
"""

from __future__ import annotations

import os

import pytest

from bench.pps import bmv2_missing

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def test_pps_quick(bench_quick) -> None:  # noqa: ANN001 - the conftest's fixture
    res, _ = bench_quick("pps", plot=False, workdir=False)
    assert len(res["machine"]["loadavg_at_end"]) == 3
    sn = res["softnic"]
    for name, kinds in sn["inprocess"].items():
        for kind in ("hit", "miss"):
            assert kinds[kind]["median_pps"] > 1000, (name, kind)
            v = sn["veth"][name][kind]
            assert v["saturated_delivered_pps"] > 1000, (name, kind, v)
            assert all(s["as_expected"] for s in v["steps"]), (name, kind)
            assert v["max_rate_under_1pct_loss_pps"] >= 5000, (name, kind, v)
    if bmv2_missing():
        assert "simple_switch_grpc" in res["bmv2"]["skipped"] or "p4c-bm2-ss" in \
            res["bmv2"]["skipped"]
    else:
        assert res["bmv2"]["headline"], res["bmv2"]

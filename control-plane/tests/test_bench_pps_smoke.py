"""``p4cache-bench pps --quick``: softnic's side of softnic against BMv2 on the cache's program,
with BMv2 measured or marked skipped (it is not installable here). Root only (veth); about 15 s.
"""

from __future__ import annotations

import os

import pytest

from p4cache_bench.pps import bmv2_missing

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def test_pps_quick(bench_quick) -> None:  # noqa: ANN001 - the conftest's fixture
    # Structure and invariants only: the packet rates are the benchmark's result and fall on a
    # busy machine (run ``p4cache-bench pps`` on a quiet one for them), so no rate is asserted.
    res, _ = bench_quick("pps", plot=False, workdir=False)
    assert len(res["machine"]["loadavg_at_end"]) == 3
    sn = res["softnic"]
    rates = [5000, 20000]                           # --quick's steps, then saturation
    assert set(sn["veth"]) == set(sn["inprocess"]) == {"k16-r100"}
    for name, kinds in sn["inprocess"].items():
        for kind in ("hit", "miss"):
            assert kinds[kind]["median_pps"] > 0, (name, kind)
            v = sn["veth"][name][kind]
            steps = v["steps"]
            assert [st["target_pps"] for st in steps] == [*rates, "saturation"], v
            for st in steps:
                # every frame that came back is the right one (hit: the switch's reply of the
                # stored length; miss: the request forwarded), none twice
                assert st["as_expected"] is True and st["duplicates"] == 0, (name, kind, st)
                assert 0.0 <= st["loss"] <= 1.0 and st["delivered_pps"] >= 0, (name, kind, st)
            for st in steps[:-1]:
                # open loop: never offered faster than asked (1000 frames: at most 1/999 over)
                assert 0 < st["offered_pps"] <= st["target_pps"] * 1.01, (name, kind, st)
            (sweep,) = v["runs"]
            for st in sweep:
                assert st["sent"] + st["send_errors"] == 1000, st
                assert 0 <= st["received"] <= st["sent"], st      # loss allowed, no extras
            assert any(st["received"] > 0 for st in sweep), (name, kind)  # the switch forwards
            assert v["saturated_delivered_pps"] == steps[-1]["delivered_pps"]
            # the max rate is one of the paced steps that met the loss bound, or 0 if none did
            best = v["max_rate_under_1pct_loss_pps"]
            assert best == 0 or best in rates, v
            if best:
                (at,) = [st for st in steps if st["target_pps"] == best]
                assert at["loss"] < 0.01 and v["delivered_at_max_rate_pps"] == \
                    at["delivered_pps"], v
            assert res["softnic"]["headline"][name][kind]["max_rate_under_1pct_loss_pps"] == best
    if bmv2_missing():
        assert "simple_switch_grpc" in res["bmv2"]["skipped"] or "p4c-bm2-ss" in \
            res["bmv2"]["skipped"]
    else:
        assert res["bmv2"]["headline"], res["bmv2"]


def test_pps_quick_with_the_xdp_engine(bench_quick) -> None:  # noqa: ANN001 - the fixture
    from softnic.runtime.xdp.libbpf import missing_requirements

    if missing_requirements():
        pytest.skip("the xdp engine cannot run here: " + "; ".join(missing_requirements()))
    res, _ = bench_quick("pps", "--target", "xdp", plot=False, workdir=False)
    assert res["settings"]["target"] == "xdp" and "softnic" in res
    x = res["xdp"]
    for name, kinds in x["veth"].items():
        for kind in ("hit", "miss"):
            v = kinds[kind]
            assert [st["target_pps"] for st in v["steps"]] == [20000, 60000, "saturation"], v
            # the kernel's replies and forwards are the same frames softnic's engine makes
            assert all(st["as_expected"] and st["duplicates"] == 0 for st in v["steps"]), v
            assert any(st["received"] > 0 for st in v["runs"][0]), (name, kind)
    assert x["sender_ceiling_pps"] > 0

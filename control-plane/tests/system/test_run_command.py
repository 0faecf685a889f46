"""``p4cache run`` (what ``make run`` runs), shortened: up, load, workload, report, down."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_system import assert_clean, p4cache, topology

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


# The rates step (p4cache-loadgen) once, on the xdp engine: it costs ~15 s a run.
@pytest.mark.parametrize("where", [["--no-rates"], ["--target", "xdp", "--placement", "host"]],
                         ids=["softnic", "xdp-host"])
def test_run_reports_and_tears_down(tmp_path: Path, where: list[str]) -> None:
    if "xdp" in where:
        from softnic.runtime.xdp.libbpf import missing_requirements
        if missing_requirements():
            pytest.skip("the xdp engine cannot run here: " + "; ".join(missing_requirements()))
    out = tmp_path / "report"
    r = p4cache("run", *where, "--topo", str(topology(tmp_path)), "--duration", "5", "--rate",
                "250", "--keys", "300", "--out", str(out), run_dir=tmp_path / "run",
                timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for words in ("served by the switch", "load on each server", "linearizable",
                  "where to look next", "torn down"):
        assert words in r.stdout, words
    rep = json.loads((out / "report.json").read_text())
    assert rep["errors"] == []
    assert rep["coherence"]["linearizable"] is True
    assert rep["switch"]["hits"] > 0 and rep["switch"]["promotions"] > 0
    assert set(rep["servers"]) == {"m1", "m2"}
    assert (out / "run.png").stat().st_size > 10_000
    assert_clean(tmp_path / "run", [])
    if "--no-rates" in where:
        assert "rates" not in rep and "GETs per second" not in r.stdout
        return
    # the rates step: p4cache-loadgen's sweep, every GET answered by someone at the lowest rate,
    # and the cache among them (the warm-up promoted its hottest keys; with the adaptive
    # admission threshold it may have promoted every key the sweep asks for, so memcached's
    # share may be 0; the sum below still accounts for every answer)
    rates = rep["rates"]
    assert rates["preloaded"] == 2000 and len(rates["steps"]) == 5
    low = rates["steps"][0]
    assert low["loss"] < 0.05 and low["switch_per_s"] > 0 and low["memcached_per_s"] >= 0, low
    assert low["answered_per_s"] == pytest.approx(low["switch_per_s"] + low["memcached_per_s"],
                                                  rel=0.01)
    assert "GETs per second, open loop" in r.stdout

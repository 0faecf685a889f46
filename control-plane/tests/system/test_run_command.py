"""``p4cache run`` (what ``make run`` runs), shortened: up, load, workload, report, down."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_system import assert_clean, p4cache, topology

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def test_run_reports_and_tears_down(tmp_path: Path) -> None:
    out = tmp_path / "report"
    r = p4cache("run", "--topo", str(topology(tmp_path)), "--duration", "5", "--rate", "250",
                "--keys", "300", "--out", str(out), run_dir=tmp_path / "run", timeout=240)
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

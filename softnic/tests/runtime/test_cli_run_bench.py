"""The ``softnic run`` benchmark runs end to end (tiny counts) and writes well-formed results."""

from __future__ import annotations

import json
from pathlib import Path

from bench.softnic_pps import main
from softnic.netns import require_netns


def test_bench_smoke(tmp_path: Path) -> None:
    require_netns()
    out = tmp_path / "r.json"
    rc = main(["--quick", "--program", "l3", "--veth-count", "300", "--out", str(out),
               "--plot", str(tmp_path / "p.png")])
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["machine"]["cpus"] >= 1
    l3 = res["results"]["l3"]
    assert l3["inprocess"]["median_pps"] > 0
    run = l3["veth"]["runs"][0]
    assert run["sent"] == 300
    assert 0 < run["received"] <= 300
    assert run["ttl_decremented"] is True  # frames really went through the L3 program
    assert l3["veth"]["median_pps"] > 0

"""The `make run` job on a real lab: two memcached servers with agents, softnic, the
controller, two client hosts. Short run; the numbers must add up and the history must be
linearizable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rich.console import Console

from p4cache.controller.status import fetch
from p4cache.demo import report
from p4cache.demo.job import JobSpec, Target, run_job
from p4cache.lab import Lab, LabSpec
from p4cache.lab.lab import MEMCACHED_UDP
from p4cache.lincheck.history import Op
from softnic import netns

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


def test_percentile_picks_ranks() -> None:
    assert report.percentile([], 50) is None
    assert report.percentile([5.0, 1.0, 3.0], 50) == 3.0
    assert report.percentile([float(i) for i in range(1, 101)], 99) == 99.0
    assert report.percentile([1.0, 2.0], 0) == 1.0


def test_the_optimal_share_counts_top_k_keys_after_their_first_get() -> None:
    def get(key: str, t: int) -> Op:
        return Op(client=1, key=key, op="get", call=t, ret=t + 1, result=None)
    # a x4, b x2, c x1, in this order of calls: a a b a b a c
    gets = [get(k, t) for t, k in enumerate("aababac")]
    assert report.optimal_share([], 2) is None
    assert report.optimal_share(gets, 3) == 4 / 7    # a: 3 after its first, b: 1, c: 0
    assert report.optimal_share(gets, 1) == 3 / 7    # only a fits
    assert report.optimal_share(list(reversed(gets)), 1) == 3 / 7, "by call time"
    # a write to a between its 2nd and 3rd GET: the 3rd misses as well
    w = Op(client=1, key="a", op="set", call=2, ret=3, result="ok")
    gets2 = [get(k, t) for t, k in zip([0, 1, 3, 4, 5, 6, 7], "aababac", strict=True)]
    assert report.optimal_share(gets2, 3, [w]) == 3 / 7


def test_job_on_a_lab(tmp_path: Path) -> None:
    with Lab(LabSpec(servers=2, clients=2), tmp_path / "lab") as lab:
        for i in range(2):
            lab.start_agent(i)
        lab.start_controller()
        hosts = {h.name: h.ns for h in lab.servers + lab.clients}
        target = Target({h.name: (h.ip, MEMCACHED_UDP) for h in lab.servers},
                        [h.name for h in lab.clients],
                        lambda name: netns.exec_prefix(hosts[name]),
                        lambda: fetch(f"127.0.0.1:{lab.status_port}"), tmp_path / "lab")
        spec = JobSpec(keys=300, duration=6.0, rate=300.0)
        res = run_job(target, spec, tmp_path / "run", Console(quiet=True))
        s = report.summarize(res)
    assert s["errors"] == []
    gets = s["gets"]["sent"]
    # Poisson arrivals at the requested rate, ~95 % of them GETs, from 2 clients that share a
    # busy machine: they may fall behind the rate (no lower bound but "some"), and cannot run far
    # ahead of it (the slack is > 6 standard deviations of the Poisson count)
    assert 0 < gets <= 2 * spec.rate * spec.duration + spec.keys
    hits = s["switch"]["hits"]
    assert s["switch"]["promotions"] > 0 and hits > 0
    # Every GET answered was answered once: by the switch or by the memcached owning the key
    # (whose count also has the controller's fetches, at most one per promotion or refill).
    answered = gets - s["gets"]["timed_out"]
    fetches = s["switch"]["promotions"] + s["switch"]["refills"]
    seen = hits + s["servers_total_gets"]
    assert answered - 0.01 * gets <= seen <= answered + fetches + 0.01 * gets, s
    assert set(s["servers"]) == {"m1", "m2"} and all(v["cmd_get"] > 0
                                                    for v in s["servers"].values())
    assert s["latency_us"]["hit"]["n"] > 0 and s["latency_us"]["miss"]["n"] > 0
    assert s["coherence"]["linearizable"] is True
    assert s["coherence"]["operations"] >= gets + spec.keys
    path, png = report.write(s, res)
    assert path.exists() and png is not None and png.stat().st_size > 10_000

"""Coherence, end to end: real memcached, softnic, controller and agent in network namespaces,
with the cache on each placement (softnic as the switch; the xdp engine as the switch and on the
server's own interface).

Several recording clients do UDP GETs through the switch and writes over TCP (through the agent's
gate) and UDP (seen by the switch) on a small hot key set, while keys are promoted, evicted (the
controller is given fewer slots than hot keys) and expire (some keys are written with a TTL).
Every key's history must be linearizable (porcupine, p4cache.lincheck). The same run is repeated
with the controller killed and restarted, the agent killed and restarted, and the switch restarted
mid-run; with the gate disabled the checker must find the stale reads.

P4CACHE_COHERENCE_OPS=100000 runs one long steady run of at least that many operations instead of
the short ones (about 10 minutes on two cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from p4cache.lab import Lab, LabSpec
from p4cache.lincheck import check_history
from p4cache.workload.coherence_run import faults_for, run_coherence

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")

LONG_OPS = int(os.environ.get("P4CACHE_COHERENCE_OPS", "0"))
DURATION = 14.0
KEYS = 6
SLOTS = 4          # fewer slots than hot keys: evictions happen
# Mostly UDP GETs so that keys stay cached long enough to be hit between writes; UDP sets are
# rare because each one flushes the whole switch cache (docs/dataplane.md).
MIX = "udp_get=850,tcp_get=50,tcp_set=80,tcp_delete=3,udp_delete=3,udp_set=1"
CLIENT_ARGS = ["--keys", str(KEYS), "--ttl-keys", "2", "--ttl", "4", "--rate", "250",
               "--mix", MIX]


def controller_status(lab: Lab) -> dict:
    """What `p4cache-controller status --json` prints, through the installed command."""
    cmd = Path(sys.executable).parent / "p4cache-controller"
    r = subprocess.run([str(cmd), "status", "--json", "--connect",
                        f"127.0.0.1:{lab.status_port}"],
                       capture_output=True, text=True, timeout=30, check=False)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# Where the cache runs: softnic's Python engine as the switch, the xdp engine as the switch, and
# the xdp engine on the memcached server's own interface (p4cache.topo.placement). softnic runs
# every variant; the xdp placements the restarts the issue names (each run is steady between
# its faults), the host placement the switch restart and the broken gate too, in shorter runs
# (make test's time: about 15 s of lab and check around each run).
SOFTNIC, XDP_SWITCH, XDP_HOST = ("softnic", "switch"), ("xdp", "switch"), ("xdp", "host")
IDS = {SOFTNIC: "softnic", XDP_SWITCH: "xdp-switch", XDP_HOST: "xdp-host"}
XDP_DURATION = 8.0
RUNS = [pytest.param(placed, variant, id=f"{IDS[placed]}-{variant}")
        for placed, variants in (
            (SOFTNIC, ("steady", "controller_restart", "agent_restart", "switch_restart")),
            (XDP_SWITCH, ("controller_restart", "agent_restart")),
            (XDP_HOST, ("controller_restart", "agent_restart", "switch_restart")))
        for variant in variants]


def _skip_without_xdp(target: str) -> None:
    if target == "xdp":
        from softnic.runtime.xdp.libbpf import missing_requirements
        missing = missing_requirements()
        if missing:
            pytest.skip("the xdp engine cannot run here: " + "; ".join(missing))


def bring_up(tmp_path: Path, gate: bool = True, placed: tuple[str, str] = ("softnic", "switch")
             ) -> Lab:
    target, placement = placed
    _skip_without_xdp(target)
    lab = Lab(LabSpec(servers=1, clients=2, slots=SLOTS, target=target, placement=placement),
              tmp_path / "lab")
    lab.up()
    try:
        lab.start_agent(0, *([] if gate else ["--no-gate"]))
        lab.start_controller()
    except BaseException:
        lab.down()
        raise
    return lab


def run_variant(tmp_path: Path, variant: str, duration: float = DURATION,
                client_args: list[str] | None = None, clients_per_host: int = 2,
                check_timeout_s: float = 300.0, placed: tuple[str, str] = ("softnic", "switch")):
    lab = bring_up(tmp_path, gate=(variant != "broken_gate"), placed=placed)
    try:
        result = run_coherence(lab, tmp_path / "run", duration,
                               faults_for(lab, variant, duration),
                               clients_per_host=clients_per_host,
                               client_args=client_args or CLIENT_ARGS)
        status = controller_status(lab) if lab.running("controller") else {}
    finally:
        lab.down()
    assert not result.client_errors, result.client_errors
    verdict = check_history(result.history, timeout_s=check_timeout_s)
    return result, verdict, status


@pytest.mark.skipif(LONG_OPS > 0, reason="the long run replaces the short ones")
@pytest.mark.parametrize(("placed", "variant"), RUNS)
def test_history_is_linearizable(tmp_path: Path, variant: str, placed: tuple[str, str]) -> None:
    # after a switch restart the cache starts empty: the run needs time to fill it again
    duration = DURATION if placed == SOFTNIC or variant == "switch_restart" else XDP_DURATION
    result, verdict, status = run_variant(tmp_path, variant, duration, placed=placed)
    print(variant, result.operations, result.by_op, result.faults, verdict, status)
    assert result.operations > 2000
    assert verdict.ok, verdict
    # The run must have exercised the cache, or it proves nothing.
    assert status["switch_counters"]["hit"] > 150, status
    assert status["promotions"] > 0, status


@pytest.mark.skipif(LONG_OPS > 0, reason="the long run replaces the short ones")
@pytest.mark.parametrize("placed", [pytest.param(p, id=IDS[p]) for p in (SOFTNIC, XDP_HOST)])
def test_broken_gate_is_caught(tmp_path: Path, placed: tuple[str, str]) -> None:
    """With writes forwarded unchecked, switch hits return overwritten values: not linearizable.

    Short on purpose: proving a history is *not* linearizable makes porcupine exhaust every
    ordering up to the violation, which grows fast with the history (a 14 s broken history
    timed out after 5 minutes on one key; 6 s ones are decided in milliseconds)."""
    result, verdict, _ = run_variant(tmp_path, "broken_gate", duration=6.0,
                                     client_args=[*CLIENT_ARGS, "--mix",
                                                  "udp_get=80,tcp_set=20"],
                                     check_timeout_s=120.0, placed=placed)
    assert not verdict.ok, "the checker accepted a history from a cache with no write gate"
    illegal = [k for k, r in verdict.per_key.items() if r.result == "illegal"]
    assert illegal and verdict.violations, verdict
    # What was caught is the stale read the gate exists to prevent: a GET that returned a value
    # an acknowledged write had already replaced.
    v = verdict.violations[0]
    assert all(op["op"] == "get" for op in v["ops"]), v


@pytest.mark.skipif(LONG_OPS == 0, reason="set P4CACHE_COHERENCE_OPS to run the long history")
def test_long_history_is_linearizable(tmp_path: Path) -> None:
    duration = max(60.0, LONG_OPS / 700)
    result, verdict, status = run_variant(tmp_path, "steady", duration=duration)
    print(result.operations, verdict, status)
    assert result.operations >= LONG_OPS
    assert verdict.ok, verdict

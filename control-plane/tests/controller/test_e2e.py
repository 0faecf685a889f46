"""End to end in the lab (p4cache.lab): UDP GETs from a client namespace make a key hot, the
switch reports it (digest), the controller (the real CLI) promotes it through the agent, and
the switch answers the GET itself, byte for byte as memcached did."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from p4cache import dataplane as dp
from p4cache.controller import status as status_mod
from p4cache.lab import Lab, LabSpec
from p4cache.lab.lab import MEMCACHED_TCP_BACKEND

from .conftest import wait_until

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
    pytest.mark.skipif(shutil.which("memcached") is None, reason="memcached not installed"),
]

try:
    import p4cache_agent.cli  # noqa: F401
    REAL_AGENT = True
except ImportError:  # the host agent is not written yet: a stand-in channel (agent_stub.py)
    REAL_AGENT = False

GETS = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
out = []
for i in range(int(sys.argv[3])):
    s.sendto(bytes.fromhex(sys.argv[2]), (sys.argv[1], 11211))
    out.append(s.recv(4096).hex())
print(" ".join(out))
"""

# GETs one at a time until killed, a lost reply only skipped: keeps a key hot in the background
HAMMER_ON = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1)
while True:
    s.sendto(bytes.fromhex(sys.argv[2]), (sys.argv[1], 11211))
    try:
        s.recv(4096)
    except TimeoutError:
        pass
"""

SET = """
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
v = sys.argv[3].encode()
s.sendall(b"set %s 5 0 %d\\r\\n%s\\r\\n" % (sys.argv[2].encode(), len(v), v))
print(s.recv(100))
"""


def start_agent(lab: Lab) -> None:
    h = lab.servers[0]
    if REAL_AGENT:
        lab.start_agent(0)
        return
    # Until p4cache-agent exists: the stand-in agent channel, in the server's namespace.
    stub = Path(__file__).with_name("agent_stub.py")
    lab.popen(h.ns, [sys.executable, str(stub), "--control", h.agent_control,
                     "--memcached", f"127.0.0.1:{MEMCACHED_TCP_BACKEND}"], "agent-stub")


def gets(lab: Lab, key: bytes, n: int, rid: int = 7) -> list[bytes]:
    r = lab.host_run(lab.clients[0], ["python3", "-c", GETS, lab.servers[0].ip,
                                      dp.get_request(rid, key).hex(), str(n)])
    assert r.returncode == 0, r.stderr + lab.log("switch")[-2000:]
    return [bytes.fromhex(x) for x in r.stdout.split()]


def test_a_hot_key_is_promoted_and_answered_by_the_switch(tmp_path: Path) -> None:
    with Lab(LabSpec(servers=1, clients=1), tmp_path) as lab:
        server = lab.servers[0]
        r = lab.host_run(server, ["python3", "-c", SET, str(MEMCACHED_TCP_BACKEND), "hot",
                                  "value-of-hot"])
        assert "STORED" in r.stdout, r.stderr
        start_agent(lab)
        lab.start_controller(epoch_s=0.5)
        addr = f"127.0.0.1:{lab.status_port}"
        wait_until(lambda: status_mod.fetch(addr)["switch"]["connected"], 30, "controller up")
        # Misses, answered by memcached; enough in one epoch (HOT_THRESHOLD) to be reported.
        from_memcached = gets(lab, b"hot", 3 * dp.HOT_THRESHOLD)
        assert from_memcached[0] == dp.get_reply(7, b"VALUE hot 5 12\r\nvalue-of-hot\r\nEND\r\n")
        assert len(set(from_memcached)) == 1

        def filled() -> dict | None:
            st = status_mod.fetch(addr)
            return next((k for k in st["keys"] if k["key"] == "hot"
                         and k["phase"] == "filled"), None)
        k = wait_until(filled, 15, "hot promoted: " + lab.log("controller")[-2000:])
        assert k["server"] == server.ip
        hits0 = status_mod.fetch(addr)["switch_counters"]["hit"]
        # memcached stops: whatever answers now is the switch.
        lab.stop(f"memcached-{server.name}")
        assert gets(lab, b"hot", 5) == [from_memcached[0]] * 5
        wait_until(lambda: status_mod.fetch(addr)["switch_counters"]["hit"] >= hits0 + 5, 10,
                   "cache_stats hit counted")
        st = status_mod.fetch(addr)
        assert st["promotions"] == 1 and st["digests"] >= 1 and st["hit_ratio"] > 0
        assert st["latency"]["promotion"]["p50_ms"] is not None
        print(json.dumps({k: st[k] for k in ("promotions", "digests", "hit_ratio",
                                             "latency")}))
        assert lab.log("controller") == "", "quiet by default"


def test_the_coldest_key_gives_way_only_to_a_hotter_one(tmp_path: Path) -> None:
    with Lab(LabSpec(servers=1, clients=1, slots=1), tmp_path) as lab:
        server = lab.servers[0]
        for key in ("a", "b"):
            r = lab.host_run(server, ["python3", "-c", SET, str(MEMCACHED_TCP_BACKEND), key,
                                      f"value-{key}"])
            assert "STORED" in r.stdout, r.stderr
        start_agent(lab)
        lab.start_controller(epoch_s=0.5)
        addr = f"127.0.0.1:{lab.status_port}"
        wait_until(lambda: status_mod.fetch(addr)["switch"]["connected"], 30, "controller up")

        def cached() -> set[str]:
            return {k["key"] for k in status_mod.fetch(addr)["keys"] if k["phase"] == "filled"}
        gets(lab, b"a", 3 * dp.HOT_THRESHOLD)
        wait_until(lambda: cached() == {"a"}, 15, "a promoted")
        # a is hit steadily (slot_hits counts it) while b becomes hot: b is not hotter. The
        # hammer runs until b was rejected, so a stays hot however late a busy machine gets
        # b's GETs out (a fixed 2 s of hammering before them let a cool down first).
        lab.popen(lab.clients[0].ns, ["python3", "-c", HAMMER_ON, server.ip,
                                      dp.get_request(1, b"a").hex()], "hammer-a")
        try:
            def a_measured_hot() -> bool:
                [e] = [k for k in status_mod.fetch(addr)["keys"] if k["key"] == "a"]
                return e["measured"] and e["hits_per_s"] > 50
            wait_until(a_measured_hot, 30, "a measured hot")

            # The cache is full: the admission threshold follows a's rate up, so b's GETs,
            # fewer in an epoch than a's, are not even reported (or, reported before the
            # threshold moved, are rejected).
            wait_until(lambda: status_mod.fetch(addr)["admission"]["threshold"]
                       > 3 * dp.HOT_THRESHOLD, 10, "the threshold raised above b's GETs")
            reports = status_mod.fetch(addr)["digests"]
            gets(lab, b"b", 3 * dp.HOT_THRESHOLD)
            time.sleep(0.5)
            st = status_mod.fetch(addr)
            assert st["digests"] == reports or st["rejected"] >= 1
            assert cached() == {"a"}
            assert lab.running("hammer-a"), lab.log("hammer-a")  # a was hot all along
        finally:
            lab.kill("hammer-a")
        # a goes quiet; its rate decays epoch by epoch until b, hot again, is hotter.
        def promoted_b() -> bool:
            gets(lab, b"b", 2 * dp.HOT_THRESHOLD)
            return cached() == {"b"}
        wait_until(promoted_b, 40, "b promoted in a's place")
        st = status_mod.fetch(addr)
        assert st["evictions_by_reason"].get("cold") == 1
        assert gets(lab, b"b", 1, rid=9) == [
            dp.get_reply(9, b"VALUE b 5 7\r\nvalue-b\r\nEND\r\n")]


def test_a_crashed_controller_is_replaced_and_keeps_the_cache(tmp_path: Path) -> None:
    with Lab(LabSpec(servers=1, clients=1), tmp_path) as lab:
        server = lab.servers[0]
        r = lab.host_run(server, ["python3", "-c", SET, str(MEMCACHED_TCP_BACKEND), "k", "v1"])
        assert "STORED" in r.stdout, r.stderr
        start_agent(lab)
        lab.start_controller(epoch_s=0.5)
        addr = f"127.0.0.1:{lab.status_port}"
        wait_until(lambda: status_mod.fetch(addr)["switch"]["connected"], 30, "controller up")
        gets(lab, b"k", 3 * dp.HOT_THRESHOLD)
        wait_until(lambda: status_mod.fetch(addr)["cache"]["filled"] == 1, 15, "k promoted")
        lab.stop_controller(crash=True)                       # SIGKILL
        assert gets(lab, b"k", 1, rid=3) == [dp.get_reply(3, b"VALUE k 5 2\r\nv1\r\nEND\r\n")]
        lab.start_controller(epoch_s=0.5)
        st = wait_until(lambda: (lambda s: s["switch"]["connected"] and s["cache"]["filled"] == 1
                                 and s)(status_mod.fetch(addr)), 30, "k recovered")
        assert st["switch"]["pipeline_pushed"] is False, "the running program was kept"
        assert st["keys"][0]["key"] == "k" and st["promotions"] == 1   # the refresh
        lab.stop(f"memcached-{server.name}")
        assert gets(lab, b"k", 1, rid=4) == [dp.get_reply(4, b"VALUE k 5 2\r\nv1\r\nEND\r\n")]


TCP_SET = """
import socket, sys
s = socket.create_connection((sys.argv[1], 11211), timeout=5)
v = sys.argv[3].encode()
s.sendall(b"set %s 5 0 %d\\r\\n%s\\r\\n" % (sys.argv[2].encode(), len(v), v))
print(s.recv(100).decode().strip())
"""


def _xdp_missing() -> str:
    from softnic.runtime.xdp.libbpf import missing_requirements
    return "; ".join(missing_requirements())


# The same scenario where the cache runs: softnic's Python engine as the switch, the xdp engine
# as the switch, and the xdp engine on the memcached server's own interface (no P4 switch: the
# agent's datagrams reach the program through its veth pair, p4cache.topo.placement).
PLACED = [pytest.param("softnic", "switch", id="softnic-switch"),
          pytest.param("xdp", "switch", id="xdp-switch"),
          pytest.param("xdp", "host", id="xdp-host")]


@pytest.mark.skipif(not REAL_AGENT, reason="needs p4cache-agent's write gate")
@pytest.mark.parametrize(("target", "placement"), PLACED)
def test_a_write_through_the_gate_is_never_served_stale_and_is_refilled(
        tmp_path: Path, target: str, placement: str) -> None:
    if target == "xdp" and _xdp_missing():
        pytest.skip(f"the xdp engine cannot run here: {_xdp_missing()}")
    with Lab(LabSpec(servers=1, clients=1, target=target, placement=placement), tmp_path) as lab:
        server, client = lab.servers[0], lab.clients[0]
        start_agent(lab)
        lab.start_controller(epoch_s=0.5)
        addr = f"127.0.0.1:{lab.status_port}"
        wait_until(lambda: status_mod.fetch(addr)["switch"]["connected"], 30, "controller up")

        def tcp_set(value: str) -> None:
            r = lab.host_run(client, ["python3", "-c", TCP_SET, server.ip, "k", value])
            assert r.stdout.strip() == "STORED", r.stderr + lab.log(f"agent-{server.name}")
        tcp_set("v1")
        gets(lab, b"k", 3 * dp.HOT_THRESHOLD)
        wait_until(lambda: status_mod.fetch(addr)["cache"]["filled"] == 1, 15, "k promoted")
        hits = status_mod.fetch(addr)["switch_counters"]["hit"]
        assert gets(lab, b"k", 1, rid=2) == [dp.get_reply(2, b"VALUE k 5 2\r\nv1\r\nEND\r\n")]
        wait_until(lambda: status_mod.fetch(addr)["switch_counters"]["hit"] > hits, 10, "a hit")
        tcp_set("v2")                    # the gate invalidates k at the switch first
        assert gets(lab, b"k", 1, rid=3) == [dp.get_reply(3, b"VALUE k 5 2\r\nv2\r\nEND\r\n")]

        def refilled() -> bool:
            # It misses now, and is reported again, but at most once per data-plane epoch
            # (~1.05 s): the report of its promotion may still hold for this one.
            gets(lab, b"k", 2 * dp.HOT_THRESHOLD)
            return status_mod.fetch(addr)["refills"] >= 1
        wait_until(refilled, 15, "refill")
        lab.stop(f"memcached-{server.name}")
        assert gets(lab, b"k", 1, rid=4) == [dp.get_reply(4, b"VALUE k 5 2\r\nv2\r\nEND\r\n")]

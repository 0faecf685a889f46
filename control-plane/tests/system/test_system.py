"""``p4cache up/exec/status/down`` for real: Mininet namespaces, softnic, memcached, the agents
and the controller, driven through the installed command as a user would.

One system per machine (namespaces p4c-<host>, interfaces s1-eth<port>): these tests remove any
other p4cache system that is up. The topology is the default one with the P4Runtime server moved
to a free port, and the run directory is the test's own.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from p4cache import system as api
from p4cache.system import procs
from p4cache.system.bringup import DEFAULT_TOPOLOGY
from softnic import netns

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")

P4CACHE = str(Path(sys.executable).parent / "p4cache")
PY = sys.executable

UDP_GET = """
import socket, sys
from p4cache import dataplane as dp
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1)
got = 0
for i in range(int(sys.argv[3])):
    s.sendto(dp.get_request(i, sys.argv[2].encode()), (sys.argv[1], 11211))
    try:
        reply = s.recv(2048)
    except OSError:
        continue
    want = b"VALUE " + sys.argv[2].encode() + b" 0 3\\r\\nhot\\r\\nEND\\r\\n"
    assert reply == dp.get_reply(i, want), reply
    got += 1
print(got)
"""

PYMEMCACHE = """
import sys
from pymemcache.client.base import Client
c = Client((sys.argv[1], int(sys.argv[2])), connect_timeout=3, timeout=3)
assert c.set("pm-key", b"pm-value") is True
assert c.get("pm-key") == b"pm-value"
assert c.delete("pm-key") is True
assert c.get("pm-key") is None
print("ok")
"""


def p4cache(*args: str, run_dir: Path, timeout: float = 120, **kw: object
            ) -> subprocess.CompletedProcess:
    return subprocess.run([P4CACHE, "--run-dir", str(run_dir), *args], capture_output=True,
                          text=True, timeout=timeout, check=False, **kw)  # type: ignore[call-overload]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def topology(tmp: Path) -> Path:
    """The default topology with the switch's P4Runtime server on a free port."""
    doc = json.loads(DEFAULT_TOPOLOGY.read_text())
    doc["switches"]["s1"]["grpc_addr"] = f"127.0.0.1:{free_port()}"
    path = tmp / "topology.json"
    path.write_text(json.dumps(doc))
    return path


def links() -> list[str]:
    out = netns.run(["ip", "-o", "link", "show"], check=False)
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines()]


def assert_clean(run_dir: Path, pids: list[int]) -> None:
    assert not [n for n in netns.namespaces() if n.startswith("p4c-")]
    # the switch's ports, management veths, and the host placement's bridge
    assert not [name for name in links() if re.fullmatch(r"s\d+(-eth\d+)?|p4cmgmt\d+", name)]
    assert not [p for p in pids if procs.alive(p)], "processes survived down"
    assert not (run_dir / "state.json").exists()
    mine = re.compile(re.escape(str(run_dir)) + r"/controller[^/]*\.json")
    assert not procs.find(lambda a: any(mine.fullmatch(x) for x in a)), \
        "a controller of this run survived"


def state_pids(run_dir: Path) -> list[int]:
    try:
        doc = json.loads((run_dir / "state.json").read_text())
    except (OSError, ValueError):
        return []
    return [p["pid"] for p in doc["processes"]]


@pytest.mark.skipif(bool(shutil.which("p4c-bm2-ss") and shutil.which("simple_switch_grpc")),
                    reason="BMv2 is installed here")
def test_bmv2_without_its_tools_says_what_is_missing(tmp_path: Path) -> None:
    r = p4cache("up", "--target", "bmv2", run_dir=tmp_path, timeout=30)
    assert r.returncode == 2
    assert "simple_switch_grpc" in r.stderr or "p4c-bm2-ss" in r.stderr
    assert "softnic" in r.stderr and "default" in r.stderr


def test_p4cache_up_target_bmv2(p4c_on_path: Path, tmp_path: Path) -> None:
    """``p4cache up --target bmv2`` to a complete system and down again, with the stand-ins
    (the switch is Mininet's SimpleSwitchGrpc, its command line simple_switch_grpc's)."""
    # the stand-in's output goes to a build directory of its own, never to build/
    env = {**os.environ, "P4CACHE_BUILD_DIR": str(tmp_path / "build")}
    run_dir = tmp_path / "run"
    try:
        up = p4cache("up", "--target", "bmv2", "--topo", str(topology(tmp_path)),
                     run_dir=run_dir, timeout=240, env=env)
        assert up.returncode == 0, up.stderr
        status = p4cache("status", "--json", run_dir=run_dir, env=env)
        assert status.returncode == 0, status.stderr
        assert "bmv2" in status.stdout
        pids = state_pids(run_dir)
    finally:
        down = p4cache("down", run_dir=run_dir, env=env)
    assert down.returncode == 0, down.stderr
    assert_clean(run_dir, pids)
    args = p4c_on_path.read_text().splitlines()
    assert args[args.index("--p4runtime-files") + 1].endswith("/p4cache.p4info.txt")


def test_a_bad_topology_is_refused_with_the_reason(tmp_path: Path) -> None:
    r = p4cache("up", "--topo", str(tmp_path / "missing.json"), run_dir=tmp_path, timeout=30)
    assert r.returncode == 2 and "missing.json" in r.stderr


def up_until(run_dir: Path, topo: Path, process: str, sig: int
             ) -> tuple[subprocess.Popen, list[int]]:
    """Start ``p4cache up`` and send it ``sig`` once it has recorded ``process``; return it and
    the pids it had recorded then."""
    # Started as a terminal starts it, with SIGINT at its default: a test run launched in the
    # background of a non-interactive shell inherits SIGINT ignored (POSIX), and Python keeps it so
    p = subprocess.Popen([P4CACHE, "--run-dir", str(run_dir), "up", "--topo", str(topo)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and p.poll() is None:
            try:
                names = [x["name"] for x in
                         json.loads((run_dir / "state.json").read_text())["processes"]]
            except (OSError, ValueError, KeyError):
                names = []
            if process in names:
                break
            time.sleep(0.02)
        assert p.poll() is None, "up finished before it could be interrupted"
        pids = state_pids(run_dir)
        p.send_signal(sig)
        p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
    return p, pids


def test_ctrl_c_during_up_removes_what_was_started(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    p, pids = up_until(run_dir, topology(tmp_path), "memcached-m2", signal.SIGINT)
    assert p.returncode == 130, p.stderr.read() if p.stderr else ""
    assert len(pids) >= 3
    assert_clean(run_dir, pids)


def test_up_killed_midway_is_removed_by_the_next_up(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    topo = topology(tmp_path)
    _, left = up_until(run_dir, topo, "agent-m1", signal.SIGKILL)
    assert any(procs.alive(pid) for pid in left)
    assert [n for n in netns.namespaces() if n.startswith("p4c-")]
    try:
        r = p4cache("up", "--topo", str(topo), run_dir=run_dir)
        assert r.returncode == 0, r.stderr
        assert "removed leftovers" in r.stderr
        assert "10.0.0.101/24" in r.stdout and "memcached" in r.stdout  # the hosts' table
        assert not [pid for pid in left if procs.alive(pid)]
        st = p4cache("status", "--json", run_dir=run_dir)
        assert st.returncode == 0, st.stdout + st.stderr
        left += state_pids(run_dir)
    finally:
        r = p4cache("down", run_dir=run_dir)
    assert r.returncode == 0, r.stderr
    assert_clean(run_dir, left)


def _xdp_missing() -> str:
    from softnic.runtime.xdp.libbpf import missing_requirements
    return "; ".join(missing_requirements())


# Every test below runs on each way to place the cache: softnic's Python engine as the switch,
# the xdp engine as the switch, and the xdp engine on each server's own interface (no P4 switch,
# one program and controller per server: p4cache.topo.placement).
@pytest.fixture(scope="module", params=[("softnic", "switch"), ("xdp", "switch"), ("xdp", "host")],
                ids=["softnic", "xdp-switch", "xdp-host"])
def system(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    target, placement = request.param
    if target == "xdp" and _xdp_missing():
        pytest.skip(f"the xdp engine cannot run here: {_xdp_missing()}")
    tmp = tmp_path_factory.mktemp("system")
    run_dir = tmp / "run"
    try:
        # the Python API (what `make run` uses); the command line's `up` is tested above
        st = api.up(topo_path=topology(tmp), run_dir=run_dir, slots=64, target=target,
                    placement=placement)
        assert st.complete and [s.name for s in st.servers] == ["m1", "m2"]
        assert (st.target, st.placement) == (target, placement)
        yield run_dir
    finally:
        api.down(run_dir=run_dir)


def on_host(run_dir: Path) -> bool:
    return api.RunState.load(run_dir).placement == "host"


def expected_processes(run_dir: Path) -> set[str]:
    servers = {f"{p}-{m}" for p in ("memcached", "agent") for m in ("m1", "m2")}
    if on_host(run_dir):   # a program and a controller per server
        return servers | {f"{p}-{m}" for p in ("switch", "controller") for m in ("m1", "m2")}
    return servers | {"switch-s1", "controller"}


def test_python_api_reads_the_running_system(system: Path) -> None:
    st = api.RunState.load(system)
    assert [c.name for c in st.clients] == ["c1", "c2"]
    m1 = st.servers[0]
    assert (m1.ns, m1.ip, m1.mac, m1.role) == ("p4c-m1", "10.0.0.1", "02:00:00:00:00:01",
                                                "memcached")
    assert (m1.udp_port, m1.tcp_port, m1.backend_port) == (11211, 11211, 11212)
    assert m1.memcached_addr == "10.0.0.1:11211"
    assert st.exec_prefix("c1") == ["ip", "netns", "exec", "p4c-c1"]
    r = subprocess.run([*st.exec_prefix("c1"), "ip", "-4", "-o", "addr"], capture_output=True,
                       text=True, check=False)
    assert "10.0.0.101/24" in r.stdout
    assert st.controller_status()["switch"]["connected"]
    logs = ["controller-m1.log", "controller-m2.log"] if on_host(system) else ["controller.log"]
    assert all((st.log_dir / log).exists() for log in logs)
    with pytest.raises(api.NotUp):
        api.RunState.load(system.parent / "elsewhere")


def test_status_json_describes_the_system(system: Path) -> None:
    r = p4cache("status", "--json", run_dir=system)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["up"] and doc["healthy"] and doc["complete"]
    hosts = {h["name"]: h for h in doc["hosts"]}
    assert set(hosts) == {"m1", "m2", "c1", "c2"}
    assert hosts["m1"]["ip"] == "10.0.0.1" and hosts["m1"]["udp_port"] == 11211
    assert hosts["m1"]["tcp_port"] == 11211 and hosts["m1"]["backend_port"] == 11212
    assert hosts["c1"]["role"] == "client" and hosts["c1"]["ns"] == "p4c-c1"
    assert all(h["ns_present"] for h in hosts.values())
    assert {p["name"] for p in doc["processes"]} == expected_processes(system)
    ctl = doc["controller"]
    assert ctl["switch"]["connected"] and ctl["switch"]["pipeline_pushed"]
    # the host placement: two controllers, 64 slots each, one status
    assert ctl["cache"]["slots"] == (128 if on_host(system) else 64)
    assert len(doc["controllers"]) == (2 if on_host(system) else 1)
    # the P4Runtime servers: the switch's, or one per server's program on its management address
    grpc = doc["grpc_addr"].split(", ")
    assert len(grpc) == (2 if on_host(system) else 1) and all(a.endswith(":9559") or not
                                                              on_host(system) for a in grpc)
    assert sorted(a["name"] for a in ctl["agents"] if a["up"]) == ["m1", "m2"]


def test_exec_runs_in_the_host_and_passes_exit_codes_and_stdin(system: Path) -> None:
    r = p4cache("exec", "c1", "--", "ip", "-4", "-o", "addr", "show", "eth0", run_dir=system)
    assert r.returncode == 0 and "10.0.0.101/24" in r.stdout
    assert p4cache("exec", "c1", "--", "sh", "-c", "exit 7", run_dir=system).returncode == 7
    r = p4cache("exec", "m2", "--", "cat", run_dir=system, input="through stdin")
    assert r.stdout == "through stdin"
    r = p4cache("exec", "nohost", "--", "true", run_dir=system)
    assert r.returncode == 2 and "c1" in r.stderr
    for dst in ("10.0.0.1", "10.0.0.2", "10.0.0.102"):
        r = p4cache("exec", "c1", "--", "ping", "-c1", "-W2", dst, run_dir=system)
        assert r.returncode == 0, r.stdout + r.stderr


def test_memcached_backend_port_is_closed_to_other_hosts(system: Path) -> None:
    code = "import socket; socket.create_connection(('10.0.0.1', 11212), 1)"
    assert p4cache("exec", "c1", "--", PY, "-c", code, run_dir=system).returncode != 0
    local = "import socket; socket.create_connection(('127.0.0.1', 11212), 1)"
    assert p4cache("exec", "m1", "--", PY, "-c", local, run_dir=system).returncode == 0


def test_pymemcache_through_the_agents_gate(system: Path) -> None:
    for server in ("10.0.0.1", "10.0.0.2"):
        r = p4cache("exec", "c1", "--", PY, "-c", PYMEMCACHE, server, "11211", run_dir=system)
        assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def test_libmemcached_tools_from_a_client(system: Path, tmp_path: Path) -> None:
    srv = "--servers=10.0.0.1:11211"
    (tmp_path / "lm-key").write_text("from memccp\n")
    r = p4cache("exec", "c1", "--", "memccp", srv, "lm-key", run_dir=system, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = p4cache("exec", "c2", "--", "memccat", srv, "lm-key", run_dir=system)
    # memccat ends what it prints with a newline of its own
    assert r.returncode == 0 and r.stdout.rstrip("\n") == "from memccp", r.stderr
    assert p4cache("exec", "c1", "--", "memcrm", srv, "lm-key", run_dir=system).returncode == 0
    assert p4cache("exec", "c2", "--", "memccat", srv, "lm-key", run_dir=system).returncode != 0
    assert p4cache("exec", "c1", "--", "memcflush", srv, run_dir=system).returncode == 0


def test_a_hot_key_is_answered_by_the_switch(system: Path) -> None:
    def hits() -> int:
        r = p4cache("status", "--json", run_dir=system)
        return json.loads(r.stdout)["controller"]["switch_counters"]["hit"]

    setter = ("from pymemcache.client.base import Client; "
              "Client(('10.0.0.2', 11211)).set('hk', b'hot')")
    assert p4cache("exec", "c1", "--", PY, "-c", setter, run_dir=system).returncode == 0
    before = hits()
    # Every reply must be the right value, whoever answers it (memcached or the switch).
    r = p4cache("exec", "c1", "--", PY, "-c", UDP_GET, "10.0.0.2", "hk", "200", run_dir=system)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) >= 190
    deadline = time.monotonic() + 10
    while hits() - before < 50 and time.monotonic() < deadline:
        p4cache("exec", "c1", "--", PY, "-c", UDP_GET, "10.0.0.2", "hk", "50", run_dir=system)
    assert hits() - before >= 50


def test_down_removes_everything(system: Path) -> None:
    pids = state_pids(system)
    assert len(pids) == len(expected_processes(system))
    r = p4cache("down", run_dir=system)
    assert r.returncode == 0, r.stderr
    assert_clean(system, pids)
    again = p4cache("down", run_dir=system)
    assert again.returncode == 0 and "nothing was up" in again.stderr
    st = p4cache("status", "--json", run_dir=system)
    assert st.returncode == 3 and json.loads(st.stdout)["up"] is False


def test_down_removes_an_empty_switch_bridge_left_without_state(tmp_path: Path) -> None:
    """The host placement's bridge (named like the switch) survives a lost state file only until
    the next down or up; a bridge that still has ports is somebody else's and stays."""
    from p4cache.system import teardown

    try:
        netns.run(["ip", "link", "add", "s97", "type", "bridge"])
        netns.run(["ip", "link", "add", "s98", "type", "bridge"])
        netns.run(["ip", "link", "add", "p4ctport", "type", "veth", "peer", "name", "p4ctpeer"])
        netns.run(["ip", "link", "set", "p4ctport", "master", "s98"])
        removed = teardown.remove(tmp_path / "no-run")
        assert "bridge s97" in removed and "s97" not in links()
        assert "s98" in links()
    finally:
        for link in ("s97", "s98", "p4ctport"):
            netns.delete_link(link)

"""``softnic-demo`` (what ``make run`` runs): run as a user runs it, over real namespaces.

The end-to-end tests need root for the namespaces and skip with the reason otherwise; the file
parsing tests run anywhere.
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
from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2

from softnic.demo import (
    BMV2_TOOLS,
    DEFAULT_TOPO,
    EXIT_SKIPPED,
    DemoError,
    load_topology,
    render_match,
)
from softnic.netns import require_netns

DEMO = Path(sys.executable).parent / "softnic-demo"
ROW = re.compile(r"(h\d) -> (h\d)\s*[│|]\s*(ping|udp echo)\s*[│|]\s*(\d+)\s*[│|]\s*(\d+)\s*[│|]")
MF = p4info_pb2.MatchField


def demo_env() -> dict[str, str]:
    # wide enough that rich does not wrap the table rows the tests parse
    return {**os.environ, "COLUMNS": "200", "PYTHONIOENCODING": "utf-8"}


def leftovers(pid: int) -> list[str]:
    """Namespaces a demo process with this pid created and left behind."""
    res = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return [line.split()[0] for line in res.stdout.splitlines()
            if line.startswith(f"snt{pid}x")]


def test_console_script_installed() -> None:
    assert DEMO.is_file(), "softnic-demo missing: reinstall the project (pip install -e .)"


def test_demo_all_pairs_reachable(tmp_path: Path) -> None:
    require_netns()
    proc = subprocess.Popen([str(DEMO), "--build-dir", str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=demo_env())
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out + err
    rows = {(m[0], m[1], m[2]): (int(m[3]), int(m[4])) for m in ROW.findall(out)}
    hosts = ["h1", "h2", "h3"]
    pings = {(a, b) for a in hosts for b in hosts if a != b}
    assert {(a, b) for a, b, kind in rows if kind == "ping"} == pings
    for (a, b, kind), (sent, received) in rows.items():
        assert sent > 0 and received > 0, f"{a} -> {b} {kind}: nothing came back"
    assert rows[("h1", "h3", "udp echo")][0] == 20
    assert "Result: all 6 host pairs reachable" in out
    # the counters were read over P4Runtime and saw the traffic
    assert re.search(r"Counter MyIngress\.rx_port, read back over P4Runtime, counted [1-9]", out)
    assert "memcached cache itself" in out and "not built yet" in out.lower()
    assert (tmp_path / "basic.json").is_file() and (tmp_path / "basic.p4info.txt").is_file()
    assert "Traceback" not in err
    assert leftovers(proc.pid) == []


def test_exit_1_when_traffic_does_not_pass(tmp_path: Path) -> None:
    """Without a route to h3 the pairs with h3 get no replies: reported, and exit code 1."""
    require_netns()
    topo = tmp_path / "topo"
    shutil.copytree(DEFAULT_TOPO, topo)
    runtime = json.loads((topo / "s1-runtime.json").read_text())
    runtime["table_entries"] = [e for e in runtime["table_entries"]
                                if e.get("action_params", {}).get("port") != 3]
    (topo / "s1-runtime.json").write_text(json.dumps(runtime))
    proc = subprocess.Popen([str(DEMO), "--topo", str(topo), "--build-dir", str(tmp_path / "b"),
                             "--ping-count", "1", "--udp-count", "2"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=demo_env())
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, out + err
    rows = {(m[0], m[1], m[2]): (int(m[3]), int(m[4])) for m in ROW.findall(out)}
    assert rows[("h1", "h2", "ping")] == (1, 1) and rows[("h2", "h1", "ping")] == (1, 1)
    assert rows[("h1", "h3", "ping")] == (1, 0) and rows[("h3", "h2", "ping")] == (1, 0)
    assert rows[("h1", "h3", "udp echo")] == (2, 0)
    assert "traffic did not pass" in out and "h1->h3 (ping)" in out
    assert leftovers(proc.pid) == []


def test_sigterm_tears_everything_down(tmp_path: Path) -> None:
    require_netns()
    proc = subprocess.Popen([str(DEMO), "--build-dir", str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=demo_env())
    assert proc.stderr is not None
    grpc_port = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        m = re.search(r"ok start softnic switch s1 \(P4Runtime on 127\.0\.0\.1:(\d+)\)", line)
        if m:
            grpc_port = int(m.group(1))
            break
    assert grpc_port is not None, "the demo never reported its switch as started"
    assert leftovers(proc.pid), "namespaces should exist while the demo runs"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "interrupted" in err and "Traceback" not in err
    assert leftovers(proc.pid) == []
    with pytest.raises(OSError):  # the switch is gone: nothing listens on its P4Runtime port
        socket.create_connection(("127.0.0.1", grpc_port), timeout=1).close()


def test_bmv2_target_says_it_is_skipped(tmp_path: Path) -> None:
    if all(shutil.which(t) for t in BMV2_TOOLS):
        pytest.skip("BMv2 is installed here; the skip path cannot be exercised")
    res = subprocess.run([str(DEMO), "--target", "bmv2", "--build-dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=60, env=demo_env())
    assert res.returncode == EXIT_SKIPPED
    assert "not found on PATH" in res.stdout and "Skipped" in res.stdout
    assert not any(tmp_path.iterdir())  # nothing was compiled


def test_load_topology_reads_the_l3_demo() -> None:
    spec = load_topology(DEFAULT_TOPO)
    assert [(h.name, h.ip, h.port) for h in spec.hosts] == [
        ("h1", "10.0.1.1/24", 1), ("h2", "10.0.2.2/24", 2), ("h3", "10.0.3.3/24", 3)]
    assert spec.switch == "s1" and spec.runtime_json == DEFAULT_TOPO / "s1-runtime.json"
    assert any("nud permanent" in c for c in spec.commands["h1"])  # static ARP for the gateway


def test_load_topology_uses_link_ports(tmp_path: Path) -> None:
    topo = json.loads((DEFAULT_TOPO / "topology.json").read_text())
    topo["links"] = [["s1-p7", "h1"], ["h2", "s1-p2"], ["h3", "s1-p5"]]
    (tmp_path / "topology.json").write_text(json.dumps(topo))
    assert [h.port for h in load_topology(tmp_path).hosts] == [7, 2, 5]


@pytest.mark.parametrize("links, message", [
    ([["h1", "s1-p1"], ["h2", "s2-p2"], ["h3", "s1-p3"]], "is not [host, s1-pN]"),
    ([["h1", "s1-p1"], ["h2", "s1-p2"]], "host h3 has no link to s1"),
])
def test_load_topology_rejects_bad_links(tmp_path: Path, links: list, message: str) -> None:
    topo = json.loads((DEFAULT_TOPO / "topology.json").read_text())
    topo["links"] = links
    (tmp_path / "topology.json").write_text(json.dumps(topo))
    with pytest.raises(DemoError, match=re.escape(message)):
        load_topology(tmp_path)


@pytest.mark.parametrize("value, match_type, expected", [
    (["10.0.1.1", 32], MF.LPM, "10.0.1.1/32"),
    (["10.0.0.0", "255.0.0.0"], MF.TERNARY, "10.0.0.0&&&255.0.0.0"),
    ([10, 20], MF.RANGE, "10..20"),
    ("08:00:00:00:01:11", MF.EXACT, "08:00:00:00:01:11"),
    (6, MF.EXACT, "6"),
])
def test_render_match(value: object, match_type: int, expected: str) -> None:
    assert render_match(value, match_type) == expected


def test_render_match_rejects_wrong_shape() -> None:
    with pytest.raises(DemoError, match="does not fit match type LPM"):
        render_match("10.0.1.1", MF.LPM)
    with pytest.raises(DemoError, match="does not fit match type EXACT"):
        render_match(["10.0.1.1", 32], MF.EXACT)

"""The lab itself: hosts reach memcached through the switch, and nothing is left behind."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from p4cache import dataplane as dp
from p4cache.lab import Lab, LabSpec
from p4cache.lab import lab as labmod
from softnic import netns

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")

UDP_GET = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
s.sendto(bytes.fromhex(sys.argv[2]), (sys.argv[1], 11211))
print(s.recv(2048).hex())
"""


def push_forwarding(lab: Lab) -> None:
    import p4runtime_sh.shell as sh

    cfg = lab.controller_config()
    sh.setup(device_id=0, grpc_addr=lab.grpc_addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(cfg["program"]["p4info"], cfg["program"]["bmv2_json"]))
    try:
        for e in cfg["table_entries"]:
            te = sh.TableEntry(e["table"])(action=e["action_name"])
            for k, v in e["match"].items():
                te.match[k] = str(v)
            for k, v in e["action_params"].items():
                te.action[k] = str(v)
            te.insert()
    finally:
        sh.teardown()


def test_udp_and_tcp_reach_memcached_through_the_switch(tmp_path: Path) -> None:
    with Lab(LabSpec(servers=1, clients=1), tmp_path) as lab:
        push_forwarding(lab)
        server, client = lab.servers[0], lab.clients[0]
        # TCP to the backend port is closed to other hosts (the gate's job), open locally.
        r = lab.host_run(client, ["python3", "-c",
                                  "import socket,sys; socket.create_connection"
                                  "((sys.argv[1], 11212), 1)", server.ip])
        assert r.returncode != 0
        r = lab.host_run(server, ["python3", "-c",
                                  "import socket; s=socket.create_connection(('127.0.0.1', 11212));"
                                  "s.sendall(b'set k 0 0 2\\r\\nhi\\r\\n'); print(s.recv(100))"])
        assert "STORED" in r.stdout, r.stderr
        r = lab.host_run(client, ["python3", "-c", UDP_GET, server.ip,
                                  dp.get_request(7, b"k").hex()])
        assert r.returncode == 0, r.stderr + lab.log("switch")
        assert bytes.fromhex(r.stdout.strip()) == dp.get_reply(7, b"VALUE k 0 2\r\nhi\r\nEND\r\n")
    assert not [n for n in netns.namespaces() if n.startswith(lab.tag)]


def test_a_killed_lab_is_removed_by_the_next(tmp_path: Path) -> None:
    code = ("import sys, os, pathlib; from p4cache.lab import Lab, LabSpec;"
            "lab = Lab(LabSpec(servers=1, clients=1), pathlib.Path(sys.argv[1])); lab.up();"
            "print(lab.tag, flush=True); os._exit(0)")
    r = subprocess.run([os.sys.executable, "-c", code, str(tmp_path / "dead")],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    tag = r.stdout.strip()
    assert [n for n in netns.namespaces() if n.startswith(tag + "-")]
    recorded = (labmod.RUN_DIR / f"{tag}.pids").read_text().splitlines()
    pids = [int(line.split()[0]) for line in recorded]
    assert len(pids) == 2  # softnic and memcached
    removed = labmod.remove_stale()
    assert any(n.startswith(tag) for n in removed)
    for pid in pids:
        status = Path(f"/proc/{pid}/status")
        assert not status.exists() or b"zombie" in status.read_bytes().lower()
    assert not [n for n in netns.namespaces() if n.startswith(tag + "-")]
    links = netns.run(["ip", "-o", "link", "show"])
    assert tag not in links

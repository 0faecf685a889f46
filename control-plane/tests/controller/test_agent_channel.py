"""The controller with the real p4cache-agent's control channel (no data-plane ports here: the
agent's own invalidations go nowhere, its fetch/unwatch/sync/status are what is tested)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from p4cache.controller.worker import Controller

from .conftest import config_dict, free_port, make_config, wait_until
from .test_promote import filled, mc_set

pytest.importorskip("p4cache_agent.cli")
AGENT = Path(sys.executable).parent / "p4cache-agent"
SERVER_IP = "10.0.0.1"


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


class RealAgent:
    def __init__(self, memcached: tuple[str, int], log: Path) -> None:
        self.control = f"127.0.0.1:{free_port()}"
        self.argv = [str(AGENT), "--listen", f"127.0.0.1:{free_port()}",
                     "--memcached", f"{memcached[0]}:{memcached[1]}",
                     "--switch", f"127.0.0.1:{free_port()}", "--control", self.control]
        self.log = log
        self.proc: subprocess.Popen | None = None
        self.memcached = memcached

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, stdout=open(self.log, "ab"),  # noqa: SIM115
                                     stderr=subprocess.STDOUT)
        host, _, port = self.control.rpartition(":")
        wait_until(lambda: _listening(host, int(port)), 10, "agent control channel")

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(5)

    def watch(self) -> dict:
        """The agent's watch set state, asked on a connection of its own (a probe through
        AgentClient would sync first and so redefine W)."""
        host, _, port = self.control.rpartition(":")
        with socket.create_connection((host, int(port)), timeout=2) as s:
            s.sendall(b'{"id":1,"op":"status"}\n')
            buf = b""
            while not buf.endswith(b"\n"):
                buf += s.recv(65536)
        return json.loads(buf)["status"]["watch"]


@pytest.fixture
def real_agent(memcached, tmp_path: Path) -> Iterator[RealAgent]:
    a = RealAgent(memcached, tmp_path / "agent.log")
    a.start()
    yield a
    a.kill()


def test_promotion_restart_and_ttl_with_the_real_agent(tmp_path, softnic, pipeline,
                                                       real_agent) -> None:
    class Keys:  # mc_set wants an object with .memcached
        memcached = real_agent.memcached
    mc_set(Keys, "a", b"1", ttl=5)
    cfg = make_config(tmp_path, config_dict(softnic.addr, pipeline, real_agent.control,
                                            ttl_margin_s=2.0))
    ctl = Controller(cfg, pipeline)
    ctl.start()
    try:
        assert ctl.ready.wait(30)
        wait_until(lambda: real_agent.watch() == {"known": True, "keys": 0}, 10, "synced")
        ctl.inject_digest(SERVER_IP, b"a")
        k = wait_until(filled(ctl, b"a"), 10, "a filled")
        assert k["ttl"] in (4, 5)
        assert real_agent.watch() == {"known": True, "keys": 1}
        real_agent.kill()
        real_agent.start()                      # W unknown until the controller syncs it
        wait_until(lambda: real_agent.watch() == {"known": True, "keys": 1}, 10, "resynced")
        wait_until(lambda: ctl.status()["evictions_by_reason"].get("ttl") == 1, 10, "ttl")
        wait_until(lambda: real_agent.watch() == {"known": True, "keys": 0}, 10, "unwatched")
    finally:
        ctl.stop()

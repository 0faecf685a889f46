"""Real parts for the controller's tests: ``softnic run --no-p4`` (P4Runtime only, no ports),
the compiled p4cache program, a real memcached, and the agent channel (a stand-in until
p4cache-agent lands)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from p4cache import program
from p4cache.controller.config import Config, parse
from p4cache.controller.p4rt import PipelineFiles
from p4cache.controller.worker import Controller

from .agent_stub import AgentStub

SERVER_IP = "10.0.0.1"
SERVER_PORT = 1
SOFTNIC = Path(sys.executable).parent / "softnic"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(cond: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class SoftnicProc:
    """``softnic run --no-p4`` on a loopback gRPC port; restartable on the same port."""

    def __init__(self, log_dir: Path) -> None:
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.log_dir = log_dir
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        log = open(self.log_dir / f"softnic-{self.starts}.log", "w")  # noqa: SIM115
        self.proc = subprocess.Popen([str(SOFTNIC), "run", "--no-p4", "--grpc-server-addr",
                                      self.addr, "--cpu-port", "255"],
                                     stdout=log, stderr=subprocess.STDOUT)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"softnic exited: {self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("softnic did not listen")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def log(self) -> str:
        return (self.log_dir / f"softnic-{self.starts}.log").read_text()[-3000:]


@pytest.fixture
def softnic(tmp_path: Path) -> Iterator[SoftnicProc]:
    sw = SoftnicProc(tmp_path)
    sw.start()
    yield sw
    sw.stop()


@pytest.fixture(scope="session")
def pipeline() -> PipelineFiles:
    prog = program.build()
    return PipelineFiles(prog.json_path, prog.p4info_path)


@pytest.fixture
def memcached() -> Iterator[tuple[str, int]]:
    if shutil.which("memcached") is None:
        pytest.skip("memcached is not installed")
    port = free_port()
    proc = subprocess.Popen(["memcached", "-p", str(port), "-U", "0", "-l", "127.0.0.1",
                             "-t", "1", "-m", "16", "-u", "root"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: _listening(port), 10, "memcached")
    yield ("127.0.0.1", port)
    proc.kill()
    proc.wait(5)


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@pytest.fixture
def agent(memcached: tuple[str, int]) -> Iterator[AgentStub]:
    a = AgentStub(memcached)
    yield a
    a.close()


def config_dict(grpc: str, pipeline: PipelineFiles, agent_addr: str, **cache: Any
                ) -> dict[str, Any]:
    return {
        "switch": {"grpc": grpc, "device_id": 0, "election_id": [0, 1], "cpu_port": 255},
        "program": {"bmv2_json": str(pipeline.bmv2_json), "p4info": str(pipeline.p4info)},
        "servers": [{"name": "m1", "ip": SERVER_IP, "mac": "02:00:00:00:00:01",
                     "switch_port": SERVER_PORT, "agent": agent_addr}],
        "clients": ["10.0.0.0/24"],
        "table_entries": [{"table": "CacheIngress.forwarding.l2_forward",
                           "match": {"dst_addr": "02:00:00:00:00:01"},
                           "action_name": "CacheIngress.forwarding.bridge",
                           "action_params": {"port": SERVER_PORT}}],
        "cache": {"epoch_s": 0.5, **cache},
        "status_listen": f"127.0.0.1:{free_port()}",
    }


def make_config(tmp_path: Path, d: dict[str, Any]) -> Config:
    path = tmp_path / "controller.json"
    path.write_text(json.dumps(d, indent=2))
    return parse(d, path)


@pytest.fixture
def make_controller(tmp_path: Path, softnic: SoftnicProc, pipeline: PipelineFiles,
                    agent: AgentStub) -> Iterator[Callable[..., Controller]]:
    made: list[Controller] = []

    def make(**cache: Any) -> Controller:
        cfg = make_config(tmp_path, config_dict(softnic.addr, pipeline, agent.addr, **cache))
        ctl = Controller(cfg, pipeline)
        ctl.start()
        made.append(ctl)
        assert ctl.ready.wait(30), f"controller did not connect: {ctl.last_error}"
        return ctl

    yield make
    for c in made:
        c.stop()

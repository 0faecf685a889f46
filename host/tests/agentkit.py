"""Real parts for the agent's tests (shared by conftest.py and the test modules): memcached
1.6.18 on free loopback ports, the agent as its own process (the p4cache-agent entry point),
plain sockets and JSON lines to talk to them."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

MEMCACHED = shutil.which("memcached") or "/usr/bin/memcached"


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"{what} did not listen on {port}")


class Memcached:
    def __init__(self, *extra: str) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen([MEMCACHED, "-p", str(self.port), "-U", "0", "-l",
                                      "127.0.0.1", "-t", "2", "-m", "64", "-u", "root", *extra],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(self.port, self.proc, "memcached")

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(5)


class Agent:
    """p4cache-agent in front of ``memcached``. Without a switch (``switch`` None) control
    datagrams go to a loopback port nobody listens on: the switch is unreachable."""

    def __init__(self, memcached: Memcached, log: Path, *extra: str,
                 switch: str | None = None) -> None:
        self.port = free_port()
        self.control_port = free_port()
        self.memcached = memcached
        if switch is None:
            switch = f"127.0.0.1:{free_port(socket.SOCK_DGRAM)}"
        self.log = log
        argv = [str(Path(sys.executable).parent / "p4cache-agent"),
                "--listen", f"127.0.0.1:{self.port}", "--memcached", memcached.addr,
                "--switch", switch, "--control", f"127.0.0.1:{self.control_port}", *extra]
        with open(log, "ab") as fh:
            self.proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT)
        wait_listening(self.port, self.proc, "p4cache-agent")
        wait_listening(self.control_port, self.proc, "p4cache-agent control")
        self._ctl: Control | None = None

    @property
    def control(self) -> Control:
        if self._ctl is None:
            self._ctl = Control(self.control_port)
        return self._ctl

    def stop(self) -> None:
        if self._ctl is not None:
            self._ctl.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def alive(self) -> bool:
        return self.proc.poll() is None


class Control:
    """The controller's side of the control channel, one request at a time."""

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        self.buf = b""
        self.ids = 0

    def send(self, req: dict) -> int:
        self.ids += 1
        self.sock.sendall(json.dumps({"id": self.ids, **req}).encode() + b"\n")
        return self.ids

    def reply(self) -> dict:
        while b"\n" not in self.buf:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("control channel closed")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def call(self, req: dict) -> dict:
        rid = self.send(req)
        rep = self.reply()
        assert rep.pop("id") == rid, rep
        return rep

    def close(self) -> None:
        self.sock.close()


def exchange(port: int, data: bytes, quiet: float = 0.3, timeout: float = 20.0,
             chunks: list[bytes] | None = None) -> bytes:
    """Send ``data`` (or ``chunks`` one by one), then read until the connection has been quiet
    for ``quiet`` seconds or is closed; b"<EOF>" marks a close."""
    out = bytearray()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for c in chunks if chunks is not None else [data]:
            s.sendall(c)
        s.settimeout(quiet)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                d = s.recv(1 << 20)
            except TimeoutError:
                break
            except ConnectionResetError:
                out += b"<RST>"
                break
            if not d:
                out += b"<EOF>"
                break
            out += d
    return bytes(out)



"""``memcached_stats`` against a real memcached: its numeric counters, as memcached counts."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest

from p4cache.workload.clients import memcached_stats

pytestmark = pytest.mark.skipif(shutil.which("memcached") is None,
                                reason="memcached not installed")


def test_counters_follow_what_was_asked() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mc = subprocess.Popen(["memcached", "-U", "0", "-p", str(port), "-l", "127.0.0.1",
                           "-u", "root"])
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                before = memcached_stats(("127.0.0.1", port))
                break
            except OSError:
                assert time.monotonic() < deadline, "memcached did not start"
                time.sleep(0.05)
        with socket.create_connection(("127.0.0.1", port)) as c:
            c.sendall(b"get a\r\nget b\r\nset a 0 0 1\r\nx\r\n")
            buf = b""
            while not buf.endswith(b"STORED\r\n"):
                buf += c.recv(4096)
        after = memcached_stats(("127.0.0.1", port))
        assert after["cmd_get"] - before["cmd_get"] == 2
        assert after["cmd_set"] - before["cmd_set"] == 1 and after["get_misses"] >= 2
        assert "version" not in after          # numbers only
    finally:
        mc.terminate()
        mc.wait(5)

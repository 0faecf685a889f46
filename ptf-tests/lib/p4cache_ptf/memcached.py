"""A real memcached for reference answers: what does memcached itself send for this item?

:class:`Memcached` starts ``memcached -U PORT -p PORT -l 127.0.0.1`` on a free port, sets items
over TCP with pymemcache and reads them back over UDP with the 8-byte frame header, returning the
UDP payload exactly as memcached sent it. The cache's replies are compared with these bytes.
:class:`MemcachedTest` is a P4CacheTest with one of them running.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

from pymemcache.client.base import Client

from p4cache import dataplane as dp

from .base import P4CacheTest


def _free_port() -> int:
    """A port free for both TCP and UDP on 127.0.0.1 (memcached binds both)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as t:
            t.bind(("127.0.0.1", 0))
            port = t.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                try:
                    u.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free port for memcached")


class Memcached:
    def __init__(self, binary: str = "memcached") -> None:
        path = shutil.which(binary)
        if path is None:
            raise RuntimeError("memcached is not installed (Debian package memcached; "
                               "`make setup` installs it)")
        self.port = _free_port()
        argv = [path, "-U", str(self.port), "-p", str(self.port), "-l", "127.0.0.1",
                "-m", "16", "-t", "1"]
        if os.geteuid() == 0:
            argv += ["-u", "root"]  # memcached refuses to run as root without -u
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.client = Client(("127.0.0.1", self.port), connect_timeout=2, timeout=2)
        deadline = time.monotonic() + 5
        while True:
            try:
                self.client.version()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                    self.close()
                    raise RuntimeError(f"memcached did not start: {err.strip()}") from None
                time.sleep(0.02)

    def set(self, key: bytes, value: bytes, flags: int = 0) -> None:
        """Store an item over TCP (pymemcache)."""
        if not self.client.set(key, value, flags=flags, noreply=False):
            raise RuntimeError(f"memcached refused set {key!r}")

    def udp_request(self, payload: bytes, timeout: float = 2.0) -> bytes:
        """Send one UDP datagram (frame header included) and return memcached's answer."""
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(timeout)
            s.sendto(payload, ("127.0.0.1", self.port))
            data, _ = s.recvfrom(65536)
            return data

    def udp_get(self, key: bytes, request_id: int) -> bytes:
        """The UDP payload memcached answers ``get <key>`` with (frame header included)."""
        return self.udp_request(dp.get_request(request_id, key))

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:  # noqa: BLE001 - closing a client that never connected
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()

    def __enter__(self) -> Memcached:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class MemcachedTest(P4CacheTest):
    """A P4CacheTest with a real memcached to compare against."""

    def setUp(self) -> None:
        P4CacheTest.setUp(self)
        self.mc = Memcached()

    def tearDown(self) -> None:
        self.mc.close()
        P4CacheTest.tearDown(self)

    def check_item(self, key: bytes, flags: int, value: bytes, slot: int,
                   request_id: int = 0x1234) -> bytes:
        """Store the item in memcached and in ``slot``; the switch's answer must equal
        memcached's. Returns memcached's UDP payload."""
        self.mc.set(key, value, flags)
        reference = self.mc.udp_get(key, request_id)
        self.assertTrue(reference.startswith(dp.MEMCACHE_HDR.pack(request_id, 0, 1, 0)),
                        f"memcached's own reply header: {reference[:8].hex()}")
        self.cache(key, slot, dp.render_value_reply(key, flags, value))
        self.expect_hit(self.get_frame(key, request_id), reference)
        return reference

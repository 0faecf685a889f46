"""Minimal memcached clients that report outcomes exactly, for recorded histories.

The history checker must know, for every operation, whether it took effect, did not, or may have:
a library that retries or hides errors would blur that. These speak the text protocol directly:
UDP GETs (the frames the switch answers), UDP deletes and sets (seen in flight by the switch), and
TCP commands through the host agent's gate.
"""

from __future__ import annotations

import socket
import struct

from p4cache import dataplane as dp

UNKNOWN = "unknown"   # the operation may or may not have taken effect
ERROR = "error"       # refused before it reached memcached (SERVER_ERROR from the gate)
NOT_SENT = "not_sent"  # no connection could be made: nothing was sent, nothing happened


def memcached_stats(addr: tuple[str, int], timeout: float = 5.0) -> dict[str, int]:
    """memcached's numeric counters (``stats`` over TCP at ``addr``), e.g. ``cmd_get``."""
    with socket.create_connection(addr, timeout=timeout) as s:
        s.sendall(b"stats\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    return {parts[1].decode(): int(parts[2]) for line in buf.split(b"\r\n")
            if len(parts := line.split()) == 3 and parts[0] == b"STAT" and parts[2].isdigit()}


def parse_get_reply(body: bytes, key: bytes) -> bytes | None:
    """Value of a single-key get reply, None for a miss; ValueError if it is not one."""
    if body == b"END\r\n":
        return None
    head, sep, rest = body.partition(b"\r\n")
    parts = head.split()
    if not sep or len(parts) < 4 or parts[0] != b"VALUE" or parts[1] != key:
        raise ValueError(f"not a get reply: {body[:80]!r}")
    n = int(parts[3])
    if rest[n:] != b"\r\nEND\r\n":
        raise ValueError(f"bad get reply framing: {body[:80]!r}")
    return rest[:n]


class UdpClient:
    """One UDP socket; request ids let late replies to earlier requests be told apart."""

    def __init__(self, server: str, port: int = dp.MEMCACHED_PORT, timeout: float = 0.25) -> None:
        self.addr = (server, port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.settimeout(timeout)
        self.next_id = 1

    def request(self, line: bytes) -> bytes | None:
        rid = self.next_id
        self.next_id = (self.next_id + 1) & 0xFFFF
        self.sock.sendto(dp.memcache_frame(rid, line), self.addr)
        while True:
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                return None
            if len(data) < 8:
                continue
            got_id, seq, total, _ = struct.unpack("!HHHH", data[:8])
            if got_id != rid:
                continue      # a late reply to an earlier request
            if seq != 0 or total != 1:
                return None   # multi-datagram replies are not used here
            return data[8:]

    def get(self, key: bytes) -> bytes | None | str:
        body = self.request(b"get " + key + b"\r\n")
        return UNKNOWN if body is None else parse_get_reply(body, key)

    def delete(self, key: bytes) -> str:
        body = self.request(b"delete " + key + b"\r\n")
        return {b"DELETED\r\n": "ok", b"NOT_FOUND\r\n": "not_found"}.get(body or b"", UNKNOWN)

    def set(self, key: bytes, value: bytes, ttl: int = 0) -> str:
        body = self.request(b"set %s 0 %d %d\r\n%s\r\n" % (key, ttl, len(value), value))
        return "ok" if body == b"STORED\r\n" else UNKNOWN

    def close(self) -> None:
        self.sock.close()


class TcpClient:
    """Text protocol over TCP (through the agent's gate); reconnects after any failure."""

    def __init__(self, server: str, port: int = dp.MEMCACHED_PORT, timeout: float = 3.0) -> None:
        self.addr = (server, port)
        self.timeout = timeout
        self.sock: socket.socket | None = None
        self.buf = b""

    def _conn(self) -> socket.socket:
        if self.sock is None:
            self.sock = socket.create_connection(self.addr, timeout=self.timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.buf = b""
        return self.sock

    def _reset(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.sock = None

    def _line(self) -> bytes:
        assert self.sock is not None
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def _exact(self, n: int) -> bytes:
        assert self.sock is not None
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _connected(self) -> socket.socket | None:
        """The connection, or None if it cannot be made (refused while the agent restarts):
        then no byte of the request left us, and the operation certainly did not happen."""
        try:
            return self._conn()
        except OSError:
            self._reset()
            return None

    def _simple(self, request: bytes, answers: dict[bytes, str]) -> str:
        if (sock := self._connected()) is None:
            return NOT_SENT
        try:
            sock.sendall(request)
            line = self._line()
        except OSError:
            self._reset()
            return UNKNOWN
        if line.startswith(b"SERVER_ERROR"):
            return ERROR
        return answers.get(line, UNKNOWN)

    def set(self, key: bytes, value: bytes, ttl: int = 0) -> str:
        return self._simple(b"set %s 0 %d %d\r\n%s\r\n" % (key, ttl, len(value), value),
                            {b"STORED": "ok"})

    def delete(self, key: bytes) -> str:
        return self._simple(b"delete " + key + b"\r\n",
                            {b"DELETED": "ok", b"NOT_FOUND": "not_found"})

    def get(self, key: bytes) -> bytes | None | str:
        if (sock := self._connected()) is None:
            return NOT_SENT
        try:
            sock.sendall(b"get " + key + b"\r\n")
            line = self._line()
            if line == b"END":
                return None
            parts = line.split()
            if len(parts) < 4 or parts[0] != b"VALUE":
                self._reset()
                return UNKNOWN
            value = self._exact(int(parts[3]) + 2)[:-2]
            if self._line() != b"END":
                self._reset()
                return UNKNOWN
            return value
        except (OSError, ValueError):
            self._reset()
            return UNKNOWN

    def close(self) -> None:
        self._reset()

"""A stand-in for the host agent's control channel (spec "Agent control channel"), used until
p4cache-agent exists: JSON lines over TCP, ``fetch`` reading a REAL memcached with
``mg <key> v f t``, ``unwatch``/``sync``/``status``. It has no write gate and no fence: the
tests that need writes during a fetch do them in ``before_fetch``.

Every request is logged in order (``log``), so tests can check what the controller asked when.
"""

from __future__ import annotations

import base64
import json
import socket
import socketserver
import threading
from collections.abc import Callable
from typing import Any


def mg(addr: tuple[str, int], key: str) -> dict[str, Any]:
    """``mg <key> v f t`` on a fresh connection: the fields of a fetch reply."""
    with socket.create_connection(addr, timeout=5) as s:
        s.sendall(f"mg {key} v f t\r\n".encode("latin-1"))
        buf = b""
        while True:
            buf += s.recv(65536)
            if buf.startswith(b"EN\r\n"):
                return {"found": False}
            if b"\r\n" in buf:
                line, rest = buf.split(b"\r\n", 1)
                parts = line.split()
                if parts[0] != b"VA":
                    raise RuntimeError(f"mg {key}: {line!r}")
                size = int(parts[1])
                if len(rest) >= size + 2:
                    flags = {p[:1]: p[1:] for p in parts[2:]}
                    return {"found": True, "flags": int(flags.get(b"f", b"0")),
                            "ttl": int(flags.get(b"t", b"-1")),
                            "value_b64": base64.b64encode(rest[:size]).decode()}


def memcached_command(addr: tuple[str, int], line: bytes) -> bytes:
    """One text command; returns the first reply line."""
    with socket.create_connection(addr, timeout=5) as s:
        s.sendall(line)
        buf = b""
        while b"\r\n" not in buf:
            buf += s.recv(4096)
        return buf.split(b"\r\n", 1)[0]


class AgentStub:
    def __init__(self, memcached: tuple[str, int], listen: tuple[str, int] = ("127.0.0.1", 0)
                 ) -> None:
        self.memcached = memcached
        self.log: list[tuple[str, Any]] = []
        self.watched: set[str] | None = None  # None: unknown (as after an agent start)
        self.before_fetch: Callable[[str], None] | None = None
        self.busy_keys: set[str] = set()
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        stub = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                with stub.lock:
                    stub.conns.append(self.connection)
                for raw in self.rfile:
                    req = json.loads(raw)
                    rep = stub.answer(req)
                    self.wfile.write(json.dumps({"id": req["id"], **rep}).encode() + b"\n")
                    self.wfile.flush()

        class Server(socketserver.ThreadingTCPServer):
            allow_reuse_address = True
            daemon_threads = True

        self.server = Server(listen, Handler)
        host, port = self.server.server_address[:2]
        self.addr = f"{host}:{port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get("op")
        if op == "fetch" and "keys" in req:
            # A many-key fetch: logged and answered as that many one-key fetches, in order
            # (the stub has no fence to share).
            return {"ok": True, "items": [self.answer({"op": "fetch", "key": k})
                                          for k in req["keys"]]}
        with self.lock:
            self.log.append((op, req.get("key", req.get("keys"))))
        if op == "fetch":
            key = req["key"]
            with self.lock:
                self.watched = (self.watched or set()) | {key}
            if self.before_fetch is not None:
                self.before_fetch(key)
            if key in self.busy_keys:
                return {"ok": False, "error": "busy"}
            return {"ok": True, **mg(self.memcached, key)}
        if op == "unwatch":
            with self.lock:
                (self.watched or set()).discard(req["key"])
            return {"ok": True}
        if op == "sync":
            with self.lock:
                self.watched = set(req["keys"])
            return {"ok": True}
        if op == "status":
            return {"ok": True, "watched": sorted(self.watched or [])}
        return {"ok": False, "error": f"unknown op {op!r}"}

    def ops(self, op: str | None = None) -> list[tuple[str, Any]]:
        with self.lock:
            return [x for x in self.log if op is None or x[0] == op]

    def restart(self) -> None:
        """What an agent restart looks like to the controller: connections closed, W unknown."""
        with self.lock:
            conns, self.conns = self.conns, []
            self.watched = None
            self.log.append(("restart", None))
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def main() -> None:
    """Run the stand-in in its own process (e.g. inside a lab's server namespace)."""
    import argparse
    import time

    p = argparse.ArgumentParser()
    p.add_argument("--control", required=True, help="HOST:PORT to listen on")
    p.add_argument("--memcached", required=True, help="HOST:PORT of memcached (TCP)")
    a = p.parse_args()
    host, _, port = a.control.rpartition(":")
    mhost, _, mport = a.memcached.rpartition(":")
    AgentStub((mhost, int(mport)), (host, int(port)))
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()

"""The status server (JSON on a loopback TCP port) and its client and table.

Protocol: connect, optionally send a line, read one JSON object until the server closes.
"""

from __future__ import annotations

import json
import logging
import socket
import socketserver
import threading
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

log = logging.getLogger("p4cache.controller.status")


class StatusServer:
    def __init__(self, listen: str, snapshot: Callable[[], dict[str, Any]]) -> None:
        host, _, port = listen.rpartition(":")
        snap = snapshot

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                try:
                    body = snap()
                except Exception as e:  # the worker did not answer in time
                    body = {"error": str(e)}
                self.wfile.write(json.dumps(body).encode() + b"\n")
                self.wfile.flush()
                # Close gracefully: a socket closed with the client's request line still unread
                # sends a reset, which can reach the client before the last of the body.
                try:
                    self.request.shutdown(socket.SHUT_WR)
                    self.request.settimeout(1.0)
                    while self.request.recv(4096):
                        pass
                except OSError:
                    pass

        class Server(socketserver.ThreadingTCPServer):
            allow_reuse_address = True
            daemon_threads = True

        self._server = Server((host, int(port)), Handler)
        h, p = self._server.server_address[:2]
        self.address = f"{h}:{p}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="status")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def fetch(addr: str, timeout: float = 5.0) -> dict[str, Any]:
    """The controller's status (raises OSError if it does not answer)."""
    host, _, port = addr.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(b"status\n")
        buf = b""
        while chunk := s.recv(65536):
            buf += chunk
    return json.loads(buf)


# Fields of several controllers' statuses that are a moment, not an amount: the earliest counts.
_EARLIEST = frozenset({"uptime_s", "switch_counters_read_s"})


def merge(parts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One status for several controllers, each driving its own program (the host placement:
    one per memcached server): counters and sizes add up, key lists join, flags hold when they
    hold for all. Percentiles do not add up: ``latency`` is the first controller's, and each
    controller's own status stays under ``controllers``."""
    if len(parts) == 1:
        return next(iter(parts.values()))
    docs = list(parts.values())
    out = _merge(docs, "")
    counters = out.get("switch_counters") or {}
    looked = counters.get("hit", 0) + counters.get("miss", 0)
    out["hit_ratio"] = None if looked == 0 else round(counters["hit"] / looked, 4)
    out["latency"] = docs[0].get("latency")
    out["controllers"] = parts
    return out


def _merge(values: list[Any], key: str) -> Any:
    present = [v for v in values if v is not None]
    if not present:
        return None
    first = present[0]
    if isinstance(first, bool):
        return all(present)
    if isinstance(first, int | float):
        if key in _EARLIEST:
            return min(present) if len(present) == len(values) else None
        return sum(v for v in present if isinstance(v, int | float))
    if isinstance(first, list):
        return [x for v in present if isinstance(v, list) for x in v]
    if isinstance(first, dict):
        keys = dict.fromkeys(k for v in present if isinstance(v, dict) for k in v)
        return {k: _merge([v.get(k) for v in present if isinstance(v, dict)], k) for k in keys}
    return ", ".join(dict.fromkeys(str(v) for v in present))


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f} ms"


def render(st: dict[str, Any], console: Console, max_keys: int = 40) -> None:
    sw = st["switch"]
    c = st["cache"]
    ratio = st.get("hit_ratio")
    summary = Table(title="p4cache controller", show_header=False)
    summary.add_column(style="bold")
    summary.add_column()
    summary.add_row("switch", f"{sw['grpc']} "
                    + ("connected" if sw["connected"] else f"DOWN ({sw.get('last_error')})")
                    + f", sessions {sw['sessions']}")
    summary.add_row("cached keys", f"{c['filled']} filled, {c['in_progress']} in progress, "
                    f"{c['slots']} slots")
    summary.add_row("hit ratio", "-" if ratio is None else f"{ratio:.1%}"
                    + f" ({st['switch_counters']['hit']} hits, "
                    f"{st['switch_counters']['miss']} misses)")
    summary.add_row("promotions", f"{st['promotions']} ({st['refills']} refills), "
                    f"{st['promotions_started']} started, aborted {st['aborted'] or 0}")
    summary.add_row("evictions", f"{st['evictions']} {st['evictions_by_reason'] or ''}")
    summary.add_row("invalidations", str(st["invalidations"]))
    summary.add_row("flushes", f"{st['flushes']} (seen {st['flushes_seen']})")
    lat = st["latency"]
    for name in ("promotion", "eviction"):
        summary.add_row(f"{name} latency", f"p50 {_ms(lat[name]['p50_ms'])}, "
                        f"p99 {_ms(lat[name]['p99_ms'])} ({lat[name]['count']})")
    for a in st["agents"]:
        summary.add_row(f"agent {a['name']}", f"{a['addr']} {'up' if a['up'] else 'DOWN'}, "
                        f"{a['watched']} watched")
    console.print(summary)
    keys = Table(title="cached keys")
    for col in ("slot", "server", "key", "phase", "version", "hits/s", "ttl", "expires in"):
        keys.add_column(col)
    for k in st["keys"][:max_keys]:
        keys.add_row(str(k["slot"]), k["server"], k["key"], k["phase"], str(k["version"]),
                     f"{k['hits_per_s']:.2f}", str(k["ttl"]),
                     "-" if k["expires_in_s"] is None else f"{k['expires_in_s']:.1f} s")
    if len(st["keys"]) > max_keys:
        keys.caption = f"{len(st['keys']) - max_keys} more (--json for all)"
    console.print(keys)

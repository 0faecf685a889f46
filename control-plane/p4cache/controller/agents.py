"""Client of a host agent's control channel: JSON lines over TCP (spec "Agent control channel";
the messages are p4cache.agent_protocol's, which the agent imports too).

Requests carry an ``id`` and the replies echo it, so several may be outstanding on one
connection (a fetch can wait up to the agent's fence timeout).

The client keeps a mirror of the agent's watch set W: a key enters it when its fetch is sent
and leaves when its unwatch is sent. Whenever a connection is (re)established, the first
request on it is ``sync`` with the mirror, before anything else. A restarted agent starts with
W unknown (it invalidates every write, which is safe) and its first sync or fetch defines W; a
fetch going first would leave the other cached keys unwatched, so it never does.
"""

from __future__ import annotations

import base64
import itertools
import logging
import socket
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from p4cache import agent_protocol as proto

log = logging.getLogger("p4cache.controller.agents")


class AgentError(Exception):
    """The agent could not be reached or answered with an error."""


class AgentBusy(AgentError):
    """A fetch's fence timed out: writes to the key are still in flight at memcached."""


@dataclass(frozen=True)
class Item:
    """What a fetch read from memcached. ``ttl``: seconds left, -1 for none."""

    flags: int
    ttl: int
    value: bytes


class AgentClient:
    def __init__(self, name: str, addr: str, timeout: float = 5.0,
                 connect_timeout: float = 2.0) -> None:
        self.name = name
        host, _, port = addr.rpartition(":")
        self.addr = (host, int(port))
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.sessions = 0          # connections established (a new one after an agent restart)
        self._watched: set[bytes] = set()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()         # connection state, mirror, waiters
        self._connect_lock = threading.Lock()  # one connect (and its sync) at a time
        self._send_lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._waiters: dict[int, Future[dict[str, Any]]] = {}

    # ------------------------------------------------------------------ public
    @property
    def up(self) -> bool:
        return self._sock is not None

    @property
    def watched(self) -> set[bytes]:
        with self._lock:
            return set(self._watched)

    def fetch(self, key: bytes) -> Item | None:
        """The item as memcached holds it once no earlier write is in flight; None if it does
        not exist. The agent watches the key from now on."""
        with self._lock:
            self._watched.add(key)
        return self._item(self._call(proto.FETCH, key=proto.key_text(key)))

    def fetch_many(self, keys: list[bytes]) -> list[Item | None | AgentError]:
        """Several fetches behind one fence on the agent (agent_protocol), one result per key
        in order: the item, None (no such item) or the key's error (AgentBusy: its fence
        timed out). An error of the whole request raises."""
        with self._lock:
            self._watched.update(keys)
        rep = self._call(proto.FETCH, keys=[proto.key_text(k) for k in keys])
        items = rep.get(proto.ITEMS)
        if not isinstance(items, list) or len(items) != len(keys):
            raise AgentError(f"agent {self.name}: fetch of {len(keys)} keys answered with "
                             f"{rep!r:.200}")
        out: list[Item | None | AgentError] = []
        for key, it in zip(keys, items, strict=True):
            if not isinstance(it, dict):
                raise AgentError(f"agent {self.name}: bad fetch item {it!r:.200}")
            if not it.get(proto.OK):
                err = it.get(proto.ERROR)
                cls = AgentBusy if err == proto.BUSY else AgentError
                out.append(cls(f"agent {self.name}: fetch {key!r}: {err}"))
            else:
                out.append(self._item(it))
        return out

    def _item(self, rep: dict[str, Any]) -> Item | None:
        if not rep.get(proto.FOUND):
            return None
        try:
            return Item(flags=int(rep.get(proto.FLAGS, 0)), ttl=int(rep.get(proto.TTL, -1)),
                        value=base64.b64decode(rep[proto.VALUE_B64], validate=True))
        except (KeyError, ValueError, TypeError) as e:
            raise AgentError(f"agent {self.name}: bad fetch reply {rep!r}: {e}") from None

    def unwatch(self, key: bytes) -> None:
        """The key's lookup entry is gone: the agent may stop invalidating its writes."""
        with self._lock:
            self._watched.discard(key)
        try:
            self._call(proto.UNWATCH, key=proto.key_text(key))
        except AgentError:
            # The mirror no longer has the key; a new connection syncs from the mirror.
            self._drop("unwatch failed")
            raise

    def sync(self, keys: set[bytes]) -> None:
        """W := ``keys`` (after the controller's restart)."""
        with self._lock:
            self._watched = set(keys)
        self._call(proto.SYNC, keys=sorted(proto.key_text(k) for k in keys))

    def status(self) -> dict[str, Any]:
        return self._call(proto.STATUS)

    def ensure_connected(self) -> bool:
        """Connect (and sync) if not connected; False if the agent cannot be reached."""
        try:
            self._connection()
            return True
        except AgentError:
            return False

    def close(self) -> None:
        self._drop("closed")

    # ------------------------------------------------------------------ plumbing
    def _connection(self) -> socket.socket:
        with self._connect_lock:
            sock = self._sock
            if sock is not None:
                return sock
            try:
                sock = socket.create_connection(self.addr, timeout=self.connect_timeout)
            except OSError as e:
                raise AgentError(f"agent {self.name} at {self.addr[0]}:{self.addr[1]}: "
                                 f"{e.strerror or e}") from None
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._sock = sock
                keys = sorted(proto.key_text(k) for k in self._watched)
            threading.Thread(target=self._reader, args=(sock,), daemon=True,
                             name=f"agent-{self.name}").start()
            self.sessions += 1
            # First request on every connection: W := the mirror.
            self._exchange(sock, proto.SYNC, keys=keys)
            log.info("agent %s: connected (session %d), synced %d keys", self.name,
                     self.sessions, len(keys))
            return sock

    def _call(self, op: str, **fields: Any) -> dict[str, Any]:
        return self._exchange(self._connection(), op, **fields)

    def _exchange(self, sock: socket.socket, op: str, **fields: Any) -> dict[str, Any]:
        rid = next(self._ids)
        fut: Future[dict[str, Any]] = Future()
        with self._lock:
            self._waiters[rid] = fut
        req = proto.request(op, rid, **fields)
        line = proto.encode(req)
        try:
            with self._send_lock:
                sock.sendall(line)
            rep = fut.result(timeout=self.timeout)
        except TimeoutError:
            self._drop(f"no reply to {op} in {self.timeout:g} s")
            raise AgentError(f"agent {self.name}: no reply to {op} "
                             f"in {self.timeout:g} s") from None
        except OSError as e:
            self._drop(str(e))
            raise AgentError(f"agent {self.name}: {e}") from None
        finally:
            with self._lock:
                self._waiters.pop(rid, None)
        if not rep.get(proto.OK):
            err = rep.get(proto.ERROR, "error")
            if err == proto.BUSY:
                raise AgentBusy(f"agent {self.name}: {op} {fields.get(proto.KEY, '')!r}: busy")
            raise AgentError(f"agent {self.name}: {op}: {err}")
        return rep

    def _reader(self, sock: socket.socket) -> None:
        buf = b""
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if not line.strip():
                        continue
                    try:
                        rep = proto.decode(line)
                        rid = rep[proto.ID]
                    except (ValueError, KeyError, TypeError):
                        log.warning("agent %s: unreadable line %r", self.name, line[:200])
                        continue
                    with self._lock:
                        fut = self._waiters.get(rid)
                    if fut is not None and not fut.done():
                        fut.set_result(rep)
        except OSError:
            pass
        self._drop("connection closed", sock)

    def _drop(self, why: str, only: socket.socket | None = None) -> None:
        with self._lock:
            sock = self._sock
            if sock is None or (only is not None and sock is not only):
                return
            self._sock = None
            waiters, self._waiters = self._waiters, {}
        log.info("agent %s: disconnected (%s)", self.name, why)
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()
        for fut in waiters.values():
            if not fut.done():
                fut.set_exception(OSError(f"connection to agent {self.name} lost ({why})"))

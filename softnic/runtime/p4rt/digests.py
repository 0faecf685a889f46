"""Digest delivery: batching per DigestEntry config, list ids, acks and duplicate suppression.

Semantics follow the P4Runtime spec ("DigestEntry") as BMv2/PI implement them:
- nothing is sent for a digest until the controller has inserted its DigestEntry;
- ``max_timeout_ns`` bounds how long a digest may wait to be batched (0: send at once);
- ``max_list_size`` bounds a list's length (0: no bound, only the timeout flushes);
- ``ack_timeout_ns``: after a list is sent, the same data is not reported again until the
  controller acks that list or the timeout expires (0: no suppression). This is what keeps a
  learning controller from being flooded by one flow while it installs the entry.
The engine's callback only enqueues; batching runs on this module's own thread, so the packet
path never waits for a controller.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from p4.v1 import p4data_pb2, p4runtime_pb2

from softnic.runtime.api import Digest

from . import bytestr
from .p4info import DigestInfo, P4InfoIndex

log = logging.getLogger("softnic.p4rt")

Sender = Callable[[p4runtime_pb2.StreamMessageResponse], bool]


@dataclass
class _State:
    info: DigestInfo
    config: p4runtime_pb2.DigestEntry.Config
    next_list_id: int = 1
    buffer: list[p4data_pb2.P4Data] = field(default_factory=list)
    buffer_keys: set[bytes] = field(default_factory=set)
    flush_at: float = 0.0  # monotonic deadline of the open batch (0: none)
    outstanding: dict[int, tuple[set[bytes], float]] = field(default_factory=dict)


class DigestManager:
    def __init__(self, send: Sender) -> None:
        self._send = send
        self._lock = threading.Lock()
        self._index: P4InfoIndex | None = None
        self._states: dict[int, _State] = {}
        self._inbox: queue.SimpleQueue[Digest | None] = queue.SimpleQueue()
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="p4rt-digests", daemon=True)
        self._thread.start()
        self.dropped_unconfigured = 0
        self.suppressed = 0

    # -- control (from RPC threads)
    def reset(self, index: P4InfoIndex | None) -> None:
        """A new pipeline: forget every DigestEntry and pending list."""
        with self._lock:
            self._index = index
            self._states.clear()

    def configured(self) -> dict[int, p4runtime_pb2.DigestEntry.Config]:
        with self._lock:
            return {i: s.config for i, s in self._states.items()}

    def set_config(self, info: DigestInfo, config: p4runtime_pb2.DigestEntry.Config) -> None:
        with self._lock:
            st = self._states.get(info.id)
            if st is None:
                self._states[info.id] = _State(info, config)
            else:
                st.config = config
        self._inbox.put(None)  # re-evaluate deadlines

    def remove_config(self, digest_id: int) -> None:
        with self._lock:
            self._states.pop(digest_id, None)

    def ack(self, digest_id: int, list_id: int) -> None:
        with self._lock:
            st = self._states.get(digest_id)
            if st is not None:
                st.outstanding.pop(list_id, None)

    def stop(self) -> None:
        self._stop = True
        self._inbox.put(None)
        self._thread.join(timeout=2)

    # -- data (from the packet thread)
    def on_digest(self, d: Digest) -> None:
        self._inbox.put(d)

    # -- worker
    def _run(self) -> None:
        while not self._stop:
            timeout = self._next_deadline()
            try:
                item = self._inbox.get(timeout=timeout)
            except queue.Empty:
                item = None
            try:
                if item is not None:
                    self._accept(item)
                self._flush_due()
            except Exception:  # one bad digest must not stop delivery of the others
                log.exception("digest processing failed")

    def _next_deadline(self) -> float | None:
        with self._lock:
            deadlines = [s.flush_at for s in self._states.values() if s.flush_at]
        if not deadlines:
            return 0.5
        return max(0.0, min(deadlines) - time.monotonic())

    def _find(self, name: str) -> _State | None:
        for st in self._states.values():
            if st.info.name == name or st.info.name.rsplit(".", 1)[-1] == name.rsplit(".", 1)[-1]:
                return st
        return None

    def _encode(self, info: DigestInfo, fields: dict[str, int]) -> p4data_pb2.P4Data:
        data = p4data_pb2.P4Data()
        values = list(fields.values())
        for i, m in enumerate(info.members):
            if m.name in fields:
                v = fields[m.name]
            else:  # engine used other names (e.g. JSON field paths): fall back to order
                v = values[i] if i < len(values) else 0
            data.struct.members.add().bitstring = bytestr.encode(v)
        return data

    def _accept(self, d: Digest) -> None:
        now = time.monotonic()
        with self._lock:
            st = self._find(d.name)
            if st is None:
                self.dropped_unconfigured += 1
                return
            data = self._encode(st.info, d.fields)
            key = data.SerializeToString()
            for list_id, (keys, expiry) in list(st.outstanding.items()):
                if expiry <= now:
                    del st.outstanding[list_id]
                elif key in keys:
                    self.suppressed += 1
                    return
            if key in st.buffer_keys:
                self.suppressed += 1
                return
            st.buffer.append(data)
            st.buffer_keys.add(key)
            cfg = st.config
            full = cfg.max_list_size > 0 and len(st.buffer) >= cfg.max_list_size
            if cfg.max_timeout_ns <= 0 or full:
                st.flush_at = now  # due immediately
            elif not st.flush_at:
                st.flush_at = now + cfg.max_timeout_ns / 1e9

    def _flush_due(self) -> None:
        now = time.monotonic()
        out: list[p4runtime_pb2.StreamMessageResponse] = []
        with self._lock:
            for st in self._states.values():
                if st.flush_at and st.flush_at <= now and st.buffer:
                    msg = p4runtime_pb2.StreamMessageResponse()
                    dl = msg.digest
                    dl.digest_id = st.info.id
                    dl.list_id = st.next_list_id
                    st.next_list_id += 1
                    dl.data.extend(st.buffer)
                    dl.timestamp = time.time_ns()
                    if st.config.ack_timeout_ns > 0:
                        st.outstanding[dl.list_id] = (
                            st.buffer_keys, now + st.config.ack_timeout_ns / 1e9)
                    st.buffer = []
                    st.buffer_keys = set()
                    st.flush_at = 0.0
                    out.append(msg)
                elif st.flush_at and not st.buffer:
                    st.flush_at = 0.0
        for msg in out:
            self._send(msg)

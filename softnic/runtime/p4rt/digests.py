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

Which P4Info digest a BMv2 learn list feeds: PI (behavioral-model's PI glue) looks the learn
list's name up among the P4Info digest names. For ``digest(r, {a, b})`` / ``digest<tuple<..>>``
p4c names the P4Info digest ``digest_<n>`` (its v1model P4RuntimeArchHandler, run before the
mid end) but the learn list ``tuple_<n>`` (the struct EliminateTuples made; the BMv2 back end
names learn lists for the type argument's struct), so real simple_switch_grpc finds no digest
("Ignoring LEA notification whose name 'tuple_0' cannot be found in p4info") and a DigestEntry
for ``digest_<n>`` finds no learn list. softnic delivers them instead (a deliberate superset):
P4Info digests of tuple type that no learn list names are paired, in order, with the learn
lists no P4Info digest names that have as many elements as the tuple has members, and their
data are sent as the P4Runtime spec gives a tuple-typed digest: ``P4Data.tuple``.
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
        self._list_digest: dict[str, int] = {}  # learn list name -> P4Info digest id
        self._tuples: set[int] = set()  # ids of the digests whose P4Info type is a tuple
        self._inbox: queue.SimpleQueue[Digest | None] = queue.SimpleQueue()
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="p4rt-digests", daemon=True)
        self._thread.start()
        self.dropped_unconfigured = 0
        self.suppressed = 0

    # -- control (from RPC threads)
    def reset(self, index: P4InfoIndex | None, bmv2_json: dict | None = None) -> None:
        """A new pipeline: forget every DigestEntry and pending list."""
        with self._lock:
            self._index = index
            self._states.clear()
            self._tuples, self._list_digest = _pair_learn_lists(index, bmv2_json)

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
        paired = self._list_digest.get(name)
        if paired is not None:
            return self._states.get(paired)
        for st in self._states.values():
            if st.info.name == name or st.info.name.rsplit(".", 1)[-1] == name.rsplit(".", 1)[-1]:
                return st
        return None

    def _encode(self, info: DigestInfo, fields: dict[str, int]) -> p4data_pb2.P4Data:
        data = p4data_pb2.P4Data()
        values = list(fields.values())
        if info.id in self._tuples:  # a tuple's members are unnamed: the learn list's order
            for v in values:
                data.tuple.members.add().bitstring = bytestr.encode(v)
            return data
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


def _pair_learn_lists(index: P4InfoIndex | None,
                      bmv2_json: dict | None) -> tuple[set[int], dict[str, int]]:
    """(ids of the tuple-typed P4Info digests, learn list name -> digest id for the tuple
    digests paired with a learn list of another name; see the module docstring)."""
    if index is None:
        return set(), {}
    members = {d.preamble.id: len(d.type_spec.tuple.members) for d in index.info.digests
               if d.type_spec.WhichOneof("type_spec") == "tuple"}
    if not members or bmv2_json is None:
        return set(members), {}
    names = {d.preamble.name for d in index.info.digests}
    lists = sorted((ll for ll in bmv2_json.get("learn_lists") or []
                    if isinstance(ll, dict) and ll.get("name") not in names),
                   key=lambda ll: ll.get("id", 0))
    paired: dict[str, int] = {}
    for d in index.info.digests:
        if d.preamble.id not in members:
            continue
        for ll in lists:
            name = ll.get("name")
            if name not in paired and len(ll.get("elements") or []) == members[d.preamble.id]:
                paired[name] = d.preamble.id
                break
    return set(members), paired

"""A small P4Runtime client for packet tests: the p4runtime protobufs over gRPC, nothing else.

Everything is addressed by the names in the P4Info (tables, match fields, actions, parameters,
counters, digests, packet metadata), so a test reads like the P4 program and works unchanged
against any P4Runtime server (softnic run, simple_switch_grpc).

One :class:`P4RuntimeClient` is one controller: it opens the StreamChannel, wins arbitration,
pushes the pipeline, writes entries, reads counters and collects what the switch sends on the
stream (packet-ins, digests, which it acknowledges at once, and stream errors) into queues.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import grpc
from google.protobuf import text_format
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4cache.p4rt_errors import write_errors

MatchValue = int | tuple[int, int]  # exact value, (value, prefix length) or (value, mask)


class P4RuntimeError(Exception):
    pass


def encode(value: int, bitwidth: int) -> bytes:
    """A bytestring of the field's full width (every P4Runtime server accepts this spelling)."""
    if value < 0 or value >> bitwidth:
        raise ValueError(f"value {value:#x} does not fit in {bitwidth} bits")
    return value.to_bytes((bitwidth + 7) // 8, "big")


def decode(data: bytes) -> int:
    return int.from_bytes(data, "big")


class P4Info:
    """Name lookups over a P4Info message."""

    def __init__(self, info: p4info_pb2.P4Info) -> None:
        self.info = info
        self.tables = {t.preamble.name: t for t in info.tables}
        self.actions = {a.preamble.name: a for a in info.actions}
        self.counters = {c.preamble.name: c for c in info.counters}
        self.digests = {d.preamble.name: d for d in info.digests}
        self.digests_by_id = {d.preamble.id: d for d in info.digests}
        self.packet_metadata = {m.preamble.name: m for m in info.controller_packet_metadata}

    @classmethod
    def from_file(cls, path: str | Path) -> P4Info:
        info = p4info_pb2.P4Info()
        text = Path(path).read_bytes()
        if str(path).endswith(".bin"):
            info.ParseFromString(text)
        else:
            text_format.Merge(text.decode(), info)
        return cls(info)

    def _get(self, kind: str, names: Mapping[str, object], name: str):  # noqa: ANN202
        if name in names:
            return names[name]
        # P4Runtime names are fully qualified; accept a unique suffix (an alias) as well.
        hits = [k for k in names if k.endswith("." + name)]
        if len(hits) == 1:
            return names[hits[0]]
        raise KeyError(f"no {kind} named {name!r} in the P4Info (have: {sorted(names)})")

    def table(self, name: str) -> p4info_pb2.Table:
        return self._get("table", self.tables, name)

    def action(self, name: str) -> p4info_pb2.Action:
        return self._get("action", self.actions, name)

    def counter(self, name: str) -> p4info_pb2.Counter:
        return self._get("counter", self.counters, name)

    def digest(self, name: str) -> p4info_pb2.Digest:
        return self._get("digest", self.digests, name)

    def digest_members(self, digest: p4info_pb2.Digest) -> list[str]:
        struct_name = digest.type_spec.struct.name
        return [m.name for m in self.info.type_info.structs[struct_name].members]


@dataclass(frozen=True)
class PacketIn:
    payload: bytes
    metadata: dict[str, int]


@dataclass(frozen=True)
class DigestList:
    name: str
    list_id: int
    data: list[dict[str, int]]


_election_ids = itertools.count(1)


def _update_errors(e: grpc.RpcError, updates: tuple[p4runtime_pb2.Update, ...]) -> str:
    """The per-update P4Error details of a failed Write, one line each (P4Runtime spec 12.3)."""
    lines = []
    for i, err in write_errors(e):
        what = text_format.MessageToString(updates[i], as_one_line=True)[:300]
        lines.append(f"\n  update {i}: {code_pb2.Code.Name(err.canonical_code)}: "
                     f"{err.message} [{what}]")
    return "".join(lines)


class P4RuntimeClient:
    """A controller connected to one device. Use as a context manager or call :meth:`close`."""

    def __init__(self, addr: str, p4info: P4Info, device_id: int = 0,
                 election_id: tuple[int, int] | None = None, timeout: float = 10.0) -> None:
        self.addr = addr
        self.p4info = p4info
        self.device_id = device_id
        self.election_id = election_id or (0, next(_election_ids))
        self.timeout = timeout
        self.packet_ins: queue.Queue[PacketIn] = queue.Queue()
        self.digests: queue.Queue[DigestList] = queue.Queue()
        self.stream_errors: queue.Queue[p4runtime_pb2.StreamError] = queue.Queue()
        self._arbitration: queue.Queue[p4runtime_pb2.MasterArbitrationUpdate] = queue.Queue()
        self._requests: queue.Queue[p4runtime_pb2.StreamMessageRequest | None] = queue.Queue()
        self._channel = grpc.insecure_channel(addr)
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            self._channel.close()
            raise P4RuntimeError(f"no P4Runtime server at {addr} after {timeout} s") from None
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
        self._stream = self.stub.StreamChannel(self._request_iter())
        self._reader = threading.Thread(target=self._read_stream, name="p4rt-stream",
                                        daemon=True)
        self._reader.start()
        self._arbitrate()

    # -- stream
    def _request_iter(self) -> Iterator[p4runtime_pb2.StreamMessageRequest]:
        while True:
            req = self._requests.get()
            if req is None:
                return
            yield req

    def _read_stream(self) -> None:
        try:
            for msg in self._stream:
                kind = msg.WhichOneof("update")
                if kind == "arbitration":
                    self._arbitration.put(msg.arbitration)
                elif kind == "packet":
                    self.packet_ins.put(self._packet_in(msg.packet))
                elif kind == "digest":
                    self._ack_digest(msg.digest)
                    self.digests.put(self._digest_list(msg.digest))
                elif kind == "error":
                    self.stream_errors.put(msg.error)
        except grpc.RpcError:
            pass  # the channel was closed (by us, or the server went away)

    def _arbitrate(self) -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high, req.arbitration.election_id.low = self.election_id
        self._requests.put(req)
        try:
            reply = self._arbitration.get(timeout=self.timeout)
        except queue.Empty:
            self.close()
            raise P4RuntimeError(f"no arbitration answer from {self.addr}") from None
        if reply.status.code != code_pb2.OK:
            self.close()
            raise P4RuntimeError(f"not primary for device {self.device_id}: {reply.status}")

    def _packet_in(self, pkt: p4runtime_pb2.PacketIn) -> PacketIn:
        names = {m.id: m.name for m in self.p4info.packet_metadata["packet_in"].metadata}
        meta = {names.get(m.metadata_id, str(m.metadata_id)): decode(m.value)
                for m in pkt.metadata}
        return PacketIn(bytes(pkt.payload), meta)

    def _digest_list(self, dl: p4runtime_pb2.DigestList) -> DigestList:
        info = self.p4info.digests_by_id[dl.digest_id]
        members = self.p4info.digest_members(info)
        data = [{name: decode(m.bitstring) for name, m in zip(members, d.struct.members,
                                                               strict=True)}
                for d in dl.data]
        return DigestList(info.preamble.name, dl.list_id, data)

    def _ack_digest(self, dl: p4runtime_pb2.DigestList) -> None:
        ack = p4runtime_pb2.StreamMessageRequest()
        ack.digest_ack.digest_id = dl.digest_id
        ack.digest_ack.list_id = dl.list_id
        self._requests.put(ack)

    def close(self) -> None:
        self._requests.put(None)
        self._channel.close()
        self._reader.join(timeout=2)

    def __enter__(self) -> P4RuntimeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- pipeline
    def set_pipeline(self, device_config: bytes) -> None:
        """SetForwardingPipelineConfig (VERIFY_AND_COMMIT) with this P4Info and the BMv2 JSON."""
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest()
        req.device_id = self.device_id
        req.election_id.high, req.election_id.low = self.election_id
        req.action = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
        req.config.p4info.CopyFrom(self.p4info.info)
        req.config.p4_device_config = device_config
        self.stub.SetForwardingPipelineConfig(req, timeout=60)

    # -- writes
    def write(self, *updates: p4runtime_pb2.Update) -> None:
        req = p4runtime_pb2.WriteRequest()
        req.device_id = self.device_id
        req.election_id.high, req.election_id.low = self.election_id
        req.updates.extend(updates)
        try:
            self.stub.Write(req, timeout=self.timeout)
        except grpc.RpcError as e:
            raise P4RuntimeError(f"Write failed: {e.code().name}: {e.details()}"
                                 f"{_update_errors(e, updates)}") from None

    def table_entry(self, table: str, match: Mapping[str, MatchValue], action: str,
                    params: Mapping[str, int] | None = None,
                    priority: int = 0) -> p4runtime_pb2.TableEntry:
        """A TableEntry built from names: ``match`` maps match-field names to an exact value,
        ``(value, prefix_len)`` for LPM or ``(value, mask)`` for ternary."""
        t = self.p4info.table(table)
        entry = p4runtime_pb2.TableEntry(table_id=t.preamble.id, priority=priority)
        fields = {f.name: f for f in t.match_fields}
        unknown = set(match) - set(fields)
        if unknown:
            raise KeyError(f"table {table}: no match field {sorted(unknown)}")
        for name, value in match.items():
            f = fields[name]
            fm = entry.match.add(field_id=f.id)
            mt = f.match_type
            if mt == p4info_pb2.MatchField.EXACT:
                fm.exact.value = encode(int(value), f.bitwidth)  # type: ignore[arg-type]
            elif mt == p4info_pb2.MatchField.LPM:
                v, plen = value  # type: ignore[misc]
                mask = ((1 << plen) - 1) << (f.bitwidth - plen) if plen else 0
                fm.lpm.value = encode(v & mask, f.bitwidth)
                fm.lpm.prefix_len = plen
            elif mt == p4info_pb2.MatchField.TERNARY:
                v, mask = value  # type: ignore[misc]
                fm.ternary.value = encode(v & mask, f.bitwidth)
                fm.ternary.mask = encode(mask, f.bitwidth)
            else:
                raise NotImplementedError(f"match type {mt} of {table}.{name}")
        a = self.p4info.action(action)
        entry.action.action.action_id = a.preamble.id
        params = dict(params or {})
        for p in a.params:
            if p.name not in params:
                raise KeyError(f"action {action}: parameter {p.name!r} missing")
            entry.action.action.params.add(param_id=p.id,
                                           value=encode(params.pop(p.name), p.bitwidth))
        if params:
            raise KeyError(f"action {action}: no parameter {sorted(params)}")
        return entry

    def insert(self, table: str, match: Mapping[str, MatchValue], action: str,
               params: Mapping[str, int] | None = None, priority: int = 0) -> None:
        entry = self.table_entry(table, match, action, params, priority)
        self.write(p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT,
                                        entity=p4runtime_pb2.Entity(table_entry=entry)))

    def delete(self, table: str, match: Mapping[str, MatchValue], action: str,
               params: Mapping[str, int] | None = None, priority: int = 0) -> None:
        entry = self.table_entry(table, match, action, params, priority)
        self.write(p4runtime_pb2.Update(type=p4runtime_pb2.Update.DELETE,
                                        entity=p4runtime_pb2.Entity(table_entry=entry)))

    def enable_digest(self, name: str, max_timeout_ns: int = 0, max_list_size: int = 1,
                      ack_timeout_ns: int = 10**9) -> None:
        d = self.p4info.digest(name)
        entry = p4runtime_pb2.DigestEntry(digest_id=d.preamble.id)
        entry.config.max_timeout_ns = max_timeout_ns
        entry.config.max_list_size = max_list_size
        entry.config.ack_timeout_ns = ack_timeout_ns
        self.write(p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT,
                                        entity=p4runtime_pb2.Entity(digest_entry=entry)))

    # -- reads
    def read(self, entity: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.add().CopyFrom(entity)
        out: list[p4runtime_pb2.Entity] = []
        for resp in self.stub.Read(req, timeout=self.timeout):
            out.extend(resp.entities)
        return out

    def read_counter(self, name: str, index: int) -> tuple[int, int]:
        """(packets, bytes) of one cell of an indirect counter."""
        c = self.p4info.counter(name)
        ent = p4runtime_pb2.Entity()
        ent.counter_entry.counter_id = c.preamble.id
        ent.counter_entry.index.index = index
        got = self.read(ent)
        if len(got) != 1:
            raise P4RuntimeError(f"reading {name}[{index}] returned {len(got)} entities")
        data = got[0].counter_entry.data
        return data.packet_count, data.byte_count

    def read_counters(self, name: str) -> dict[int, tuple[int, int]]:
        """Every cell of an indirect counter (one wildcard read): index -> (packets, bytes)."""
        c = self.p4info.counter(name)
        ent = p4runtime_pb2.Entity()
        ent.counter_entry.counter_id = c.preamble.id
        return {e.counter_entry.index.index: (e.counter_entry.data.packet_count,
                                              e.counter_entry.data.byte_count)
                for e in self.read(ent)}

    # -- packet I/O
    def packet_out(self, payload: bytes, **metadata: int) -> None:
        """Send a PacketOut; every packet_out metadata field not given is sent as 0."""
        req = p4runtime_pb2.StreamMessageRequest()
        req.packet.payload = payload
        for m in self.p4info.packet_metadata["packet_out"].metadata:
            req.packet.metadata.add(metadata_id=m.id,
                                    value=encode(metadata.pop(m.name, 0), m.bitwidth))
        if metadata:
            raise KeyError(f"packet_out has no metadata {sorted(metadata)}")
        self._requests.put(req)

    def get_packet_in(self, timeout: float = 2.0) -> PacketIn | None:
        try:
            return self.packet_ins.get(timeout=timeout)
        except queue.Empty:
            return None

    def get_digest(self, timeout: float = 2.0) -> DigestList | None:
        try:
            return self.digests.get(timeout=timeout)
        except queue.Empty:
            return None

    def drain_digests(self) -> list[DigestList]:
        out = []
        while True:
            try:
                out.append(self.digests.get_nowait())
            except queue.Empty:
                return out

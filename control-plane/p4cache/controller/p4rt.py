"""The controller's P4Runtime connection, through p4runtime-shell (``p4runtime_sh.shell``).

The shell does: the gRPC channel and StreamChannel, arbitration (its client class, with a
handshake that reports instead of calling ``sys.exit``), table entries by name
(``TableEntry``: insert, modify, delete, read), counters (``CounterEntry``), the digest
configuration (``DigestEntry``), packet-outs (``PacketOut``) and the stream's receive queues
(packet-ins, digest lists, arbitration updates).

Raw p4runtime protobufs only where the shell cannot:
- the pipeline: ``GetForwardingPipelineConfig(COOKIE_ONLY)`` and
  ``SetForwardingPipelineConfig`` with a cookie (the shell's ``set_fwd_pipe_config`` sets no
  cookie, so "is this program already running?" could not be answered);
- ``DigestListAck``, put on the shell's own stream queue (the shell's ``DigestList`` helper
  acks too, but it lives in the interactive namespace and owns the digest queue);
- the reads of the shell client's receive queues, which it exposes as ``get_stream_packet``.

p4runtime-shell keeps one client per process in module globals (``shell.client``,
``shell.context``), so one :class:`Switch` may be connected at a time in a process.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import grpc
from google.protobuf import text_format
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2
from p4runtime_sh import shell as sh
from p4runtime_sh.global_options import Options, global_options
from p4runtime_sh.p4runtime import (
    P4RuntimeClient,
    P4RuntimeException,
    P4RuntimeWriteException,
)
from p4runtime_sh.utils import UserError

from p4cache.p4rt_errors import write_errors

log = logging.getLogger("p4cache.controller.p4rt")

MatchValue = int | tuple[int, int]
_one_client = threading.Lock()  # the shell's module-global client: one Switch per process


class SwitchError(Exception):
    """A P4Runtime request failed; ``code`` is the google.rpc code (e.g. ALREADY_EXISTS)."""

    def __init__(self, msg: str, code: int = code_pb2.UNKNOWN) -> None:
        super().__init__(msg)
        self.code = code


class SwitchUnavailable(SwitchError):
    """The switch cannot be reached (not started, restarted, gone)."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg, code_pb2.UNAVAILABLE)


@dataclass(frozen=True)
class PipelineFiles:
    bmv2_json: Path
    p4info: Path

    @property
    def cookie(self) -> int:
        """A 64-bit fingerprint of the program, stored on the switch with the pipeline: the
        next controller compares it to know whether the switch already runs this program."""
        h = hashlib.sha256(self.p4info.read_bytes())
        h.update(self.bmv2_json.read_bytes())
        return int.from_bytes(h.digest()[:8], "big")

    def p4info_message(self) -> p4info_pb2.P4Info:
        info = p4info_pb2.P4Info()
        text_format.Merge(self.p4info.read_text(), info, allow_unknown_field=True)
        return info


@dataclass(frozen=True)
class DigestMessage:
    name: str
    list_id: int
    data: list[dict[str, int]]


@dataclass(frozen=True)
class PacketIn:
    payload: bytes
    metadata: dict[str, int]


@dataclass(frozen=True)
class EntryRead:
    """A table entry read back: match field name -> int (exact) or (value, prefix/mask)."""

    table: str
    match: dict[str, MatchValue]
    action: str
    params: dict[str, int]
    priority: int


class _ShellClient(P4RuntimeClient):
    """The shell's client with a handshake that records the outcome instead of exiting."""

    primary: bool = False
    handshake_error: str | None = None

    def handshake(self) -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high = self.election_id[0]
        req.arbitration.election_id.low = self.election_id[1]
        self.stream_out_q.put(req)
        rep = self.get_stream_packet("arbitration", timeout=5)
        if rep is None:
            self.handshake_error = "no arbitration answer on the StreamChannel"
            return
        st = rep.arbitration.status
        self.primary = st.code == code_pb2.OK
        if not self.primary:
            self.handshake_error = (f"not the primary controller: {code_pb2.Code.Name(st.code)} "
                                    f"{st.message}")


def _int(data: bytes) -> int:
    return int.from_bytes(data, "big")


def _rpc_code(e: BaseException) -> int:
    if isinstance(e, P4RuntimeException):
        e = e.grpc_error
    if isinstance(e, grpc.RpcError) and hasattr(e, "code"):
        return e.code().value[0]
    return code_pb2.UNKNOWN


class Switch:
    """One P4Runtime device, as the primary controller."""

    def __init__(self, grpc_addr: str, pipeline: PipelineFiles, device_id: int = 0,
                 election_id: tuple[int, int] = (0, 1), connect_timeout: float = 5.0) -> None:
        self.grpc_addr = grpc_addr
        self.pipeline = pipeline
        self.device_id = device_id
        self.election_id = election_id
        self.connect_timeout = connect_timeout
        self._client: _ShellClient | None = None
        self._po_meta: list[tuple[int, int]] | None = None
        self._info: p4info_pb2.P4Info | None = None
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._lost = threading.Event()
        self._lost_reported = False
        self._lost_lock = threading.Lock()
        self.pushed_pipeline = False

    # ---------------------------------------------------------------- session
    def connect(self) -> bool:
        """Connect, become primary and make sure the switch runs our program: pushed only when
        the cookie on the switch differs (a restarted controller leaves a running pipeline and
        its state alone). Returns True when the pipeline was pushed (the switch starts empty)."""
        if not _one_client.acquire(blocking=False):
            raise SwitchError("p4runtime-shell holds one client per process; close the other "
                              "Switch first")
        try:
            self._connect()
        except BaseException:
            self._teardown()
            _one_client.release()
            raise
        return self.pushed_pipeline

    def _connect(self) -> None:
        probe = grpc.insecure_channel(self.grpc_addr)
        try:
            grpc.channel_ready_future(probe).result(timeout=self.connect_timeout)
        except grpc.FutureTimeoutError:
            raise SwitchUnavailable(f"no P4Runtime server at {self.grpc_addr} "
                                    f"after {self.connect_timeout:g} s") from None
        finally:
            probe.close()
        self._stop.clear()
        self._lost.clear()
        self._lost_reported = False
        client = _ShellClient(self.device_id, self.grpc_addr, self.election_id)
        self._client = client
        if client.handshake_error and not client.primary:
            if "no arbitration" in client.handshake_error:
                raise SwitchUnavailable(f"{self.grpc_addr}: {client.handshake_error}")
            raise SwitchError(f"{self.grpc_addr}: {client.handshake_error}",
                              code_pb2.PERMISSION_DENIED)
        sh.client = client
        global_options.set_option(Options.verbose, False)
        cookie = self.pipeline.cookie
        running = self._running_cookie()
        self._info = self.pipeline.p4info_message()
        if running != cookie:
            log.info("pushing the pipeline (switch cookie %s, ours %#x)",
                     "none" if running is None else f"{running:#x}", cookie)
            self._set_pipeline(self._info, cookie)
            self.pushed_pipeline = True
        else:
            log.info("the switch already runs this program (cookie %#x)", cookie)
            self.pushed_pipeline = False
        sh.context.set_p4info(self._info)

    def _running_cookie(self) -> int | None:
        assert self._client is not None
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.COOKIE_ONLY)
        try:
            rep = self._client.stub.GetForwardingPipelineConfig(req, timeout=10)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.UNAVAILABLE:
                raise SwitchUnavailable(f"{self.grpc_addr}: {e.details()}") from None
            return None  # FAILED_PRECONDITION: no pipeline yet
        if not rep.config.HasField("cookie"):
            return None
        return rep.config.cookie.cookie

    def _set_pipeline(self, info: p4info_pb2.P4Info, cookie: int) -> None:
        assert self._client is not None
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.high, req.election_id.low = self.election_id
        req.config.p4info.CopyFrom(info)
        req.config.p4_device_config = self.pipeline.bmv2_json.read_bytes()
        req.config.cookie.cookie = cookie
        try:
            self._client.stub.SetForwardingPipelineConfig(req, timeout=120)
        except grpc.RpcError as e:
            raise SwitchError(f"SetForwardingPipelineConfig: {e.code().name}: {e.details()}",
                              e.code().value[0]) from None

    def close(self) -> None:
        if self._client is None:
            return
        self._teardown()
        _one_client.release()

    def _teardown(self) -> None:
        self._stop.set()
        client, self._client = self._client, None
        if client is not None:
            try:
                client.tear_down()
            except Exception as e:  # the channel may already be gone
                log.debug("tear down: %s", e)
        for t in self._threads:
            t.join(timeout=2)
        self._threads = []
        if sh.client is client:
            sh.client = None

    @property
    def connected(self) -> bool:
        return self._client is not None and not self._lost.is_set()

    @property
    def info(self) -> p4info_pb2.P4Info:
        if self._info is None:
            raise SwitchError("not connected")
        return self._info

    # ---------------------------------------------------------------- stream
    def start_stream(self, on_packet_in: Callable[[PacketIn], None],
                     on_digest: Callable[[DigestMessage], None],
                     on_lost: Callable[[str], None]) -> None:
        """Receive packet-ins and digest lists (each list is acknowledged as it is taken off
        the stream) and notice when the stream ends or mastership is lost. The callbacks run
        on this module's threads and must only hand the message on."""
        assert self._client is not None
        client = self._client
        pin_names = {m.id: m.name for m in self._packet_metadata("packet_in")}
        digests = {d.preamble.id: d for d in self.info.digests}

        def lost(why: str) -> None:
            with self._lost_lock:
                if self._lost_reported or self._stop.is_set():
                    return
                self._lost_reported = True
                self._lost.set()
            on_lost(why)

        def pump(kind: str, handle: Callable[[p4runtime_pb2.StreamMessageResponse], None]
                 ) -> None:
            while not self._stop.is_set():
                msg = client.get_stream_packet(kind, timeout=0.5)
                if msg is None:
                    if not client.stream_recv_thread.is_alive():
                        lost("the P4Runtime stream ended")
                        return
                    continue
                try:
                    handle(msg)
                except Exception:
                    log.exception("handling a %s message", kind)

        def packet(msg: p4runtime_pb2.StreamMessageResponse) -> None:
            meta = {pin_names.get(m.metadata_id, str(m.metadata_id)): _int(m.value)
                    for m in msg.packet.metadata}
            on_packet_in(PacketIn(bytes(msg.packet.payload), meta))

        def digest(msg: p4runtime_pb2.StreamMessageResponse) -> None:
            dl = msg.digest
            ack = p4runtime_pb2.StreamMessageRequest()
            ack.digest_ack.digest_id = dl.digest_id
            ack.digest_ack.list_id = dl.list_id
            client.stream_out_q.put(ack)
            info = digests.get(dl.digest_id)
            if info is None:
                log.warning("digest list for unknown digest id %d", dl.digest_id)
                return
            members = [m.name for m in
                       self.info.type_info.structs[info.type_spec.struct.name].members]
            data = [{n: _int(m.bitstring) for n, m in zip(members, d.struct.members,
                                                          strict=True)} for d in dl.data]
            on_digest(DigestMessage(info.preamble.name, dl.list_id, data))

        def arbitration(msg: p4runtime_pb2.StreamMessageResponse) -> None:
            if msg.arbitration.status.code != code_pb2.OK:
                lost("another controller became primary")

        for kind, fn in (("packet", packet), ("digest", digest), ("arbitration", arbitration)):
            t = threading.Thread(target=pump, args=(kind, fn), name=f"p4rt-{kind}", daemon=True)
            t.start()
            self._threads.append(t)

    def _packet_metadata(self, name: str) -> list[p4info_pb2.ControllerPacketMetadata.Metadata]:
        for m in self.info.controller_packet_metadata:
            if m.preamble.name == name:
                return list(m.metadata)
        return []

    # ---------------------------------------------------------------- errors
    def _call(self, what: str, fn: Callable[[], object]) -> object:
        if self._client is None:
            raise SwitchUnavailable("not connected")
        try:
            return fn()
        except P4RuntimeWriteException as e:
            code = e.errors[0][1].canonical_code if e.errors else code_pb2.UNKNOWN
            raise SwitchError(f"{what}: {str(e).strip()}", code) from None
        except (P4RuntimeException, grpc.RpcError) as e:
            code = _rpc_code(e)
            if code == code_pb2.UNAVAILABLE:
                raise SwitchUnavailable(f"{what}: {e}") from None
            raise SwitchError(f"{what}: {e}", code) from None
        except UserError as e:
            raise SwitchError(f"{what}: {e}", code_pb2.INVALID_ARGUMENT) from None

    # ---------------------------------------------------------------- table entries
    def entry(self, table: str, match: dict[str, str], action: str | None = None,
              params: dict[str, str] | None = None, priority: int = 0,
              default: bool = False) -> sh.TableEntry:
        """A shell TableEntry from names; values are strings as the shell reads them
        ("10.0.0.1", "10.0.0.0/24", "02:00:..", "0x..", decimal)."""
        def build() -> sh.TableEntry:
            te = sh.TableEntry(table)
            for k, v in match.items():
                te.match[k] = v
            if action is not None:
                te.action = sh.Action(action)
                for k, v in (params or {}).items():
                    te.action[k] = v
            if priority:
                te.priority = priority
            if default:
                te.is_default = True
            return te
        return self._call(f"{table} entry", build)  # type: ignore[return-value]

    def insert(self, te: sh.TableEntry) -> None:
        self._call(f"insert into {te.name}", te.insert)

    def insert_many(self, tes: list[sh.TableEntry]) -> None:
        """Insert several entries in one WriteRequest (one round trip instead of one each);
        an entry that is already there is no error."""
        self._write_many(tes, p4runtime_pb2.Update.INSERT, code_pb2.ALREADY_EXISTS, "insert")

    def delete_many(self, tes: list[sh.TableEntry]) -> None:
        """Delete several entries in one WriteRequest; an entry already gone is no error."""
        self._write_many(tes, p4runtime_pb2.Update.DELETE, code_pb2.NOT_FOUND, "delete")

    def _write_many(self, tes: list[sh.TableEntry], kind: int, ok_code: int, what: str
                    ) -> None:
        if not tes:
            return

        def write() -> None:
            assert self._client is not None
            req = p4runtime_pb2.WriteRequest()
            for te in tes:
                u = req.updates.add()
                u.type = kind  # type: ignore[assignment]
                u.entity.table_entry.CopyFrom(te.msg())
            c = self._client
            req.device_id = c.device_id
            req.election_id.high, req.election_id.low = c.election_id
            if c.role_name is not None:
                req.role = c.role_name
            try:
                c.stub.Write(req)   # the stub: the shell's write() parses errors its own way
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNKNOWN:  # type: ignore[attr-defined]
                    raise P4RuntimeException(e) from None
                failed = write_errors(e)
                bad = [(i, err) for i, err in failed if err.canonical_code != ok_code]
                if failed and not bad:
                    return
                raise SwitchError(f"{what} {tes[0].name}: " + "; ".join(
                    f"update {i}: {code_pb2.Code.Name(err.canonical_code)} {err.message}"
                    for i, err in bad[:5]) if bad else str(e),
                    bad[0][1].canonical_code if bad else code_pb2.UNKNOWN) from None
        self._call(f"{what} {len(tes)} entries of {tes[0].name}", write)

    def modify(self, te: sh.TableEntry) -> None:
        self._call(f"modify {te.name}", te.modify)

    def delete(self, te: sh.TableEntry) -> None:
        self._call(f"delete from {te.name}", te.delete)

    def install(self, te: sh.TableEntry) -> None:
        """Insert, or modify the entry that is already there (idempotent across restarts)."""
        if te.is_default:
            self.modify(te)
            return
        try:
            self.insert(te)
        except SwitchError as e:
            if e.code != code_pb2.ALREADY_EXISTS:
                raise
            self.modify(te)

    def read_entries(self, table: str) -> list[EntryRead]:
        def read() -> list[EntryRead]:
            return [self._entry_read(table, te.msg()) for te in sh.TableEntry(table).read()]
        return self._call(f"read {table}", read)  # type: ignore[return-value]

    def _entry_read(self, table: str, msg: p4runtime_pb2.TableEntry) -> EntryRead:
        match: dict[str, MatchValue] = {}
        for fm in msg.match:
            name = sh.context.get_mf_name(table, fm.field_id)
            kind = fm.WhichOneof("field_match_type")
            if kind == "exact":
                match[name] = _int(fm.exact.value)
            elif kind == "lpm":
                match[name] = (_int(fm.lpm.value), fm.lpm.prefix_len)
            elif kind == "ternary":
                match[name] = (_int(fm.ternary.value), _int(fm.ternary.mask))
            else:
                raise SwitchError(f"{table}.{name}: {kind} match not read back")
        action = sh.context.get_name_from_id(msg.action.action.action_id)
        params = {sh.context.get_param_name(action, p.param_id): _int(p.value)
                  for p in msg.action.action.params}
        return EntryRead(table, match, action, params, msg.priority)

    # ---------------------------------------------------------------- counters, digests
    def read_counter(self, name: str) -> dict[int, tuple[int, int]]:
        """Every cell of an indirect counter: index -> (packets, bytes)."""
        def read() -> dict[int, tuple[int, int]]:
            return {c.index: (c.packet_count, c.byte_count)
                    for c in sh.CounterEntry(name).read()}
        return self._call(f"read counter {name}", read)  # type: ignore[return-value]

    def read_counter_cells(self, name: str, indices: list[int]) -> dict[int, int]:
        """Packet counts of some cells of an indirect counter, in one ReadRequest of many
        entities. Raw protobufs: the shell's read takes one entity, so it could only read
        every cell (a wildcard) or one cell per RPC, and a wildcard over 4096 slots costs the
        switch ~0.5 s per epoch where the slots in use cost ~0.2 ms each."""
        if not indices:
            return {}
        cid = next((c.preamble.id for c in self.info.counters if c.preamble.name == name), None)
        if cid is None:
            raise SwitchError(f"no counter named {name!r} in the P4Info")
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        for i in indices:
            e = req.entities.add()
            e.counter_entry.counter_id = cid
            e.counter_entry.index.index = i

        def read() -> dict[int, int]:
            assert self._client is not None
            out: dict[int, int] = {}
            for rep in self._client.stub.Read(req, timeout=30):
                for e in rep.entities:
                    out[e.counter_entry.index.index] = e.counter_entry.data.packet_count
            return out
        return self._call(f"read counter {name}", read)  # type: ignore[return-value]

    def enable_digest(self, name: str, max_timeout_ns: int = 0, max_list_size: int = 1,
                      ack_timeout_ns: int = 10**9) -> None:
        def write() -> None:
            d = sh.DigestEntry(name)
            d.max_timeout_ns = max_timeout_ns
            d.max_list_size = max_list_size
            d.ack_timeout_ns = ack_timeout_ns
            try:
                d.insert()
            except P4RuntimeWriteException as e:
                if not e.errors or e.errors[0][1].canonical_code != code_pb2.ALREADY_EXISTS:
                    raise
                d.modify()
        self._call(f"digest {name}", write)

    # ---------------------------------------------------------------- packet I/O
    def packet_out(self, payload: bytes, egress_port: int = 0) -> None:
        """One packet-out on the stream. Built as a raw StreamMessageRequest (the shell's
        PacketOut object costs about 0.3 ms of Python per frame, which a window of control
        datagrams pays 64 times): the packet_out header's egress_port and nothing else."""
        meta = self._packet_out_meta()

        def send() -> None:
            assert self._client is not None
            req = p4runtime_pb2.StreamMessageRequest()
            req.packet.payload = payload
            for mid, bits in meta:
                m = req.packet.metadata.add()
                m.metadata_id = mid
                m.value = egress_port.to_bytes(max(1, (bits + 7) // 8), "big")
            self._client.stream_out_q.put(req)
        if self._lost.is_set():
            raise SwitchUnavailable("the P4Runtime stream is down")
        self._call("packet-out", send)

    def _packet_out_meta(self) -> list[tuple[int, int]]:
        """(id, bit width) of the packet_out header's egress_port field, once."""
        if self._po_meta is None:
            self._po_meta = [(m.id, m.bitwidth) for m in self._packet_metadata("packet_out")
                             if m.name == "egress_port"]
        return self._po_meta


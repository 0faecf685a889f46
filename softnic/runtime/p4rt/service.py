"""The P4Runtime gRPC servicer: the RPCs of ``p4.v1.P4Runtime`` on top of one softnic Switch.

Error reporting follows BMv2/PI: a Write batch in which any update fails ends with status
UNKNOWN and a ``google.rpc.Status`` in the ``grpc-status-details-bin`` trailer carrying one
``p4.v1.Error`` per update, in order (OK for those that were applied); every other failure is the
RPC's own canonical code. Writes and pipeline changes are serialised by one lock so a batch never
straddles two pipelines; reads only take a reference to the current pipeline's handlers.

SetForwardingPipelineConfig actions: VERIFY, VERIFY_AND_SAVE then COMMIT, VERIFY_AND_COMMIT, and
RECONCILE_AND_COMMIT, which (like BMv2) is treated as VERIFY_AND_COMMIT: the new program is
loaded and all forwarding state is cleared rather than carried over.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from importlib import metadata

import grpc
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softnic.runtime.api import PacketIn, PipelineLoadError, SwitchAPI

from . import bytestr, packet_metadata
from .arbitration import Arbiter
from .digests import DigestManager
from .engine import engine_errors
from .entities import Entities
from .errors import (
    P4RTError,
    failed_precondition,
    invalid,
    not_found,
    permission_denied,
    unimplemented,
)
from .idle import IdleSweeper
from .pipeline import PipelineConfig, verify
from .pre import PreHandler
from .streams import Stream

log = logging.getLogger("softnic.p4rt")

Emit = Callable[[int, bytes], object]
Fwd = p4runtime_pb2.SetForwardingPipelineConfigRequest
GetFwd = p4runtime_pb2.GetForwardingPipelineConfigRequest


def api_version() -> str:
    """The P4Runtime API version of the protobufs we serve (the ``p4runtime`` package's)."""
    try:
        return metadata.version("p4runtime")
    except metadata.PackageNotFoundError:
        return "1.4.1"


class _RichStatus(grpc.Status):
    """A status with trailing metadata: what ``context.abort_with_status`` needs."""

    def __init__(self, code: grpc.StatusCode, details: str, trailing: tuple) -> None:
        self.code = code
        self.details = details
        self.trailing_metadata = trailing


def _p4_error(e: P4RTError | None) -> p4runtime_pb2.Error:
    if e is None:
        return p4runtime_pb2.Error(canonical_code=code_pb2.OK)
    return p4runtime_pb2.Error(canonical_code=e.code.value[0], message=e.message)


# gRPC clients refuse trailing metadata beyond 8 KiB (soft limit, 16 KiB hard) by default: a
# bigger error trailer would turn the whole answer into RESOURCE_EXHAUSTED. Messages are
# shortened until the details fit; the per-update codes are always kept.
TRAILER_BUDGET = 7680


def _batch_status(results: list[P4RTError | None], failed: int) -> status_pb2.Status:
    for limit in (None, 160, 48, 0):
        status = status_pb2.Status(code=code_pb2.UNKNOWN,
                                   message=f"{failed} of {len(results)} updates failed")
        for e in results:
            err = _p4_error(e)
            if limit is not None:
                err.message = err.message[:limit]
            status.details.add().Pack(err)
        if status.ByteSize() <= TRAILER_BUDGET:
            break
    else:
        log.warning("write batch of %d updates: error details (%d bytes) exceed what gRPC "
                    "clients accept by default", len(results), status.ByteSize())
    return status


class _Committed:
    """The pipeline in force and the entity handlers bound to its P4Info."""

    def __init__(self, cfg: PipelineConfig, entities: Entities) -> None:
        self.cfg = cfg
        self.entities = entities


class P4RuntimeService(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, switch: SwitchAPI, device_id: int = 0, cpu_port: int | None = None,
                 emit: Emit | None = None, idle_sweep_s: float = 1.0) -> None:
        self.switch = switch
        self.device_id = device_id
        self.cpu_port = cpu_port
        self.emit = emit
        self.arbiter = Arbiter(device_id)
        self.digests = DigestManager(self._send_to_primary)
        self.pre = PreHandler(switch)
        # idle timeouts: swept every idle_sweep_s (BMv2's AgeingMonitor default: 1000 ms)
        self.idle = IdleSweeper(switch, self._send_to_primary, idle_sweep_s)
        self._lock = threading.Lock()
        self._current: _Committed | None = None
        self._saved: PipelineConfig | None = None
        self._streams: set[Stream] = set()
        self.packet_in_dropped = 0
        switch.set_packet_in_handler(self._on_packet_in)
        switch.set_digest_handler(self.digests.on_digest)

    def close(self) -> None:
        self.switch.set_packet_in_handler(None)
        self.switch.set_digest_handler(None)
        self.digests.stop()
        self.idle.stop()
        for s in list(self._streams):
            s.close()

    # -- helpers
    def _check_device(self, device_id: int) -> None:
        if device_id != self.device_id:
            raise not_found(f"unknown device id {device_id} (this is device {self.device_id})")

    def _pipeline(self) -> _Committed:
        cur = self._current
        if cur is None:
            raise failed_precondition("no forwarding pipeline config has been set")
        return cur

    def _check_primary(self, role: str, election_id: p4runtime_pb2.Uint128) -> None:
        eid = (election_id.high, election_id.low)
        if not self.arbiter.is_primary(role, eid):
            raise permission_denied(f"election id {eid} is not the primary's for role "
                                    f"{role or '<default>'}")

    def _send_to_primary(self, msg: p4runtime_pb2.StreamMessageResponse) -> bool:
        primary = self.arbiter.primary("")
        return primary is not None and primary.offer(msg)

    # -- Capabilities
    def Capabilities(self, request, context):
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=api_version())

    # -- pipeline config
    def SetForwardingPipelineConfig(self, request, context):
        try:
            self._set_pipeline(request)
        except P4RTError as e:
            context.abort(e.code, e.message)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def _set_pipeline(self, request: Fwd) -> None:
        self._check_device(request.device_id)
        self._check_primary(request.role, request.election_id)
        action = request.action
        if action == Fwd.COMMIT:
            with self._lock:
                if self._saved is None:
                    raise failed_precondition("COMMIT without a config saved by VERIFY_AND_SAVE")
                self._commit(self._saved)
                self._saved = None
            return
        if action not in (Fwd.VERIFY, Fwd.VERIFY_AND_SAVE, Fwd.VERIFY_AND_COMMIT,
                          Fwd.RECONCILE_AND_COMMIT):
            raise invalid(f"unsupported pipeline config action {action}")
        if not request.HasField("config"):
            raise invalid("a forwarding pipeline config is required")
        cfg = verify(request.config)
        if action == Fwd.VERIFY:
            return
        with self._lock:
            if action == Fwd.VERIFY_AND_SAVE:
                self._saved = cfg
            else:
                self._commit(cfg)

    def _commit(self, cfg: PipelineConfig) -> None:
        try:
            with engine_errors("load pipeline"):
                self.switch.load_json(cfg.bmv2_json)
        except P4RTError as e:
            raise invalid(f"cannot load the BMv2 JSON: {e.message}") from None
        except PipelineLoadError as e:  # pragma: no cover - engine_errors maps it already
            raise invalid(f"cannot load the BMv2 JSON: {e}") from None
        with engine_errors("clear replication state"):  # a new program starts empty (BMv2)
            for group in self.switch.mc_groups():
                self.switch.mc_group_delete(group)
            for session in self.switch.clone_sessions():
                self.switch.clone_session_delete(session)
        packet_metadata.configure_switch(self.switch, cfg.index, cfg.bmv2_json, self.cpu_port)
        self.digests.reset(cfg.index, cfg.bmv2_json)
        self.pre.reset()
        self._current = _Committed(cfg, Entities(self.switch, cfg.index, self.digests, self.pre))
        self.idle.reset(cfg.index)
        log.info("pipeline committed: %d tables", len(cfg.index.tables))

    def GetForwardingPipelineConfig(self, request, context):
        try:
            self._check_device(request.device_id)
            cur = self._pipeline()
        except P4RTError as e:
            context.abort(e.code, e.message)
        src = cur.cfg.config
        resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        rt = request.response_type
        if src.HasField("cookie"):
            resp.config.cookie.CopyFrom(src.cookie)
        if rt in (GetFwd.ALL, GetFwd.P4INFO_AND_COOKIE):
            resp.config.p4info.CopyFrom(src.p4info)
        if rt in (GetFwd.ALL, GetFwd.DEVICE_CONFIG_AND_COOKIE):
            resp.config.p4_device_config = src.p4_device_config
        if rt not in (GetFwd.ALL, GetFwd.P4INFO_AND_COOKIE, GetFwd.DEVICE_CONFIG_AND_COOKIE,
                      GetFwd.COOKIE_ONLY):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"unknown response type {rt}")
        return resp

    # -- Write / Read
    def Write(self, request, context):
        try:
            self._check_device(request.device_id)
            self._check_primary(request.role, request.election_id)
            cur = self._pipeline()
            if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
                raise unimplemented("only CONTINUE_ON_ERROR atomicity is supported")
        except P4RTError as e:
            context.abort(e.code, e.message)
        results: list[P4RTError | None] = []
        with self._lock:
            if self._current is not cur:
                context.abort(grpc.StatusCode.ABORTED, "the pipeline changed during the write")
            for u in request.updates:
                try:
                    cur.entities.write(u)
                    results.append(None)
                except P4RTError as e:
                    results.append(e)
                except Exception as e:  # our bug: report it for this update, keep serving
                    log.exception("write failed")
                    results.append(P4RTError(grpc.StatusCode.INTERNAL, f"internal error: {e}"))
        failures = [e for e in results if e is not None]
        if failures:
            status = _batch_status(results, len(failures))
            trailer = (("grpc-status-details-bin", status.SerializeToString()),)
            context.abort_with_status(_RichStatus(grpc.StatusCode.UNKNOWN, status.message,
                                                  trailer))
        return p4runtime_pb2.WriteResponse()

    def Read(self, request, context):
        try:
            self._check_device(request.device_id)
            cur = self._pipeline()
            resp = p4runtime_pb2.ReadResponse()
            for e in request.entities:
                resp.entities.extend(cur.entities.read(e))
        except P4RTError as e:
            context.abort(e.code, e.message)
        except Exception as e:  # our bug: a clear status instead of a dropped RPC
            log.exception("read failed")
            context.abort(grpc.StatusCode.INTERNAL, f"internal error: {e}")
        yield resp

    # -- StreamChannel
    def StreamChannel(self, request_iterator, context) -> Iterator:
        stream = Stream()
        self._streams.add(stream)
        fatal: list[P4RTError] = []

        def reader() -> None:
            try:
                for req in request_iterator:
                    try:
                        self._on_stream_request(stream, req)
                    except P4RTError as e:
                        fatal.append(e)
                        return
            except Exception:  # the client went away: grpc ends the iterator with an error
                pass
            finally:
                self.arbiter.leave(stream)
                stream.close()

        context.add_callback(stream.close)
        threading.Thread(target=reader, name=f"p4rt-stream-{stream.id}", daemon=True).start()
        try:
            yield from stream.responses()
        finally:
            self.arbiter.leave(stream)
            self._streams.discard(stream)
        if fatal:
            context.abort(fatal[0].code, fatal[0].message)

    def _stream_error(self, stream: Stream, e: P4RTError,
                      req: p4runtime_pb2.StreamMessageRequest) -> None:
        msg = p4runtime_pb2.StreamMessageResponse()
        msg.error.canonical_code = e.code.value[0]
        msg.error.message = e.message
        kind = req.WhichOneof("update")
        if kind == "packet":
            msg.error.packet_out.packet_out.CopyFrom(req.packet)
        elif kind == "digest_ack":
            msg.error.digest_list_ack.digest_list_ack.CopyFrom(req.digest_ack)
        stream.offer(msg)

    def _on_stream_request(self, stream: Stream, req: p4runtime_pb2.StreamMessageRequest) -> None:
        kind = req.WhichOneof("update")
        if kind == "arbitration":
            a = req.arbitration
            self._check_device(a.device_id)
            if a.role.HasField("config"):
                raise unimplemented("role configs are not supported")
            self.arbiter.join(stream, a.role.name, (a.election_id.high, a.election_id.low))
            return
        try:
            if stream.election_id is None:
                raise permission_denied("send a MasterArbitrationUpdate first")
            is_primary = self.arbiter.primary(stream.role or "") is stream
            if kind == "packet":
                if not is_primary:
                    raise permission_denied("only the primary client may send packet-outs")
                self._packet_out(req.packet)
            elif kind == "digest_ack":
                if is_primary:
                    self.digests.ack(req.digest_ack.digest_id, req.digest_ack.list_id)
            else:
                raise unimplemented(f"stream message {kind} is not supported")
        except P4RTError as e:
            self._stream_error(stream, e, req)

    # -- packet I/O
    def _packet_out(self, pkt: p4runtime_pb2.PacketOut) -> None:
        cur = self._pipeline()
        info = cur.cfg.index.packet_metadata.get("packet_out")
        values: dict[str, int] = {}
        for m in pkt.metadata:
            f = info.fields_by_id.get(m.metadata_id) if info else None
            if f is None:
                raise invalid(f"packet-out: unknown metadata id {m.metadata_id}")
            values[f.name] = bytestr.decode_padded(m.value, f.bitwidth, f"packet_out {f.name}")
        if info is not None:
            for f in info.fields:
                values.setdefault(f.name, 0)
        with engine_errors("packet-out"):
            emitted = packet_metadata.packet_out(self.switch, info, pkt.payload, values)
        if self.emit is not None:
            for port, data in emitted:
                try:
                    self.emit(port, data)
                except Exception:
                    log.exception("transmitting a packet-out on port %d failed", port)

    def _on_packet_in(self, p: PacketIn) -> None:
        """Engine callback (packet thread): build the message and hand it off, never block."""
        cur = self._current
        primary = self.arbiter.primary("")
        if cur is None or primary is None:
            self.packet_in_dropped += 1
            return
        info = cur.cfg.index.packet_metadata.get("packet_in")
        msg = p4runtime_pb2.StreamMessageResponse()
        payload, values = packet_metadata.packet_in(info, p)
        msg.packet.payload = payload
        if info is not None:
            for f in info.fields:
                if f.name in values:
                    msg.packet.metadata.add(metadata_id=f.id,
                                            value=bytestr.encode(values[f.name]))
        if not primary.offer(msg):
            self.packet_in_dropped += 1

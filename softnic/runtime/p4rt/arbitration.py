"""Primary/backup election among StreamChannel clients (P4Runtime spec, "Client Arbitration").

For each (device, role) the connected client with the highest election id is the primary; only
the primary may Write or SetForwardingPipelineConfig, and only it receives packet-ins and
digests. Every client learns its status from a MasterArbitrationUpdate: OK for the primary,
ALREADY_EXISTS for a backup, both carrying the primary's election id. Whenever the primary
changes (a higher id arrives, or the primary's stream ends) every client of the role is told, so
a backup knows when it has been promoted. When the primary disconnects, the next-highest
connected client is promoted at once (BMv2/PI behaviour) instead of waiting for a re-election.
Roles are kept apart by name; role configs are not supported.
"""

from __future__ import annotations

import threading

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from .errors import invalid
from .streams import Stream


class Arbiter:
    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self._lock = threading.Lock()
        self._streams: dict[str, list[Stream]] = {}

    def _primary_locked(self, role: str) -> Stream | None:
        members = self._streams.get(role, [])
        return max(members, key=lambda s: s.election_id or (0, 0), default=None)

    def primary(self, role: str = "") -> Stream | None:
        with self._lock:
            return self._primary_locked(role)

    def is_primary(self, role: str, election_id: tuple[int, int]) -> bool:
        with self._lock:
            p = self._primary_locked(role)
            return p is not None and p.election_id == election_id

    def _update_msg(self, s: Stream, primary: Stream) -> p4runtime_pb2.StreamMessageResponse:
        msg = p4runtime_pb2.StreamMessageResponse()
        upd = msg.arbitration
        upd.device_id = self.device_id
        if s.role:
            upd.role.name = s.role
        assert primary.election_id is not None
        upd.election_id.high, upd.election_id.low = primary.election_id
        if s is primary:
            upd.status.code = code_pb2.OK
            upd.status.message = "this client is the primary"
        else:
            upd.status.code = code_pb2.ALREADY_EXISTS
            upd.status.message = "this client is a backup"
        return msg

    def join(self, s: Stream, role: str, election_id: tuple[int, int]) -> None:
        """Register (or re-register) ``s``; raises INVALID_ARGUMENT for a duplicate election id."""
        with self._lock:
            if s.role is not None and s.role != role:
                self._remove_locked(s)
            members = self._streams.setdefault(role, [])
            for other in members:
                if other is not s and other.election_id == election_id:
                    raise invalid(f"election id {election_id} is already used by another client "
                                  f"of role {role or '<default>'}")
            before = self._primary_locked(role)
            s.role, s.election_id = role, election_id
            if s not in members:
                members.append(s)
            after = self._primary_locked(role)
            assert after is not None
            targets = members if after is not before else [s]
            for t in targets:
                t.offer(self._update_msg(t, after))

    def _remove_locked(self, s: Stream) -> None:
        if s.role is None:
            return
        members = self._streams.get(s.role, [])
        if s not in members:
            return
        before = self._primary_locked(s.role)
        members.remove(s)
        after = self._primary_locked(s.role)
        if after is not None and after is not before:
            for t in members:
                t.offer(self._update_msg(t, after))

    def leave(self, s: Stream) -> None:
        with self._lock:
            self._remove_locked(s)

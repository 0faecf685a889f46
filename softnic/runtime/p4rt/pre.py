"""Packet replication engine entries: multicast groups and clone sessions.

The engine keeps (port, instance) replica lists; this module adds the P4Runtime rules around
them (group 0 is reserved in v1model - it means "no multicast"; INSERT of an existing id is
ALREADY_EXISTS, MODIFY/DELETE of a missing one NOT_FOUND; replicas must be distinct) and
remembers whether a client spelled each replica's port as the deprecated ``egress_port`` integer
or as the newer ``port`` bytestring, so reads answer in the spelling that was written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from p4.v1 import p4runtime_pb2

from softnic.runtime.api import SwitchAPI

from . import bytestr
from .engine import engine_errors
from .errors import already_exists, invalid, not_found

Update = p4runtime_pb2.Update
PORT_BITS = 32


def _replicas(kind: str, msgs) -> tuple[list[tuple[int, int]], bool]:
    out: list[tuple[int, int]] = []
    as_bytes = False
    for r in msgs:
        if r.WhichOneof("port_kind") == "port":
            as_bytes = True
            port = bytestr.decode(r.port, PORT_BITS, f"{kind} replica port")
        else:
            port = r.egress_port
        pair = (port, r.instance)
        if pair in out:
            raise invalid(f"{kind}: replica (port {port}, instance {r.instance}) given twice")
        out.append(pair)
    return out, as_bytes


def _fill(dst, replicas: list[tuple[int, int]], as_bytes: bool) -> None:
    for port, rid in replicas:
        r = dst.add(instance=rid)
        if as_bytes:
            r.port = bytestr.encode(port)
        else:
            r.egress_port = port


class PreHandler:
    def __init__(self, switch: SwitchAPI) -> None:
        self.switch = switch
        self._bytes_ports: set[tuple[str, int]] = set()

    def write(self, op: int, msg: p4runtime_pb2.PacketReplicationEngineEntry) -> None:
        kind = msg.WhichOneof("type")
        if kind == "multicast_group_entry":
            self._write_group(op, msg.multicast_group_entry)
        elif kind == "clone_session_entry":
            self._write_session(op, msg.clone_session_entry)
        else:
            raise invalid("packet_replication_engine_entry without a multicast or clone entry")

    def _write_group(self, op: int, g: p4runtime_pb2.MulticastGroupEntry) -> None:
        gid = g.multicast_group_id
        if gid == 0:
            raise invalid("multicast group 0 is reserved")
        self._write_entry(
            op, ("mc", gid), f"multicast group {gid}", "multicast groups",
            lambda: gid in self.switch.mc_groups(), g.replicas,
            lambda: self.switch.mc_group_delete(gid),
            lambda reps: self.switch.mc_group_set(gid, reps))

    def _write_session(self, op: int, s: p4runtime_pb2.CloneSessionEntry) -> None:
        sid = s.session_id
        if sid == 0:
            raise invalid("clone session 0 is reserved")
        self._write_entry(
            op, ("clone", sid), f"clone session {sid}", "clone sessions",
            lambda: sid in self.switch.clone_sessions(), s.replicas,
            lambda: self.switch.clone_session_delete(sid),
            lambda reps: self.switch.clone_session_set(sid, reps, s.packet_length_bytes))

    def _write_entry(self, op: int, key: tuple[str, int], what: str, kind: str,
                     exists: Callable[[], bool], replicas_msg: Any,
                     delete: Callable[[], None], store: Callable[[list], None]) -> None:
        """INSERT / MODIFY / DELETE of a multicast group or clone session: the same rules
        (ALREADY_EXISTS / NOT_FOUND) for both kinds of PRE entry."""
        with engine_errors(kind):
            present = exists()
        if op == Update.INSERT and present:
            raise already_exists(f"{what} already exists")
        if op in (Update.MODIFY, Update.DELETE) and not present:
            raise not_found(f"{what} does not exist")
        if op == Update.DELETE:
            with engine_errors(what):
                delete()
            self._bytes_ports.discard(key)
            return
        replicas, as_bytes = _replicas(what, replicas_msg)
        with engine_errors(what):
            store(replicas)
        (self._bytes_ports.add if as_bytes else self._bytes_ports.discard)(key)

    def read(self, req: p4runtime_pb2.PacketReplicationEngineEntry
             ) -> Iterator[p4runtime_pb2.Entity]:
        kind = req.WhichOneof("type")
        if kind == "multicast_group_entry":
            gid = req.multicast_group_entry.multicast_group_id
            with engine_errors("multicast groups"):
                groups = self.switch.mc_groups()
            if gid and gid not in groups:
                raise not_found(f"multicast group {gid} does not exist")
            for g in sorted(groups) if gid == 0 else [gid]:
                ent = p4runtime_pb2.Entity()
                m = ent.packet_replication_engine_entry.multicast_group_entry
                m.multicast_group_id = g
                _fill(m.replicas, groups[g], ("mc", g) in self._bytes_ports)
                yield ent
        elif kind == "clone_session_entry":
            sid = req.clone_session_entry.session_id
            with engine_errors("clone sessions"):
                sessions = self.switch.clone_sessions()
            if sid and sid not in sessions:
                raise not_found(f"clone session {sid} does not exist")
            for s in sorted(sessions) if sid == 0 else [sid]:
                replicas, truncate = sessions[s]
                ent = p4runtime_pb2.Entity()
                c = ent.packet_replication_engine_entry.clone_session_entry
                c.session_id = s
                c.packet_length_bytes = truncate
                _fill(c.replicas, replicas, ("clone", s) in self._bytes_ports)
                yield ent
        else:
            raise invalid("packet_replication_engine_entry read without a multicast or clone "
                          "entry")

    def reset(self) -> None:
        self._bytes_ports.clear()

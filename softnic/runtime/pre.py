"""Packet replication engine state: multicast groups and clone (mirror) sessions.

Kept apart from the switch so the P4Runtime server's PRE entries map one-to-one onto it.
A clone session may have several replicas (P4Runtime ``CloneSessionEntry``); each one produces a
clone, like a BMv2 mirroring session bound to a multicast group.
"""

from __future__ import annotations

from softnic.runtime.api import InvalidArgument, NotFound


class PacketReplicationEngine:
    def __init__(self) -> None:
        self.groups: dict[int, list[tuple[int, int]]] = {}
        self.sessions: dict[int, tuple[list[tuple[int, int]], int]] = {}

    def group_set(self, group: int, replicas: list[tuple[int, int]]) -> None:
        if not 0 < group < 1 << 16:
            raise InvalidArgument(f"multicast group id {group} out of range")
        self.groups[group] = [(int(p), int(r)) for p, r in replicas]

    def group_delete(self, group: int) -> None:
        if self.groups.pop(group, None) is None:
            raise NotFound(f"multicast group {group} does not exist")

    def session_set(self, session: int, replicas: list[tuple[int, int]], truncate: int) -> None:
        if not 0 < session < 1 << 15:
            raise InvalidArgument(f"clone session id {session} out of range")
        if truncate < 0:
            raise InvalidArgument("truncate length must be >= 0")
        self.sessions[session] = ([(int(p), int(r)) for p, r in replicas], int(truncate))

    def session_delete(self, session: int) -> None:
        if self.sessions.pop(session, None) is None:
            raise NotFound(f"clone session {session} does not exist")

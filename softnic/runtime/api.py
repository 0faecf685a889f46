"""The contract between the v1model execution engine and its users.

``softnic.runtime.switch.Switch`` implements :class:`SwitchAPI`. The P4Runtime service
(``softnic.runtime.p4rt``), the port I/O loop (``softnic.runtime.ports``), the CLI and the tests
only use what is declared here, so the engine can change inside without breaking them.

Names are the fully-qualified names of the BMv2 JSON (``MyIngress.ipv4_lpm``), which are also the
P4Info names. Match values, action parameters and register values are Python ints; match keys are
given in the order of the table's key in the JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class SwitchError(Exception):
    """Base for errors the engine reports to a caller (mapped to gRPC codes by p4rt)."""


class PipelineLoadError(SwitchError):
    """The BMv2 JSON cannot be loaded (unknown primitive, malformed field, ...)."""


class NotFound(SwitchError):
    pass


class AlreadyExists(SwitchError):
    pass


class InvalidArgument(SwitchError):
    pass


@dataclass(frozen=True)
class MatchKey:
    """One key field of an entry.

    exact:    value
    lpm:      value, prefix_len
    ternary:  value, mask
    range:    low=value, high
    optional: value (a wildcard optional field is left out, see below)
    A field left out of an entry (P4Runtime don't-care: ternary/optional/range wildcards, lpm
    prefix 0) is given as ``None`` in ``TableEntry.key``; the engine also treats a ternary mask
    of 0 as a wildcard.
    """

    value: int = 0
    mask: int | None = None
    prefix_len: int | None = None
    high: int | None = None


@dataclass
class ActionCall:
    name: str
    params: list[int] = field(default_factory=list)  # in the order of the action's parameters


@dataclass
class TableEntry:
    key: list[MatchKey | None]
    action: ActionCall
    priority: int = 0  # P4Runtime priority: higher wins (ternary/range/optional tables)
    # Direct resources attached to the entry (read back / set by the control plane):
    counter_packets: int = 0
    counter_bytes: int = 0
    meter_config: tuple[int, int, int, int] | None = None  # (cir, cburst, pir, pburst)
    is_const: bool = False
    # Ageing state as read (``table_entries``): the entry's idle timeout (0: none) and the
    # time.monotonic() of its last hit or insertion. Not part of an entry's identity.
    idle_timeout_ns: int = field(default=0, compare=False)
    last_hit: float = field(default=0.0, compare=False)


@dataclass
class PacketIn:
    """A packet sent to the CPU port: ``metadata`` is the controller header's fields by name."""

    payload: bytes
    metadata: dict[str, int]


@dataclass
class Digest:
    name: str  # the digest's (struct type) name as in the JSON "learn_lists"
    fields: dict[str, int]


class SwitchAPI(Protocol):
    # -- pipeline
    def load_json(self, bmv2_json: dict) -> None: ...  # raises PipelineLoadError
    def has_pipeline(self) -> bool: ...

    # -- packets
    def process_packet(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run one packet through the pipeline; return the (egress port, bytes) emitted, in order.
        Packets to the CPU port are *not* returned: they go to the packet-in callback."""
        ...

    def packet_out(self, data: bytes, metadata: dict[str, int]) -> list[tuple[int, bytes]]:
        """Inject a packet from the controller (P4Runtime packet-out) on the CPU port, with the
        packet_out controller header prepended from ``metadata``; returns what is emitted."""
        ...

    def set_packet_in_handler(self, cb: Callable[[PacketIn], None] | None) -> None: ...
    def set_digest_handler(self, cb: Callable[[Digest], None] | None) -> None: ...

    # -- tables
    def table_add(self, table: str, entry: TableEntry) -> None: ...  # AlreadyExists
    def table_modify(self, table: str, entry: TableEntry) -> None: ...  # NotFound
    def table_delete(self, table: str, key: list[MatchKey | None], priority: int) -> None: ...
    def table_entries(self, table: str) -> list[TableEntry]: ...
    def table_set_default(self, table: str, action: ActionCall) -> None: ...  # const -> error
    def table_get_default(self, table: str) -> ActionCall: ...
    def table_reset_default(self, table: str) -> None: ...
    def table_clear(self, table: str) -> None: ...

    # -- stateful externs (index-addressed)
    def counter_read(self, name: str, index: int) -> tuple[int, int]: ...  # (packets, bytes)
    def counter_write(self, name: str, index: int, packets: int, nbytes: int) -> None: ...
    def counter_size(self, name: str) -> int: ...
    def direct_counter_read(self, table: str, entry_key: list[MatchKey | None],
                            priority: int) -> tuple[int, int]: ...
    def direct_counter_write(self, table: str, entry_key: list[MatchKey | None], priority: int,
                             packets: int, nbytes: int) -> None: ...
    def register_read(self, name: str, index: int) -> int: ...
    def register_write(self, name: str, index: int, value: int) -> None: ...
    def register_size(self, name: str) -> int: ...
    def meter_set(self, name: str, index: int, config: tuple[int, int, int, int]) -> None: ...
    def meter_get(self, name: str, index: int) -> tuple[int, int, int, int] | None: ...

    # -- packet replication engine
    def mc_group_set(self, group: int, replicas: list[tuple[int, int]]) -> None: ...  # (port, rid)
    def mc_group_delete(self, group: int) -> None: ...
    def mc_groups(self) -> dict[int, list[tuple[int, int]]]: ...
    def clone_session_set(self, session: int, replicas: list[tuple[int, int]],
                          truncate_len: int = 0) -> None: ...
    def clone_session_delete(self, session: int) -> None: ...
    def clone_sessions(self) -> dict[int, tuple[list[tuple[int, int]], int]]: ...

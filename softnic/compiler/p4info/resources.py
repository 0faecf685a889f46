"""The control-plane-visible resources of a compiled program.

``collect.collect_resources`` fills a :class:`ProgramResources` from the checked program
(not from the BMv2 lowering); the P4Info writer (``serialize.py``) turns it into
``p4.config.v1.P4Info``. Names are the
fully-qualified control-plane names (``MyIngress.ipv4_lpm``, ``MyIngress.drop``, ``NoAction``),
the same strings the BMv2 JSON uses, which is how a target maps P4Runtime ids to JSON objects.

``annotations`` are the source annotations as strings the way p4c prints them in P4Info
(``@name("x")`` is *not* included: it already decided the name; ``@id`` is carried in ``id``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from softnic.compiler.p4info.value_sets import ValueSetInfo


@dataclass
class MatchFieldInfo:
    name: str  # e.g. "hdr.ipv4.dstAddr" (or the @name of the key element)
    bitwidth: int
    match_type: str  # "EXACT" | "LPM" | "TERNARY" | "RANGE" | "OPTIONAL"
    annotations: list[str] = field(default_factory=list)
    ser_enum: str = ""  # the serializable enum type of the key, if any (P4Info type_info)
    type_name: str = ""  # its ``type`` (newtype) declaration, if any: P4Info type_name


@dataclass
class ActionParamInfo:
    name: str
    bitwidth: int
    annotations: list[str] = field(default_factory=list)
    ser_enum: str = ""  # the serializable enum type of the parameter, if any
    type_name: str = ""  # its ``type`` (newtype) declaration, if any: P4Info type_name


@dataclass
class ActionInfo:
    name: str
    params: list[ActionParamInfo] = field(default_factory=list)
    annotations: list[str] = field(default_factory=list)
    id: int | None = None  # from @id, else assigned by the P4Info writer


@dataclass
class ActionRefInfo:
    name: str
    scope: str = "TABLE_AND_DEFAULT"  # | "TABLE_ONLY" | "DEFAULT_ONLY"
    annotations: list[str] = field(default_factory=list)


@dataclass
class TableInfo:
    name: str
    match_fields: list[MatchFieldInfo]
    action_refs: list[ActionRefInfo]
    size: int = 1024
    const_default_action: str | None = None  # action name when default_action is const
    # The default action when it is not const (the implicit NoAction included) and its action
    # data, one int per directionless parameter: P4Info ``initial_default_action``.
    initial_default_action: str | None = None
    initial_default_args: list[int] = field(default_factory=list)
    is_const_table: bool = False  # 'const entries'
    direct_counters: list[str] = field(default_factory=list)  # names of direct_counter objects
    direct_meters: list[str] = field(default_factory=list)
    annotations: list[str] = field(default_factory=list)
    id: int | None = None
    support_timeout: bool = False  # P4Info idle_timeout_behavior NOTIFY_CONTROL


@dataclass
class CounterInfo:
    name: str
    unit: str  # "BYTES" | "PACKETS" | "BOTH"
    size: int = 0  # ignored for direct counters
    direct_table: str | None = None  # set for direct_counter
    annotations: list[str] = field(default_factory=list)
    id: int | None = None


@dataclass
class MeterInfo:
    name: str
    unit: str  # "BYTES" | "PACKETS"
    size: int = 0
    direct_table: str | None = None
    annotations: list[str] = field(default_factory=list)
    id: int | None = None


@dataclass
class RegisterInfo:
    name: str
    bitwidth: int
    size: int
    signed: bool = False
    annotations: list[str] = field(default_factory=list)
    id: int | None = None


@dataclass
class StructFieldInfo:
    name: str
    bitwidth: int
    ser_enum: str = ""  # the serializable enum type of the field, if any
    type_name: str = ""  # its ``type`` (newtype) declaration, if any: P4Info type_name
    kind: str = "bit"  # a digest member's P4Info type spec: "bit", "int" (signed) or "bool"


@dataclass
class DigestInfo:
    """One ``digest<T>(receiver, data)`` call site type; name is T's struct name.

    ``tuple``: T is a tuple (a list argument, or ``digest<tuple<...>>``); the name is then
    p4c's ``digest_<n>`` and P4Info gives the type as ``tuple { members ... }`` (p4c's
    TypeSpecConverter for a Type_BaseList), with no ``type_info`` struct; the fields' names
    (``f0``, ``f1``...) are not part of P4Info."""

    name: str
    fields: list[StructFieldInfo]
    annotations: list[str] = field(default_factory=list)
    id: int | None = None
    tuple: bool = False


@dataclass
class ControllerHeaderInfo:
    """A header annotated ``@controller_header("packet_in")``; ``name`` is the annotation value."""

    name: str
    fields: list[StructFieldInfo]
    annotations: list[str] = field(default_factory=list)
    id: int | None = None
    type_name: str = ""  # the header type's name: p4c derives the P4Info id from it


@dataclass
class SerEnumInfo:
    """A serializable enum (``enum bit<W> E { A = 1, ... }``) that a control-plane object uses:
    P4Info ``type_info.serializable_enums``."""

    name: str
    bitwidth: int
    members: list[tuple[str, int]] = field(default_factory=list)  # declaration order


@dataclass
class ProgramResources:
    program_name: str = ""
    arch: str = "v1model"
    tables: list[TableInfo] = field(default_factory=list)
    actions: list[ActionInfo] = field(default_factory=list)
    counters: list[CounterInfo] = field(default_factory=list)  # indirect and direct
    meters: list[MeterInfo] = field(default_factory=list)  # indirect and direct
    registers: list[RegisterInfo] = field(default_factory=list)
    digests: list[DigestInfo] = field(default_factory=list)
    controller_headers: list[ControllerHeaderInfo] = field(default_factory=list)
    ser_enums: dict[str, SerEnumInfo] = field(default_factory=dict)  # by type name
    new_types: dict[str, int] = field(default_factory=dict)  # ``type bit<W> T``: T -> W
    value_sets: list[ValueSetInfo] = field(default_factory=list)  # the parser's value sets

"""P4Info writer: turns :class:`ProgramResources` into ``p4.config.v1.P4Info``.

The P4Info is the contract between a compiled program and every P4Runtime controller, so the
ids in it must be what a controller written against real p4c expects:

* an id is ``prefix << 24 | low24`` where the prefix is the P4Runtime resource type
  (``P4Ids.Prefix`` in p4info.proto);
* ``low24`` comes from the Jenkins one-at-a-time hash of the fully-qualified name, as in p4c,
  so the same name gets the same id on every recompile and a program compiled by softnic gets
  the same ids as with p4c-bm2-ss. Collisions are resolved by linear probing over the names
  of one resource type taken in sorted order, which keeps the result independent of the
  declaration order;
* an explicit ``@id(N)`` wins; the prefix is added when ``N`` has none, a wrong prefix or the
  same id on two objects is a compile error.

Aliases are the shortest unique dot-separated suffix of each name among all named objects.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from google.protobuf import json_format, text_format
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper
from p4.config.v1 import p4info_pb2

from softnic.compiler.diagnostics import CompileError
from softnic.compiler.p4info.resources import (
    ControllerHeaderInfo,
    ProgramResources,
    StructFieldInfo,
    TableInfo,
)
from softnic.compiler.p4info.value_sets import ValueSetInfo

P4Ids = p4info_pb2.P4Ids
T = TypeVar("T")

# Resource kinds used by this module, mapped to their P4Runtime id prefix.
ACTION = "action"
TABLE = "table"
CONTROLLER_HEADER = "controller_header"
COUNTER = "counter"
DIRECT_COUNTER = "direct_counter"
METER = "meter"
DIRECT_METER = "direct_meter"
REGISTER = "register"
DIGEST = "digest"
VALUE_SET = "value_set"

PREFIXES: dict[str, int] = {
    ACTION: P4Ids.ACTION,
    TABLE: P4Ids.TABLE,
    CONTROLLER_HEADER: P4Ids.CONTROLLER_HEADER,
    COUNTER: P4Ids.COUNTER,
    DIRECT_COUNTER: P4Ids.DIRECT_COUNTER,
    METER: P4Ids.METER,
    DIRECT_METER: P4Ids.DIRECT_METER,
    REGISTER: P4Ids.REGISTER,
    DIGEST: P4Ids.DIGEST,
    VALUE_SET: P4Ids.VALUE_SET,
}

_LOW24 = 0xFFFFFF
_MASK32 = 0xFFFFFFFF


def name_hash(name: str) -> int:
    """Jenkins one-at-a-time hash (32 bits) of the UTF-8 bytes of ``name``.

    p4c derives P4Runtime ids from this hash; using the same function makes our ids equal
    to p4c's for the same program, which lets controllers keep hard-coded ids working.
    """
    h = 0
    for byte in name.encode("utf-8"):
        h = (h + byte) & _MASK32
        h = (h + (h << 10)) & _MASK32
        h ^= h >> 6
    h = (h + (h << 3)) & _MASK32
    h ^= h >> 11
    h = (h + (h << 15)) & _MASK32
    return h


class IdAllocator:
    """Collects (kind, name, explicit id) symbols, then assigns every id in one pass.

    All explicit ids are reserved before any hashed id is chosen, so an ``@id`` never loses
    to a hash; hashed ids are assigned per kind in sorted-name order so the probing sequence
    (and thus every id) depends only on the set of names.
    """

    def __init__(self) -> None:
        self._explicit: dict[tuple[str, str], int] = {}
        self._pending: dict[str, set[str]] = {}
        self._ids: dict[tuple[str, str], int] = {}
        self._taken: set[int] = set()
        self._owner: dict[int, str] = {}  # explicit id -> name, for error messages
        self._done = False

    def add(self, kind: str, name: str, explicit: int | None = None) -> None:
        key = (kind, name)
        if key in self._explicit or name in self._pending.get(kind, set()):
            raise CompileError(None, f"{kind} '{name}' is declared twice in the P4Info")
        if explicit is None:
            self._pending.setdefault(kind, set()).add(name)
            return
        full = self._with_prefix(kind, name, explicit)
        if full in self._taken:
            raise CompileError(
                None,
                f"@id 0x{full:08x} is assigned to multiple declarations: "
                f"'{self._owner[full]}' and '{name}'",
            )
        self._taken.add(full)
        self._owner[full] = name
        self._explicit[key] = full

    @staticmethod
    def _with_prefix(kind: str, name: str, explicit: int) -> int:
        if explicit < 0 or explicit > _MASK32:
            raise CompileError(None, f"{name}: @id should be an unsigned 32-bit integer")
        prefix = PREFIXES[kind]
        top = explicit >> 24
        if top not in (0, prefix):
            raise CompileError(
                None, f"{name}: @id 0x{explicit:08x} has the wrong 8-bit prefix for a {kind}"
            )
        return (prefix << 24) | (explicit & _LOW24)

    def assign(self) -> None:
        self._ids.update(self._explicit)
        for kind in sorted(self._pending):
            prefix = PREFIXES[kind] << 24
            for name in sorted(self._pending[kind]):
                low = name_hash(name) & _LOW24
                for _ in range(_LOW24 + 1):
                    candidate = prefix | low
                    if candidate not in self._taken:
                        break
                    low = (low + 1) & _LOW24
                else:
                    raise CompileError(None, f"no available P4Runtime id for {kind} '{name}'")
                self._taken.add(candidate)
                self._ids[(kind, name)] = candidate
        self._done = True

    def id_of(self, kind: str, name: str) -> int:
        assert self._done, "assign() must run before ids are read"
        try:
            return self._ids[(kind, name)]
        except KeyError:
            raise CompileError(None, f"reference to unknown {kind} '{name}'") from None


def shortest_unique_suffixes(names: Iterable[str]) -> dict[str, str]:
    """Map each dotted name to its shortest suffix (in components) shared with no other name.

    A name that is a whole suffix of another (``b`` and ``a.b``) keeps its full name, as p4c
    does.
    """
    distinct = set(names)
    counts: Counter[tuple[str, ...]] = Counter()
    for name in distinct:
        parts = tuple(name.split("."))
        for k in range(1, len(parts) + 1):
            counts[parts[-k:]] += 1
    aliases: dict[str, str] = {}
    for name in distinct:
        parts = tuple(name.split("."))
        alias = name
        for k in range(1, len(parts) + 1):
            if counts[parts[-k:]] < 2:
                alias = ".".join(parts[-k:])
                break
        aliases[name] = alias
    return aliases


def _controller_header_symbol(ch: ControllerHeaderInfo) -> str:
    """The name hashed for a controller header's id.

    p4c hashes the header *type* name (``packet_in_header_t``) while printing the annotation
    value (``packet_in``) as the name. The resources model may carry the type name as
    ``type_name``; without it the printed name is hashed (still stable, just not p4c's id).
    """
    type_name = getattr(ch, "type_name", "")
    return type_name if isinstance(type_name, str) and type_name else ch.name


class _Builder:
    """One P4Info build; holds the id and alias tables while the messages are filled."""

    def __init__(self, res: ProgramResources) -> None:
        self.res = res
        self.ids = IdAllocator()
        self.p4info = p4info_pb2.P4Info()
        self._collect_symbols()
        self.ids.assign()
        self.aliases = shortest_unique_suffixes(self._all_names())

    # ------------------------------------------------------------------ symbols
    def _collect_symbols(self) -> None:
        res = self.res
        for a in _dedupe(res.actions):
            self.ids.add(ACTION, a.name, a.id)
        for t in _dedupe(res.tables):
            self.ids.add(TABLE, t.name, t.id)
        for c in _dedupe(res.counters):
            self.ids.add(DIRECT_COUNTER if c.direct_table else COUNTER, c.name, c.id)
        for m in _dedupe(res.meters):
            self.ids.add(DIRECT_METER if m.direct_table else METER, m.name, m.id)
        for r in _dedupe(res.registers):
            self.ids.add(REGISTER, r.name, r.id)
        for d in _dedupe(res.digests):
            self.ids.add(DIGEST, d.name, d.id)
        for ch in _dedupe(res.controller_headers):
            self.ids.add(CONTROLLER_HEADER, _controller_header_symbol(ch), ch.id)
        for vs in res.value_sets:
            self.ids.add(VALUE_SET, vs.name, vs.id)

    def _all_names(self) -> list[str]:
        res = self.res
        names = [a.name for a in res.actions] + [t.name for t in res.tables]
        names += [c.name for c in res.counters] + [m.name for m in res.meters]
        names += [r.name for r in res.registers] + [d.name for d in res.digests]
        names += [vs.name for vs in res.value_sets]
        return names + [ch.name for ch in res.controller_headers]

    def _preamble(
        self,
        pre: p4info_pb2.Preamble,
        kind: str,
        name: str,
        annotations: list[str],
        symbol: str | None = None,
    ) -> None:
        pre.id = self.ids.id_of(kind, symbol or name)
        pre.name = name
        pre.alias = self.aliases[name]
        pre.annotations.extend(annotations)

    # ------------------------------------------------------------------ build
    def build(self) -> p4info_pb2.P4Info:
        res = self.res
        # p4c-bm2-ss 1.2.4.1 writes ``pkg_info { arch: "v1model" }`` and nothing else for a
        # program without @pkginfo (it never names the package after the file).
        self.p4info.pkg_info.arch = res.arch
        for t in _dedupe(res.tables):
            self._table(t)
        for a in _dedupe(res.actions):
            msg = self.p4info.actions.add()
            self._preamble(msg.preamble, ACTION, a.name, a.annotations)
            for i, p in enumerate(a.params, start=1):
                param = msg.params.add(id=i, name=p.name, bitwidth=p.bitwidth)
                param.annotations.extend(p.annotations)
                if p.type_name:
                    param.type_name.name = p.type_name
        self._counters()
        self._meters()
        for r in _dedupe(res.registers):
            msg = self.p4info.registers.add(size=r.size)
            self._preamble(msg.preamble, REGISTER, r.name, r.annotations)
            bits = msg.type_spec.bitstring
            (bits.int if r.signed else bits.bit).bitwidth = r.bitwidth
        for d in _dedupe(res.digests):
            msg = self.p4info.digests.add()
            self._preamble(msg.preamble, DIGEST, d.name, d.annotations)
            if d.tuple:
                # p4c's TypeSpecConverter (Type_BaseList): the members' own type specs in
                # order, unnamed; a tuple has no type_info entry
                for f in d.fields:
                    self._member_spec(msg.type_spec.tuple.members.add(), f)
            else:
                msg.type_spec.struct.name = d.name
                self._struct_type(d.name, d.fields)
        for ch in _dedupe(res.controller_headers):
            self._controller_header(ch)
        for vs in res.value_sets:
            self._value_set(vs)
        self._ser_enums()
        for name, width in self.res.new_types.items():
            # p4c's TypeSpecConverter: the underlying type of a ``type`` declaration
            spec = self.p4info.type_info.new_types[name]
            spec.original_type.bitstring.bit.bitwidth = width
        return self.p4info

    def _ser_enums(self) -> None:
        """``type_info.serializable_enums``: what p4c's TypeSpecConverter adds for each serializable
        enum a match field, action parameter, controller-header or digest field has as its type;
        a member's value is ``ceil(W/8)`` bytes, big-endian (p4c's stringRepr)."""
        for name, e in self.res.ser_enums.items():
            spec = self.p4info.type_info.serializable_enums[name]
            spec.underlying_type.bitwidth = e.bitwidth
            size = max(1, (e.bitwidth + 7) // 8)
            for member, value in e.members:
                spec.members.add(name=member, value=value.to_bytes(size, "big"))

    def _table(self, t: TableInfo) -> None:
        msg = self.p4info.tables.add()
        self._preamble(msg.preamble, TABLE, t.name, t.annotations)
        for i, mf in enumerate(t.match_fields, start=1):
            field = msg.match_fields.add(id=i, name=mf.name, bitwidth=mf.bitwidth)
            field.match_type = _enum(
                p4info_pb2.MatchField.MatchType, mf.match_type, f"match kind of {t.name} {mf.name}"
            )
            field.annotations.extend(mf.annotations)
            if mf.type_name:
                field.type_name.name = mf.type_name
        for ref in t.action_refs:
            out = msg.action_refs.add(id=self.ids.id_of(ACTION, ref.name))
            out.scope = _enum(p4info_pb2.ActionRef.Scope, ref.scope, f"action scope of {t.name}")
            out.annotations.extend(_with_scope_annotation(ref.scope, ref.annotations))
        if t.const_default_action:
            msg.const_default_action_id = self.ids.id_of(ACTION, t.const_default_action)
        elif t.initial_default_action:
            self._initial_default_action(msg, t)
        for name in t.direct_counters:
            msg.direct_resource_ids.append(self.ids.id_of(DIRECT_COUNTER, name))
        for name in t.direct_meters:
            msg.direct_resource_ids.append(self.ids.id_of(DIRECT_METER, name))
        msg.size = t.size
        if t.support_timeout:
            # p4c (v1model's addTableProperties): support_timeout = true -> NOTIFY_CONTROL
            msg.idle_timeout_behavior = p4info_pb2.Table.NOTIFY_CONTROL
        # p4c-bm2-ss 1.2.4.1 sets is_const_table for 'const entries' and never writes
        # has_initial_entries (a later P4Info field it does not fill).
        msg.is_const_table = t.is_const_table

    def _initial_default_action(self, msg: p4info_pb2.Table, t: TableInfo) -> None:
        """p4c writes the table's initial (non-const) default action with its arguments, so a
        controller knows what a table does on a miss before it changes anything."""
        name = t.initial_default_action
        assert name is not None
        call = msg.initial_default_action
        call.action_id = self.ids.id_of(ACTION, name)
        action = next((a for a in self.res.actions if a.name == name), None)
        params = action.params if action is not None else []
        if len(params) != len(t.initial_default_args):
            raise CompileError(None, f"default action {name} of {t.name}: expected "
                               f"{len(params)} arguments, got {len(t.initial_default_args)}")
        for i, (p, value) in enumerate(zip(params, t.initial_default_args, strict=True),
                                       start=1):
            width = max(1, (p.bitwidth + 7) // 8)
            value &= (1 << (8 * width)) - 1
            call.arguments.add(param_id=i, value=value.to_bytes(width, "big"))

    def _counters(self) -> None:
        for c in _dedupe(self.res.counters):
            unit = _enum(p4info_pb2.CounterSpec.Unit, c.unit, f"unit of counter {c.name}")
            if c.direct_table:
                msg = self.p4info.direct_counters.add()
                self._preamble(msg.preamble, DIRECT_COUNTER, c.name, c.annotations)
                msg.spec.unit = unit
                msg.direct_table_id = self.ids.id_of(TABLE, c.direct_table)
            else:
                msg = self.p4info.counters.add(size=c.size)
                self._preamble(msg.preamble, COUNTER, c.name, c.annotations)
                msg.spec.unit = unit

    def _meters(self) -> None:
        for m in _dedupe(self.res.meters):
            unit = _enum(p4info_pb2.MeterSpec.Unit, m.unit, f"unit of meter {m.name}")
            if m.direct_table:
                msg = self.p4info.direct_meters.add()
                self._preamble(msg.preamble, DIRECT_METER, m.name, m.annotations)
                msg.spec.unit = unit
                msg.direct_table_id = self.ids.id_of(TABLE, m.direct_table)
            else:
                msg = self.p4info.meters.add(size=m.size)
                self._preamble(msg.preamble, METER, m.name, m.annotations)
                msg.spec.unit = unit

    def _value_set(self, vs: ValueSetInfo) -> None:
        """p4c's P4RuntimeAnalyzer::addValueSet (the match fields come from the resources)."""
        msg = self.p4info.value_sets.add(size=vs.size)
        self._preamble(msg.preamble, VALUE_SET, vs.name, vs.annotations)
        for i, mf in enumerate(vs.match, start=1):
            field = msg.match.add(id=i, name=mf.name, bitwidth=mf.bitwidth)
            if mf.match_type:
                field.match_type = _enum(p4info_pb2.MatchField.MatchType, mf.match_type,
                                         f"match kind of {vs.name} {mf.name}")
            else:
                field.other_match_type = mf.other_match_type
            field.annotations.extend(mf.annotations)

    def _struct_type(self, name: str, fields: list[StructFieldInfo]) -> None:
        struct = self.p4info.type_info.structs[name]
        for f in fields:
            member = struct.members.add(name=f.name)
            self._member_spec(member.type_spec, f)

    @staticmethod
    def _member_spec(spec: p4info_pb2.P4DataTypeSpec, f: StructFieldInfo) -> None:
        """The type spec of a struct field or tuple member."""
        if f.ser_enum:  # p4c's TypeSpecConverter names the enum instead of its bits
            spec.serializable_enum.name = f.ser_enum
        elif f.type_name:  # ... and the ``type`` declaration
            spec.new_type.name = f.type_name
        elif f.kind == "bool":
            spec.bool.SetInParent()
        elif f.kind == "int":
            spec.bitstring.int.bitwidth = f.bitwidth
        else:
            spec.bitstring.bit.bitwidth = f.bitwidth

    def _controller_header(self, ch: ControllerHeaderInfo) -> None:
        msg = self.p4info.controller_packet_metadata.add()
        annotations = list(ch.annotations)
        if not any(a.startswith("@controller_header") for a in annotations):
            annotations.insert(0, f'@controller_header("{ch.name}")')
        symbol = _controller_header_symbol(ch)
        self._preamble(msg.preamble, CONTROLLER_HEADER, ch.name, annotations, symbol=symbol)
        msg.preamble.alias = ch.name  # p4c: the annotation value is both name and alias
        for i, f in enumerate(ch.fields, start=1):
            md = msg.metadata.add(id=i, name=f.name, bitwidth=f.bitwidth)
            if f.type_name:
                md.type_name.name = f.type_name


_SCOPE_ANNOTATIONS = {"DEFAULT_ONLY": "@defaultonly", "TABLE_ONLY": "@tableonly"}


def _with_scope_annotation(scope: str, annotations: list[str]) -> list[str]:
    """p4c prints the scope both as ``scope`` and as the source annotation that set it."""
    needed = _SCOPE_ANNOTATIONS.get(scope.upper())
    if needed is None or needed in annotations:
        return list(annotations)
    return [needed, *annotations]


def _enum(enum: EnumTypeWrapper, value: str, what: str) -> int:
    """Look up a proto enum value by name; a bad name is reported instead of a KeyError."""
    try:
        return int(enum.Value(value.upper()))
    except ValueError:
        raise CompileError(None, f"unsupported {what}: '{value}'") from None


def _dedupe(items: list[T]) -> list[T]:
    """Drop exact repeats (e.g. one digest type used at two call sites); keep order."""
    out: list[T] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def build_p4info(res: ProgramResources) -> p4info_pb2.P4Info:
    """Build the P4Info of a program. Raises CompileError on @id conflicts or bad references."""
    return _Builder(res).build()


# ---------------------------------------------------------------------------- writing
FORMATS = ("text", "json", "binary")
# Current p4c starts text P4Info files with these comment lines (read by editors and tools).
TEXT_HEADER = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"
# The suffixes p4c-bm2-ss 1.2.4 knows for --p4runtime-files (control-plane/p4RuntimeSerializer.cpp,
# parseFileNames). It refuses every other one, ``.txtpb`` included (later p4c releases added it).
SUFFIX_FORMATS = {".txt": "text", ".json": "json", ".bin": "binary"}


class P4InfoFormatError(ValueError):
    """The output format of a P4Info file cannot be determined or is unknown."""


def format_for_path(path: str | os.PathLike[str]) -> str:
    """The P4Info format p4c-bm2-ss 1.2.4 picks for ``path``: from the text after its last
    ``.`` (anywhere in the name, compared as written), with p4c's messages for the rest."""
    name = os.fspath(path)
    dot = name.rfind(".")
    if dot < 0:
        raise P4InfoFormatError(f"{name}: unknown file kind; known suffixes are .bin, .txt, .json")
    suffix = name[dot:]
    fmt = SUFFIX_FORMATS.get(suffix)
    if fmt is None:
        raise P4InfoFormatError(
            f"{name}: Could not detect p4runtime info file format from file suffix {suffix}")
    return fmt


def serialize_p4info(p4info: p4info_pb2.P4Info, fmt: str) -> bytes:
    if fmt == "text":
        return (TEXT_HEADER + text_format.MessageToString(p4info)).encode("utf-8")
    if fmt == "json":
        return (json_format.MessageToJson(p4info) + "\n").encode("utf-8")
    if fmt == "binary":
        return p4info.SerializeToString()
    raise P4InfoFormatError(f"unknown P4Runtime format '{fmt}' (expected one of {FORMATS})")


def write_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    """Write via a temporary file and rename, so a reader never sees a half-written file."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; outputs are meant to be shared
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_p4info(
    p4info: p4info_pb2.P4Info, path: str | os.PathLike[str], fmt: str | None = None
) -> None:
    """Write ``p4info`` to ``path``; the format comes from the suffix unless ``fmt`` is given."""
    write_atomically(path, serialize_p4info(p4info, fmt or format_for_path(path)))

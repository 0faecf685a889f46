"""Where P4 values live in BMv2: header instances, header stacks and the ``scalars`` header.

BMv2 has no structs or local variables, only header instances with fields. p4c-bm2-ss flattens
the program's data onto them: every header (or stack element) in the header struct becomes a
header instance named after its field; scalar metadata, locals and compiler temporaries become
fields of one metadata instance ``scalars`` (type ``scalars_0``); ``standard_metadata`` is its own
metadata instance. A :class:`Loc` says where one P4 value lives; the lowering maps every
variable/parameter symbol to a Loc and follows member/index chains from there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from softnic.compiler.ir.types import (
    BitT,
    BoolT,
    EnumT,
    ErrorT,
    HeaderT,
    PType,
    StackT,
    StructT,
    UnionT,
    VarbitT,
    bit_width,
)


class Loc:
    """Base class of storage locations."""


@dataclass
class FieldLoc(Loc):
    header: str
    field: str
    type: PType


@dataclass
class HeaderLoc(Loc):
    name: str
    type: HeaderT


@dataclass
class UnionLoc(Loc):
    name: str
    type: UnionT
    members: dict[str, HeaderLoc]


@dataclass
class StackLoc(Loc):
    name: str
    type: StackT
    elems: list[Loc]


@dataclass
class StructLoc(Loc):
    type: StructT
    fields: dict[str, Loc]
    header: str | None = None  # set when the struct is one BMv2 metadata instance


@dataclass
class JsonLoc(Loc):
    """A value that is already lowered JSON: action data, an inlined ``in`` argument, or a
    field reached through a run-time stack index (``access_field``)."""

    json: dict[str, Any]
    type: PType
    lvalue: bool = False


@dataclass
class DynHeaderLoc(Loc):
    """``stack[i]`` with a run-time index: a ``dereference_header_stack`` expression."""

    json: dict[str, Any]
    type: HeaderT


@dataclass
class StackLastLoc(Loc):
    stack: StackLoc


@dataclass
class StackNextLoc(Loc):
    stack: StackLoc


@dataclass
class StackNextMemberLoc(Loc):
    """``us.next.m`` of a stack of header unions: an extract target (p4c writes an
    ``extract`` of type ``union_stack`` with value ``[us, m]``)."""

    stack: StackLoc
    member: str


@dataclass
class HeaderTypeJson:
    name: str
    fields: list[list[Any]]


@dataclass
class Layout:
    header_types: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, Any]] = field(default_factory=list)
    header_stacks: list[dict[str, Any]] = field(default_factory=list)
    header_union_types: list[dict[str, Any]] = field(default_factory=list)
    header_unions: list[dict[str, Any]] = field(default_factory=list)
    header_union_stacks: list[dict[str, Any]] = field(default_factory=list)
    scalars: list[list[Any]] = field(default_factory=list)
    _type_names: set[str] = field(default_factory=set)
    _used_names: set[str] = field(default_factory=set)
    header_types_by_name: dict[str, HeaderT] = field(default_factory=dict)
    _paddings: int = 0
    _local_names: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.header_types.append({"name": "scalars_0", "id": 0, "fields": self.scalars})
        self._type_names.add("scalars_0")
        self.headers.append(
            {"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True,
             "pi_omit": True}
        )
        self._used_names.add("scalars")

    # ------------------------------------------------------------ names

    def fresh(self, base: str) -> str:
        """A field/instance name not used yet (p4c appends _0, _1, ... the same way)."""
        if base not in self._used_names:
            self._used_names.add(base)
            return base
        i = 0
        while f"{base}_{i}" in self._used_names:
            i += 1
        name = f"{base}_{i}"
        self._used_names.add(name)
        return name

    def local_name(self, base: str) -> str:
        """Storage name of a user variable: p4c's UniqueNames renames every local ``x`` to a
        fresh ``x_0``/``x_1``..., and the BMv2 back end names its scalar after that."""
        i = 0
        while f"{base}_{i}" in self._used_names or f"{base}_{i}" in self._local_names:
            i += 1
        self._local_names.add(f"{base}_{i}")
        return f"{base}_{i}"

    # ------------------------------------------------------------ types

    def add_header_type(self, t: HeaderT, metadata: bool = False) -> str:
        if t.name in self._type_names:
            return t.name
        fields: list[list[Any]] = []
        for fname, ft in t.fields:
            if isinstance(ft, VarbitT):
                fields.append([fname, "*"])
            else:
                signed = isinstance(ft, BitT) and ft.signed
                fields.append([fname, bit_width(ft), signed])
        if metadata:
            total = sum(f[1] for f in fields if f[1] != "*")
            if total % 8:
                fields.append([self.padding_name(), 8 - total % 8, False])
        entry: dict[str, Any] = {"name": t.name, "id": len(self.header_types), "fields": fields}
        varbits = [ft for _, ft in t.fields if isinstance(ft, VarbitT)]
        if varbits:
            entry["max_length"] = (t.width() + 7) // 8
        self.header_types.append(entry)
        self._type_names.add(t.name)
        self.header_types_by_name[t.name] = t
        return t.name

    def add_header(self, name: str, t: HeaderT, metadata: bool = False) -> HeaderLoc:
        self.add_header_type(t, metadata)
        self.headers.append(
            {"name": name, "id": len(self.headers), "header_type": t.name, "metadata": metadata,
             "pi_omit": True}
        )
        self._used_names.add(name)
        return HeaderLoc(name, t)

    def add_stack(self, name: str, t: StackT) -> StackLoc:
        if isinstance(t.elem, UnionT):
            return self.add_union_stack(name, t)
        elems: list[Loc] = []
        ids = []
        for i in range(t.size):
            assert isinstance(t.elem, HeaderT)
            h = self.add_header(f"{name}[{i}]", t.elem)
            ids.append(self.headers[-1]["id"])
            elems.append(h)
        assert isinstance(t.elem, HeaderT)
        self.header_stacks.append(
            {"name": name, "id": len(self.header_stacks), "header_type": t.elem.name,
             "size": t.size, "header_ids": ids}
        )
        self._used_names.add(name)
        return StackLoc(name, t, elems)

    def add_union_stack(self, name: str, t: StackT) -> StackLoc:
        """``U[n] us`` (p4c's HeaderConverter::addHeaderStacks for a union element type):
        element i is a header union ``us[i]`` whose members are header instances
        ``us[i].m``; the stack goes to ``header_union_stacks``."""
        assert isinstance(t.elem, UnionT)
        elems: list[Loc] = [self.add_union(f"{name}[{i}]", t.elem) for i in range(t.size)]
        ids = [self.header_unions[-t.size + i]["id"] for i in range(t.size)]
        self.header_union_stacks.append(
            {"name": name, "id": len(self.header_union_stacks), "union_type": t.elem.name,
             "size": t.size, "header_union_ids": ids})
        self._used_names.add(name)
        return StackLoc(name, t, elems)

    def add_union(self, name: str, t: UnionT) -> UnionLoc:
        if t.name not in self._type_names:
            self.header_union_types.append(
                {"name": t.name, "id": len(self.header_union_types),
                 "headers": [[fn, ft.name] for fn, ft in t.fields if isinstance(ft, HeaderT)]}
            )
            self._type_names.add(t.name)
        members = {}
        ids = []
        for fn, ft in t.fields:
            assert isinstance(ft, HeaderT)
            members[fn] = self.add_header(f"{name}.{fn}", ft)
            ids.append(self.headers[-1]["id"])
        self.header_unions.append(
            {"name": name, "id": len(self.header_unions), "union_type": t.name, "header_ids": ids}
        )
        self._used_names.add(name)
        return UnionLoc(name, t, members)

    def add_scalar(self, base: str, t: PType) -> FieldLoc:
        name = self.fresh(base)
        signed = isinstance(t, BitT) and t.signed
        self.scalars.append([name, scalar_width(t), signed])
        return FieldLoc("scalars", name, t)

    def finish(self) -> None:
        """Pad ``scalars`` to a whole number of bytes, as p4c does (after every header type)."""
        total = sum(f[1] for f in self.scalars)
        if total % 8:
            self.scalars.append([self.padding_name(), 8 - total % 8, False])

    def padding_name(self) -> str:
        """p4c draws every padding field name from one pool (``refMap->newName("_padding")``):
        the first padded type (standard_metadata) gets ``_padding``, the next ``_padding_0``,
        and ``scalars``, padded last, usually ``_padding_0``."""
        n = self._paddings
        self._paddings += 1
        name = "_padding" if n == 0 else f"_padding_{n - 1}"
        self._used_names.add(name)
        return name

    # ------------------------------------------------------------ allocation of whole values

    def alloc(self, t: PType, name: str, scalar_prefix: str, header_prefix: str = "") -> Loc:
        """Storage for a value of type ``t``: headers get instances, scalars get fields."""
        if isinstance(t, HeaderT):
            return self.add_header(self.fresh(header_prefix + name), t)
        if isinstance(t, StackT):
            return self.add_stack(self.fresh(header_prefix + name), t)
        if isinstance(t, UnionT):
            return self.add_union(self.fresh(header_prefix + name), t)
        if isinstance(t, StructT):
            fields = {
                fn: self.alloc(ft, fn, f"{scalar_prefix}{name}.", f"{header_prefix}{name}_")
                for fn, ft in t.fields
            }
            return StructLoc(t, fields)
        return self.add_scalar(f"{scalar_prefix}{name}", t)


def scalar_width(t: PType) -> int:
    if isinstance(t, (BitT, BoolT, EnumT, ErrorT)):
        return bit_width(t)
    raise ValueError(f"{t.show()} is not a scalar")

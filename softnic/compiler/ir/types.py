"""Resolved P4 types used by the checker and the lowering.

The AST keeps types as written (``TypeName("macAddr_t")``); these classes are what a written type
means once typedefs are expanded and generic externs are specialised. They are frozen so that two
types can be compared with ``==`` (P4 type equality is structural for bit types and nominal for
headers, structs, enums and externs, which the ``name`` fields give).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PType:
    def show(self) -> str:
        return type(self).__name__


@dataclass(frozen=True)
class BitT(PType):
    width: int
    signed: bool = False

    def show(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(frozen=True)
class InfIntT(PType):
    """An unsized integer constant; it takes the width of whatever it meets."""

    def show(self) -> str:
        return "int"


@dataclass(frozen=True)
class VarbitT(PType):
    max_width: int

    def show(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True)
class BoolT(PType):
    def show(self) -> str:
        return "bool"


@dataclass(frozen=True)
class StringT(PType):
    def show(self) -> str:
        return "string"


@dataclass(frozen=True)
class ErrorT(PType):
    def show(self) -> str:
        return "error"


@dataclass(frozen=True)
class MatchKindT(PType):
    def show(self) -> str:
        return "match_kind"


@dataclass(frozen=True)
class VoidT(PType):
    def show(self) -> str:
        return "void"


@dataclass(frozen=True)
class DontCareT(PType):
    def show(self) -> str:
        return "_"


@dataclass(frozen=True)
class TypeVarT(PType):
    name: str

    def show(self) -> str:
        return self.name


@dataclass(frozen=True)
class EnumT(PType):
    """Plain enum (``underlying`` None) or serializable enum (``underlying`` a BitT)."""

    name: str
    members: tuple[str, ...]
    underlying: BitT | None = None
    values: tuple[int, ...] = ()

    def show(self) -> str:
        return self.name

    def value_of(self, member: str) -> int:
        idx = self.members.index(member)
        return self.values[idx] if self.underlying is not None else idx


Fields = tuple[tuple[str, PType], ...]


@dataclass(frozen=True)
class HeaderT(PType):
    name: str
    fields: Fields = ()
    annotations: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def show(self) -> str:
        return self.name

    def field_type(self, name: str) -> PType | None:
        return dict(self.fields).get(name)

    def width(self) -> int:
        return sum(bit_width(t) for _, t in self.fields)


@dataclass(frozen=True)
class StructT(PType):
    name: str
    fields: Fields = ()
    field_annotations: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = field(
        default=(), compare=False
    )

    def show(self) -> str:
        return self.name

    def field_type(self, name: str) -> PType | None:
        return dict(self.fields).get(name)


@dataclass(frozen=True)
class UnionT(PType):
    name: str
    fields: Fields = ()

    def show(self) -> str:
        return self.name

    def field_type(self, name: str) -> PType | None:
        return dict(self.fields).get(name)


@dataclass(frozen=True)
class StackT(PType):
    elem: PType
    size: int

    def show(self) -> str:
        return f"{self.elem.show()}[{self.size}]"


@dataclass(frozen=True)
class TupleT(PType):
    elems: tuple[PType, ...]

    def show(self) -> str:
        return "tuple<" + ", ".join(e.show() for e in self.elems) + ">"


@dataclass(frozen=True)
class ExternT(PType):
    """An extern object type, specialised.

    ``register<bit<32>>`` -> ``ExternT('register', (BitT(32),))``.
    """

    name: str
    args: tuple[PType, ...] = ()
    decl: Any = field(default=None, compare=False, hash=False)

    def show(self) -> str:
        if not self.args:
            return self.name
        return f"{self.name}<{', '.join(a.show() for a in self.args)}>"


@dataclass(frozen=True)
class BlockT(PType):
    """A parser/control/package type or instance (``MyIngress``); only used for ``main``."""

    name: str
    decl: Any = field(default=None, compare=False, hash=False)

    def show(self) -> str:
        return self.name


@dataclass(frozen=True)
class TableT(PType):
    """The type of a table name; ``t.apply()`` returns ApplyResultT."""

    name: str

    def show(self) -> str:
        return "table"


@dataclass(frozen=True)
class ApplyResultT(PType):
    table: str

    def show(self) -> str:
        return "apply_result"


@dataclass(frozen=True)
class ActionEnumT(PType):
    """``t.apply().action_run``; switch labels are the table's action names."""

    table: str

    def show(self) -> str:
        return "action_list"


def bit_width(t: PType) -> int:
    """Width in bits of a type that can sit in a header field or a scalar slot."""
    if isinstance(t, BitT):
        return t.width
    if isinstance(t, BoolT):
        return 1
    if isinstance(t, EnumT):
        return t.underlying.width if t.underlying is not None else 32
    if isinstance(t, ErrorT):
        return 32
    if isinstance(t, VarbitT):
        return t.max_width
    if isinstance(t, HeaderT):
        return t.width()
    if isinstance(t, StructT):
        return sum(bit_width(ft) for _, ft in t.fields)
    raise ValueError(f"type {t.show()} has no bit width")


def is_scalar(t: PType) -> bool:
    """Types that lower to one BMv2 field (bit/int/bool/enum/error)."""
    return isinstance(t, (BitT, BoolT, EnumT, ErrorT, VarbitT))


# ---------------------------------------------------------------------- parser value sets
# (P4_16 spec, "Parser Value Sets"): ``value_set<T>(size) name;`` is a parser-local set of
# keyset values the control plane fills at run time. p4c-bm2-ss lowers it to a BMv2
# ``parse_vsets`` entry whose compressed_bitwidth is the width of ``T``, its fields concatenated.

VALUE_SET_KIND = "value_set"  # the Sym kind of a declared value set


@dataclass(frozen=True)
class ValueSetT(PType):
    """``value_set<elem>(size)``: the type of the set's name (p4c's ``set<elem>``)."""

    elem: PType
    size: int

    def show(self) -> str:
        return f"value_set<{self.elem.show()}>"


def value_set_fields(t: PType) -> list[tuple[str, PType]] | None:
    """The element type as key fields, in order: ``[("", T)]`` for a scalar; the components of
    a tuple (named ``f0``, ``f1``, ...); the fields of a struct, a nested struct flattened into
    its fields, as p4c's TypeInference::matchCase turns a struct element into a tuple
    (convertStructToTuple: bit<W>, bool and nested structs only). None when ``T`` cannot be a
    value set's element."""
    if isinstance(t, (BitT, BoolT, EnumT)):
        return [("", t)]
    if isinstance(t, StructT):
        fields = _flatten_struct(t, "")
    elif isinstance(t, TupleT):
        fields = [(f"f{i}", e) for i, e in enumerate(t.elems)]
        if not all(isinstance(ft, (BitT, BoolT, EnumT)) for _, ft in fields):
            return None
    else:
        return None
    return fields or None


def _flatten_struct(t: StructT, prefix: str) -> list[tuple[str, PType]] | None:
    out: list[tuple[str, PType]] = []
    for name, ft in t.fields:
        if isinstance(ft, StructT):
            inner = _flatten_struct(ft, f"{prefix}{name}.")
            if inner is None:
                return None
            out += inner
        elif isinstance(ft, (BitT, BoolT)):
            out.append((prefix + name, ft))
        else:
            return None
    return out


def value_set_width(t: PType) -> int:
    """p4c's ``width_bits`` of the element type: the sum of its fields' widths."""
    fields = value_set_fields(t) or []
    return sum(bit_width(ft) for _, ft in fields)

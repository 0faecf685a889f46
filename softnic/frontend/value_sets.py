"""Parser value sets (P4_16 spec, "Parser Value Sets"): ``value_set<T>(size) name;``.

A value set is a parser-local set of keyset values that the control plane fills at run time; a
select case whose keyset is the set's name matches when the select key is one of its members.
p4c-bm2-ss lowers it to a BMv2 ``parse_vsets`` entry (name, id, compressed_bitwidth: the width
of ``T``, fields concatenated without padding) and transitions of type ``parse_vset``.

This module holds what the checker, the lowering and P4Info share: the resolved type of a value
set and the flattening of its element type into key fields.
"""

from __future__ import annotations

from dataclasses import dataclass

from softnic.frontend.types import BitT, BoolT, EnumT, PType, StructT, TupleT, bit_width

KIND = "value_set"  # the Sym kind of a declared value set


@dataclass(frozen=True)
class ValueSetT(PType):
    """``value_set<elem>(size)``: the type of the set's name (p4c's ``set<elem>``)."""

    elem: PType
    size: int

    def show(self) -> str:
        return f"value_set<{self.elem.show()}>"


def element_fields(t: PType) -> list[tuple[str, PType]] | None:
    """The element type as key fields, in order: ``[("", T)]`` for a scalar, the fields of a
    struct, the components of a tuple (named ``f0``, ``f1``, ...); None when ``T`` is not a
    type a value set may hold (the spec allows bit/int types, enums and structs or tuples of
    them)."""
    if isinstance(t, (BitT, BoolT, EnumT)):
        return [("", t)]
    if isinstance(t, StructT):
        fields = list(t.fields)
    elif isinstance(t, TupleT):
        fields = [(f"f{i}", e) for i, e in enumerate(t.elems)]
    else:
        return None
    if not fields or not all(isinstance(ft, (BitT, BoolT, EnumT)) for _, ft in fields):
        return None
    return fields


def element_width(t: PType) -> int:
    """p4c's ``width_bits`` of the element type: the sum of its fields' widths."""
    fields = element_fields(t) or []
    return sum(bit_width(ft) for _, ft in fields)

"""Parser value sets (P4_16 spec, "Parser Value Sets"): ``value_set<T>(size) name;``.

A value set is a parser-local set of keyset values that the control plane fills at run time; a
select case whose keyset is the set's name matches when the select key is one of its members.
p4c-bm2-ss lowers it to a BMv2 ``parse_vsets`` entry (name, id, compressed_bitwidth: the width
of ``T``, fields concatenated without padding) and transitions of type ``parse_vset``.

This module holds what the checker, the lowering and P4Info share: the resolved type of a value
set and the flattening of its element type into key fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from softnic.compiler.ir.types import BitT, BoolT, EnumT, PType, StructT, TupleT, bit_width

KIND = "value_set"  # the Sym kind of a declared value set


@dataclass(frozen=True)
class ValueSetT(PType):
    """``value_set<elem>(size)``: the type of the set's name (p4c's ``set<elem>``)."""

    elem: PType
    size: int

    def show(self) -> str:
        return f"value_set<{self.elem.show()}>"


def element_fields(t: PType) -> list[tuple[str, PType]] | None:
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


def element_width(t: PType) -> int:
    """p4c's ``width_bits`` of the element type: the sum of its fields' widths."""
    fields = element_fields(t) or []
    return sum(bit_width(ft) for _, ft in fields)


# ---------------------------------------------------------------------------- P4Info


@dataclass
class ValueSetMatchInfo:
    """One P4Info ``MatchField`` of a value set (p4c's P4RuntimeAnalyzer::addValueSet)."""

    name: str  # "" for a bit<W> element (p4c sets no name then)
    bitwidth: int
    match_type: str = "EXACT"  # a MatchField.MatchType name, or "" when other_match_type
    other_match_type: str = ""
    annotations: list[str] = field(default_factory=list)


@dataclass
class ValueSetInfo:
    name: str
    size: int
    match: list[ValueSetMatchInfo] = field(default_factory=list)
    annotations: list[str] = field(default_factory=list)
    id: int | None = None


def collect_value_sets(chk: Any, parser_d: Any) -> list[ValueSetInfo]:
    """The P4Info ``value_sets`` of the V1Switch parser ``parser_d``, in declaration order, as
    p4c serializes them: a bit<W> element is one EXACT match field with id 1 and no name; a
    struct element has one match field per field (ids from 1, the field's control-plane name,
    the match type of its ``@match`` annotation, EXACT without one, and its other
    annotations). p4c refuses to serialize any other element (a tuple, an enum, a struct with
    a field that is not bit<W>/int<W>) when it writes P4Info; softnic, which always builds
    P4Info, leaves such a set out of it instead (it still compiles and runs)."""
    from softnic.compiler.ir import ast
    from softnic.compiler.p4info.collect import (
        MATCH_TYPES,
        annotated_id,
        p4info_annotations,
    )

    out: list[ValueSetInfo] = []
    for d in parser_d.locals:
        sym = chk.decl_syms.get(id(d))
        if sym is None or sym.kind != KIND or not isinstance(sym.type, ValueSetT):
            continue
        elem = sym.type.elem
        if sym.type.size < 0:
            continue  # p4c: "@size should be a positive integer" when it writes P4Info
        info = ValueSetInfo(sym.qualified, sym.type.size, annotations=p4info_annotations(d),
                            id=annotated_id(d))
        if isinstance(elem, BitT):  # bit<W> or int<W>: p4c's Type_Bits
            info.match.append(ValueSetMatchInfo("", elem.width))
        elif isinstance(elem, StructT) and all(isinstance(ft, BitT) for _, ft in elem.fields):
            decl = getattr(chk.top.lookup(elem.name), "decl", None)
            fdecls = {f.name: f for f in getattr(decl, "fields", [])
                      if isinstance(f, ast.StructField)}
            for fname, ft in elem.fields:
                fd = fdecls.get(fname)
                info.match.append(_struct_match_field(fname, ft, fd, MATCH_TYPES,
                                                      p4info_annotations))
        else:
            continue
        out.append(info)
    return out


def _struct_match_field(fname: str, ft: PType, fd: Any, match_types: dict[str, str],
                        annotations: Any) -> ValueSetMatchInfo:
    from softnic.compiler.frontend.check.helpers import annotation, annotation_string

    name = (annotation_string(fd, "name") if fd is not None else None) or fname
    mf = ValueSetMatchInfo(name, bit_width(ft))
    if fd is None:
        return mf
    m = annotation(fd, "match")
    if m is not None:
        kind = m.raw.strip()
        if kind in match_types:
            mf.match_type = match_types[kind]
        else:
            mf.match_type, mf.other_match_type = "", kind
    mf.annotations = [a for a in annotations(fd) if not a.startswith("@match")]
    return mf

"""Parser value sets in P4Info (p4c's P4RuntimeAnalyzer::addValueSet): what the control plane
sees of ``value_set<T>(size) name;``. The set's type (:class:`~softnic.compiler.ir.types.ValueSetT`)
and the flattening of its element into key fields live with the other types in ``ir.types``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from softnic.compiler.frontend.check.helpers import annotation, annotation_string
from softnic.compiler.ir import ast
from softnic.compiler.ir.types import (
    VALUE_SET_KIND,
    BitT,
    PType,
    StructT,
    ValueSetT,
    bit_width,
)
from softnic.compiler.p4info.annotations import MATCH_TYPES, annotated_id, p4info_annotations


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
    out: list[ValueSetInfo] = []
    for d in parser_d.locals:
        sym = chk.decl_syms.get(id(d))
        if sym is None or sym.kind != VALUE_SET_KIND or not isinstance(sym.type, ValueSetT):
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

"""P4Info type information of control-plane objects (p4c's TypeSpecConverter, control-plane/).

p4c converts the type of every match field, action parameter, controller-header field and digest
struct field with ``TypeSpecConverter::convert``; converting a serializable enum (``enum bit<W>
E { ... }``) adds ``type_info.serializable_enums[E]`` (the underlying ``bitwidth`` and each member's
value as a ``ceil(W/8)``-byte big-endian string, declaration order). A digest struct field of such
a type is written as ``type_spec { serializable_enum { name: "E" } }`` instead of a bit string.
``type_name`` (P4NamedType) is only written for ``type`` declarations (p4c's ``getTypeName``
returns null for everything but a ``Type_Newtype``): see the second half of this module.
"""

from __future__ import annotations

from typing import Any

from softnic.compiler.ir import ast
from softnic.compiler.ir.types import BitT, EnumT, HeaderT, PType, StructT, bit_width
from softnic.compiler.p4info.resources import ProgramResources, SerEnumInfo


def note_ser_enum(res: ProgramResources, t: PType | None) -> str:
    """Record ``t`` in ``res.ser_enums`` when it is a serializable enum; return its name or ''."""
    if not isinstance(t, EnumT) or t.underlying is None:
        return ""
    if t.name not in res.ser_enums:
        width = t.underlying.width
        mask = (1 << width) - 1
        res.ser_enums[t.name] = SerEnumInfo(
            t.name, width, [(m, v & mask) for m, v in zip(t.members, t.values, strict=True)])
    return t.name


# ---------------------------------------------------------------------------- type declarations
# p4c's getTypeName: a ``type bit<W> T`` (Type_Newtype) is the one type whose uses get
# ``type_name { name: "T" }`` (match fields, action parameters, controller-header fields), and
# TypeSpecConverter adds ``type_info.new_types[T] = { original_type { bitstring { bit {
# bitwidth: W } } } }`` (``translated_type`` with @p4runtime_translation, which softnic does not
# support: BMv2 has no translation either). A digest struct field of such a type is written as
# ``type_spec { new_type { name: "T" } }``.

_MAX_ALIAS_DEPTH = 32


def note_new_type(res: ProgramResources, chk: Any, t: ast.Type | None) -> str:
    """The newtype ``t`` names (through typedefs), recorded in ``res.new_types``; '' if none."""
    for _ in range(_MAX_ALIAS_DEPTH):
        if not isinstance(t, ast.TypeName) or t.args:
            return ""
        sym = chk.top.lookup(t.name)
        decl = getattr(sym, "decl", None)
        if not isinstance(decl, ast.TypedefDecl):
            return ""
        if decl.is_newtype:
            if decl.name not in res.new_types:
                underlying = getattr(sym, "type", None)
                res.new_types[decl.name] = bit_width(underlying) if isinstance(
                    underlying, BitT) else 0
            return decl.name
        t = decl.type
    return ""


def field_new_type(res: ProgramResources, chk: Any, type_name: str, field_name: str) -> str:
    """The newtype of field ``field_name`` of the header or struct type ``type_name``."""
    sym = chk.top.lookup(type_name)
    decl = getattr(sym, "decl", None)
    for f in getattr(decl, "fields", None) or []:
        if isinstance(f, ast.StructField) and f.name == field_name:
            return note_new_type(res, chk, f.type)
    return ""


def key_new_type(res: ProgramResources, chk: Any, e: ast.Expr) -> str:
    """The newtype of a table key expression: a header/struct field or a local variable."""
    if isinstance(e, ast.Member):
        base = chk.types.get(id(e.expr))
        name = getattr(base, "name", None)
        if isinstance(base, (HeaderT, StructT)) and isinstance(name, str):
            return field_new_type(res, chk, name, e.name)
        return ""
    if isinstance(e, ast.PathExpr):
        sym = chk.syms.get(id(e))
        decl = getattr(sym, "decl", None)
        if isinstance(decl, (ast.VarDecl, ast.Param)):
            return note_new_type(res, chk, decl.type)
    return ""

"""P4Info type information of control-plane objects (p4c's TypeSpecConverter, control-plane/).

p4c converts the type of every match field, action parameter, controller-header field and digest
struct field with ``TypeSpecConverter::convert``; converting a serializable enum (``enum bit<W>
E { ... }``) adds ``type_info.serializable_enums[E]`` (the underlying ``bitwidth`` and each member's
value as a ``ceil(W/8)``-byte big-endian string, declaration order). A digest struct field of such
a type is written as ``type_spec { serializable_enum { name: "E" } }`` instead of a bit string.
``type_name`` (P4NamedType) is only written for ``type`` declarations (p4c's ``getTypeName``
returns null for everything but a ``Type_Newtype``), which softnic does not support.
"""

from __future__ import annotations

from softnic.frontend.resources import ProgramResources, SerEnumInfo
from softnic.frontend.types import EnumT, PType


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

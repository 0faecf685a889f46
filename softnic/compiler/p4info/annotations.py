"""How P4Info spells what the source says in annotations and match kinds (p4c's
P4RuntimeSerializer): which annotations it copies, its match-type names, ``@id``."""

from __future__ import annotations

from typing import Any

from softnic.compiler.diagnostics import error
from softnic.compiler.frontend.check.helpers import annotation

# Annotations p4c does not copy into P4Info (``@noWarn`` is copied: NoAction carries it).
HIDDEN_ANNOTATIONS = {"name", "id", "tableonly", "defaultonly", "hidden", "metadata",
                      "alias", "field_list", "controller_header"}

# P4 match kinds and their P4Info spelling.
MATCH_TYPES = {"exact": "EXACT", "lpm": "LPM", "ternary": "TERNARY", "range": "RANGE",
               "optional": "OPTIONAL"}


def p4info_annotations(node: Any) -> list[str]:
    """The source annotations of ``node`` as p4c prints them in P4Info."""
    out: list[str] = []
    for a in getattr(node, "annotations", []) or []:
        if a.name in HIDDEN_ANNOTATIONS:
            continue
        out.append(f"@{a.name}({a.raw})" if a.raw else f"@{a.name}")
    return out


def annotated_id(node: Any) -> int | None:
    """The value of ``@id(N)`` on ``node``, if any."""
    a = annotation(node, "id")
    if a is None:
        return None
    try:
        return int(a.raw.strip(), 0)
    except ValueError as exc:
        raise error(a, f"@id({a.raw}): expected an integer") from exc

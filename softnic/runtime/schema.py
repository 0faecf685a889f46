"""Type-check a BMv2 JSON document against its documented format before anything uses it.

behavioral-model's ``docs/JSON_format.md`` gives every object's attributes and their types. A
pipeline pushed over P4Runtime is untrusted input, so before the loader lays it out, every
object that the engine reads is checked here: ids are integers, names are strings, widths and
sizes are integers, enumerations take one of their documented values, and lists and objects
are what they should be. The checks are declarative (:data:`SECTIONS`); the first mismatch
raises :class:`PipelineLoadError` naming the object and attribute.

Expressions and primitives are checked where they are compiled (``exprgen``, ``primitives``):
an unknown ``type``, ``op`` or primitive name is refused there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from softnic.runtime.api import PipelineLoadError

Check = Callable[[Any], bool]


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


def _opt_str(v: Any) -> bool:
    return v is None or isinstance(v, str)


def _list(v: Any) -> bool:
    return isinstance(v, list)


def _dict(v: Any) -> bool:
    return isinstance(v, dict)


def _ints(v: Any) -> bool:
    return isinstance(v, list) and all(_int(x) for x in v)


def _strs(v: Any) -> bool:
    return isinstance(v, list) and all(_str(x) for x in v)


def _field_ref(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 2 and all(_str(x) for x in v)


def _one_of(*values: str) -> Check:
    def check(v: Any) -> bool:
        return v in values
    check.__doc__ = f"one of {', '.join(values)}"
    return check


def _flag(v: Any) -> bool:
    """A flag as BMv2 reads it with jsoncpp's asBool: true/false or an integer (p4c writes a
    bool field of a header type as ``["is_bool", 1, 0]``)."""
    return isinstance(v, (bool, int))


def _header_field(v: Any) -> bool:  # [name, width | "*", signed?, saturating?]
    return (isinstance(v, list) and 2 <= len(v) <= 4 and _str(v[0])
            and (_int(v[1]) or v[1] == "*") and all(_flag(x) for x in v[2:]))


def field_signed(f: list[Any]) -> bool:
    """Whether a checked header-type field ``[name, width, signed?, ...]`` is signed."""
    return len(f) > 2 and bool(f[2])


def _next_tables(v: Any) -> bool:
    return isinstance(v, dict) and all(_str(k) and _opt_str(x) for k, x in v.items())


def _error(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 2 and _str(v[0]) and _int(v[1])


# attribute -> (check, required); the object's own name and id are in every spec below
Spec = dict[str, tuple[Check, bool]]
NAMED: Spec = {"name": (_str, True), "id": (_int, False)}

MATCH_KINDS = ("exact", "lpm", "ternary", "range", "valid", "optional")

SECTIONS: dict[str, Spec] = {
    "header_types": {**NAMED, "fields": (_list, True), "max_length": (_int, False)},
    "headers": {**NAMED, "header_type": (_str, True), "metadata": (_bool, False),
                "pi_omit": (_bool, False)},
    "header_stacks": {**NAMED, "header_type": (_str, False), "size": (_int, False),
                      "header_ids": (_ints, True)},
    "header_unions": {**NAMED, "union_type": (_str, False), "header_ids": (_ints, True)},
    "header_union_stacks": {**NAMED, "union_type": (_str, True), "size": (_int, False),
                            "header_union_ids": (_ints, True)},
    "parsers": {**NAMED, "init_state": (_str, True), "parse_states": (_list, True)},
    "deparsers": {**NAMED, "order": (_strs, True), "primitives": (_list, False)},
    "parse_vsets": {**NAMED, "id": (_int, True), "compressed_bitwidth": (_int, True)},
    "meter_arrays": {**NAMED, "type": (_one_of("bytes", "packets"), False),
                     "rate_count": (_int, False), "size": (_int, False),
                     "is_direct": (_bool, False), "binding": (_str, False),
                     "result_target": (_field_ref, False)},
    "counter_arrays": {**NAMED, "size": (_int, False), "is_direct": (_bool, False),
                       "binding": (_str, False)},
    "register_arrays": {**NAMED, "size": (_int, True), "bitwidth": (_int, True)},
    "calculations": {**NAMED, "algo": (_str, True), "input": (_list, True)},
    "learn_lists": {**NAMED, "elements": (_list, True)},
    "field_lists": {**NAMED, "elements": (_list, True)},
    "actions": {**NAMED, "id": (_int, True), "runtime_data": (_list, False),
                "primitives": (_list, True)},
    "pipelines": {**NAMED, "name": (_one_of("ingress", "egress"), True),
                  "init_table": (_opt_str, False), "tables": (_list, False),
                  "action_profiles": (_list, False), "conditionals": (_list, False),
                  "action_calls": (_list, False)},
    "checksums": {**NAMED, "target": (_field_ref, True), "type": (_one_of("generic", "ipv4"),
                  False), "calculation": (_str, True), "verify": (_bool, False),
                  "update": (_bool, False)},
}
PARSE_STATE: Spec = {**NAMED, "parser_ops": (_list, False), "transition_key": (_list, False),
                     "transitions": (_list, False)}
TRANSITION: Spec = {"type": (_one_of("hexstr", "default", "parse_vset"), False),
                    "next_state": (_opt_str, False)}
RUNTIME_DATA: Spec = {"name": (_str, False), "bitwidth": (_int, True)}
PRIMITIVE: Spec = {"op": (_str, True), "parameters": (_list, False)}
TABLE: Spec = {**NAMED, "id": (_int, True), "match_type": (_one_of(*MATCH_KINDS), False),
               "type": (_one_of("simple", "indirect", "indirect_ws"), False),
               "max_size": (_int, False), "with_counters": (_bool, False),
               "support_timeout": (_bool, False), "direct_meters": (_opt_str, False),
               "action_ids": (_ints, False), "actions": (_strs, False), "key": (_list, False),
               "next_tables": (_next_tables, False), "base_default_next": (_opt_str, False),
               "default_entry": (_dict, False), "entries": (_list, False)}
DEFAULT_ENTRY: Spec = {"action_id": (_int, True), "action_const": (_bool, False),
                      "action_data": (_list, False), "action_entry_const": (_bool, False)}
TABLE_ENTRY: Spec = {"match_key": (_list, True), "action_entry": (_dict, True),
                     "priority": (_int, False)}
ACTION_ENTRY: Spec = {"action_id": (_int, True), "action_data": (_list, False)}
TABLE_KEY: Spec = {"match_type": (_one_of(*MATCH_KINDS), True), "name": (_str, False)}
CONDITIONAL: Spec = {**NAMED, "id": (_int, True), "expression": (_dict, True),
                     "true_next": (_opt_str, False), "false_next": (_opt_str, False)}
ACTION_CALL: Spec = {**NAMED, "action_id": (_int, True), "next_node": (_opt_str, False)}


def _check(obj: Any, spec: Spec, where: str) -> dict:
    if not isinstance(obj, dict):
        raise PipelineLoadError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    name = obj.get("name")
    if isinstance(name, str):
        where = f"{where} {name!r}"
    for attr, (ok, required) in spec.items():
        if attr not in obj:
            if required:
                raise PipelineLoadError(f"{where}: missing attribute {attr!r}")
            continue
        if obj[attr] is None and not required and ok is not _opt_str:
            continue  # null stands for an absent optional attribute
        if not ok(obj[attr]):
            want = ok.__doc__ or ok.__name__.strip("_").replace("_", " ")
            raise PipelineLoadError(f"{where}: attribute {attr!r} must be {want}, "
                                    f"got {obj[attr]!r:.80}")
    return obj


def _each(obj: dict, key: str, spec: Spec, where: str) -> list[dict]:
    return [_check(x, spec, f"{where} {key}[{i}]") for i, x in enumerate(obj.get(key) or [])]


def check_document(j: Any) -> None:
    """Raise :class:`PipelineLoadError` unless ``j`` has the documented types throughout."""
    if not isinstance(j, dict):
        raise PipelineLoadError("BMv2 JSON must be a JSON object")
    for section, spec in SECTIONS.items():
        items = j.get(section)
        if items is None:
            continue
        if not isinstance(items, list):
            raise PipelineLoadError(f"top-level {section!r} must be a JSON array")
        for i, obj in enumerate(items):
            _check(obj, spec, f"{section}[{i}]")
    for ht in j.get("header_types") or []:
        for f in ht["fields"]:
            if not _header_field(f):
                raise PipelineLoadError(f"header type {ht['name']!r}: malformed field {f!r:.80}")
            if len(f) > 3 and f[3]:
                raise PipelineLoadError(f"header type {ht['name']!r}: field {f[0]!r:.40} is "
                                        "saturating, which softnic does not support")
    for key in ("errors", "field_aliases", "extern_instances"):
        if j.get(key) is not None and not isinstance(j[key], list):
            raise PipelineLoadError(f"top-level {key!r} must be a JSON array")
    for e in j.get("errors") or []:
        if not _error(e):
            raise PipelineLoadError(f"malformed error declaration {e!r:.80}")
    for a in j.get("actions") or []:
        where = f"action {a['name']!r}"
        _each(a, "runtime_data", RUNTIME_DATA, where)
        _each(a, "primitives", PRIMITIVE, where)
    for d in j.get("deparsers") or []:
        _each(d, "primitives", PRIMITIVE, f"deparser {d['name']!r}")
    for p in j.get("parsers") or []:
        for st in _each(p, "parse_states", PARSE_STATE, f"parser {p['name']!r}"):
            where = f"parse state {st['name']!r}"
            _each(st, "transitions", TRANSITION, where)
            _each(st, "parser_ops", PRIMITIVE, where)
    for pl in j.get("pipelines") or []:
        where = f"pipeline {pl['name']!r}"
        for t in _each(pl, "tables", TABLE, where):
            tw = f"table {t['name']!r}"
            _each(t, "key", TABLE_KEY, tw)
            if t.get("default_entry") is not None:
                _check(t["default_entry"], DEFAULT_ENTRY, f"{tw} default_entry")
            for e in _each(t, "entries", TABLE_ENTRY, tw):
                _check(e["action_entry"], ACTION_ENTRY, f"{tw} entry action_entry")
        _each(pl, "conditionals", CONDITIONAL, where)
        _each(pl, "action_calls", ACTION_CALL, where)

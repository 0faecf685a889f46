"""Refuse the BMv2 JSON forms that BMv2 1.15's loader refuses, with BMv2's reason.

``schema`` checks that every object has the documented attributes; this module checks the
*forms* the way behavioral-model's ``P4Objects`` reads them (``build_expression``,
``process_single_param``, ``init_parsers``, ``init_pipelines``, ...), so a JSON that softnic's
engine could run but ``simple_switch`` would refuse is refused here too, with the message BMv2
prints. The rules, as BMv2's loader applies them:

* every node of an expression tree is a type-value object whose ``type`` is one of
  ``expression``, ``header``, ``field``, ``bool``, ``hexstr``, ``local``, ``register``,
  ``header_stack``, ``stack_field``, ``header_union``, ``header_union_stack``; anything else
  (a bare ``{"op": ...}``, ``runtime_data``, ``lookahead``, ``string``) is
  ``Invalid 'type' in expression: '<type>'``;
* a primitive argument of type ``expression`` holds a whole expression node in its ``value``
  (so an operation is wrapped twice, as p4c writes it), and the other argument types are the
  fixed list of ``process_single_param``;
* parser ops have fixed shapes: ``set`` writes a ``field`` from a ``field``, ``hexstr``,
  ``lookahead`` or ``expression``; ``extract_VL``'s length is an ``expression``; ``advance``
  takes a ``field``, ``hexstr`` or ``expression``; ``lookahead`` appears only there and in a
  ``transition_key``.

Checks BMv2 makes only with ``assert`` (which aborts the switch) are not repeated here unless the
engine could not run the form anyway.
"""

from __future__ import annotations

from typing import Any

from softnic.runtime.api import PipelineLoadError

EXPRESSION_TYPES = frozenset({
    "expression", "header", "field", "bool", "hexstr", "local", "register", "header_stack",
    "stack_field", "header_union", "header_union_stack"})
PARAMETER_TYPES = frozenset({
    "hexstr", "parameters_vector", "runtime_data", "header", "field", "calculation",
    "meter_array", "counter_array", "register_array", "header_stack", "expression", "register",
    "extern", "string", "stack_field", "header_union", "header_union_stack"})
KEY_TYPES = frozenset({"field", "stack_field", "union_stack_field", "lookahead"})

# Operators of BMv2's ExprOpcodesMap (an unknown one is undefined behaviour there: refused here).
OPERATORS = frozenset({
    "+", "-", "%", "/", "*", "<<", ">>", "==", "!=", ">", "<", ">=", "<=", "and", "or", "not",
    "&", "|", "^", "~", "valid", "valid_union", "?", "two_comp_mod", "usat_cast", "sat_cast",
    "d2b", "b2d", "dereference_stack", "dereference_header_stack", "dereference_union_stack",
    "last_stack_index", "size_stack", "access_field", "access_union_header"})

# Expression result kinds (BMv2's ExprType), for the checks the engine relies on.
DATA, BOOL, HEADER, STACK, UNION, UNKNOWN = "data", "bool", "header", "stack", "union", "?"
_OP_KIND = {
    "valid": BOOL, "valid_union": BOOL, "d2b": BOOL, "not": BOOL, "and": BOOL, "or": BOOL,
    ">": BOOL, "<": BOOL, ">=": BOOL, "<=": BOOL,
    "dereference_stack": HEADER, "dereference_header_stack": HEADER,
    "access_union_header": HEADER, "dereference_union_stack": UNION,
}
_NODE_KIND = {"header": HEADER, "field": DATA, "bool": BOOL, "hexstr": DATA, "local": DATA,
              "register": DATA, "header_stack": STACK, "stack_field": DATA,
              "header_union": UNION, "header_union_stack": STACK}

# simple_switch's primitives (core and v1model) and how many parameters each takes.
PRIMITIVE_ARITY = {
    "assign": 2, "assign_VL": 2, "assign_header": 2, "assign_union": 2,
    "assign_header_stack": 2, "assign_union_stack": 2, "push": 2, "pop": 2, "assume": 1,
    "assert": 1, "exit": 0, "log_msg": 2, "_jump": 1, "_jump_if_zero": 2,
    "modify_field": 2, "modify_field_rng_uniform": 3, "add_to_field": 2,
    "subtract_from_field": 2, "add": 3, "subtract": 3, "bit_xor": 3, "bit_or": 3, "bit_and": 3,
    "shift_left": 3, "shift_right": 3, "drop": 0, "mark_to_drop": 1, "generate_digest": 2,
    "add_header": 1, "add_header_fast": 1, "remove_header": 1, "copy_header": 2,
    "clone_ingress_pkt_to_egress": 2, "clone_egress_pkt_to_egress": 2, "resubmit": 1,
    "recirculate": 1, "modify_field_with_hash_based_offset": 4, "no_op": 0,
    "execute_meter": 3, "count": 2, "register_read": 3, "register_write": 3, "truncate": 1,
}


def _type(node: Any) -> str:
    """``json["type"].asString()`` as jsoncpp gives it: "" when absent or not a string."""
    if isinstance(node, dict):
        t = node.get("type")
        return t if isinstance(t, str) else ""
    return ""


def _key(v: Any) -> str | int | None:
    """``v`` when it can name an object (a string or an integer), else None: a lookup by a
    JSON value of another type finds nothing instead of failing on an unhashable key."""
    if isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)):
        return v
    return None


def _invalid_type(node: Any) -> PipelineLoadError:
    return PipelineLoadError(f"Invalid 'type' in expression: '{_type(node)}'")


# Nesting bound of an expression tree (the same as ``exprgen.MAX_EXPR_DEPTH``): deeper trees
# are refused before anything recurses into them.
MAX_DEPTH = 200


def check_expression(node: Any, depth: int = 0) -> str:
    """BMv2's ``build_expression``: raise for a form it refuses; the result's kind."""
    if depth > MAX_DEPTH:
        raise PipelineLoadError(f"expression nested deeper than {MAX_DEPTH}")
    depth += 1
    if node is None:
        return UNKNOWN
    t = _type(node)
    if t not in EXPRESSION_TYPES:
        raise _invalid_type(node)
    v = node.get("value")
    if t == "register":
        if isinstance(v, list) and len(v) == 2 and _type(v[1]) != "hexstr":
            check_expression(v[1], depth)
        return DATA
    if t != "expression":
        return _NODE_KIND[t]
    if not isinstance(v, dict):
        raise PipelineLoadError(f"expression without an operation: {node!r:.120}")
    o = v.get("op")
    left, right = v.get("left"), v.get("right")
    if o == "?":
        check_expression(v.get("cond"), depth)
        kl, kr = check_expression(left, depth), check_expression(right, depth)
        return kl if kl == kr else UNKNOWN
    if o in ("access_field", "access_union_header"):
        # the offset is a plain integer, not an expression (the engine checks its range)
        check_expression(left, depth)
        return DATA if o == "access_field" else HEADER
    if not isinstance(o, str) or o not in OPERATORS:
        raise PipelineLoadError(f"unknown expression operator {o!r}")
    check_expression(left, depth)
    check_expression(right, depth)
    if o in ("==", "!="):
        return BOOL
    if o in ("dereference_header_stack", "dereference_stack", "dereference_union_stack"):
        if _type(left) not in ("header_stack", "header_union_stack"):
            raise PipelineLoadError(f"'{o}' needs a header stack on its left: {node!r:.120}")
    return _OP_KIND.get(o, DATA)


def check_parameter(p: Any, primitive: str, nparams: int | None, action: str) -> None:
    """BMv2's ``process_single_param`` for one primitive argument (a non-object argument,
    which BMv2's JSON library rejects, is left to the engine's own message)."""
    if not isinstance(p, dict):
        return
    t = _type(p)
    if t not in PARAMETER_TYPES:
        raise PipelineLoadError(f"Parameter type '{t}' not supported")
    v = p.get("value")
    if t == "expression":
        check_expression(v)
    elif t == "parameters_vector":
        for x in v if isinstance(v, list) else []:
            check_parameter(x, primitive, nparams, action)
    elif t == "register":
        if isinstance(v, list) and len(v) == 2 and _type(v[1]) != "hexstr":
            check_expression(v[1])
    elif t == "runtime_data" and nparams is not None:
        if isinstance(v, int) and not isinstance(v, bool) and v >= nparams:
            raise PipelineLoadError(
                f"Invalid 'runtime_data' parameter reference in action '{action}' when "
                f"calling primitive '{primitive}': trying to use parameter at offset {v} but "
                f"action only has {nparams} parameter(s)")


def check_primitive(prim: Any, nparams: int | None, action: str) -> None:
    """BMv2's ``add_primitive_to_action``."""
    if not isinstance(prim, dict):
        raise PipelineLoadError(f"malformed primitive call {prim!r:.80}")
    name = prim.get("op")
    params = prim.get("parameters")
    params = params if isinstance(params, list) else []
    want = PRIMITIVE_ARITY.get(name) if isinstance(name, str) else None
    if want is None:
        raise PipelineLoadError(f"Unknown primitive action: {name}")
    if len(params) != want:
        raise PipelineLoadError(f"Invalid number of parameters for primitive action {name}: "
                                f"expected {want} but got {len(params)}")
    for p in params:
        check_parameter(p, str(name), nparams, action)


def _tuple_size(op: dict, key: str, n: int) -> list:
    v = op.get(key)
    if not isinstance(v, list):
        raise PipelineLoadError(f"Expected '{key}' to be a JSON array")
    if len(v) != n:
        raise PipelineLoadError(f"Expected '{key}' to be a JSON array of size {n} but array "
                                f"has size {len(v)}")
    return v


def check_parser_op(op: Any) -> None:
    """One entry of a parse state's ``parser_ops``, as BMv2's ``init_parsers`` reads it."""
    if not isinstance(op, dict):
        raise PipelineLoadError(f"malformed parser op {op!r:.80}")
    kind = op.get("op")
    if kind in ("extract", "extract_VL"):
        params = _tuple_size(op, "parameters", 1 if kind == "extract" else 2)
        if kind == "extract_VL":
            length = params[1]
            if _type(length) != "expression":
                raise PipelineLoadError(
                    f"Parser 'extract_VL' operation has invalid length type "
                    f"'{_type(length)}', expected 'expression'")
            check_expression(length.get("value"))
        et = _type(params[0])
        if et not in ("regular", "stack", "union_stack"):
            raise PipelineLoadError(f"Extract type '{et}' not supported")
    elif kind == "set":
        dst, src = _tuple_size(op, "parameters", 2)
        if _type(dst) != "field":
            raise PipelineLoadError(f"Parser 'set' operation has invalid destination type "
                                    f"'{_type(dst)}', expected 'field'")
        st = _type(src)
        if st == "expression":
            check_expression(src.get("value"))
        elif st not in ("field", "hexstr", "lookahead"):
            raise PipelineLoadError(f"Parser 'set' operation has unsupported source type "
                                    f"'{st}'")
    elif kind == "verify":
        cond, error = _tuple_size(op, "parameters", 2)
        check_expression(cond)
        if not isinstance(error, int) or isinstance(error, bool):
            check_expression(error)
    elif kind == "primitive":
        (prim,) = _tuple_size(op, "parameters", 1)
        check_primitive(prim, 0, str(prim.get("op") if isinstance(prim, dict) else ""))
    elif kind == "shift":
        if len(_items(op.get("parameters"))) != 1:
            raise PipelineLoadError("Parser 'shift' operation has invalid number of arguments, "
                                    "expected 1")
    elif kind == "advance":
        params = _items(op.get("parameters"))
        if len(params) != 1:
            raise PipelineLoadError("Parser 'advance' operation has invalid number of "
                                    "arguments, expected 1")
        at = _type(params[0])
        if at == "expression":
            check_expression(params[0].get("value"))
        elif at not in ("field", "hexstr"):
            raise PipelineLoadError(f"Parser 'advance' operation has unsupported parameter "
                                    f"type '{at}'")
    else:
        raise PipelineLoadError(f"Parser op '{kind}'not supported")


def _hex_bytes(v: Any) -> int | None:
    """Byte size of a hex string as BMv2's ByteContainer reads it (odd digits: one more)."""
    if not isinstance(v, str):
        return None
    s = v[1:] if v.startswith("-") else v
    s = s[2:] if s[:2] in ("0x", "0X") else s
    return (len(s) + 1) // 2


def _key_bytes(k: dict, stacks: dict[str, str], htypes: dict[str, dict],
               headers: dict[str, str]) -> int | None:
    """Bytes one transition key element takes (its width rounded up to bytes)."""
    t, v = _type(k), k.get("value")
    width = None
    if t == "lookahead" and isinstance(v, list) and len(v) == 2:
        width = v[1]
    elif t in ("field", "stack_field") and isinstance(v, list) and len(v) == 2:
        tname = headers.get(_key(v[0])) if t == "field" else stacks.get(_key(v[0]))
        for f in (htypes.get(_key(tname)) or {}).get("fields") or []:
            if isinstance(f, list) and f and f[0] == v[1] and isinstance(f[1], int):
                width = f[1]
        if t == "field" and v[1] == "$valid$":
            width = 1
    return (width + 7) // 8 if isinstance(width, int) else None


def check_vset_transition(tr: dict, vsets: dict[Any, dict]) -> None:
    """BMv2 P4Objects::init_parsers for a ``parse_vset`` transition: the set must exist and a
    mask, when given, has the set's compressed width in bytes."""
    vs = vsets.get(_key(tr.get("value")))
    if vs is None:
        raise PipelineLoadError(f"Invalid reference to parse value set {tr.get('value')!r}")
    mask = tr.get("mask")
    if mask is None:
        return
    if not isinstance(mask, str):
        raise PipelineLoadError(f"Parser transition mask for value set must be a hex string, "
                                f"not {mask!r:.80}")
    if mask.startswith("-"):
        # BMv2's ByteContainer reads hex digits only; a negative mask has no byte form
        raise PipelineLoadError(f"Parser transition mask for value set must not be negative: "
                                f"{mask!r:.80}")
    bw = vs.get("compressed_bitwidth")
    want = (bw + 7) // 8 if isinstance(bw, int) else None
    got = _hex_bytes(mask)
    if want is not None and got != want:
        raise PipelineLoadError(
            f"Parser transition mask for value set has incorrect width, expected width is "
            f"{want} bytes but actual width is {got} bytes")


def check_parsers(j: dict) -> None:
    htypes = {_key(h.get("name")): h for h in _items(j.get("header_types"))
              if isinstance(h, dict)}
    headers = {_key(h.get("name")): h.get("header_type") for h in _items(j.get("headers"))
               if isinstance(h, dict)}
    stacks = {_key(s.get("name")): s.get("header_type") for s in _items(j.get("header_stacks"))
              if isinstance(s, dict)}
    vsets = {_key(v.get("name")): v for v in _items(j.get("parse_vsets")) if isinstance(v, dict)}
    for p in _items(j.get("parsers")):
        for st in (_items(p.get("parse_states"))) if isinstance(p, dict) else []:
            if not isinstance(st, dict):
                continue
            for op in _items(st.get("parser_ops")):
                check_parser_op(op)
            for tr in _items(st.get("transitions")):
                if isinstance(tr, dict) and tr.get("type") == "parse_vset":
                    check_vset_transition(tr, vsets)
            keys = _items(st.get("transition_key"))
            nbytes: int | None = 0
            for k in keys:
                if _type(k) not in KEY_TYPES:
                    raise PipelineLoadError("Invalid entry in parse state key")
                kb = _key_bytes(k, stacks, htypes, headers)
                nbytes = None if kb is None or nbytes is None else nbytes + kb
            if nbytes is None:
                continue
            for tr in _items(st.get("transitions")):
                if not isinstance(tr, dict):
                    continue
                ttype = tr.get("type", "hexstr")
                if ttype != "hexstr" or tr.get("value") in (None, "default"):
                    continue
                got = _hex_bytes(tr.get("value"))
                if got is not None and got != nbytes:
                    raise PipelineLoadError(
                        f"Parser transition value has incorrect width, expected width is "
                        f"{nbytes} bytes but actual width is {got} bytes")
                mask = tr.get("mask")
                got = _hex_bytes(mask) if mask is not None else None
                if got is not None and got != nbytes:
                    raise PipelineLoadError(
                        f"Parser transition mask has incorrect width, expected width is "
                        f"{nbytes} bytes but actual width is {got} bytes")


def _items(v: Any) -> list:
    """A JSON array the schema check has already vetted; anything else reads as empty."""
    return v if isinstance(v, list) else []


def _action_data(action: dict | None, data: Any) -> None:
    """BMv2's parse_action_data: one value per action parameter."""
    if action is None or not isinstance(data, list):
        return
    want = len(_items(action.get("runtime_data")))
    if len(data) != want:
        raise PipelineLoadError(f"Invalid number of arguments for action '{action.get('name')}':"
                                f" expected {want} but got {len(data)}")


def check_table_entries(t: dict, actions: dict) -> None:
    """A table's size, default entry and const entries, as BMv2's init_pipelines reads them."""
    name = t.get("name")
    if "max_size" not in t and "entries" not in t:
        raise PipelineLoadError(f"Table '{name}' has neither 'max_size' nor 'entries' attribute")
    de = t.get("default_entry")
    if isinstance(de, dict):
        if t.get("type", "simple") != "simple" and de.get("action_const"):
            raise PipelineLoadError(f"Table '{name}' does not have type 'simple' and therefore "
                                    "setting 'action_const' to true is meaningless")
        _action_data(actions.get(_key(de.get("action_id"))), de.get("action_data"))
    entries = t.get("entries")
    if not isinstance(entries, list):
        return
    if t.get("type", "simple") != "simple":
        raise PipelineLoadError(f"Table '{name}' does not have type 'simple' and therefore "
                                "cannot specify a 'entries' attribute")
    keys = [k for k in _items(t.get("key")) if isinstance(k, dict)]
    for e in entries:
        if not isinstance(e, dict):
            continue
        mk = e.get("match_key")
        if isinstance(mk, list):
            if len(mk) != len(keys):
                raise PipelineLoadError(f"Invalid number of fields in match key, expected "
                                        f"{len(keys)} but got {len(mk)}")
            for i, (m, k) in enumerate(zip(mk, keys, strict=True)):
                got = m.get("match_type") if isinstance(m, dict) else None
                if got != k.get("match_type"):
                    raise PipelineLoadError(f"Invalid match type for field #{i} in match key, "
                                            f"expected {k.get('match_type')} but got {got}")
        ae = e.get("action_entry")
        if isinstance(ae, dict):
            _action_data(actions.get(_key(ae.get("action_id"))), ae.get("action_data"))


def _unique_ids(objs: Any, kind: str) -> None:
    """BMv2's DupIdChecker: no two objects of one kind share an ``id`` (an object without one
    is left to the schema check)."""
    seen: set[int] = set()
    for o in objs if isinstance(objs, list) else []:
        i = o.get("id") if isinstance(o, dict) else None
        if not isinstance(i, int) or isinstance(i, bool):
            continue
        if i in seen:
            raise PipelineLoadError(f"Several objects of type '{kind}' have the same id {i}")
        seen.add(i)


_ID_KINDS = {"header_types": "header type", "headers": "header", "header_stacks": "header stack",
             "parsers": "parser", "deparsers": "deparser", "calculations": "calculation",
             "counter_arrays": "counter", "meter_arrays": "meter", "register_arrays": "register",
             "actions": "action", "pipelines": "pipeline", "checksums": "checksum",
             "learn_lists": "learn list", "field_lists": "field list",
             "extern_instances": "extern"}


# The newest JSON format version BMv2 reads (JSON_format.md: 2.23, what p4c 1.2.4 writes).
JSON_VERSION = (2, 23)


def check_version(j: dict) -> None:
    """BMv2's check_json_version: an untagged JSON is accepted; a tagged one needs major 2 and
    a minor version it knows."""
    meta = j.get("__meta__")
    if not isinstance(meta, dict) or "version" not in meta:
        return
    v = meta["version"]
    if not isinstance(v, list) or len(v) != 2:
        size = len(v) if isinstance(v, list) else 0
        raise PipelineLoadError(f"Expected 'version' to be a JSON array of size 2 but array has "
                                f"size {size}")
    major, minor = v
    if major != JSON_VERSION[0]:
        raise PipelineLoadError(f"We require a bmv2 JSON major version number of "
                                f"{JSON_VERSION[0]} but this JSON input is tagged with a major "
                                f"version number of {major}")
    if isinstance(minor, int) and minor > JSON_VERSION[1]:
        raise PipelineLoadError(f"The most recent bmv2 JSON version number supported is "
                                f"{JSON_VERSION[0]}.{JSON_VERSION[1]} but this JSON input is "
                                f"tagged with version number {major}.{minor}")


def check_dialect(j: dict) -> None:
    """Raise :class:`PipelineLoadError` for the first form BMv2 1.15's loader would refuse."""
    check_version(j)
    for section, kind in _ID_KINDS.items():
        _unique_ids(j.get(section), kind)
    for p in _items(j.get("parsers")):
        if isinstance(p, dict):
            _unique_ids(p.get("parse_states"), "parse state")
    for pl in _items(j.get("pipelines")):
        if isinstance(pl, dict):
            _unique_ids(pl.get("tables"), "table")
            _unique_ids(pl.get("conditionals"), "condition")
            _unique_ids(pl.get("action_profiles"), "action profile")
    for ht in _items(j.get("header_types")):
        if isinstance(ht, dict) and "length_exp" in ht:
            check_expression(ht["length_exp"])
    check_parsers(j)
    for d in _items(j.get("deparsers")):
        for prim in (_items(d.get("primitives"))) if isinstance(d, dict) else []:
            check_primitive(prim, 0, str(d.get("name")))
    for a in _items(j.get("actions")):
        if not isinstance(a, dict):
            continue
        rd = a.get("runtime_data")
        nparams = len(rd) if isinstance(rd, list) else 0
        for prim in _items(a.get("primitives")):
            check_primitive(prim, nparams, str(a.get("name")))
    actions = {_key(a.get("id")): a for a in _items(j.get("actions")) if isinstance(a, dict)}
    for pl in _items(j.get("pipelines")):
        if not isinstance(pl, dict):
            continue
        for t in _items(pl.get("tables")):
            if not isinstance(t, dict):
                continue
            lpm = [k for k in _items(t.get("key")) if isinstance(k, dict)
                   and k.get("match_type") == "lpm"]
            if len(lpm) > 1:
                raise PipelineLoadError(f"Table '{t.get('name')}' features 2 LPM match fields")
        for c in _items(pl.get("conditionals")):
            if isinstance(c, dict):
                check_expression(c.get("expression"))
        for ac in _items(pl.get("action_calls")):
            a = actions.get(_key(ac.get("action_id"))) if isinstance(ac, dict) else None
            if a is not None and a.get("runtime_data"):
                raise PipelineLoadError(f"Cannot call action '{a.get('name')}' directly from "
                                        "control as it expects parameters")
        # BMv2 reads default entries and const entries after the conditionals and action calls
        for t in _items(pl.get("tables")):
            if isinstance(t, dict):
                check_table_entries(t, actions)
    for ck in _items(j.get("checksums")):
        if isinstance(ck, dict) and ck.get("if_cond") is not None:
            check_expression(ck["if_cond"])
    for calc in _items(j.get("calculations")):
        for el in (_items(calc.get("input"))) if isinstance(calc, dict) else []:
            if isinstance(el, dict) and _type(el) not in ("field", "hexstr", "header", "payload"):
                raise PipelineLoadError(f"Unsupported input type '{_type(el)}' for calculation "
                                        f"'{calc.get('name')}'")
    for fl in _items(j.get("field_lists")):
        for el in (_items(fl.get("elements"))) if isinstance(fl, dict) else []:
            if isinstance(el, dict) and _type(el) not in ("field", "hexstr"):
                raise PipelineLoadError(f"Invalid entry type '{_type(el)}' in field list")

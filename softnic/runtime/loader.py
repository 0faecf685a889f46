"""Validate BMv2 JSON and lay the program's state out as one flat list of ints.

Why a flat list: every header field of every header instance (metadata included) gets a fixed
slot index, plus one validity slot per header and one "next index" slot per header stack. A
packet's whole PHV is then ``template.copy()`` (one C-level copy), and the generated code reads
and writes ``F[17]`` with constant indices, which is the cheapest state access CPython offers.

Everything that can be wrong with the JSON is detected here or in ``codegen`` at load time and
reported as :class:`PipelineLoadError`, so a bad program never fails on its first packet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.dialect import check_dialect
from softnic.runtime.parse_vsets import ParseVSet, load_parse_vsets
from softnic.runtime.schema import check_document, field_signed

# The core errors BMv2 knows; p4c assigns these values in this order when the program uses them.
DEFAULT_ERRORS = {
    "NoError": 0,
    "PacketTooShort": 1,
    "NoMatch": 2,
    "StackOutOfBounds": 3,
    "HeaderTooShort": 4,
    "ParserTimeout": 5,
    "ParserInvalidArgument": 6,
}

# Load-time limits. BMv2 documents none, but a width or size in the JSON is trusted by the code
# generator (masks like (1 << w) - 1, lists of `size` cells), so an absurd value would fail or
# eat memory at run time. p4c's widest types are far below these; softnic refuses anything
# above them with PipelineLoadError.
MAX_BITWIDTH = 4096  # bits of any field, action parameter or register cell (BMv2: none)
MAX_ARRAY_SIZE = 1 << 22  # cells of a register / counter / meter array (BMv2: none)

# v1model's standard_metadata fields and widths (p4c v1model.p4).
STANDARD_METADATA_FIELDS = {
    "ingress_port": 9, "egress_spec": 9, "egress_port": 9, "instance_type": 32,
    "packet_length": 32, "enq_timestamp": 32, "enq_qdepth": 19, "deq_timedelta": 32,
    "deq_qdepth": 19, "ingress_global_timestamp": 48, "egress_global_timestamp": 48,
    "mcast_grp": 16, "egress_rid": 16, "checksum_error": 1, "parser_error": 32, "priority": 3,
}


@dataclass
class HeaderInfo:
    name: str
    type_name: str
    fields: list[tuple[str, int, bool]]  # (name, bitwidth, signed)
    base: int  # slot of the first field; field k is at base + k
    metadata: bool
    hid: int
    vl_index: int | None = None  # index of the varbit field (its width in fields is 0)
    max_vl_bits: int = 0
    union_siblings: list[int] = field(default_factory=list)  # valid slots of other members

    @property
    def valid_slot(self) -> int:
        return self.base + len(self.fields)

    @property
    def len_slot(self) -> int:
        """Slot holding the current bit length of the varbit field (VL headers only)."""
        return self.base + len(self.fields) + 1

    @property
    def span(self) -> int:
        """Number of slots a header copy must move (fields, validity, varbit length)."""
        return len(self.fields) + (2 if self.vl_index is not None else 1)

    @property
    def nbits(self) -> int:
        """Static width in bits (a varbit field's current length is not included)."""
        return sum(w for _, w, _ in self.fields)

    def field_index(self, fname: str) -> int:
        for i, (n, _, _) in enumerate(self.fields):
            if n == fname:
                return i
        raise PipelineLoadError(f"No field '{fname}' can be found in header type "
                                f"'{self.type_name}'")


@dataclass
class StackInfo:
    name: str
    headers: list[str]
    next_slot: int


@dataclass
class UnionStackInfo:
    """A stack of header unions (BMv2's header_union_stacks): ``unions[i]`` is element i;
    ``members[m]`` the member names of the union type, so element i's member m is the
    header ``lay.unions[unions[i]][m]``. ``scratch`` is a hidden slot the per-member
    push/pop calls use for their index bookkeeping (only the last call moves next_slot)."""

    name: str
    unions: list[str]
    members: list[str]
    next_slot: int
    scratch: int


@dataclass
class Layout:
    """Slot assignment for the PHV of one packet."""

    headers: dict[str, HeaderInfo] = field(default_factory=dict)
    stacks: dict[str, StackInfo] = field(default_factory=dict)
    unions: dict[str, list[str]] = field(default_factory=dict)  # union -> member headers
    union_stacks: dict[str, UnionStackInfo] = field(default_factory=dict)
    widths: list[int] = field(default_factory=list)  # per slot (validity: 1)
    signed: list[bool] = field(default_factory=list)
    template: list[int] = field(default_factory=list)
    aliases: dict[str, tuple[str, str]] = field(default_factory=dict)
    # standard_metadata field -> slot; fields the program lacks get hidden slots, so the
    # traffic manager can always write them.
    sm: dict[str, int] = field(default_factory=dict)
    # Hidden slot standing in for BMv2's packet length register (packet register 0): what
    # egress starts ``packet_length`` from. add_header / remove_header move it.
    len_reg: int = -1

    def new_slot(self, width: int, signed: bool = False, init: int = 0) -> int:
        self.widths.append(width)
        self.signed.append(signed)
        self.template.append(init)
        return len(self.widths) - 1

    def header(self, name: Any) -> HeaderInfo:
        if not isinstance(name, str) or name not in self.headers:
            raise PipelineLoadError(f"Invalid reference to object of type 'header' with "
                                    f"name '{name}'")
        return self.headers[name]

    def stack(self, name: Any) -> StackInfo:
        if not isinstance(name, str) or name not in self.stacks:
            raise PipelineLoadError(f"Invalid reference to object of type 'header stack' "
                                    f"with name '{name}'")
        return self.stacks[name]

    def union_stack(self, name: Any) -> UnionStackInfo:
        if not isinstance(name, str) or name not in self.union_stacks:
            raise PipelineLoadError(f"Invalid reference to object of type 'header union "
                                    f"stack' with name '{name}'")
        return self.union_stacks[name]

    def union_stack_member(self, us: UnionStackInfo, i: int, member: Any) -> HeaderInfo:
        """Header of member ``member`` (its name in the union type) of element ``i``."""
        if member not in us.members:
            raise PipelineLoadError(f"header union stack '{us.name}': no member '{member}'")
        return self.headers[self.unions[us.unions[i]][us.members.index(member)]]

    def field_slot(self, ref: Any) -> int:
        """Slot of ``[header, field]``; ``$valid$`` is the header's validity slot."""
        if not (isinstance(ref, list) and len(ref) == 2 and all(isinstance(x, str) for x in ref)):
            raise PipelineLoadError(f"malformed field reference {ref!r}")
        hname, fname = ref
        h = self.header(hname)
        if fname == "$valid$":
            return h.valid_slot
        return h.base + h.field_index(fname)

    def optional_slot(self, dotted: str) -> int | None:
        """Slot of an architecture field such as ``standard_metadata.egress_spec`` (aliases
        honoured), or None when the program does not declare it."""
        ref = self.aliases.get(dotted)
        if ref is None:
            hname, _, fname = dotted.partition(".")
            ref = (hname, fname)
        h = self.headers.get(ref[0])
        if h is None:
            return None
        for i, (n, _, _) in enumerate(h.fields):
            if n == ref[1]:
                return h.base + i
        return None


@dataclass
class Program:
    """The validated JSON plus its layout; codegen turns it into callables."""

    json: dict
    layout: Layout
    errors: dict[str, int]
    header_types: dict[str, dict]
    actions_by_id: dict[int, dict]
    actions_by_name: dict[str, dict]
    field_lists: dict[int, list[int]]  # id -> slots
    learn_lists: dict[int, tuple[str, list[tuple[str, int]]]]  # id -> (name, [(field, slot)])
    calculations: dict[str, dict]
    registers: dict[str, dict]
    counters: dict[str, dict]
    meters: dict[str, dict]
    # the live parser value sets, built once here; the generated parser and the runtime API
    # (ValueSetControl) share these objects
    vsets: dict[str, ParseVSet] = field(default_factory=dict)


def _need(obj: Any, key: str, kind: type | tuple, where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise PipelineLoadError(f"{where}: missing attribute '{key}'")
    val = obj[key]
    if not isinstance(val, kind) or (kind is int and isinstance(val, bool)):
        raise PipelineLoadError(f"{where}: attribute '{key}' has the wrong type ({val!r})")
    return val


def _width(val: Any, where: str) -> int:
    if not isinstance(val, int) or isinstance(val, bool) or not 0 <= val <= MAX_BITWIDTH:
        raise PipelineLoadError(f"{where}: bit width {val!r} is not in 0..{MAX_BITWIDTH}")
    return val


def _size(obj: dict, where: str, default: int | None = None) -> int:
    val = obj.get("size", default) if isinstance(obj, dict) else None
    if val is None:
        raise PipelineLoadError(f"{where}: missing attribute 'size'")
    if not isinstance(val, int) or isinstance(val, bool) or not 0 <= val <= MAX_ARRAY_SIZE:
        raise PipelineLoadError(f"{where}: size {val!r} is not in 0..{MAX_ARRAY_SIZE}")
    return val


def _list(obj: dict, key: str) -> list:
    val = obj.get(key, [])
    if val is None:
        return []
    if not isinstance(val, list):
        raise PipelineLoadError(f"top-level '{key}' must be a JSON array")
    return val


def _build_layout(j: dict) -> tuple[Layout, dict[str, dict]]:
    lay = Layout()
    htypes: dict[str, dict] = {}
    for ht in _list(j, "header_types"):
        name = _need(ht, "name", str, "header_types[]")
        fields = _need(ht, "fields", list, f"header type '{name}'")
        nvl = 0
        for f in fields:
            if not (isinstance(f, list) and 2 <= len(f) <= 4 and isinstance(f[0], str)):
                raise PipelineLoadError(f"header type '{name}': malformed field {f!r}")
            if f[1] == "*":
                nvl += 1
                if nvl > 1 or not isinstance(ht.get("max_length"), int):
                    raise PipelineLoadError(f"header type '{name}': a variable-length field "
                                            "needs 'max_length' and must be the only one")
                _width(ht["max_length"] * 8, f"header type '{name}' max_length")
                continue
            _width(f[1], f"header type '{name}' field {f[0]!r}")
        htypes[name] = ht
    for h in _list(j, "headers"):
        name = _need(h, "name", str, "headers[]")
        tname = _need(h, "header_type", str, f"header '{name}'")
        if tname not in htypes:
            raise PipelineLoadError(f"header '{name}': unknown header type '{tname}'")
        if name in lay.headers:
            raise PipelineLoadError(f"duplicate header instance '{name}'")
        meta = bool(h.get("metadata", False))
        ht = htypes[tname]
        fields = [(f[0], 0 if f[1] == "*" else f[1], field_signed(f)) for f in ht["fields"]]
        vl = next((i for i, f in enumerate(ht["fields"]) if f[1] == "*"), None)
        base = len(lay.widths)
        static = sum(w for _, w, _ in fields)
        max_vl = ht.get("max_length", 0) * 8 - static if vl is not None else 0
        for i, (_, w, sg) in enumerate(fields):
            lay.new_slot(max_vl if i == vl else w, sg)
        lay.new_slot(1, False, 1 if meta else 0)
        if vl is not None:
            lay.new_slot(32)
        if not meta and static % 8:
            raise PipelineLoadError(f"header '{name}': width is not a multiple of 8 bits")
        lay.headers[name] = HeaderInfo(name, tname, fields, base, meta, h.get("id", -1), vl,
                                       max(0, max_vl))
    by_id = {h.hid: h.name for h in lay.headers.values()}
    for s in _list(j, "header_stacks"):
        name = _need(s, "name", str, "header_stacks[]")
        ids = _need(s, "header_ids", list, f"header stack '{name}'")
        try:
            names = [by_id[i] for i in ids]
        except (KeyError, TypeError) as e:
            raise PipelineLoadError(f"header stack '{name}': unknown header id {e}") from None
        if not names:
            # p4c never writes a stack of size 0; the engine's stack code needs an element
            raise PipelineLoadError(f"header stack '{name}': 'header_ids' is empty")
        lay.stacks[name] = StackInfo(name, names, lay.new_slot(32))
    for u in _list(j, "header_unions"):
        uname = _need(u, "name", str, "header_unions[]")
        try:
            members = [lay.headers[by_id[i]] for i in _need(u, "header_ids", list, uname)]
        except (KeyError, TypeError) as e:
            raise PipelineLoadError(f"header union '{uname}': unknown header id {e}") from None
        lay.unions[uname] = [m.name for m in members]
        for m in members:
            m.union_siblings = [o.valid_slot for o in members if o is not m]
    _build_union_stacks(j, lay)
    for alias in _list(j, "field_aliases"):
        if not (isinstance(alias, list) and len(alias) == 2 and isinstance(alias[0], str)):
            raise PipelineLoadError(f"malformed field alias {alias!r}")
        lay.field_slot(alias[1])
        lay.aliases[alias[0]] = (alias[1][0], alias[1][1])
    for fname, width in STANDARD_METADATA_FIELDS.items():
        slot = lay.optional_slot("standard_metadata." + fname)
        lay.sm[fname] = slot if slot is not None else lay.new_slot(width)
    lay.len_reg = lay.new_slot(32)
    return lay, htypes


def _build_union_stacks(j: Any, lay: Layout) -> None:
    """BMv2's header_union_stacks: ``header_union_ids`` name the element unions in order;
    the member names come from the ``union_type``'s entry in header_union_types."""
    utypes = {t.get("name"): t for t in _list(j, "header_union_types") if isinstance(t, dict)}
    by_uid = {u.get("id"): u.get("name") for u in _list(j, "header_unions")}
    for s in _list(j, "header_union_stacks"):
        name = _need(s, "name", str, "header_union_stacks[]")
        ids = _need(s, "header_union_ids", list, f"header union stack '{name}'")
        try:
            unions = [by_uid[i] for i in ids]
        except (KeyError, TypeError) as e:
            raise PipelineLoadError(f"header union stack '{name}': unknown header union id "
                                    f"{e}") from None
        if not unions:
            raise PipelineLoadError(f"header union stack '{name}': 'header_union_ids' is empty")
        ut = utypes.get(s.get("union_type"))
        hs = ut.get("headers") if ut is not None else None
        if not (isinstance(hs, list) and all(isinstance(h, list) and h for h in hs)):
            raise PipelineLoadError(f"header union stack '{name}': unknown union type "
                                    f"{s.get('union_type')!r:.60}")
        members = [h[0] for h in hs]
        if any(len(lay.unions[u]) != len(members) for u in unions):
            raise PipelineLoadError(f"header union stack '{name}': an element union does not "
                                    f"have the {len(members)} members of its union type")
        lay.union_stacks[name] = UnionStackInfo(name, unions, members, lay.new_slot(32),
                                                lay.new_slot(32))


def load_program(j: Any) -> Program:
    """Validate ``j`` (types throughout: ``schema``; references: here) and build the
    :class:`Program`."""
    check_document(j)
    check_dialect(j)
    meta = j.get("__meta__")
    if isinstance(meta, dict) and isinstance(meta.get("version"), list):
        ver = meta["version"]
        if not ver or ver[0] != 2:
            raise PipelineLoadError(f"unsupported BMv2 JSON version {ver!r} (need 2.x)")
    for key in ("parsers", "deparsers", "pipelines"):
        if not isinstance(j.get(key), list) or not j[key]:
            raise PipelineLoadError(f"BMv2 JSON has no '{key}'")
    if _list(j, "extern_instances"):
        raise PipelineLoadError("extern_instances are not supported by softnic (v1model only)")
    lay, htypes = _build_layout(j)

    errors = dict(DEFAULT_ERRORS)
    for e in _list(j, "errors"):
        if not (isinstance(e, list) and len(e) == 2 and isinstance(e[0], str)
                and isinstance(e[1], int)):
            raise PipelineLoadError(f"malformed error declaration {e!r}")
        errors[e[0]] = e[1]

    actions_by_id: dict[int, dict] = {}
    actions_by_name: dict[str, dict] = {}
    for a in _list(j, "actions"):
        name = _need(a, "name", str, "actions[]")
        aid = _need(a, "id", int, f"action '{name}'")
        _need(a, "primitives", list, f"action '{name}'")
        for rd in a.get("runtime_data", []) or []:
            _width(_need(rd, "bitwidth", int, f"action '{name}' runtime_data"),
                   f"action '{name}' runtime_data")
        actions_by_id[aid] = a
        actions_by_name.setdefault(name, a)

    def fl_elements(fl: dict, where: str) -> list[tuple[str, int]]:
        out = []
        for el in _need(fl, "elements", list, where):
            if not isinstance(el, dict) or el.get("type") != "field":
                raise PipelineLoadError(f"{where}: only field elements are supported ({el!r})")
            slot = lay.field_slot(el.get("value"))  # a [header, field] pair, or refused
            out.append((el["value"][1], slot))
        return out

    field_lists = {}
    for fl in _list(j, "field_lists"):
        fid = _need(fl, "id", int, "field_lists[]")
        field_lists[fid] = [s for _, s in fl_elements(fl, f"field list {fid}")]
    learn_lists = {}
    for ll in _list(j, "learn_lists"):
        lid = _need(ll, "id", int, "learn_lists[]")
        learn_lists[lid] = (str(ll.get("name", f"digest{lid}")),
                            fl_elements(ll, f"learn list {lid}"))

    def by_name(key: str) -> dict[str, dict]:
        out = {}
        for obj in _list(j, key):
            out[_need(obj, "name", str, f"{key}[]")] = obj
        return out

    calcs = by_name("calculations")
    registers = by_name("register_arrays")
    for name, r in registers.items():
        _size(r, f"register '{name}'")
        _width(_need(r, "bitwidth", int, f"register '{name}'"), f"register '{name}'")
    counters = by_name("counter_arrays")
    for name, c in counters.items():
        _size(c, f"counter '{name}'", 0)
    meters = by_name("meter_arrays")
    for name, m in meters.items():
        _size(m, f"meter '{name}'", 0)
        if m.get("type", "bytes") not in ("bytes", "packets"):
            raise PipelineLoadError(f"meter '{name}': bad type {m.get('type')!r}")
    vsets = load_parse_vsets(j)
    return Program(j, lay, errors, htypes, actions_by_id, actions_by_name, field_lists,
                   learn_lists, calcs, registers, counters, meters, vsets)

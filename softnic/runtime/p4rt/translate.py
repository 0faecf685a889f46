"""P4Runtime table entries <-> ``softnic.runtime.api`` table entries.

The spec's match rules live here (P4Runtime spec, "TableEntry" / "FieldMatch"): a don't-care
field is omitted, never sent as an all-zero mask or a zero-length prefix; masked-off value bits
must be zero; priority is required exactly when the table has a ternary, range or optional key.
Enforcing them at the edge means the engine only ever sees well-formed entries, and the client
gets INVALID_ARGUMENT with a message naming the offending field instead of a silently different
entry.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from softnic.runtime.api import ActionCall, MatchKey, TableEntry

from . import bytestr
from .errors import invalid, unimplemented
from .p4info import ActionInfo, FieldInfo, MatchType, P4InfoIndex, TableInfo

Key = list[MatchKey | None]


def _field_key(f: FieldInfo, fm: p4runtime_pb2.FieldMatch, table: str) -> MatchKey:
    what = f"table {table} field {f.name}"
    kind = fm.WhichOneof("field_match_type")
    expected = {MatchType.EXACT: "exact", MatchType.LPM: "lpm", MatchType.TERNARY: "ternary",
                MatchType.RANGE: "range", MatchType.OPTIONAL: "optional"}.get(f.match_type)
    if expected is None:
        raise unimplemented(f"{what}: match type {f.match_type} is not supported")
    if kind != expected:
        raise invalid(f"{what}: expected a {expected} match, got {kind or 'nothing'}")
    full = (1 << f.bitwidth) - 1
    if kind == "exact":
        return MatchKey(value=bytestr.decode(fm.exact.value, f.bitwidth, what))
    if kind == "optional":
        return MatchKey(value=bytestr.decode(fm.optional.value, f.bitwidth, what))
    if kind == "lpm":
        plen = fm.lpm.prefix_len
        if plen <= 0 or plen > f.bitwidth:
            raise invalid(f"{what}: prefix length {plen} must be in 1..{f.bitwidth} "
                          "(omit the field for a don't-care match)")
        value = bytestr.decode(fm.lpm.value, f.bitwidth, what)
        host_mask = (1 << (f.bitwidth - plen)) - 1
        if value & host_mask:
            raise invalid(f"{what}: bits beyond the /{plen} prefix must be zero")
        return MatchKey(value=value, prefix_len=plen)
    if kind == "ternary":
        value = bytestr.decode(fm.ternary.value, f.bitwidth, what)
        mask = bytestr.decode(fm.ternary.mask, f.bitwidth, what)
        if mask == 0:
            raise invalid(f"{what}: zero mask (omit the field for a don't-care match)")
        if value & ~mask & full:
            raise invalid(f"{what}: value has bits set outside the mask")
        return MatchKey(value=value, mask=mask)
    low = bytestr.decode(fm.range.low, f.bitwidth, what)
    high = bytestr.decode(fm.range.high, f.bitwidth, what)
    if low > high:
        raise invalid(f"{what}: range low 0x{low:x} is above high 0x{high:x}")
    if low == 0 and high == full:
        raise invalid(f"{what}: full range (omit the field for a don't-care match)")
    return MatchKey(value=low, high=high)


def decode_key(t: TableInfo, matches) -> Key:
    """The engine key (P4Info field order) for the ``match`` list of a TableEntry."""
    key: Key = [None] * len(t.fields)
    position = {f.id: i for i, f in enumerate(t.fields)}
    for fm in matches:
        f = t.fields_by_id.get(fm.field_id)
        if f is None:
            raise invalid(f"table {t.name}: unknown match field id {fm.field_id}")
        i = position[f.id]
        if key[i] is not None:
            raise invalid(f"table {t.name}: field {f.name} given twice")
        key[i] = _field_key(f, fm, t.name)
    for i, f in enumerate(t.fields):
        if key[i] is None and f.match_type == MatchType.EXACT:
            raise invalid(f"table {t.name}: exact field {f.name} is missing")
    return key


def check_priority(t: TableInfo, priority: int) -> None:
    if t.needs_priority and priority <= 0:
        raise invalid(f"table {t.name} has ternary/range/optional keys: priority must be > 0")
    if not t.needs_priority and priority != 0:
        raise invalid(f"table {t.name} has no ternary/range/optional key: priority must be 0")


def decode_action(index: P4InfoIndex, t: TableInfo, ta: p4runtime_pb2.TableAction,
                  for_default: bool) -> ActionCall:
    kind = ta.WhichOneof("type")
    if kind is None:
        raise invalid(f"table {t.name}: entry has no action")
    if kind != "action":
        raise unimplemented(f"table {t.name}: action profiles ({kind}) are not supported")
    a = index.action(ta.action.action_id)
    if a.id not in t.action_ids:
        raise invalid(f"action {a.name} is not an action of table {t.name}")
    if for_default and a.id in t.table_only_ids:
        raise invalid(f"action {a.name} is @tableonly in {t.name}: not a default action")
    if not for_default and a.id in t.default_only_ids:
        raise invalid(f"action {a.name} is @defaultonly in {t.name}: not for entries")
    return ActionCall(a.name, decode_params(a, ta.action.params))


def decode_params(a: ActionInfo, params) -> list[int]:
    values: dict[int, int] = {}
    for p in params:
        info = a.params_by_id.get(p.param_id)
        if info is None:
            raise invalid(f"action {a.name}: unknown parameter id {p.param_id}")
        if info.id in values:
            raise invalid(f"action {a.name}: parameter {info.name} given twice")
        values[info.id] = bytestr.decode(p.value, info.bitwidth, f"action {a.name} param "
                                                                  f"{info.name}")
    missing = [p.name for p in a.params if p.id not in values]
    if missing:
        raise invalid(f"action {a.name}: missing parameter(s) {', '.join(missing)}")
    return [values[p.id] for p in a.params]


def decode_entry(index: P4InfoIndex, t: TableInfo, msg: p4runtime_pb2.TableEntry,
                 with_action: bool) -> TableEntry:
    """A non-default entry; ``with_action`` is False for DELETE, where the action is ignored."""
    check_priority(t, msg.priority)
    key = decode_key(t, msg.match)
    action = (decode_action(index, t, msg.action, for_default=False) if with_action
              else ActionCall("", []))
    entry = TableEntry(key=key, action=action, priority=msg.priority)
    if msg.HasField("meter_config"):
        c = msg.meter_config
        entry.meter_config = (c.cir, c.cburst, c.pir, c.pburst)
    if msg.HasField("counter_data"):
        entry.counter_packets = msg.counter_data.packet_count
        entry.counter_bytes = msg.counter_data.byte_count
    return entry


# -- engine -> P4Runtime

def encode_key(t: TableInfo, key: Key, out: p4runtime_pb2.TableEntry) -> None:
    for f, k in zip(t.fields, key, strict=False):
        if k is None:
            continue
        fm = out.match.add(field_id=f.id)
        if f.match_type == MatchType.EXACT:
            fm.exact.value = bytestr.encode(k.value)
        elif f.match_type == MatchType.OPTIONAL:
            fm.optional.value = bytestr.encode(k.value)
        elif f.match_type == MatchType.LPM:
            fm.lpm.value = bytestr.encode(k.value)
            fm.lpm.prefix_len = k.prefix_len if k.prefix_len is not None else f.bitwidth
        elif f.match_type == MatchType.TERNARY:
            fm.ternary.value = bytestr.encode(k.value)
            mask = k.mask if k.mask is not None else (1 << f.bitwidth) - 1
            fm.ternary.mask = bytestr.encode(mask)
        elif f.match_type == MatchType.RANGE:
            fm.range.low = bytestr.encode(k.value)
            fm.range.high = bytestr.encode(k.high if k.high is not None else k.value)


def encode_action(index: P4InfoIndex, call: ActionCall, out: p4runtime_pb2.TableAction) -> None:
    a = action_by_name(index, call.name)
    out.action.action_id = a.id
    for info, value in zip(a.params, call.params, strict=False):
        out.action.params.add(param_id=info.id, value=bytestr.encode(value))


def action_by_name(index: P4InfoIndex, name: str) -> ActionInfo:
    for a in index.actions.values():
        if a.name == name:
            return a
    # The JSON may name an action without its control prefix (e.g. NoAction).
    for a in index.actions.values():
        if a.name.rsplit(".", 1)[-1] == name.rsplit(".", 1)[-1]:
            return a
    raise invalid(f"engine reported action {name!r} which is not in the P4Info")


def encode_entry(index: P4InfoIndex, t: TableInfo, e: TableEntry,
                 out: p4runtime_pb2.TableEntry, with_counters: bool) -> None:
    out.table_id = t.id
    encode_key(t, e.key, out)
    out.priority = e.priority
    encode_action(index, e.action, out.action)
    if e.is_const:
        out.is_const = True
    if e.meter_config is not None and t.direct_meter_id:
        cir, cburst, pir, pburst = e.meter_config
        out.meter_config.CopyFrom(p4runtime_pb2.MeterConfig(cir=cir, cburst=cburst, pir=pir,
                                                            pburst=pburst))
    if with_counters and t.direct_counter_id:
        out.counter_data.packet_count = e.counter_packets
        out.counter_data.byte_count = e.counter_bytes


def same_key(a: Key, b: Key) -> bool:
    return list(a) == list(b)

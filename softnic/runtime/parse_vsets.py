"""Parser value sets at run time: BMv2's ``ParseVSet``.

A value set holds members of its ``compressed_bitwidth`` (the select key's fields concatenated
without byte padding). A ``parse_vset`` transition matches when the state's key, its fields
concatenated the same way, is a member; an empty set matches nothing. BMv2 1.15 has no member
limit: P4Objects::init_parse_vsets reads name, id and compressed_bitwidth only, so the
``max_size`` p4c writes is accepted and ignored (behavioral-model#856 was closed without
enforcing it); softnic's P4Runtime service enforces the P4Info ``size``. The generated parser
reads ``members`` directly, so the set is updated in place.
"""

from __future__ import annotations

from typing import Any

from softnic.runtime.api import InvalidArgument, PipelineLoadError

# Largest id BMv2 reads (a C++ int) and widest set softnic accepts (loader.MAX_BITWIDTH).
MAX_ID = (1 << 31) - 1
MAX_BITWIDTH = 4096


class ValueSetError(InvalidArgument):
    """A member that does not fit the set, a full set, or an unknown member or set."""


class ParseVSet:
    def __init__(self, name: str, vid: int, bitwidth: int) -> None:
        self.name = name
        self.id = vid
        self.bitwidth = bitwidth
        # insertion-ordered; a dict so that lookups in the packet path are O(1)
        self.members: dict[int, None] = {}
        # a masked transition's view (BMv2's shadow copy with a mask): mask -> masked member ->
        # how many members give it
        self.masked: dict[int, dict[int, int]] = {}

    def masked_view(self, mask: int) -> dict[int, int]:
        """The members ANDed with ``mask``, kept up to date: a transition with a mask matches
        when the key ANDed with it is one of them (BMv2 ParseSwitchCaseVSetWithMask)."""
        view = self.masked.get(mask)
        if view is None:
            view = self.masked[mask] = {}
            for v in self.members:
                view[v & mask] = view.get(v & mask, 0) + 1
        return view

    def _shadow_add(self, value: int) -> None:
        for mask, view in self.masked.items():
            view[value & mask] = view.get(value & mask, 0) + 1

    def _shadow_remove(self, value: int) -> None:
        for mask, view in self.masked.items():
            n = view.get(value & mask, 0) - 1
            if n > 0:
                view[value & mask] = n
            else:
                view.pop(value & mask, None)

    def check_value(self, value: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0 \
                or value >> self.bitwidth:
            raise ValueSetError(f"value set '{self.name}': {value!r} does not fit in "
                                f"{self.bitwidth} bits")
        return value

    def add(self, value: int) -> None:
        """Add ``value`` (BMv2 parse_vset_add: adding a present member changes nothing)."""
        self.check_value(value)
        if value in self.members:
            return
        self.members[value] = None
        self._shadow_add(value)

    def remove(self, value: int) -> None:
        """Remove ``value`` (BMv2 parse_vset_remove: removing an absent member is no error)."""
        self.check_value(value)
        if value in self.members:
            del self.members[value]
            self._shadow_remove(value)

    def clear(self) -> None:
        self.members.clear()
        for view in self.masked.values():
            view.clear()

    def replace(self, values: list[int]) -> None:
        """Make the members exactly ``values`` (all checked before any change)."""
        for v in values:
            self.check_value(v)
        uniq = dict.fromkeys(values)
        self.clear()
        for v in uniq:
            self.members[v] = None
            self._shadow_add(v)

    def values(self) -> list[int]:
        return list(self.members)


def load_parse_vsets(j: dict) -> dict[str, ParseVSet]:
    """The JSON's ``parse_vsets`` (BMv2 P4Objects::init_parse_vsets), validated."""
    out: dict[str, ParseVSet] = {}
    raw = j.get("parse_vsets") or []
    if not isinstance(raw, list):
        raise PipelineLoadError("'parse_vsets' is not a list")
    ids: set[int] = set()
    for i, v in enumerate(raw):
        where = f"parse_vsets[{i}]"
        if not isinstance(v, dict):
            raise PipelineLoadError(f"{where}: expected a JSON object, got {type(v).__name__}")
        name, vid, bw = v.get("name"), v.get("id"), v.get("compressed_bitwidth")
        if not isinstance(name, str):
            raise PipelineLoadError(f"{where}: attribute 'name' must be a string")
        where = f"{where} {name!r:.80}"
        if not _is_int(vid) or not 0 <= vid <= MAX_ID:
            # BMv2 reads the id as a C++ int (p_id_t); p4c numbers sets from 0
            raise PipelineLoadError(f"{where}: attribute 'id' must be an integer in "
                                    f"0..{MAX_ID}, got {_short(vid)}")
        if not _is_int(bw) or not 0 <= bw <= MAX_BITWIDTH:
            raise PipelineLoadError(f"{where}: attribute 'compressed_bitwidth' must be an "
                                    f"integer in 0..{MAX_BITWIDTH}, got {_short(bw)}")
        if name in out or vid in ids:
            raise PipelineLoadError(f"duplicate parse_vset '{name}' (id {vid})")
        ids.add(vid)
        out[name] = ParseVSet(name, vid, bw)
    return out


def _short(v: Any) -> str:
    """A JSON value for a message, bounded (a huge int's repr would itself fail)."""
    if _is_int(v) and v.bit_length() > 64:
        return f"an integer of {v.bit_length()} bits"
    return f"{v!r:.40}"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class ValueSetControl:
    """Mixin of :class:`~softnic.runtime.switch.Switch`: BMv2's parse_vset_* runtime API
    (``parse_vset_add``/``remove``/``get``/``clear``) plus a whole-list replace for
    P4Runtime. Members are ints of the set's compressed bitwidth."""

    _lock: Any
    _p: Any

    def _vset(self, name: str) -> ParseVSet:
        p = self._p
        if p is None:
            raise ValueSetError("no pipeline loaded")
        # every declared set, built once at load (BMv2 creates each, used or not)
        vs = p.prog.vsets.get(name) if isinstance(name, str) else None
        if vs is None:
            raise ValueSetError(f"no parser value set named '{name}'")
        return vs

    def parse_vsets(self) -> dict[str, int]:
        """Name -> compressed bitwidth of every value set of the loaded program."""
        with self._lock:
            p = self._p
            if p is None:
                return {}
            return {n: v.bitwidth for n, v in p.prog.vsets.items()}

    def parse_vset_add(self, name: str, value: int) -> None:
        with self._lock:
            self._vset(name).add(value)

    def parse_vset_remove(self, name: str, value: int) -> None:
        with self._lock:
            self._vset(name).remove(value)

    def parse_vset_get(self, name: str) -> list[int]:
        with self._lock:
            return self._vset(name).values()

    def parse_vset_clear(self, name: str) -> None:
        with self._lock:
            self._vset(name).clear()

    def parse_vset_set(self, name: str, values: list[int]) -> None:
        """Replace the members with ``values`` (P4Runtime MODIFY of a ValueSetEntry)."""
        with self._lock:
            self._vset(name).replace(values)

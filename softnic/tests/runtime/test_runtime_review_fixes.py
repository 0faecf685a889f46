"""Review fixes to the engine's handling of untrusted input: a BMv2 JSON (or P4Runtime traffic)
must never become code, hang, cost unbounded work, or fail with a Python error instead of a
clean load error.

* value-set ids and masks are JSON numbers: they never name generated code, and a negative id
  or mask is refused at load;
* a malformed JSON is refused with a message naming what is wrong, never a Python exception
  type (a type-confused value in any place of a real program's JSON);
* ``advance`` never moves the parser backwards: a negative constant is refused at load (BMv2's
  ParserOpAdvance<Data> asserts against it), a run-time amount is read as BMv2's ``size_t``;
* the idle-timeout sweep looks only at the entries that have a timeout, and a P4Runtime read
  takes their ageing state from the entry snapshot (no per-entry lookup a delete can race);
* a program's parser value sets are built once, at load.
"""

from __future__ import annotations

import copy
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from softnic.runtime import parse_vsets
from softnic.runtime.api import PipelineLoadError
from softnic.runtime.switch import Switch
from softnic.tests.compiler.p4progs import compile_text
from softnic.tests.compiler.test_value_sets import program as vs_program
from softnic.tests.runtime.engine_helpers import fixture_json
from softnic.tests.runtime.test_idle_timeout import MS, Env
from softnic.tests.runtime.test_p4rt_fixture import update

PY_ERROR = re.compile(r"\b(TypeError|KeyError|IndexError|ValueError|AttributeError|"
                      r"RecursionError|struct\.error)\b|malformed BMv2 JSON:|unexpected ")


def load_error(j: dict) -> str:
    with pytest.raises(PipelineLoadError) as exc:
        Switch().load_json(j)
    return str(exc.value)


# -- value sets -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def vs_json(tmp_path_factory) -> dict:
    j, _ = compile_text(tmp_path_factory.mktemp("vs"),
                        vs_program("value_set<bit<8>>(4) pvs;", "hdr.h.a"))
    return j


def _vs_start(j: dict) -> dict:
    return next(s for s in j["parsers"][0]["parse_states"] if s["name"] == "start")


def _vs_transition(j: dict) -> dict:
    return next(t for t in _vs_start(j)["transitions"] if t["type"] == "parse_vset")


def test_value_set_as_compiled_matches_its_members(vs_json) -> None:
    sw = Switch()
    sw.load_json(vs_json)
    sw.parse_vset_add("P.pvs", 5)
    assert sw.process_packet(0, bytes([5, 1, 0xEE])) == [(1, bytes([5, 0xEE]))]


def test_negative_value_set_id_is_refused_at_load(vs_json) -> None:
    j = copy.deepcopy(vs_json)
    j["parse_vsets"][0]["id"] = -1
    msg = load_error(j)
    assert "parse_vsets[0]" in msg and "'id'" in msg
    assert "code generation" not in msg


def test_value_set_id_is_not_part_of_the_generated_code(vs_json) -> None:
    """An id is only a number: one BMv2 reads as a C++ int loads and works whatever it is."""
    j = copy.deepcopy(vs_json)
    j["parse_vsets"][0]["id"] = (1 << 31) - 1
    _vs_transition(j)["mask"] = "0x0f"
    sw = Switch()
    sw.load_json(j)
    sw.parse_vset_add("P.pvs", 0x15)
    # the key 0x25 ANDed with the mask is 0x05, as is the member 0x15 ANDed with it
    assert sw.process_packet(0, bytes([0x25, 1, 0xEE])) == [(1, bytes([0x25, 0xEE]))]
    j["parse_vsets"][0]["id"] = 1 << 31
    assert "'id'" in load_error(j)


@pytest.mark.parametrize("mask", ["-0x1", "-0xf"])
def test_negative_value_set_mask_is_refused_at_load(vs_json, mask) -> None:
    j = copy.deepcopy(vs_json)
    _vs_transition(j)["mask"] = mask
    msg = load_error(j)
    assert "mask" in msg and "negative" in msg
    assert "code generation" not in msg


def test_value_sets_are_built_once_per_load(vs_json, monkeypatch) -> None:
    made: list[str] = []
    init = parse_vsets.ParseVSet.__init__

    def counting(self: Any, name: str, vid: int, bitwidth: int) -> None:
        made.append(name)
        init(self, name, vid, bitwidth)

    monkeypatch.setattr(parse_vsets.ParseVSet, "__init__", counting)
    sw = Switch()
    sw.load_json(vs_json)
    assert made == ["P.pvs"]
    assert sw.parse_vsets() == {"P.pvs": 8}
    sw.parse_vset_add("P.pvs", 9)
    assert sw.parse_vset_get("P.pvs") == [9]
    assert made == ["P.pvs"]
    assert sw.process_packet(0, bytes([9, 1, 0xEE])) == [(1, bytes([9, 0xEE]))]


# -- malformed JSON: clean messages ---------------------------------------------------------

# Type confusions the review found reaching a Python exception (each was "malformed BMv2 JSON:
# TypeError/IndexError ...").
STACK_CASES = [
    (("header_stacks", 0, "header_ids"), []),
    (("errors",), -1),
    (("parsers", 0, "parse_states", 0, "transition_key", 0, "value", 0), []),
    (("parse_vsets",), -1),
    (("deparsers", 0, "primitives"), -1),
    (("actions", 0, "primitives", 1, "parameters", 1, "value", "value", "op"), []),
    (("pipelines", 0, "tables", 0, "default_entry", "action_id"), []),
    (("pipelines", 0, "tables", 0, "default_entry", "action_data"), -1),
]


@pytest.mark.parametrize("section", ["field_lists", "learn_lists"])
def test_list_element_with_an_empty_field_reference_is_refused_cleanly(section) -> None:
    j = fixture_json("traffic")
    j[section][0]["elements"][0]["value"] = []
    msg = load_error(j)
    assert "field reference" in msg and not PY_ERROR.search(msg), msg


def _set(o: Any, path: tuple, v: Any) -> None:
    for k in path[:-1]:
        o = o[k]
    o[path[-1]] = v


@pytest.mark.parametrize(("path", "value"), STACK_CASES, ids=[str(p) for p, _ in STACK_CASES])
def test_type_confused_json_is_refused_cleanly(path, value) -> None:
    j = fixture_json("stack_parser")
    _set(j, path, value)
    msg = load_error(j)
    assert not PY_ERROR.search(msg), msg


def test_register_named_by_a_list_is_refused_cleanly() -> None:
    j = fixture_json("stateful")
    prim = next(p for a in j["actions"] for p in a["primitives"]
                if any(isinstance(x, dict) and x.get("type") == "register_array"
                       for x in p["parameters"]))
    next(x for x in prim["parameters"] if x.get("type") == "register_array")["value"] = []
    msg = load_error(j)
    assert "register_array" in msg and not PY_ERROR.search(msg), msg


def _paths(o: Any, p: tuple = ()) -> Iterator[tuple]:
    if p:
        yield p
    if isinstance(o, dict):
        for k, v in o.items():
            yield from _paths(v, p + (k,))
    elif isinstance(o, list):
        for i, v in enumerate(o[:4]):
            yield from _paths(v, p + (i,))


FUZZ_VALUES: list[Any] = [None, [], {}, "x", -1, 1.5, True, 10 ** 30, [[]], {"type": []},
                          {"type": "hexstr", "value": "-0x1"}, ["a", "b", "c"], "-0x8"]


@pytest.mark.parametrize("which", ["stack_parser", "stateful", "traffic", "value_set"])
def test_mutated_json_loads_or_fails_with_a_clean_message(which, vs_json) -> None:
    """One JSON value replaced by a value of another type, at 700 places of a real
    program (a fixed random sample): the load succeeds (and a packet goes through without a
    Python error), or fails with PipelineLoadError whose message is not a Python exception."""
    base = vs_json if which == "value_set" else fixture_json(which)
    rnd = random.Random(which)
    cases = [(p, v) for p in _paths(base) for v in FUZZ_VALUES]
    bad = []
    for path, value in rnd.sample(cases, 700):
        j = copy.deepcopy(base)
        _set(j, path, value)
        sw = Switch()
        try:
            sw.load_json(j)
        except PipelineLoadError as e:
            if PY_ERROR.search(str(e)):
                bad.append((path, value, str(e)[:120]))
            continue
        sw.process_packet(0, bytes([1, 0, 8] + list(range(3, 40))))
    assert not bad, bad


# -- advance --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def adv_json(tmp_path_factory) -> dict:
    src = (Path(__file__).parents[1] / "stf" / "corpus" / "parser_advance.p4").read_text()
    j, _ = compile_text(tmp_path_factory.mktemp("adv"), src)
    return j


def _advance_op(j: dict) -> dict:
    return next(op for st in j["parsers"][0]["parse_states"] for op in st["parser_ops"]
                if op["op"] == "advance")


def test_advance_as_compiled(adv_json) -> None:
    # h = (kind 1, code, n 16): skip 2 bytes, t = 0xCC; ingress: code 0x10 + 1, t.v + 1
    out = Switch()
    out.load_json(adv_json)
    assert out.process_packet(0, bytes([1, 0, 16, 0xAA, 0xBB, 0xCC])) == \
        [(1, bytes([1, 0x11, 16, 0xCD]))]


@pytest.mark.parametrize("amount", ["-0x8", "-0x80000000"])
def test_negative_constant_advance_is_refused_at_load(adv_json, amount) -> None:
    j = copy.deepcopy(adv_json)
    _advance_op(j)["parameters"] = [{"type": "hexstr", "value": amount}]
    msg = load_error(j)
    assert "advance" in msg and "negative" in msg


def test_negative_run_time_advance_never_moves_backwards(adv_json) -> None:
    """n made a signed field: 0xF8 is -8. BMv2 reads the amount with get<size_t> (it only
    asserts it is not negative): a huge amount, past the end of the packet, so
    error.PacketTooShort before moving; t stays invalid and the bytes after h are payload."""
    j = copy.deepcopy(adv_json)
    [ht] = [h for h in j["header_types"] if any(f[0] == "n" for f in h["fields"])]
    ht["fields"] = [[f[0], f[1], True] if f[0] == "n" else f for f in ht["fields"]]
    sw = Switch()
    sw.load_json(j)
    out = sw.process_packet(0, bytes([1, 0, 0xF8, 0xAA, 0xBB]))
    assert out == [(1, bytes([1, 0x20, 0xF8, 0xAA, 0xBB]))]


# -- idle timeouts ------------------------------------------------------------------------------

@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    e = Env(tmp_path)
    e.srv.service.idle.interval_s = 3600.0  # only the sweeps the test makes
    try:
        yield e
    finally:
        e.client.close()
        e.srv.stop()


class CountingDict(dict):
    """A table's entry dict that counts whole-table scans."""

    scans = 0

    def values(self) -> Any:
        CountingDict.scans += 1
        return super().values()

    def items(self) -> Any:
        CountingDict.scans += 1
        return super().items()


def test_idle_sweep_touches_only_the_entries_with_a_timeout(env: Env) -> None:
    env.client.write(*[update("INSERT", "table_entry", env.entry(a, 0)) for a in range(40)])
    env.client.write(*[update("INSERT", "table_entry", env.entry(a, 1_000 * MS))
                       for a in (200, 201, 202)])
    table = env.switch._p.tables["I.t"].table
    table.entries = CountingDict(table.entries)
    CountingDict.scans = 0
    env.client.write(update("DELETE", "table_entry", env.entry(201, 0)))
    [note] = env.srv.service.idle.sweep(now=time.monotonic() + 60.0)
    assert sorted(e.match[0].exact.value[0] for e in note.table_entry) == [200, 202]
    assert CountingDict.scans == 0
    # the engine's index holds exactly the live entries that have a timeout
    timed = env.switch.table_timed_entries("I.t")
    assert sorted(e.mk[0].value for e in timed) == [200, 202]
    # a MODIFY to timeout 0 takes the entry out of the index
    env.client.write(update("MODIFY", "table_entry", env.entry(200, 0)))
    assert [e.mk[0].value for e in env.switch.table_timed_entries("I.t")] == [202]


def test_read_racing_a_delete_returns_the_snapshot(env: Env) -> None:
    """The entries are read under one hold of the switch lock, with their ageing state: an
    entry deleted between that snapshot and the encoding of the answer does not fail the
    read with NOT_FOUND."""
    env.client.write(*[update("INSERT", "table_entry", env.entry(a, (a + 1) * 1_000 * MS))
                       for a in range(3)])
    real = env.switch.table_entries
    raced = []

    def entries_then_delete(table: str) -> Any:
        snap = real(table)
        if not raced:
            raced.append(True)
            env.switch.table_delete(table, snap[1].key, snap[1].priority)
        return snap

    env.switch.table_entries = entries_then_delete  # type: ignore[method-assign]
    got = env.read_t(with_hit_time=True)
    assert sorted((e.match[0].exact.value[0], e.idle_timeout_ns) for e in got) == \
        [(0, 1_000 * MS), (1, 2_000 * MS), (2, 3_000 * MS)]
    assert all(e.time_since_last_hit.elapsed_ns < 60_000 * MS for e in got)
    del env.switch.table_entries
    assert len(env.read_t(with_hit_time=False)) == 2


# -- negative JSON constants the packet path used to trip on ------------------------------------

@pytest.mark.parametrize("value", [[-8, 8], [-1, 8]])
def test_lookahead_out_of_range_is_refused_at_load(adv_json, value) -> None:
    j = copy.deepcopy(adv_json)
    keys = [k for st in j["parsers"][0]["parse_states"] for k in st["transition_key"]
            if k["type"] == "lookahead"]
    assert keys
    for k in keys:
        k["value"] = value
    msg = load_error(j)
    assert not PY_ERROR.search(msg), msg


def test_negative_push_count_is_refused_at_load(tmp_path) -> None:
    src = (Path(__file__).parents[1] / "stf" / "corpus" / "header_stacks.p4").read_text()
    j, _ = compile_text(tmp_path, src)
    prims = [p for a in j["actions"] for p in a["primitives"] if p["op"] in ("push", "pop")]
    assert prims
    prims[0]["parameters"][1] = {"type": "hexstr", "value": "-0x1"}
    msg = load_error(j)
    assert "count" in msg and "negative" in msg

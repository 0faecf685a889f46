"""Load-time validation: malformed or unsupported JSON fails in load_json, never per packet."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.switch import Switch
from softnic.tests.runtime import test_p4rt_fixture as p4rt_fx
from softnic.tests.runtime.engine_helpers import fixture_json


def mutate(fn: Callable[[dict], Any]) -> dict:
    j = copy.deepcopy(fixture_json("basic_l3"))
    fn(j)
    return j


def action(j: dict, name: str) -> dict:
    return next(a for a in j["actions"] if a["name"] == name)


BAD: dict[str, Callable[[dict], Any]] = {
    "no parsers": lambda j: j.pop("parsers"),
    "unknown primitive": lambda j: action(j, "MyIngress.drop")["primitives"].append(
        {"op": "frobnicate", "parameters": []}),
    "unknown header in field": lambda j: action(j, "MyIngress.ipv4_forward")["primitives"][0]
    ["parameters"].__setitem__(0, {"type": "field", "value": ["nohdr", "x"]}),
    "unknown field": lambda j: action(j, "MyIngress.ipv4_forward")["primitives"][0]
    ["parameters"].__setitem__(0, {"type": "field", "value": ["ipv4", "nofield"]}),
    "bad hexstr": lambda j: action(j, "MyIngress.ipv4_forward")["primitives"][0]
    ["parameters"].__setitem__(1, {"type": "hexstr", "value": "0xzz"}),
    "runtime_data out of range": lambda j: action(j, "MyIngress.ipv4_forward")["primitives"][0]
    ["parameters"].__setitem__(1, {"type": "runtime_data", "value": 5}),
    "unknown next state": lambda j: j["parsers"][0]["parse_states"][0]["transitions"][0]
    .__setitem__("next_state", "nowhere"),
    "unknown init state": lambda j: j["parsers"][0].__setitem__("init_state", "nowhere"),
    "unknown next node": lambda j: j["pipelines"][0]["conditionals"][0]
    .__setitem__("true_next", "nowhere"),
    "unknown action id": lambda j: j["pipelines"][0]["tables"][0]["action_ids"]
    .__setitem__(0, 99),
    "unknown calculation": lambda j: j["checksums"][0].__setitem__("calculation", "nocalc"),
    "unknown hash algo": lambda j: j["calculations"][0].__setitem__("algo", "md5"),
    "unknown operator": lambda j: j["pipelines"][0]["conditionals"][0]["expression"]["value"]
    .__setitem__("op", "**"),
    "extern instances": lambda j: j["extern_instances"].append({"name": "x", "type": "y"}),
    "varbit field": lambda j: j["header_types"][2]["fields"].append(["opts", "*"]),
    "json version 3": lambda j: j["__meta__"].__setitem__("version", [3, 0]),
    "unsupported table type": lambda j: j["pipelines"][0]["tables"][0]
    .__setitem__("type", "indirect"),
    "unknown match type": lambda j: j["pipelines"][0]["tables"][0]["key"][0]
    .__setitem__("match_type", "fuzzy"),
    "header not byte aligned": lambda j: j["header_types"][2]["fields"].append(["x", 3]),
    "bad parser op": lambda j: j["parsers"][0]["parse_states"][0]["parser_ops"].append(
        {"op": "teleport", "parameters": []}),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_json_fails_at_load(case):
    sw = Switch()
    with pytest.raises(PipelineLoadError):
        sw.load_json(mutate(BAD[case]))
    assert not sw.has_pipeline()


@pytest.mark.parametrize("doc", [None, [], "text", {"parsers": "x"}])
def test_not_a_program(doc):
    with pytest.raises(PipelineLoadError):
        Switch().load_json(doc)  # type: ignore[arg-type]


def test_failed_load_keeps_previous_pipeline():
    sw = Switch()
    sw.load_json(fixture_json("basic_l3"))
    with pytest.raises(PipelineLoadError):
        sw.load_json(mutate(BAD["unknown primitive"]))
    assert sw.has_pipeline()
    assert sw.table_get_default("MyIngress.ipv4_lpm").name == "MyIngress.drop"


def test_p4rt_helpers_fixture_loads():
    """The P4Runtime tests' hand-written program (another author's JSON) loads."""
    sw = Switch(cpu_port=p4rt_fx.CPU_PORT)
    sw.load_json(p4rt_fx.bmv2_json())
    assert sw.has_pipeline()
    assert sw.process_packet(1, b"\x00" * 60) is not None

"""Hostile pipelines pushed over real gRPC: nothing they carry may run, each gets a clean error.

Every case takes the P4Runtime test program, plants Python in one place of its BMv2 JSON (an id,
a name, a field name, an expression operator, a primitive name, a header type, a size), and
pushes it with SetForwardingPipelineConfig(VERIFY_AND_COMMIT) through a real gRPC channel to
the real server. The planted code would create a marker file; the test asserts the marker never
appears, the server answers INVALID_ARGUMENT with a message, and it still takes a good pipeline
afterwards.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.gen_check import check_source
from softnic.runtime.p4rt import P4RuntimeServer
from softnic.tests.runtime import test_p4rt_fixture as fx
from softnic.tests.runtime.engine_helpers import fixture_json
from softnic.tests.runtime.test_p4rt_fixture import Client


@pytest.fixture
def client():
    sw = fx.make_switch()
    srv = P4RuntimeServer(sw, device_id=0, cpu_port=fx.CPU_PORT)
    port = srv.start("127.0.0.1:0")
    c = Client(f"127.0.0.1:{port}")
    yield c
    c.close()
    srv.stop(0)


def _run(marker: Path) -> str:
    """Python that creates ``marker`` when executed as an expression."""
    return f"__import__('pathlib').Path({str(marker)!r}).touch()"


def _cond(j: dict) -> dict:
    return j["pipelines"][0]["conditionals"][0]


def _table(j: dict) -> dict:
    return j["pipelines"][0]["tables"][1]


def _state(j: dict, i: int = 2) -> dict:
    return j["parsers"][0]["parse_states"][i]


def _action(j: dict, i: int = 1) -> dict:
    return j["actions"][i]


# Each case: (description, function planting the code given the Python expression).
# The forms match where the text would land in generated source: after a `def _name_`
# (ids), inside a quoted string (names in trace lines), or as an expression.
DEF_BREAKOUT = "0(F):\n    pass\n{code}\ndef _x"
QUOTE_BREAKOUT = "x' + str({code}) + '"
Mutator = Callable[[dict, str], None]
CASES: list[tuple[str, Mutator]] = [
    ("conditional id", lambda j, c: _cond(j).__setitem__("id", DEF_BREAKOUT.format(code=c))),
    ("table id", lambda j, c: _table(j).__setitem__("id", DEF_BREAKOUT.format(code=c))),
    ("header id", lambda j, c: j["headers"][2].__setitem__("id", DEF_BREAKOUT.format(code=c))),
    ("action id", lambda j, c: _action(j).__setitem__("id", DEF_BREAKOUT.format(code=c))),
    ("field name in an expression",
     lambda j, c: _cond(j).__setitem__("expression", {"type": "expression", "value": {
         "op": "==", "left": {"type": "field", "value": ["ethernet", f"x']) or ({c}"]},
         "right": {"type": "hexstr", "value": "0x1"}}})),
    ("expression operator",
     lambda j, c: _cond(j).__setitem__("expression", {"type": "expression", "value": {
         "op": f") or {c} or (", "left": {"type": "hexstr", "value": "0x1"},
         "right": {"type": "hexstr", "value": "0x1"}}})),
    ("expression type",
     lambda j, c: _cond(j).__setitem__("expression", {"type": c, "value": "0x1"})),
    ("hexstr value",
     lambda j, c: _cond(j).__setitem__("expression", {"type": "hexstr", "value": f"1 + {c}"})),
    ("runtime_data index",
     lambda j, c: _action(j)["primitives"].__setitem__(0, {"op": "assign", "parameters": [
         {"type": "field", "value": ["standard_metadata", "egress_spec"]},
         {"type": "runtime_data", "value": f"0] + [{c}"}]})),
    ("primitive name",
     lambda j, c: _action(j)["primitives"].append({"op": c, "parameters": []})),
    ("parser op name",
     lambda j, c: _state(j)["parser_ops"].append({"op": c, "parameters": []})),
    ("header type name",
     lambda j, c: j["headers"][2].__setitem__("header_type", c)),
    ("header field width", lambda j, c: j["header_types"][2]["fields"][0].__setitem__(1, c)),
    ("lookahead operands",
     lambda j, c: _cond(j).__setitem__("expression", {"type": "lookahead",
                                                      "value": [f"0) + ({c}", 8]})),
    ("cast width",
     lambda j, c: _cond(j).__setitem__("expression", {"type": "expression", "value": {
         "op": "two_comp_mod", "left": {"type": "hexstr", "value": "0x1"},
         "right": {"type": "string", "value": c}}})),
    ("register size", lambda j, c: j["register_arrays"][0].__setitem__("size", c)),
    ("register size, huge", lambda j, c: j["register_arrays"][0].__setitem__("size", 10**12)),
    ("register bitwidth, huge",
     lambda j, c: j["register_arrays"][0].__setitem__("bitwidth", 10**9)),
    ("jump target",
     lambda j, c: _action(j)["primitives"].insert(0, {"op": "_jump", "parameters": [
         {"type": "expression", "value": {"op": c}}]})),
    ("backward jump",
     lambda j, c: _action(j)["primitives"].insert(0, {"op": "_jump", "parameters": [
         {"type": "hexstr", "value": "0x0"}]})),
    ("table key mask", lambda j, c: _table(j)["key"][0].__setitem__("mask", c)),
    ("deparser order", lambda j, c: j["deparsers"][0]["order"].append(c)),
    ("next state", lambda j, c: _state(j)["transitions"][0].__setitem__("next_state", c)),
    ("error code", lambda j, c: j["errors"].__setitem__(1, ["PacketTooShort", c])),
]


def _rename_state(j: dict, old: str, new: str) -> None:
    for st in j["parsers"][0]["parse_states"]:
        if st["name"] == old:
            st["name"] = new
        for tr in st["transitions"]:
            if tr["next_state"] == old:
                tr["next_state"] = new


@pytest.mark.parametrize("what,plant", CASES, ids=[c[0] for c in CASES])
def test_hostile_pipeline_is_refused_and_runs_nothing(client: Client, tmp_path: Path,
                                                      what: str, plant: Mutator):
    marker = tmp_path / "pwned"
    j = copy.deepcopy(fx.bmv2_json())  # its ACTIONS list is shared module state
    plant(j, _run(marker))
    with pytest.raises(grpc.RpcError) as exc:
        client.set_pipeline(json.dumps(j).encode())
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT, exc.value.details()
    assert exc.value.details(), "the refusal must say what is wrong"
    assert not marker.exists(), f"code planted in the {what} ran"
    client.set_pipeline()  # the server is unharmed: a good pipeline still commits


def test_names_are_data_not_code(client: Client, tmp_path: Path):
    """Names and strings with quotes and newlines load and stay text: a table, an action and a
    log message whose text is Python are accepted as data, and nothing runs."""
    marker = tmp_path / "pwned"
    code = _run(marker)
    j = copy.deepcopy(fx.bmv2_json())  # its ACTIONS list is shared module state
    _action(j)["primitives"].append({"op": "log_msg", "parameters": [
        {"type": "string", "value": f"'); {code}; ('\n\"\"\" {{}}"},
        {"type": "parameters_vector", "value": [{"type": "hexstr", "value": "0x5"}]}]})
    _cond(j)["name"] = f"node_out'); {code}; ('"
    j["pipelines"][0]["init_table"] = _cond(j)["name"]
    client.set_pipeline(json.dumps(j).encode())
    assert not marker.exists()


def test_parse_state_names_are_data_in_traces(tmp_path: Path):
    """A parse state name that would break out of a string literal in the traced parser is
    printed verbatim in the per-packet trace, and nothing runs."""
    from softnic.runtime.switch import Switch

    marker = tmp_path / "pwned"
    name = QUOTE_BREAKOUT.format(code=_run(marker))
    j = copy.deepcopy(fx.bmv2_json())
    _rename_state(j, "parse_ethernet", name)
    sw = Switch()
    sw.load_json(j)
    lines: list[str] = []
    sw.set_trace(lines.append)
    sw.process_packet(1, bytes(12) + b"\x08\x00" + bytes(20))
    assert any(name in ln for ln in lines), lines
    assert not marker.exists()


BAD_SOURCES = {
    "import": "import os\n",
    "call of an unknown name": "def _f0(F):\n    return open('x')\n",
    "dunder attribute": "def _f0(F):\n    return F.__class__\n",
    "lambda": "def _f0(F):\n    return (lambda: 1)()\n",
    "module-level expression": "_f0(1)\n",
    "function name not generated": "def evil(F):\n    return 1\n",
    "store to a module name": "def _f0(F):\n    _f0 = 1\n",
    "keyword arguments": "def _f0(F):\n    return int(x=1)\n",
    "comprehension": "def _f0(F):\n    return [e for e in F]\n",
    "float constant": "def _f0(F):\n    return 1.5\n",
}


@pytest.mark.parametrize("src", BAD_SOURCES.values(), ids=BAD_SOURCES)
def test_generated_source_check_refuses_anything_not_generated(src: str):
    with pytest.raises(PipelineLoadError, match="internal code generation error"):
        check_source(src, {"_f0"}, "<test>")


def test_generated_source_check_accepts_the_generators_shapes():
    check_source("def _f0(F, D, S):\n    _t1 = F[3]\n    if _t1:\n        S.exited = True\n"
                 "    return int.from_bytes(b'', 'big')\n", {"_f0"}, "<test>")


def test_every_fixture_passes_the_source_check():
    """All fixtures compile: the allow-list covers every shape the generators emit."""
    from softnic.runtime.switch import Switch

    for name in ("basic_l3", "controller", "stack_parser", "stateful", "traffic"):
        Switch().load_json(copy.deepcopy(fixture_json(name)))

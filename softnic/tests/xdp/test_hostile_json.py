"""Hostile BMv2 JSON never reaches the C compiler as code.

The xdp back end writes C from JSON, so every string in the JSON is a way in. Each case of
softnic's hostile-pipeline suite (runtime/test_hostile_pipelines.py) is planted again, now with
C that would define a function if it were pasted into the program. The generator must refuse
the JSON, or generate C in which the planted text appears nowhere outside a comment, that
clang compiles and the kernel's verifier loads: identifiers come from the generator, values
only as integer literals, names only in comments made safe for C.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from softnic.compiler.xdp.program import generate
from softnic.runtime.api import PipelineLoadError
from softnic.runtime.xdp import libbpf
from softnic.tests.runtime import test_hostile_pipelines as hp
from softnic.tests.runtime import test_p4rt_fixture as fx

MARKER = "pwned_by_json"
# C that breaks out of a comment, a string, an expression and a statement, then defines a function
C_CODE = f'0 */ ; }}"); }} int {MARKER}(void) {{ return 1; }} /* ("'


def _fixture() -> dict:
    """softnic's P4Runtime test program without what the xdp target refuses (meters,
    multicast, clones, resubmit, recirculate)."""
    j = copy.deepcopy(fx.bmv2_json())
    j["meter_arrays"] = []

    def kept(p: dict) -> bool:
        if p.get("op") in ("execute_meter", "clone_ingress_pkt_to_egress",
                           "clone_egress_pkt_to_egress", "resubmit", "recirculate"):
            return False
        dst = (p.get("parameters") or [{}])[0]
        return not (p.get("op") == "assign" and dst.get("value") == ["standard_metadata",
                                                                     "mcast_grp"])
    for a in j["actions"]:
        a["primitives"] = [p for p in a["primitives"] if kept(p)]
    for pl in j["pipelines"]:
        for t in pl["tables"]:
            t["direct_meters"] = None
    return j


def _code_outside_comments(c: str) -> str:
    return re.sub(r"/\*.*?\*/", " ", c, flags=re.S)


def _rename(j: dict, old: str, new: str) -> None:
    """Rename ``old`` everywhere it is a whole JSON string (definition and references)."""
    renamed = json.loads(json.dumps(j).replace(json.dumps(old), json.dumps(new)))
    j.clear()
    j.update(renamed)


def _hostile_cases() -> list[tuple[str, hp.Mutator]]:
    return list(hp.CASES) + [
        ("table name", lambda j, c: _rename(j, hp._table(j)["name"], c)),
        ("action name", lambda j, c: _rename(j, hp._action(j)["name"], c)),
        ("header instance name", lambda j, c: _rename(j, j["headers"][2]["name"], c)),
        ("register name", lambda j, c: _rename(j, j["register_arrays"][0]["name"], c)),
        ("field name", lambda j, c: _rename(j, j["header_types"][2]["fields"][0][0], c)),
        ("parse state name", lambda j, c: hp._rename_state(
            j, hp._state(j)["name"], c)),
        ("source file name", lambda j, c: j.setdefault("program", c)),
    ]


@pytest.mark.parametrize("what,plant", _hostile_cases(), ids=[c[0] for c in _hostile_cases()])
def test_hostile_json_never_becomes_c(what: str, plant: hp.Mutator, tmp_path: Path) -> None:
    j = _fixture()
    try:
        plant(j, C_CODE)
    except (KeyError, IndexError, TypeError):
        pytest.skip(f"the fixture has no {what}")
    try:
        prog = generate(j, source=C_CODE)
    except PipelineLoadError as e:
        assert str(e), "a refusal says what is wrong"
        return
    code = _code_outside_comments(prog.c_source)
    assert MARKER not in code, f"JSON text from the {what} reached the C as code"
    assert "*/" not in re.sub(r"/\*.*?\*/", "", prog.c_source, flags=re.S)
    missing = libbpf.missing_requirements()
    if missing:
        pytest.skip("cannot compile and load here: " + "; ".join(missing))
    c_path, o_path = tmp_path / "p.c", tmp_path / "p.o"
    prog.write(c_path)
    libbpf.compile_c(c_path, o_path)
    with libbpf.BpfObject.load(o_path) as obj:
        assert obj.program_fd("p4_xdp") > 0


def test_the_fixture_itself_generates() -> None:
    """The cases above start from a program the back end accepts (else they prove nothing)."""
    prog = generate(_fixture())
    assert "SEC(\"xdp.frags\")" in prog.c_source

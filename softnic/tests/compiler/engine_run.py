"""Compile a small P4 program and push one packet through the engine in-process.

The programs share one shape: the parser extracts a single header ``h.d`` (fields given by the
test, all of the packet), the test's ingress control ``I`` computes into it, and the deparser
emits it, so the output packet is exactly the values the ingress code computed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from softnic.compiler.compile import compile_file
from softnic.runtime.switch import Switch

BYTES4 = "bit<8> a; bit<8> b; bit<8> c; bit<8> d;"


PARSER = """
parser P(packet_in pkt, out headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(h.d); transition accept; }
}
"""


def program(body: str, fields: str = BYTES4, ingress: str = "I()", parser: str = PARSER) -> str:
    """``body`` declares (at least) ``control I(inout headers_t h, inout meta_t meta, inout
    standard_metadata_t sm)``; ``ingress`` is how main instantiates it; ``parser`` replaces
    the default parser ``P`` (which only extracts ``h.d``)."""
    return f"""
#include <core.p4>
#include <v1model.p4>
header data_t {{ {fields} }}
struct headers_t {{ data_t d; }}
struct meta_t {{ bit<8> m; }}
{parser}
{body}
control VC(inout headers_t h, inout meta_t meta) {{ apply {{ }} }}
control E(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout headers_t h, inout meta_t meta) {{ apply {{ }} }}
control D(packet_out pkt, in headers_t h) {{ apply {{ pkt.emit(h.d); }} }}
V1Switch(P(), VC(), {ingress}, E(), CC(), D()) main;
"""


def compile_src(tmp_path: Path, src: str, name: str = "prog") -> dict[str, Any]:
    path = tmp_path / f"{name}.p4"
    path.write_text(src)
    bmv2_json, _ = compile_file(path)
    return bmv2_json


def run_once(bmv2_json: dict[str, Any], data: bytes) -> bytes:
    """The one packet the program sends out (on port 1, which ``I`` must set)."""
    sw = Switch()
    sw.load_json(bmv2_json)
    out = sw.process_packet(0, data)
    assert len(out) == 1, out
    port, pkt = out[0]
    assert port == 1
    return pkt


def run_src(tmp_path: Path, src: str, data: bytes) -> bytes:
    return run_once(compile_src(tmp_path, src), data)

"""Build small v1model programs for the mutation-hardening tests (``test_mut_*.py``).

Each program is compiled by softnic's own front end and run on the real engine: the tests only
see packets going in and coming out (and the control-plane API), never generated code.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from softnic.compiler.compile import compile_file
from softnic.runtime.switch import Switch

TEMPLATE = """#include <core.p4>
#include <v1model.p4>
{types}
struct hs_t {{ {hdr_fields} }}
struct m_t {{ {meta_fields} }}
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{
    state start {{ {parse} }}
    {states}
}}
control VC(inout hs_t hdr, inout m_t meta) {{ apply {{ {verify} }} }}
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{
{ingress_decls}
    apply {{
        sm.egress_spec = 1;
{ingress}
    }}
}}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{ apply {{ {egress} }} }}
control CC(inout hs_t hdr, inout m_t meta) {{ apply {{ {compute} }} }}
control D(packet_out pkt, in hs_t hdr) {{ apply {{ {emit} }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def program(*, types: str, headers: dict[str, str], meta: str = "bit<8> unused;",
            ingress: str = "", ingress_decls: str = "", verify: str = "", compute: str = "",
            parse: str | None = None, states: str = "", egress: str = "") -> str:
    """Source of a program whose packet is the ``headers`` (instance -> type), in order.

    The parser extracts every header unless ``parse`` (the start state's body, with its
    transition) and ``states`` (further states) say otherwise.
    """
    hdr_fields = " ".join(f"{t} {n};" for n, t in headers.items())
    if parse is None:
        parse = " ".join(f"pkt.extract(hdr.{n});" for n in headers) + " transition accept;"
    emit = " ".join(f"pkt.emit(hdr.{n});" for n in headers)
    return TEMPLATE.format(types=types, hdr_fields=hdr_fields, meta_fields=meta, parse=parse,
                           states=states, verify=verify, ingress_decls=ingress_decls,
                           ingress=ingress, egress=egress, compute=compute, emit=emit)


_compiled: dict[str, dict[str, Any]] = {}


def compile_src(tmp_path: Path, src: str, name: str = "prog") -> dict[str, Any]:
    """BMv2 JSON of ``src`` (a fresh copy each call; the compile itself is done once per
    process, which keeps mutation-testing runs, that fork per mutant, from recompiling)."""
    if src not in _compiled:
        path = tmp_path / f"{name}.p4"
        path.write_text(src)
        _compiled[src] = compile_file(path)[0]
    return copy.deepcopy(_compiled[src])


def switch_for(bmv2_json: dict[str, Any]) -> Switch:
    sw = Switch()
    sw.load_json(bmv2_json)
    return sw


def one_out(sw: Switch, data: bytes, port: int = 0) -> bytes:
    """The single packet ``data`` produces (the programs send everything to port 1)."""
    outs = sw.process_packet(port, data)
    assert len(outs) == 1, outs
    [(eport, out)] = outs
    assert eport == 1
    return out


def walk(node: Any) -> Iterator[dict]:
    """Every JSON object in ``node``, depth first (for rewriting BMv2 JSON in tests)."""
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v)

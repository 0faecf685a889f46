"""A tiny v1model program template for front-end tests that run what they compile.

The packet is one 2-byte header ``h`` (``a``, ``b``); every packet leaves on port 1 unless the
program drops it, so a test reads the program's effect from the second byte of the output.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from softnic.compiler.compile import compile_file
from softnic.compiler.diagnostics import CompileWarning
from softnic.runtime.switch import Switch

HEAD = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct hs_t { h_t h; }
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
"""

TAIL = """
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def program(ingress_body: str) -> str:
    """A whole program whose ingress control ``I`` has ``ingress_body`` as its body."""
    return (HEAD + "control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {\n"
            + ingress_body + "\n}\n" + TAIL)


def compile_text(tmp_path: Path, src: str, name: str = "prog",
                 warnings: list[CompileWarning] | None = None) -> tuple[dict[str, Any], Any]:
    path = tmp_path / f"{name}.p4"
    path.write_text(src)
    return compile_file(path, warnings=warnings)


def run_packet(bmv2_json: dict[str, Any], data: bytes) -> bytes | None:
    """Send ``data`` in on port 0; the one packet that leaves (on port 1), or None when
    dropped."""
    sw = Switch()
    sw.load_json(bmv2_json)
    outs = sw.process_packet(0, data)
    if not outs:
        return None
    [(port, out)] = outs
    assert port == 1
    return bytes(out)


def run_b(bmv2_json: dict[str, Any], a: int, b: int = 0) -> int | None:
    """Send one packet with header (a, b); the output's ``b``, or None when dropped."""
    out = run_packet(bmv2_json, bytes([a, b]))
    return None if out is None else out[1]

"""The nfp offload profile (softnic/compiler/xdp/offload_nfp.py): each kind of violation is found
on a small program and named by its P4 construct, what stays within the profile is not reported,
and on p4cache.p4 the structural blockers are reported by construct."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from softnic.compiler.compile import compile_file
from softnic.compiler.xdp import offload_nfp
from softnic.compiler.xdp.offload_nfp import NFP_MAX_ELEM_SZ, Report, Violation, check
from softnic.compiler.xdp.program import XdpProgram, generate

ROOT = Path(__file__).resolve().parents[3]

_HEAD = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<32> a; bit<32> b; bit<32> c; bit<32> d; bit<32> e; }
struct headers_t { h_t h; }
struct d_t { bit<32> a; }
struct meta_t { bit<32> x; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
"""
_TAIL = """
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _table(match: str, fields: str = "hdr.h.a") -> str:
    keys = " ".join(f"{f}: {match};" for f in fields.split())
    return ("action fwd(bit<9> p) { sm.egress_spec = p; }\n"
            f"table t {{ key = {{ {keys} }} actions = {{ fwd; NoAction; }} size = 64; }}\n"
            "apply { t.apply(); }")


def _gen(tmp_path: Path, body: str) -> XdpProgram:
    src = tmp_path / "prog.p4"
    src.write_text(_HEAD + body + _TAIL)
    j, _ = compile_file(src)
    return generate(j, source="prog.json")


def _about(r: Report, limit: str, construct: str) -> list[Violation]:
    return [v for v in r.violations if v.limit == limit and v.construct.startswith(construct)]


_TABLE_LIMITS = ("map-type", "map-flags", "entry-size", "entries")


def test_exact_table_with_small_entries_is_within_the_profile(tmp_path: Path) -> None:
    r = check(_gen(tmp_path, _table("exact")))
    assert not [v for v in r.violations if v.limit in _TABLE_LIMITS and "I.t" in v.construct]
    assert not [v for v in r.violations if v.limit == "helper" and "I.t" in v.construct]
    # its maps alone pass: a hash map and a one-entry array, 8 + 32 bytes per entry
    mine = Report(maps=[m for m in r.maps if "I.t" in m.construct])
    assert len(mine.maps) == 2
    offload_nfp._check_maps(mine)
    assert mine.ok
    assert mine.format("t") == "t: passes the nfp offload profile"


def test_lpm_table_is_an_lpm_trie(tmp_path: Path) -> None:
    r = check(_gen(tmp_path, _table("lpm")))
    (v,) = _about(r, "map-type", "table I.t")
    assert "LPM_TRIE" in v.detail and "lpm match" in v.construct
    assert v.structural and "hash" in v.port


def test_ternary_table_is_searched_with_bpf_loop(tmp_path: Path) -> None:
    r = check(_gen(tmp_path, _table("ternary")))
    vs = _about(r, "helper", "table I.t")
    assert vs and all("bpf_loop" in v.detail for v in vs)
    assert not _about(r, "map-type", "table I.t")  # the entries are an array


def test_wide_key_exceeds_the_entry_size(tmp_path: Path) -> None:
    r = check(_gen(tmp_path, _table("exact", "hdr.h.a hdr.h.b hdr.h.c hdr.h.d hdr.h.e")))
    (v,) = _about(r, "entry-size", "table I.t")
    assert f"> {NFP_MAX_ELEM_SZ} B" in v.detail and "72 B" in v.detail
    assert not v.structural


def test_register_write_and_flags(tmp_path: Path) -> None:
    body = ("register<bit<32>>(16) r;\n"
            "action w() { r.write(0, hdr.h.a); }\n"
            "apply { w(); }")
    r = check(_gen(tmp_path, body))
    (f,) = _about(r, "map-flags", "register I.r")
    assert "BPF_F_MMAPABLE" in f.detail
    (w,) = _about(r, "map-write", "register I.r")
    assert "I.w" in w.detail and "bpf_map_update_elem" in w.port


def test_counter_is_per_cpu(tmp_path: Path) -> None:
    body = "counter(16, CounterType.packets) c;\napply { c.count(0); }"
    r = check(_gen(tmp_path, body))
    (v,) = _about(r, "map-type", "counter I.c")
    assert "PERCPU_ARRAY" in v.detail
    assert _about(r, "map-write", "counter I.c")


def test_digest_is_a_ring_buffer(tmp_path: Path) -> None:
    body = "apply { digest<d_t>(1, { hdr.h.a }); }"
    r = check(_gen(tmp_path, body))
    rings = [v for v in _about(r, "map-type", "digests") if "RINGBUF" in v.detail]
    assert len(rings) == 1 and "d_t" in rings[0].construct
    assert "perf" in rings[0].port.lower()
    assert any("bpf_ringbuf_reserve" in v.detail for v in _about(r, "helper", "digest d_t"))


def test_every_program_carries_the_engine_structure(tmp_path: Path) -> None:
    r = check(_gen(tmp_path, _table("exact")))
    assert not r.ok
    assert _about(r, "helper", "the parser (1 states")
    assert _about(r, "xdp-action", "egress_spec")
    assert any("DEVMAP" in v.detail for v in _about(r, "map-type", "egress_spec"))
    assert any("PERCPU_ARRAY" in v.detail for v in _about(r, "map-type", "the PHV"))
    assert "violations of the nfp offload profile" in r.format("prog")


@pytest.fixture(scope="module")
def p4cache() -> XdpProgram:
    j, _ = compile_file(ROOT / "p4src" / "v1model" / "p4cache.p4")
    return generate(j, source="p4cache.json", cpu_port=255)


def test_p4cache_structural_blockers_by_construct(p4cache: XdpProgram) -> None:
    r = check(p4cache)
    lpm = {v.construct for v in r.violations if v.limit == "map-type" and "LPM" in v.detail}
    assert lpm == {"table CacheIngress.lookup.client_allowlist (lpm match)",
                   "table CacheIngress.forwarding.ipv4_route (lpm match)"}
    assert _about(r, "map-type", "digests: hot_key_digest_t")
    assert _about(r, "map-type", "packet-in to the CPU port (header packet_in_h)")
    assert _about(r, "helper", "digest hot_key_digest_t")
    assert _about(r, "map-write", "register CacheIngress.slots.store_c256")
    (e,) = _about(r, "entry-size", "table CacheIngress.lookup.cache_lookup")
    assert "112 B" in e.detail
    assert r.total_entries == 421_457  # with HotKeys.admission: a keyless table, 1024 + default


@pytest.mark.skipif(shutil.which("clang") is None, reason="clang not on PATH")
def test_p4cache_instruction_budget(p4cache: XdpProgram, tmp_path: Path) -> None:
    from softnic.runtime.xdp import libbpf

    c, o = tmp_path / "p.c", tmp_path / "p.o"
    p4cache.write(c)
    libbpf.compile_c(c, o)
    r = check(p4cache, o)
    assert r.insns is not None and r.insns > offload_nfp.NFP_MAX_INSNS
    (v,) = [v for v in r.violations if v.limit == "insns"]
    assert f"{r.insns:,}" in v.detail

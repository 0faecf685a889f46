"""The Netronome (NFP) offload profile: a generated XDP program against the published limits of
the Linux nfp driver's eBPF offload (``softnic xdp PROG.json -o X.c --offload nfp``).

An offloaded program is verified twice: by the kernel's verifier, then by the driver's own pass
(``drivers/net/ethernet/netronome/nfp/bpf/verifier.c``), JIT-compiled for the NFP's flow
processing cores (``jit.c``), and its maps are created on the card (``offload.c``,
``nfp_bpf_map_alloc``). This module holds a program the xdp back end generated to what those
three files refuse, and names each refusal by the P4 construct that causes it (table, register,
counter, action, digest, parser state, the port decision), with what a port would change.

It reads the generator's own description of the program (:class:`XdpProgram`: tables,
registers, counters, digests) and the generated C (its map declarations and helper calls); with
clang's object it also counts instructions and estimates the stack. Limits the firmware reports
at run time (the ``NFP_NET_CFG_BPF_*`` registers and the capability TLVs in ``fw.h``) are named
constants below, set to the values Netronome's firmware is published with; only the card can
say what the loaded firmware really reports.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from softnic.compiler.xdp import abi
from softnic.compiler.xdp.program import PKT_MAX, XdpProgram
from softnic.compiler.xdp.tables import LPM, SEARCH, TableSpec
from softnic.compiler.xdp.words import limbs

_DRV = "drivers/net/ethernet/netronome/nfp/bpf/"

# -- the limits, each with where it is enforced or published -----------------------------------
# Firmware capabilities (reported at run time; values as Netronome publishes them):
NFP_MAX_ELEM_SZ = 64  # bytes: round_up(key, 8) + round_up(value, 8) of one map entry
NFP_MAX_KEY_SZ = 64  # bytes: fw.h CMSG_MAP_KEY_LW, 16 32-bit words in a map control message
NFP_MAX_VAL_SZ = 64  # bytes: fw.h CMSG_MAP_VALUE_LW, 16 32-bit words
NFP_MAX_ELEMS = 3_072_000  # entries over all maps on the card
NFP_MAX_INSNS = 2800  # NFP instructions in the code store (NFP_NET_CFG_BPF_MAX_LEN)
NFP_STACK_BYTES = 512  # NFP_NET_CFG_BPF_STACK_SZ * 64; no firmware can exceed the host's 512

OFFLOAD_MAP_TYPES = ("BPF_MAP_TYPE_ARRAY", "BPF_MAP_TYPE_HASH")
# helpers nfp_bpf_check_helper_call() accepts (with the firmware's support); any other call is
# "unsupported function id"
NFP_HELPERS = ("bpf_map_lookup_elem", "bpf_map_update_elem", "bpf_map_delete_elem",
               "bpf_get_prandom_u32", "bpf_perf_event_output", "bpf_xdp_adjust_head",
               "bpf_xdp_adjust_tail")


@dataclass(frozen=True)
class Limit:
    key: str
    text: str
    source: str
    firmware: bool = False  # a capability the firmware reports at run time


LIMITS = {lim.key: lim for lim in (
    Limit("map-type", "only array and hash maps are offloaded",
          "kernel/bpf/offload.c bpf_map_offload_map_alloc (ARRAY, HASH); "
          f"{_DRV}offload.c nfp_bpf_map_alloc (the firmware's map type mask, fw.h "
          "nfp_bpf_cap_tlv_maps.types)"),
    Limit("map-flags", "no map flags (BPF_F_MMAPABLE, BPF_F_NO_PREALLOC, ...)",
          f"{_DRV}offload.c nfp_bpf_map_alloc (\"map flags are not supported\")"),
    Limit("entry-size", f"key + value, each rounded up to 8 bytes, at most {NFP_MAX_ELEM_SZ} "
          f"bytes per entry (key <= {NFP_MAX_KEY_SZ}, value <= {NFP_MAX_VAL_SZ})",
          f"{_DRV}offload.c nfp_bpf_map_alloc (max_elem_sz, max_key_sz, max_val_sz from fw.h "
          "nfp_bpf_cap_tlv_maps; CMSG_MAP_KEY_LW / CMSG_MAP_VALUE_LW = 16 words); 64 bytes: "
          "libkefir docs \"Notes about hardware offload\", mizar offload_XDP design doc",
          firmware=True),
    Limit("entries", f"at most {NFP_MAX_ELEMS:,} entries over all maps",
          f"{_DRV}offload.c nfp_bpf_map_alloc (max_elems, \"map with too many elements\"); "
          "3,072,000: mizar docs/design/features/offload_XDP/design_and_limitations.md",
          firmware=True),
    Limit("helper", "helpers: map lookup/update/delete, get_prandom_u32, perf_event_output "
          "(BPF_F_CURRENT_CPU), xdp_adjust_head, xdp_adjust_tail; no other (bpf_loop, tail "
          "calls, ring buffers, bpf_xdp_load_bytes/store_bytes, ktime, redirect_map...)",
          f"{_DRV}verifier.c nfp_bpf_check_helper_call (\"unsupported function id\")"),
    Limit("map-write", "no stores through a map value pointer (only atomic add); a value "
          "changes with bpf_map_update_elem from the stack",
          f"{_DRV}verifier.c nfp_bpf_check_ptr (\"map writes not supported\"), "
          "nfp_bpf_check_atomic (BPF_ADD only)"),
    Limit("stack-arg", "map helper keys and values are pointers to the stack at a constant "
          "offset",
          f"{_DRV}verifier.c nfp_bpf_stack_arg_ok (\"unsupported ptr type\")"),
    Limit("xdp-action", "XDP_ABORTED, XDP_DROP, XDP_PASS and XDP_TX only: another verdict "
          "(XDP_REDIRECT) is dropped and counted as an abort; no devmap",
          f"{_DRV}jit.c nfp_outro_xdp (\"if R0 > 3 jump to abort\")"),
    Limit("insns", f"the program fits the code store: {NFP_MAX_INSNS:,} NFP instructions "
          "(each eBPF instruction becomes one or more, so the eBPF count is a lower bound)",
          f"{_DRV}offload.c nfp_net_bpf_load (NFP_NET_CFG_BPF_MAX_LEN, \"program too long\"); "
          "2,800: mizar offload_XDP design doc", firmware=True),
    Limit("stack", f"at most {NFP_STACK_BYTES} bytes of stack over the deepest call chain "
          "(each BPF-to-BPF callee adds its return address and 32 bytes of saved registers)",
          f"{_DRV}verifier.c nfp_bpf_finalize / nfp_bpf_get_stack_usage "
          "(NFP_NET_CFG_BPF_STACK_SZ * 64, \"stack too large\"); 512: include/linux/filter.h "
          "MAX_BPF_STACK, the bound no firmware value can exceed", firmware=True),
)}


@dataclass
class Violation:
    limit: str  # a key of LIMITS
    construct: str  # the P4 construct, e.g. "table CacheIngress.lookup.cache_lookup"
    detail: str
    port: str  # what a port would change
    structural: bool = True  # False: a size; a smaller configuration can pass


@dataclass
class MapDecl:
    cname: str
    kind: str  # BPF_MAP_TYPE_...
    entries: int
    flags: str | None
    key_size: int
    value_size: int
    construct: str


@dataclass
class Report:
    violations: list[Violation] = field(default_factory=list)
    maps: list[MapDecl] = field(default_factory=list)
    total_entries: int = 0
    insns: int | None = None  # eBPF instruction slots in the object's code sections
    stack: int | None = None  # estimated stack bytes (lower bound)
    state_bytes: int = 0  # the per-packet state the generated program keeps in a map value

    @property
    def ok(self) -> bool:
        return not self.violations

    def size_violations(self) -> list[Violation]:
        return [v for v in self.violations if not v.structural]

    def to_json(self) -> dict:
        return {"passes": self.ok, "total_entries": self.total_entries, "insns": self.insns,
                "stack": self.stack, "state_bytes": self.state_bytes,
                "limits": {k: asdict(v) for k, v in LIMITS.items()},
                "violations": [asdict(v) for v in self.violations],
                "maps": [asdict(m) for m in self.maps]}

    def format(self, name: str = "program") -> str:
        if self.ok:
            return f"{name}: passes the nfp offload profile"
        out = [f"{name}: {len(self.violations)} violations of the nfp offload profile"]
        for key, lim in LIMITS.items():
            vs = [v for v in self.violations if v.limit == key]
            if not vs:
                continue
            fw = " (firmware capability)" if lim.firmware else ""
            out += ["", f"[{key}] {lim.text}{fw}", f"  source: {lim.source}"]
            ports = {v.port for v in vs}
            for v in vs:
                tail = "" if len(ports) == 1 else f" -> port: {v.port}"
                out.append(f"  - {v.construct}: {v.detail}{tail}")
            if len(ports) == 1:
                out.append(f"  port: {ports.pop()}")
        sizes = self.size_violations()
        out += ["", f"{len(self.violations) - len(sizes)} structural (no size passes), "
                f"{len(sizes)} of sizes; {self.total_entries:,} map entries"
                + (f", {self.insns:,} eBPF instructions" if self.insns is not None else "")
                + (f", stack >= {self.stack} B" if self.stack is not None else "")]
        return "\n".join(out)


def _round8(n: int) -> int:
    return (n + 7) // 8 * 8


# -- the generated C: defines, maps, functions -------------------------------------------------
_DEFINE = re.compile(r"^#define (\w+) (\d+)\s*$", re.M)
_MAP = re.compile(r"struct \{\n(?P<body>(?:    __\w+\(.*\);\n)+)"
                  r"\} (?P<name>\w+) SEC\(\"\.maps\"\);")
_FIELD = re.compile(r"__(uint|type)\((\w+), ([^;]*)\);")
_FN = re.compile(r"^(?:static [^\n(]*?|int )\b(\w+)\(", re.M)
_HELPER = re.compile(r"\b(bpf_\w+)\(")


def _defines(c: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in _DEFINE.finditer(c)}


def _eval(expr: str, defs: dict[str, int]) -> int:
    expr = expr.strip()
    if re.fullmatch(r"\d+", expr):
        return int(expr)
    m = re.fullmatch(r"(\d+) << (\d+)", expr)
    if m:
        return int(m.group(1)) << int(m.group(2))
    return defs.get(expr, 0)


def state_size(defs: dict[str, int]) -> int:
    """sizeof(struct p4_state) of runtime_c.PRELUDE, from the program's #defines."""
    n = 8 * defs.get("PHV_WORDS", 0)
    n += 4 * defs.get("NSTACKS", 1)
    n = _round8(n) + 8 * defs.get("PARAM_WORDS", 1)
    kb = defs.get("KB_SIZE", 8)
    n += kb + kb  # kw[KB_SIZE / 8] words, then kb[KB_SIZE] (8-aligned, so no padding)
    n += defs.get("HB_SIZE", 8) + defs.get("OUT_SIZE", 8) + 2 * PKT_MAX
    n = _round8(n) + 8 + 16 * 4  # truncate; 15 u32 and one s32
    return _round8(n)


def _functions(c: str) -> dict[str, tuple[str, str]]:
    """C function name -> (the comment line just before it, its text)."""
    out: dict[str, tuple[str, str]] = {}
    starts = [(m.start(), m.group(1)) for m in _FN.finditer(c)]
    for i, (pos, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(c)
        before = c[:pos].rstrip("\n").rsplit("\n", 1)[-1]
        out[name] = (before, c[pos:end])
    return out


# What the engine's own C functions (runtime_c.PRELUDE, program._assemble) do for the P4 program
_PATH_CONSTRUCT = {
    "read_meta": "standard_metadata.ingress_port / ingress_global_timestamp (read_meta)",
    "rewrite_frame": "the deparser's rewrite of the frame (rewrite_frame)",
    "to_runtime": "packet-in to the CPU port, and frames with no room to grow (to_runtime)",
    "deliver": "egress_spec: the egress port decision (deliver)",
    "pipe_ingress": "the ingress control",
    "pipe_egress": "the egress control",
    "deparse": "the deparser",
    "verify_checksums": "the checksum verification control",
    "update_checksums": "the checksum update control",
}
_PORT = {
    "bpf_loop": "unroll into straight-line code with a bounded number of states (the NFP has "
                "no call-back loop helper)",
    "bpf_ringbuf_reserve": "report through a BPF_MAP_TYPE_PERF_EVENT_ARRAY with "
                           "bpf_perf_event_output(ctx, &map, BPF_F_CURRENT_CPU, ...)",
    "bpf_ringbuf_submit": "bpf_perf_event_output (one call, no reserve/submit)",
    "bpf_probe_read_kernel": "copy with bpf_perf_event_output's packet payload argument",
    "bpf_redirect_map": "XDP_TX back out of the ingress port only; other ports through the host "
                        "(XDP_PASS)",
    "bpf_xdp_load_bytes": "direct packet access (ctx->data .. ctx->data_end) within the "
                          "firmware's inline MTU",
    "bpf_xdp_store_bytes": "direct packet writes",
    "bpf_xdp_get_buff_len": "ctx->data_end - ctx->data (no multi-buffer frames)",
    "bpf_ktime_get_ns": "no time source: a timestamp written into the packet or a map by the "
                        "host",
}


def _fn_construct(name: str, comment: str, p: XdpProgram) -> str:
    m = re.match(r"/\* (action|digest|calculation|parse state) ([^*]*?)(?::[^*]*)? \*/", comment)
    if m:
        kind = {"parse state": "parser state", "calculation": "calculation"}.get(m.group(1),
                                                                              m.group(1))
        return f"{kind} {m.group(2)}"
    if name == "parse_step":
        return "the parser (parse_step, one bpf_loop call per step)"
    for t in p.tables.values():
        if name == f"search_{t.cname}":
            return f"table {t.name} (ternary/range search)"
    return _PATH_CONSTRUCT.get(name, f"C function {name}")


# -- the maps ----------------------------------------------------------------------------------
def _table_sizes(t: TableSpec, cname: str) -> tuple[int, int]:
    if cname.endswith("_def"):
        return 4, t.value_size
    if t.kind == SEARCH:
        return 4, t.entry_size
    return t.key_size, t.value_size


def maps_of(p: XdpProgram) -> list[MapDecl]:
    c = p.c_source
    defs = _defines(c)
    tables = {t.cname: t for t in p.tables.values()}
    regs = {r.cname: r for r in p.registers.values()}
    cnts = {x.cname: x for x in p.counters.values()}
    fixed = {abi.STATE_MAP: (4, state_size(defs), "the PHV and packet state (p4_state)"),
             abi.CONFIG_MAP: (4, 16, "the engine's configuration (config)"),
             abi.STATS_MAP: (4, 8, "the engine's statistics (stats)"),
             abi.IF_PORTS_MAP: (4, 4, "ingress_port: interface -> P4 port (if_ports)"),
             abi.TX_PORTS_MAP: (4, 4, "egress_spec: P4 port -> interface (tx_ports)"),
             abi.DIGEST_RING: (0, 0, "digests: " + ", ".join(
                 sorted(d.name for d in p.digests.values())) if p.digests else "digests"),
             abi.PACKET_IN_RING: (0, 0, "packet-in to the CPU port"
                                  + (f" (header {p.ctrl_in})" if p.ctrl_in else ""))}
    out = []
    for m in _MAP.finditer(c):
        f = {k: v for _, k, v in _FIELD.findall(m.group("body"))}
        name = m.group("name")
        kind = f.get("type", "?")
        entries = _eval(f.get("max_entries", "0"), defs)
        flags = f.get("map_flags")
        base = name[:-4] if name.endswith("_def") else name
        if base in tables:
            t = tables[base]
            ks, vs = _table_sizes(t, name)
            what = "default action" if name.endswith("_def") else {
                LPM: "lpm match", SEARCH: "ternary/range search array"}.get(t.kind, "exact match")
            construct = f"table {t.name} ({what})"
        elif name in regs:
            r = regs[name]
            ks, vs, construct = 4, 8 * limbs(r.width), f"register {r.name}"
        elif name in cnts:
            ks, vs, construct = 4, 16, f"counter {cnts[name].name}"
        elif name in fixed:
            ks, vs, construct = fixed[name]
        else:
            ks, vs, construct = 0, 0, f"map {name}"
        out.append(MapDecl(name, kind, entries, flags, ks, vs, construct))
    return out


def _map_port(m: MapDecl) -> str:
    if m.kind == "BPF_MAP_TYPE_LPM_TRIE":
        return ("a hash map on the full key (prefixes expanded by the control plane, e.g. /32 "
                "host routes), or one hash map per prefix length probed longest first")
    if m.kind in ("BPF_MAP_TYPE_PERCPU_ARRAY", "BPF_MAP_TYPE_PERCPU_HASH"):
        if m.cname == abi.STATE_MAP:
            return ("keep the PHV on the stack (it must fit the stack limit) instead of a "
                    "per-CPU scratch map")
        return "a plain array updated with atomic adds (__sync_fetch_and_add)"
    if m.kind == "BPF_MAP_TYPE_RINGBUF":
        return ("a BPF_MAP_TYPE_PERF_EVENT_ARRAY written with bpf_perf_event_output "
                "(BPF_F_CURRENT_CPU); the host reads it with perf buffers")
    if m.kind == "BPF_MAP_TYPE_DEVMAP":
        return "no devmap: XDP_TX to the ingress port, XDP_PASS to the host for the rest"
    return "an array or hash map"


def _check_maps(r: Report) -> None:
    for m in r.maps:
        if m.kind not in OFFLOAD_MAP_TYPES:
            r.violations.append(Violation(
                "map-type", m.construct,
                f"map {m.cname} is {m.kind.removeprefix('BPF_MAP_TYPE_')}", _map_port(m)))
            continue
        if m.flags:
            port = ("create it without the flag; the host reads it with map lookups (no mmap)"
                    if "MMAPABLE" in m.flags else "create it without the flag")
            r.violations.append(Violation("map-flags", m.construct,
                                          f"map {m.cname} has map_flags {m.flags}", port))
        elem = _round8(m.key_size) + _round8(m.value_size)
        if (elem > NFP_MAX_ELEM_SZ or m.key_size > NFP_MAX_KEY_SZ
                or m.value_size > NFP_MAX_VAL_SZ):
            r.violations.append(Violation(
                "entry-size", m.construct,
                f"map {m.cname}: key {m.key_size} B + value {m.value_size} B = {elem} B per "
                f"entry > {NFP_MAX_ELEM_SZ} B",
                "narrower keys (hash the key and keep the full key elsewhere) and fewer action "
                "parameter words; split a wide value over several maps", structural=False))
    r.total_entries = sum(m.entries for m in r.maps if m.kind in OFFLOAD_MAP_TYPES)
    if r.total_entries > NFP_MAX_ELEMS:
        big = sorted((m for m in r.maps if m.kind in OFFLOAD_MAP_TYPES),
                     key=lambda m: -m.entries)[:3]
        r.violations.append(Violation(
            "entries", "all tables and registers",
            f"{r.total_entries:,} entries > {NFP_MAX_ELEMS:,} (largest: "
            + ", ".join(f"{m.construct} {m.entries:,}" for m in big) + ")",
            "fewer slots or narrower register arrays", structural=False))


# -- helper calls, map writes, stack arguments -------------------------------------------------
def _check_code(p: XdpProgram, r: Report) -> None:
    fns = _functions(p.c_source)
    nstates = sum(1 for comment, _ in fns.values() if comment.startswith("/* parse state "))
    seen: set[tuple[str, str]] = set()
    for name, (comment, text) in fns.items():
        construct = _fn_construct(name, comment, p)
        for h in sorted(set(_HELPER.findall(text))):
            if h in NFP_HELPERS:
                continue
            where = [construct]
            if name == abi.PROGRAM_NAME and h == "bpf_loop":
                where = [f"the parser ({nstates} states, run by bpf_loop in p4_xdp)"]
            elif name == abi.PROGRAM_NAME:
                where = ["the packet path (p4_xdp): the frame copied for the parser"]
            elif h == "bpf_loop":
                # a ternary / range / multi-lpm table searched entry by entry
                where = [f"table {t.name} (ternary/range search)"
                         for cb in re.findall(r"bpf_loop\([^,]+, (\w+),", text)
                         for t in p.tables.values() if cb == f"search_{t.cname}"] or where
            for w in where:
                if (h, w) in seen:
                    continue
                seen.add((h, w))
                r.violations.append(Violation(
                    "helper", w, f"calls {h}() (C function {name})",
                    _PORT.get(h, "an equivalent without the helper")))
    # keys of table lookups handed from the per-packet state (a map value), not the stack
    for t in p.tables.values():
        if re.search(rf"bpf_map_lookup_elem\(&{t.cname}, st->", p.c_source):
            r.violations.append(Violation(
                "stack-arg", f"table {t.name}",
                f"the lookup key of map {t.cname} is built in p4_state (a map value)",
                "build the key in a stack variable"))
    # stores through map value pointers
    prims = [(a.get("name", "?"), pr) for a in p.prog.actions_by_id.values()
             for pr in a.get("primitives") or [] if isinstance(pr, dict)]
    written: dict[str, list[str]] = {}
    counted: dict[str, list[str]] = {}
    for aname, pr in prims:
        params = pr.get("parameters") or []
        if pr.get("op") == "register_write" and params:
            written.setdefault(str(params[0].get("value")), []).append(aname)
        if pr.get("op") == "count" and params:
            counted.setdefault(str(params[0].get("value")), []).append(aname)
    for reg, acts in sorted(written.items()):
        r.violations.append(Violation(
            "map-write", f"register {reg}",
            "written in place by action " + ", ".join(sorted(set(acts))),
            "bpf_map_update_elem with the new cell value on the stack (not atomic with the "
            "read: a read-modify-write races across the NFP's threads)"))
    for cnt, acts in sorted(counted.items()):
        r.violations.append(Violation(
            "map-write", f"counter {cnt}",
            "incremented with plain stores by action " + ", ".join(sorted(set(acts))),
            "__sync_fetch_and_add on a plain array"))
    if any(m.cname == abi.STATE_MAP for m in r.maps):
        r.violations.append(Violation(
            "map-write", "the PHV (every header and metadata field)",
            f"kept and written in place in map {abi.STATE_MAP} ({r.state_bytes:,} B per packet "
            f"of which PHV {8 * _defines(p.c_source).get('PHV_WORDS', 0):,} B)",
            f"the PHV on the stack: it must fit {NFP_STACK_BYTES} B with the rest of the "
            "frame (fewer and narrower headers)"))
    if re.search(r"\bbpf_redirect_map\(", p.c_source):
        r.violations.append(Violation(
            "xdp-action", "egress_spec: a port other than the ingress or host port",
            "returns XDP_REDIRECT (bpf_redirect_map on the devmap tx_ports)",
            "XDP_TX (out of the ingress port) and XDP_PASS only; the host forwards the rest"))


# -- the object: instructions and stack --------------------------------------------------------
def object_insns(obj: Path) -> int:
    """Instruction slots (8 bytes each) in an ELF object's executable sections."""
    data = obj.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError(f"{obj}: not a 64-bit ELF object")
    end = "<" if data[5] == 1 else ">"
    shoff, = struct.unpack_from(end + "Q", data, 0x28)
    shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
    total = 0
    for i in range(shnum):
        sh = shoff + i * shentsize
        sh_type, sh_flags = struct.unpack_from(end + "IQ", data, sh + 4)
        size, = struct.unpack_from(end + "Q", data, sh + 0x20)
        if sh_type == 1 and sh_flags & 0x4:  # PROGBITS, SHF_EXECINSTR
            total += size // 8
    return total


def object_stack(obj: Path) -> int | None:
    """Lower bound of the stack over a call chain: the entry's frame plus the largest other
    frame (with the driver's 4-byte return address and 32 bytes of saved registers), from
    llvm-objdump's r10 offsets; None without llvm-objdump."""
    tool = shutil.which("llvm-objdump")
    if tool is None:
        return None
    try:
        text = subprocess.run([tool, "-d", "--no-show-raw-insn", str(obj)], capture_output=True,
                              text=True, timeout=120, check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    frames: dict[str, int] = {}
    fn = ""
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+ <(\w+)>:", line)
        if m:
            fn = m.group(1)
            frames.setdefault(fn, 0)
            continue
        for off in re.findall(r"r10 - (\d+)", line):
            frames[fn] = max(frames.get(fn, 0), int(off))
    if not frames:
        return 0
    main = frames.pop(abi.PROGRAM_NAME, 0)
    callee = max(frames.values(), default=0)
    return _round8(main) + (_round8(callee) + 4 + 32 if callee else 0)


# -- the check ---------------------------------------------------------------------------------
def check(p: XdpProgram, obj: Path | None = None) -> Report:
    """Every violation of the nfp profile by ``p`` (with ``obj``, clang's object of its C, the
    instruction budget and the stack too)."""
    r = Report()
    r.state_bytes = state_size(_defines(p.c_source))
    r.maps = maps_of(p)
    _check_maps(r)
    _check_code(p, r)
    if obj is not None:
        r.insns = object_insns(obj)
        if r.insns > NFP_MAX_INSNS:
            r.violations.append(Violation(
                "insns", "the whole program (parser, controls, deparser)",
                f"{r.insns:,} eBPF instructions > {NFP_MAX_INSNS:,} (and the NFP needs at "
                "least one instruction for each)",
                "fewer parser states and tables; no per-byte parser loops", structural=False))
        r.stack = object_stack(obj)
        if r.stack is not None and r.stack > NFP_STACK_BYTES:
            r.violations.append(Violation(
                "stack", "the packet path (p4_xdp and its subprograms)",
                f"at least {r.stack} B of stack > {NFP_STACK_BYTES} B",
                "smaller keys and calculation inputs on the stack", structural=False))
    return r

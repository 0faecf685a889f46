"""BMv2 JSON -> one eBPF C file for XDP: the back end's entry point.

``generate(bmv2_json)`` validates the JSON with softnic's own loader (the same checks and
messages as ``softnic run``), refuses what XDP cannot do (:class:`XdpUnsupported`), and returns
the C source with the description of its maps that the engine needs to drive it
(:class:`XdpProgram`). The packet path of the generated program:

1. the frame is copied into the per-CPU state (``bpf_xdp_load_bytes``); the PHV is reset;
2. the parser runs as a ``bpf_loop`` callback, one parse state per call;
3. verify checksums, ingress, the egress_spec decision, egress, update checksums;
4. the deparser writes the valid headers into ``st->out``; the frame is resized
   (``bpf_xdp_adjust_tail``) and rewritten: headers, then the unparsed payload;
5. egress_port chooses the verdict: the ingress port -> XDP_TX, the host port -> XDP_PASS,
   the CPU port -> a ring buffer record for the runtime, another port -> the devmap.

A frame handed in by BPF_PROG_TEST_RUN carries a ``struct run_meta`` in its XDP metadata area
(port and time in, verdict out), so the engine can run one frame without interfaces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from softnic.compiler.xdp import control, deparse, parser
from softnic.compiler.xdp.context import CounterSpec, DigestSpec, Gen, RegisterSpec, indent
from softnic.compiler.xdp.errors import XdpUnsupported
from softnic.compiler.xdp.runtime_c import PRELUDE, hash_helpers
from softnic.compiler.xdp.tables import SEARCH, TableSpec
from softnic.compiler.xdp.words import limbs
from softnic.runtime.api import PipelineLoadError
from softnic.runtime.codegen import DROP_PORT
from softnic.runtime.gen_parser import PARSER_STEPS_BASE
from softnic.runtime.loader import Program, load_program

PKT_MAX = 4096  # bytes of a frame the program handles (a power of two: indices are masked)


def _pow2(n: int) -> int:
    p = 8
    while p < n:
        p <<= 1
    return p


@dataclass
class XdpProgram:
    c_source: str
    prog: Program
    tables: dict[str, TableSpec]
    registers: dict[str, RegisterSpec]
    counters: dict[str, CounterSpec]
    digests: dict[int, DigestSpec]
    digest_words: int
    ctrl_in: str | None
    stats: list[str] = field(default_factory=list)

    def write(self, path: Path) -> None:
        path.write_text(self.c_source)


def _refuse_whole_program(p: Program) -> None:
    j = p.json
    if j.get("header_unions") or j.get("header_union_stacks"):
        raise XdpUnsupported("header unions")
    if j.get("parse_vsets"):
        raise XdpUnsupported("parser value sets")
    if p.meters:
        raise XdpUnsupported("meters")
    for name, c in p.counters.items():
        if c.get("is_direct") and not isinstance(c.get("binding"), str):
            raise PipelineLoadError(f"direct counter '{name}' has no table binding")


def generate(bmv2_json: dict, *, source: str = "program.json", drop_port: int = DROP_PORT,
             cpu_port: int | None = None, ctrl_in: str | None = None) -> XdpProgram:
    """C for ``bmv2_json``; PipelineLoadError (XdpUnsupported) for what cannot be generated."""
    p = load_program(bmv2_json)
    _refuse_whole_program(p)
    if ctrl_in is None:
        ctrl_in = next((h.type_name for h in p.layout.headers.values()
                        if not h.metadata and "packet_in" in h.type_name), None)
    g = Gen(p, source, drop_port, cpu_port, ctrl_in)
    g.uses_exit = any(pr.get("op") == "exit" for a in p.actions_by_id.values()
                      for pr in a.get("primitives") or [] if isinstance(pr, dict))
    parse_fn = parser.gen_parser(g)
    verify, update = deparse.checksums(g)
    pls = control.pipelines(g)
    dep, out_max = deparse.deparser(g)
    digests = deparse.digest_fns(g)
    text = _assemble(g, parse_fn, verify, update, pls, dep, out_max, digests)
    return XdpProgram(text, p, g.tables, g.registers, g.counters, g.digests,
                      deparse.digest_words(g), ctrl_in)


def _map(kind: str, cname: str, entries: int, key: str, value: str,
         flags: str | None = None) -> list[str]:
    """A BTF-defined map (libbpf's SEC(".maps") form): key and value types for bpftool."""
    return (["struct {", f"    __uint(type, {kind});", f"    __uint(max_entries, {entries});",
             f"    __type(key, {key});", f"    __type(value, {value});"]
            + ([f"    __uint(map_flags, {flags});"] if flags else [])
            + [f"}} {cname} SEC(\".maps\");"])


def _table_types(t: TableSpec) -> list[str]:
    """The C types of a table's maps (layouts in tables.py, which the engine packs)."""
    kw = max(1, t.key_words)
    out = [f"struct {t.cname}_val {{", "    __u32 action;", "    __u32 pad;",
           "    __u64 packets;", "    __u64 bytes;",
           f"    __u64 p[{max(1, t.param_words)}];", "};"]
    if t.kind == SEARCH:
        out += [f"struct {t.cname}_entry {{", "    __u32 used;", "    __u32 pad;",
                f"    __u64 value[{kw}];", f"    __u64 mask[{kw}];", f"    __u64 high[{kw}];",
                f"    struct {t.cname}_val v;", "};"]
    elif t.kind == "lpm":
        out += [f"struct {t.cname}_key {{", "    __u32 prefixlen;",
                f"    __u8 data[{t.lpm_bytes}];", "} __attribute__((packed));"]
    else:
        out += [f"struct {t.cname}_key {{", f"    __u64 w[{kw}];", "};"]
    return out


def _maps(g: Gen) -> list[str]:
    out = []
    for t in g.tables.values():
        out += _table_types(t)
        val = f"struct {t.cname}_val"
        if t.kind == SEARCH:
            out += [f"/* table {g.comment(t.name)}: priority-ordered search */"] + _map(
                "BPF_MAP_TYPE_ARRAY", t.cname, t.size, "__u32", f"struct {t.cname}_entry")
        elif t.kind == "lpm":
            out += [f"/* table {g.comment(t.name)}: longest prefix match */"] + _map(
                "BPF_MAP_TYPE_LPM_TRIE", t.cname, t.size, f"struct {t.cname}_key", val,
                "BPF_F_NO_PREALLOC")
        else:
            out += [f"/* table {g.comment(t.name)}: exact match */"] + _map(
                "BPF_MAP_TYPE_HASH", t.cname, t.size, f"struct {t.cname}_key", val)
        out += ["/* its default action */"] + _map(
            "BPF_MAP_TYPE_ARRAY", f"{t.cname}_def", 1, "__u32", val) + [""]
    for r in g.registers.values():
        out += [f"/* register {g.comment(r.name)}: bit<{r.width}>[{r.size}], read in place by "
                "the engine (mmap) */"] + _map(
            "BPF_MAP_TYPE_ARRAY", r.cname, max(1, r.size), "__u32",
            f"__u64[{limbs(r.width)}]", "BPF_F_MMAPABLE") + [""]
    for c in g.counters.values():
        out += [f"/* counter {g.comment(c.name)}[{c.size}] */"] + _map(
            "BPF_MAP_TYPE_PERCPU_ARRAY", c.cname, max(1, c.size), "__u32",
            "struct counter_val") + [""]
    return out


def _stack_resets(g: Gen) -> list[str]:
    out = []
    for sw in g.w.stacks.values():
        out += [f"for (__u32 i = 0; i < {sw.size * sw.stride}; i++) {{",
                f"    if (i >= st->hw[{sw.index}] * {sw.stride})",
                "        break;",
                f"    st->f[{sw.base} + i] = 0;",
                "}",
                f"st->hw[{sw.index}] = 0;"]
    return out


def _fn(name: str, body: list[str], label: str | None = None) -> list[str]:
    """A BPF subprogram over the packet state: its own stack frame; returns 1 to drop."""
    return [f"static __noinline int {name}(struct p4_state *st)", "{", "    __u32 zero = 0;"] + \
        indent(body) + ["    return 0;"] + (["abort:", "    return 1;"] if label else []) + [
        "}", ""]


def _assemble(g: Gen, parse_fn: list[str], verify: list[str], update: list[str],
              pls: dict[str, list[str]], dep: list[str], out_max: int,
              digests: list[str]) -> str:
    out_size = _pow2(out_max + 8)
    hb_size = _pow2(g.calc_bytes + 8)
    kb_size = _pow2(g.key_bytes + 8)
    sm = g.sm
    init = []
    for slot, v in enumerate(g.lay.template):
        if v:
            for i in range(limbs(g.lay.widths[slot])):
                x = (v >> (64 * i)) & ((1 << 64) - 1)
                if x:
                    init.append(f"st->f[{g.w.of(slot) + i}] = {x:#x}ULL;")
    nloop = g.parser_nloop
    egress_init = (g.drop_port + 1) & ((1 << g.lay.widths[g.lay.sm["egress_spec"]]) - 1)
    cpu = g.cpu_port if g.cpu_port is not None else 0xFFFFFFFF
    lines = [
        "/* Generated by softnic's xdp back end from "
        f"{g.comment(Path(g.source).name)}. Do not edit: regenerate. */",
        f"#define PKT_MAX {PKT_MAX}",
        f"#define OUT_SIZE {out_size}",
        f"#define HB_SIZE {hb_size}",
        f"#define KB_SIZE {kb_size}",
        f"#define PHV_WORDS {(g.w.total + 8) // 8 * 8}",
        f"#define PARAM_WORDS {g.param_words}",
        f"#define NSTACKS {max(1, len(g.w.stacks))}",
        f"#define DIGEST_WORDS {deparse.digest_words(g)}",
        f"#define DROP_PORT {g.drop_port}",
        PRELUDE,
        *_maps(g),
        *hash_helpers(),
        *digests,
        *g.helpers,
        *parse_fn,
        "",
        *g.search_fns,
        *_fn("pipe_ingress", pls["ingress"], "ingress"),
        *_fn("pipe_egress", pls["egress"], "egress"),
        *_fn("verify_checksums", verify),
        *_fn("update_checksums", update),
        *_fn("deparse", dep),
        "SEC(\"xdp.frags\") /* frames larger than a page arrive in fragments */",
        "int p4_xdp(struct xdp_md *ctx)",
        "{",
        "    __u32 zero = 0;",
        "    struct p4_state *st = bpf_map_lookup_elem(&p4_state, &zero);",
        "    struct run_config *cfg = bpf_map_lookup_elem(&config, &zero);",
        "    if (!st || !cfg)",
        "        return XDP_ABORTED;",
        "    int test;",
        "    __u32 in_port;",
        "    __u64 now_us;",
        "    __u32 len = bpf_xdp_get_buff_len(ctx);",
        "    if (read_meta(ctx, &test, &in_port, &now_us, &len, cfg) < 0) {",
        "        stat_add(STAT_NO_PORT);",
        "        return XDP_PASS;",
        "    }",
        "    if (len == 0)",
        "        return finish(ctx, test, VERDICT_DROP, 0, NO_PIN, 0);",
        "    /* the parser sees the first PKT_MAX bytes; the rest stays in the frame */",
        "    __u32 plen = len < PKT_MAX ? len : PKT_MAX;",
        "    if (bpf_xdp_load_bytes(ctx, 0, st->pkt, SIZE_IN(plen, PKT_MAX)))",
        "        return finish(ctx, test, VERDICT_DROP, 0, NO_PIN, 0);",
        "    /* reset the PHV: every word after the stacks, and the written stack elements */",
        f"    for (__u32 i = {g.w.stack_end}; i < PHV_WORDS; i += 8) {{",
        "        /* the barrier keeps clang from making this a memset(): BPF has none */",
        "        asm volatile(\"\" ::: \"memory\");",
        *[f"        st->f[i + {k}] = 0;" for k in range(8)],
        "    }",
        *indent(_stack_resets(g)),
        *indent(init),
        "    st->len = len;",
        "    st->plen = plen;",
        "    st->too_big = 0;",
        "    st->pos = 0;",
        "    st->steps = 0;",
        f"    st->step_limit = {nloop} * len + {PARSER_STEPS_BASE};",
        f"    st->pstate = {g.parser_init};",
        "    st->exited = 0;",
        "    st->abort = 0;",
        "    st->truncate = 0;",
        "    st->pin_set = 0;",
        "    st->pin_off = 0;",
        f"    st->f[{sm('ingress_port')}] = in_port;",
        f"    st->f[{sm('packet_length')}] = len;",
        f"    st->f[{g.w.of(g.lay.len_reg)}] = len;",
        f"    st->f[{sm('ingress_global_timestamp')}] = now_us;",
        f"    bpf_loop({g.parser_states} + {nloop} * len + {PARSER_STEPS_BASE}, "
        "parse_step, NULL, 0);",
        "    if (st->too_big) {",
        "        stat_add(STAT_TOO_BIG);",
        "        return finish(ctx, test, VERDICT_DROP, 0, NO_PIN, 0);",
        "    }",
        f"    if (st->pstate != {parser.PSTATE_DONE:#x}) {{",
        f"        st->f[{sm('parser_error')}] = {g.p.errors['ParserTimeout']};",
        "    }",
        "    verify_checksums(st);",
        "    if (pipe_ingress(st))",
        "        goto abort;",
        "    st->exited = 0;",
        f"    if (st->f[{sm('mcast_grp')}]) {{",
        "        stat_add(STAT_MULTICAST);",
        "        return finish(ctx, test, VERDICT_DROP, 0, NO_PIN, 0);",
        "    }",
        f"    if (st->f[{sm('egress_spec')}] == DROP_PORT)",
        "        return finish(ctx, test, VERDICT_DROP, 0, NO_PIN, 0);",
        f"    st->f[{sm('egress_port')}] = st->f[{sm('egress_spec')}];",
        f"    st->f[{sm('egress_spec')}] = {egress_init};",
        f"    st->f[{sm('egress_global_timestamp')}] = now_us;",
        f"    st->f[{sm('packet_length')}] = st->f[{g.w.of(g.lay.len_reg)}] & 0xffffffffULL;",
        "    if (pipe_egress(st))",
        "        goto abort;",
        f"    if (st->f[{sm('egress_spec')}] == DROP_PORT)",
        "        return finish(ctx, test, VERDICT_DROP, 0, NO_PIN, 0);",
        "    update_checksums(st);",
        "    deparse(st);",
        f"    __u32 eport = st->f[{sm('egress_port')}];",
        f"    if (!test && eport == {cpu:#x}) {{",
        "        rewrite_len(st);",
        "        return to_runtime(st, eport);",
        "    }",
        "    int rw = rewrite_frame(ctx, st, test);",
        "    if (rw == NO_ROOM && !test) {",
        "        stat_add(STAT_SLOW_PATH);",
        "        return to_runtime(st, eport);",
        "    }",
        "    if (rw < 0) {",
        "        stat_add(STAT_REWRITE_FAILED);",
        "        return finish(ctx, test, VERDICT_DROP, 0, NO_PIN, 0);",
        "    }",
        f"    return deliver(ctx, st, test, cfg, in_port, eport, {cpu:#x});",
        "abort:",
        "    stat_add(STAT_ENGINE_ERROR);",
        "    return finish(ctx, test, VERDICT_DROP, 0, NO_PIN, 0);",
        "}",
        "",
        "char LICENSE[] SEC(\"license\") = \"GPL\";",
        "",
    ]
    return "\n".join(lines)

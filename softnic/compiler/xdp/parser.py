"""The v1model parser as a ``bpf_loop`` callback that runs one parse state per call.

A loop over the state graph (byte-by-byte key parsing, header stacks) cannot be unrolled for
the verifier, so the state number lives in ``st->pstate`` and ``bpf_loop`` calls
``parse_step`` until a state accepts or an error stops it: the verifier checks the callback
once, whatever the packet. Bounds are softnic's (``softnic.runtime.gen_parser``): states on a
cycle of the graph count their visits, and past ``looping * len + 256`` parsing ends with
error.ParserTimeout. Errors stop parsing at the offset where the failing operation began, and
ingress runs with ``standard_metadata.parser_error`` set, as on BMv2.
"""

from __future__ import annotations

from typing import Any

from softnic.compiler.xdp.actions import primitive
from softnic.compiler.xdp.context import Gen, indent
from softnic.compiler.xdp.errors import XdpUnsupported
from softnic.compiler.xdp.expr import lit, read_bits, stack_dirty
from softnic.compiler.xdp.words import limbs
from softnic.runtime.api import PipelineLoadError
from softnic.runtime.exprgen import hexint
from softnic.runtime.gen_parser import PARSER_STEPS_PER_BYTE, _cyclic_states
from softnic.runtime.loader import HeaderInfo

PSTATE_DONE = 0xFFFFFFFF
STATES_PER_STEP = 8


def extract_fields(g: Gen, h: HeaderInfo, base: str, pos: str) -> list[str]:
    """Statements reading header ``h``'s fields from the frame copy at byte ``pos`` into the
    words starting at ``base`` (C source), then marking it valid."""
    if h.nbits // 8 > 4096:
        raise XdpUnsupported("a header longer than 4096 bytes", f"header '{h.name}'")
    out = [f"const __u8 *p = st->pkt + ({pos} & PKT_MASK);"]
    bit = 0
    word = 0
    for _, w, _ in h.fields:
        n = limbs(w)
        for i in range(n):
            lo = max(0, w - 64 * (i + 1))
            width = w - 64 * i - lo
            off = bit + (w - 64 * i - width)  # the limb's first bit within the header
            out.append(f"st->f[{base} + {word + i}] = {read_bits('p', off, width)};")
            out.append("BARRIER();")
        bit += w
        word += n
    out.append(f"st->f[{base} + {word}] = 1;")
    return out


def gen_parser(g: Gen) -> list[str]:
    prs = g.p.json["parsers"][0]
    states = prs.get("parse_states")
    if not isinstance(states, list) or not states:
        raise PipelineLoadError("parser has no parse_states")
    num = {}
    for st in states:
        name = st.get("name") if isinstance(st, dict) else None
        if not isinstance(name, str) or name in num:
            raise PipelineLoadError(f"malformed or duplicate parse state {str(name)[:40]!r}")
        num[name] = len(num)
    init = prs.get("init_state")
    if init not in num:
        raise PipelineLoadError(f"parser init_state {str(init)[:40]!r} is not a parse state")
    looping = _cyclic_states(states)
    g.parser_init = num[init]
    g.parser_nloop = PARSER_STEPS_PER_BYTE * max(1, len(looping))
    g.parser_states = len(states)
    errs = g.p.errors
    ex = g.ex
    ex.in_parser = True
    ex.parser_pos = "pos"
    fns = []
    cases = []
    perr = g.w.of(g.lay.sm["parser_error"])
    for st in states:
        name = st["name"]
        where = f"parse state '{name}'"
        body: list[str] = []
        if name in looping:
            body.append("if (++st->steps > st->step_limit) goto timeout;")
        for op in st.get("parser_ops") or []:
            body += _parser_op(g, op, where)
        body += _transitions(g, st, num, where)
        fn = f"parse_state_{num[name]}"
        # one subprogram per state: its own stack frame, and the verifier checks it once
        fns += [f"/* parse state {g.comment(name)} */",
                f"static __noinline int {fn}(struct p4_state *st)", "{",
                "    __u32 pos = st->pos;"] + indent(body) + [
                "too_short:",
                "    if (st->plen < st->len) /* past the copy, not past the frame */",
                "        st->too_big = 1;",
                f"    st->f[{perr}] = {errs['PacketTooShort']};",
                "    goto stop;",
                "stack_oob:",
                f"    st->f[{perr}] = {errs['StackOutOfBounds']};",
                "    goto stop;",
                "timeout:",
                f"    st->f[{perr}] = {errs['ParserTimeout']};",
                "    goto stop;",
                "invalid_arg:",
                f"    st->f[{perr}] = {errs['ParserInvalidArgument']};",
                "stop:",
                "    st->pos = pos;",
                f"    st->pstate = {PSTATE_DONE:#x};",
                "    return 1;",
                "}", ""]
        cases.append(f"case {num[name]}: stop = {fn}(st); break;")
    ex.in_parser = False
    ex.parser_pos = "st->pos"
    return fns + [
        f"/* Up to {STATES_PER_STEP} parse states per bpf_loop call: the call costs more than most",
        " * states; the loop bound counts calls, the step limit counts states. */",
        "static long parse_step(__u32 index, void *unused)",
        "{",
        "    __u32 zero = 0;",
        "    struct p4_state *st = bpf_map_lookup_elem(&p4_state, &zero);",
        "    if (!st)",
        "        return 1;",
        f"    for (int k = 0; k < {STATES_PER_STEP}; k++) {{",
        "        int stop = 1;",
        "        switch (st->pstate) {",
    ] + indent(cases, 2) + [
        "        }",
        "        if (stop)",
        "            return 1;",
        "    }",
        "    return 0;",
        "}",
    ]


def _parser_op(g: Gen, op: Any, where: str) -> list[str]:
    o = op.get("op") if isinstance(op, dict) else None
    args = op.get("parameters") or [] if isinstance(op, dict) else []
    ex = g.ex
    if o == "extract":
        if len(args) != 1 or not isinstance(args[0], dict):
            raise PipelineLoadError(f"{where}: extract takes one parameter")
        kind, val = args[0].get("type"), args[0].get("value")
        if kind == "regular":
            h = g.lay.header(val)
            if h.vl_index is not None:
                raise XdpUnsupported("a varbit field (extract with a length)", where)
            nb = h.nbits // 8
            g.ex.element_dirty(h.name)
            dirty = g.ex.take_pre()
            return dirty + ["{", f"    if (pos + {nb} > st->plen) goto too_short;"] + indent(
                extract_fields(g, h, str(g.w.of(h.base)), "pos")) + [f"    pos += {nb};", "}"]
        if kind == "stack":
            stk = g.lay.stack(val)
            sw = g.w.stacks[stk.name]
            h0 = g.lay.headers[stk.headers[0]]
            if h0.vl_index is not None:
                raise XdpUnsupported("a varbit field (extract with a length)", where)
            nb = h0.nbits // 8
            return ["{",
                    f"    __u64 i = st->f[{sw.next_word}];",
                    f"    if (i >= {sw.size}) goto stack_oob;",
                    "    INDEX_CHECKED(i);",
                    f"    if (pos + {nb} > st->plen) goto too_short;",
                    f"    __u32 b = {sw.base} + (__u32)i * {sw.stride};"] + indent(
                extract_fields(g, h0, "b", "pos")) + [
                    f"    pos += {nb};", f"    st->f[{sw.next_word}] = i + 1;",
                    f"    {stack_dirty(sw.index, 'i + 1')}", "}"]
        raise XdpUnsupported(f"extract of a {str(kind)[:20]}", where)
    if o == "extract_VL":
        raise XdpUnsupported("a varbit field (extract with a length)", where)
    if o == "set":
        if len(args) != 2:
            raise PipelineLoadError(f"{where}: set takes two parameters")
        dst = ex.lvalue(args[0], where)
        return ex.take_pre() + ex.store(dst, args[1], where)
    if o == "verify":
        if len(args) != 2:
            raise PipelineLoadError(f"{where}: verify takes two parameters")
        cnd = ex.cond(args[0], where)
        code = ex.c(args[1], where)
        perr = g.w.of(g.lay.sm["parser_error"])
        return ex.take_pre() + [f"if (!{cnd}) {{", f"    st->f[{perr}] = {code};",
                                "    goto stop;", "}"]
    if o in ("advance", "shift"):
        if len(args) != 1:
            raise PipelineLoadError(f"{where}: {o} takes one parameter")
        amt = ex.c(args[0], where)
        bits = "L" if o == "advance" else "(L << 3)"
        return ex.take_pre() + ["{", f"    __u64 L = {amt};",
                                f"    if ({bits} & 7) goto invalid_arg;" if o == "advance" else "",
                                f"    if (L > 0xffffffULL || pos + ({bits} >> 3) > st->plen)"
                                " goto too_short;",
                                f"    pos += {bits} >> 3;", "}"]
    if o == "primitive":
        if len(args) != 1:
            raise PipelineLoadError(f"{where}: primitive takes one parameter")
        return primitive(g, args[0], where)
    raise XdpUnsupported(f"the parser operation {str(o)[:30]!r}", where)


def _transitions(g: Gen, st: dict, num: dict[str, int], where: str) -> list[str]:
    ex = g.ex

    def go(nxt: Any) -> list[str]:
        if nxt is None:
            return [f"st->pstate = {PSTATE_DONE:#x};", "st->pos = pos;", "return 1;"]
        if nxt not in num:
            raise PipelineLoadError(f"{where}: unknown next state {str(nxt)[:40]!r}")
        return [f"st->pstate = {num[nxt]};", "st->pos = pos;", "return 0;"]

    keys = st.get("transition_key") or []
    # the key fields, each padded to whole bytes (BMv2's key layout), last field lowest
    kvars = []
    out: list[str] = []
    for k in keys:
        w = ex.width(k)
        if w is None:
            # a signed field: BMv2's key holds its two's-complement bits
            w = ex.signed_bits(k)
            if w is None or w > 64:
                raise XdpUnsupported("a signed value wider than 64 bits in a select key", where)
            vals = [f"({ex.c(k, where)} & {lit((1 << w) - 1)})"]
        else:
            vals = ex.limbs(k, limbs(w), where)
        n = len(vals)
        out += ex.take_pre()
        names = [ex.fresh("k") for _ in range(n)]
        out += [f"__u64 {nm} = {v};" for nm, v in zip(names, vals, strict=False)]
        kvars.append((names, (w + 7) // 8 * 8))
    for tr in st.get("transitions") or []:
        if not isinstance(tr, dict):
            raise PipelineLoadError(f"{where}: malformed transition {str(tr)[:60]}")
        t = tr.get("type", "hexstr")
        if t == "default" or (t == "hexstr" and tr.get("value") in (None, "default")):
            return out + go(tr.get("next_state"))
        if t == "parse_vset":
            raise XdpUnsupported("parser value sets", where)
        if t != "hexstr":
            raise PipelineLoadError(f"{where}: unsupported transition type {str(t)[:20]!r}")
        if not kvars:
            raise PipelineLoadError(f"{where}: value transition without transition_key")
        val = hexint(tr.get("value"), where)
        mask = tr.get("mask")
        m = hexint(mask, where) if mask is not None else -1
        conds = []
        shift = sum(bits for _, bits in kvars)
        for names, bits in kvars:
            shift -= bits
            fv = (val >> shift) & ((1 << bits) - 1)
            fm = (m >> shift) & ((1 << bits) - 1)
            for i, nm in enumerate(names):
                lv, lm = (fv >> (64 * i)) & ((1 << 64) - 1), (fm >> (64 * i)) & ((1 << 64) - 1)
                if lm == 0:
                    continue
                if lm == (1 << 64) - 1:
                    conds.append(f"{nm} == {lit(lv)}")
                else:
                    conds.append(f"({nm} & {lit(lm)}) == {lit(lv & lm)}")
        test = " && ".join(conds) if conds else "1"
        out += [f"if ({test}) {{"] + indent(go(tr.get("next_state"))) + ["}"]
    # no default transition: BMv2's default_next_state is null, i.e. accept (gen_parser.py)
    return out + go(None)

"""Calculations (hashes, checksums), the deparser and digests, in C.

A calculation's input is packed into ``st->hb`` exactly as BMv2 (and softnic) build it: the
fields' bits back to back, a non-metadata header's fields only while it is valid, zero bits at
the end up to a whole byte. Conditional groups must be whole bytes (always true of headers,
which p4c makes multiples of 8 bits); the hash then runs over ``hb[0..n)`` in a bounded loop
with its table in ``.rodata``. The deparser writes each valid header's bytes into ``st->out``,
one store per byte, every offset masked so the verifier sees it inside the buffer.
"""

from __future__ import annotations

from softnic.compiler.xdp.context import Gen, indent
from softnic.compiler.xdp.errors import XdpUnsupported
from softnic.compiler.xdp.expr import lit
from softnic.compiler.xdp.words import limbs
from softnic.runtime.api import PipelineLoadError
from softnic.runtime.exprgen import hexint
from softnic.runtime.loader import HeaderInfo

ALGOS = {"crc16": "crc16", "crc16_custom": "crc16", "crc32": "crc32", "crc32_custom": "crc32",
         "csum16": "csum16", "cksum16": "csum16", "xor16": "xor16", "identity": "identity",
         "random": "random"}


def _value_bytes(src_limbs: list[str], width: int, bit_off: int, buf: str,
                 base: str) -> dict[int, list[str]]:
    """Per byte index (relative to ``base``), the C terms OR-ed into it by a value of
    ``width`` bits starting at bit ``bit_off``."""
    out: dict[int, list[str]] = {}
    end = bit_off + width  # exclusive
    for k in range(bit_off // 8, (end - 1) // 8 + 1):
        # the value's bits that land in byte k: byte bit positions [8k, 8k + 8)
        lo_bit = max(8 * k, bit_off)
        hi_bit = min(8 * k + 8, end)
        # value bit index (0 = least significant) of the byte's last bit (hi_bit - 1)
        v_lo = end - hi_bit
        nbits = hi_bit - lo_bit
        li, sh = divmod(v_lo, 64)
        expr = f"({src_limbs[li]} >> {sh})" if sh else src_limbs[li]
        if sh + nbits > 64 and li + 1 < len(src_limbs):
            expr = f"({expr} | ({src_limbs[li + 1]} << {64 - sh}))"
        mask = (1 << nbits) - 1
        pos_in_byte = 8 * k + 8 - hi_bit  # how far left the bits sit
        term = f"((({expr}) & {mask:#x}) << {pos_in_byte})" if pos_in_byte else \
            f"(({expr}) & {mask:#x})"
        out.setdefault(k, []).append(term)
    return out


def _field_limbs(g: Gen, slot: int) -> list[str]:
    w0 = g.w.of(slot)
    return [f"st->f[{w0 + i}]" for i in range(g.w.nlimbs(slot))]


def _emit_bytes(terms: dict[int, list[str]], buf: str, base: str, mask: str) -> list[str]:
    out = []
    for k, ts in sorted(terms.items()):
        out.append(f"{buf}[({base} + {k}) & {mask}] = (__u8)({' | '.join(ts)});")
        if k % 8 == 7:
            out.append("BARRIER();")
    return out

Groups = list[tuple[HeaderInfo | None, list[tuple[list[str], int]]]]


def hash_fn(g: Gen, name: str, where: str) -> str:
    """The C function computing calculation ``name`` (emitted once)."""
    if name in g.hash_fns:
        return g.hash_fns[name]
    calc = g.p.calculations.get(name)
    if calc is None:
        raise PipelineLoadError(f"{where}: unknown calculation {name[:60]!r}")
    algo = ALGOS.get(calc.get("algo"))
    if algo is None:
        raise XdpUnsupported(f"the hash algorithm {str(calc.get('algo'))[:20]!r}", where)
    groups: Groups = []
    for inp in calc.get("input") or []:
        t = inp.get("type") if isinstance(inp, dict) else None
        if t == "field":
            ref = inp.get("value")
            slot = g.lay.field_slot(ref)
            h = g.lay.headers[ref[0]]
            key = None if h.metadata else h
            part = (_field_limbs(g, slot), g.lay.widths[slot])
            if key is not None and groups and groups[-1][0] is key:
                groups[-1][1].append(part)
            else:
                groups.append((key, [part]))
        elif t == "hexstr":
            bw = inp.get("bitwidth")
            if not isinstance(bw, int) or bw <= 0 or bw > 4096:
                raise PipelineLoadError(f"calculation '{name}': hexstr needs a bitwidth")
            v = hexint(inp.get("value"), where) & ((1 << bw) - 1)
            groups.append((None, [([lit(v >> (64 * i)) for i in range(limbs(bw))], bw)]))
        elif t == "header":
            h = g.lay.header(inp.get("value"))
            parts = [(_field_limbs(g, h.base + i), w) for i, (_, w, _) in enumerate(h.fields)]
            groups.append((h, parts))
            groups.append((None, []))
        elif t == "payload":
            raise XdpUnsupported("a calculation over the payload", where)
        else:
            raise PipelineLoadError(f"calculation '{name}': unsupported input {str(inp)[:60]}")
    got = _packed_input(g, groups)
    body, total_max = got if got is not None else _streamed_input(g, groups)
    g.calc_bytes = max(g.calc_bytes, total_max)
    fn = g.fresh("calc_")
    g.hash_fns[name] = fn
    g.helpers += [f"/* calculation {g.comment(name)}: {algo} */",
                  f"static __noinline __u64 {fn}(struct p4_state *st)", "{",
                  "    __u32 n = 0;"] + indent(body) + [
                  f"    return hash_{algo}(st->hb, n);", "}", ""]
    return fn


def _packed_input(g: Gen, groups: Groups) -> tuple[list[str], int] | None:
    """Statements packing a calculation's input into ``st->hb[0..n)`` at offsets known here,
    with the most bytes they can take; None when a conditional group (a header's fields) does
    not start and end on a byte boundary: its bits then land at a run-time bit offset."""
    body: list[str] = []
    bitoff = 0
    total_max = 0
    for h, parts in groups:
        gw = sum(w for _, w in parts)
        if not parts:
            continue
        if h is not None:
            if bitoff % 8 or gw % 8:
                return None
            if bitoff:
                body.append(f"n += {bitoff // 8};")
                bitoff = 0
            terms: dict[int, list[str]] = {}
            off = 0
            for src, w in parts:
                for k, ts in _value_bytes(src, w, off, "st->hb", "n").items():
                    terms.setdefault(k, []).extend(ts)
                off += w
            body += [f"if (st->f[{g.w.of(h.valid_slot)}]) {{"] + indent(
                _emit_bytes(terms, "st->hb", "n", "HB_MASK")) + [f"    n += {gw // 8};", "}"]
        else:
            terms = {}
            off = bitoff
            for src, w in parts:
                for k, ts in _value_bytes(src, w, off, "st->hb", "n").items():
                    terms.setdefault(k, []).extend(ts)
                off += w
            # bytes shared with an earlier group of this run are OR-ed into
            lines = []
            for k, ts in sorted(terms.items()):
                op = "|=" if k == bitoff // 8 and bitoff % 8 else "="
                lines.append(f"st->hb[(n + {k}) & HB_MASK] {op} (__u8)({' | '.join(ts)});")
            body += lines
            bitoff = off
        total_max += (gw + 7) // 8 + 1
    if bitoff:
        body.append(f"n += {(bitoff + 7) // 8};")
    return body, total_max


def _streamed_input(g: Gen, groups: Groups) -> tuple[list[str], int]:
    """Statements appending a calculation's input to ``st->hb`` in runs of at most 56 bits
    through a ``struct bit_writer`` (the general case: parts of any width at run-time bit
    offsets), with the most bytes they can take."""
    body = ["struct bit_writer b = {};"]
    total = 0
    for h, parts in groups:
        if not parts:
            continue
        lines = []
        for src, w in parts:
            # most significant limb first; each run at most 56 bits: bits_put's limit
            for i in reversed(range(len(src))):
                lw = min(64, w - 64 * i)
                for lo in reversed(range(0, lw, 32) if lw > 56 else [0]):
                    run = min(32, lw - lo) if lw > 56 else lw
                    v = f"{src[i]} >> {lo}" if lo else src[i]
                    lines.append(f"bits_put(st, &b, {v}, {run});")
            total += w
        if h is not None:
            body += [f"if (st->f[{g.w.of(h.valid_slot)}]) {{"] + indent(lines) + ["}"]
        else:
            body += lines
    body += ["bits_flush(st, &b);", "n = b.n;"]
    return body, total // 8 + 2


def checksums(g: Gen) -> tuple[list[str], list[str]]:
    """(verify statements after the parser, update statements before the deparser)."""
    verify: list[str] = []
    update: list[str] = []
    ex = g.ex
    cherr = g.sm("checksum_error")
    for ck in g.p.json.get("checksums") or []:
        if not isinstance(ck, dict):
            raise PipelineLoadError(f"malformed checksum {str(ck)[:60]}")
        where = f"checksum '{g.comment(ck.get('name', '?'))}'"
        tgt = g.lay.field_slot(ck.get("target"))
        width = g.lay.widths[tgt]
        if width > 64:
            raise XdpUnsupported("a checksum field wider than 64 bits", where)
        fn = hash_fn(g, ck.get("calculation"), where)
        cond = ck.get("if_cond")
        c = ex.cond(cond, where) if cond is not None else "1"
        pre = ex.take_pre()
        mask = lit((1 << width) - 1)
        tw = g.w.of(tgt)
        if ck.get("verify", True):
            verify += pre + [f"if ({c} && st->f[{tw}] != ({fn}(st) & {mask}))",
                             f"    st->f[{cherr}] = 1;"]
        if ck.get("update", True):
            update += pre + [f"if ({c})", f"    st->f[{tw}] = {fn}(st) & {mask};"]
    return verify, update


def deparse_order(g: Gen) -> list[HeaderInfo]:
    dps = g.p.json.get("deparsers") or []
    order = dps[0].get("order") if dps and isinstance(dps[0], dict) else None
    if not isinstance(order, list):
        raise PipelineLoadError("deparser has no 'order'")
    out = []
    for hn in order:
        h = g.lay.header(hn)
        if h.vl_index is not None:
            raise XdpUnsupported("a varbit field", "deparser")
        if not h.metadata:
            out.append(h)
    return out


def deparser(g: Gen) -> tuple[list[str], int]:
    """(statements writing the valid headers into st->out, the most bytes they can take)."""
    # The offset lives in st->outlen, reloaded per header: a register would carry an exact value
    # per combination of valid headers, and the verifier would walk every combination.
    out = ["st->outlen = 0;"]
    total = 0
    for h in deparse_order(g):
        nb = h.nbits // 8
        total += nb
        terms: dict[int, list[str]] = {}
        off = 0
        for i, (_, w, _) in enumerate(h.fields):
            for k, ts in _value_bytes(_field_limbs(g, h.base + i), w, off, "st->out", "o").items():
                terms.setdefault(k, []).extend(ts)
            off += w
        body = _emit_bytes(terms, "st->out", "o", "OUT_MASK")
        if g.ctrl_in is not None and h.type_name == g.ctrl_in:
            body = ["if (!st->pin_set) {", "    st->pin_set = 1;", "    st->pin_off = o;",
                    "}"] + body
        out += [f"if (st->f[{g.w.of(h.valid_slot)}]) {{ /* {g.comment(h.name)} */",
                "    BARRIER(); /* reload: no exact offset reaches the verifier */",
                "    __u32 o = st->outlen;"] + indent(body) + [f"    st->outlen = o + {nb};", "}"]
    return out, total


def digest_fns(g: Gen) -> list[str]:
    out = []
    for lid, d in sorted(g.digests.items()):
        lines = []
        k = 0
        for _, slot, _ in d.fields:
            for i in range(g.w.nlimbs(slot)):
                lines.append(f"    r->w[{k}] = st->f[{g.w.of(slot) + i}];")
                k += 1
        out += [f"/* digest {g.comment(d.name)} */",
                f"static __always_inline void emit_digest_{lid}(struct p4_state *st)", "{",
                "    struct digest_rec *r = bpf_ringbuf_reserve(&digests, sizeof(*r), 0);",
                "    if (!r) {", "        stat_add(STAT_DIGEST_LOST);", "        return;", "    }",
                f"    r->list_id = {lid};"] + lines + [
                "    bpf_ringbuf_submit(r, 0);", "}", ""]
    return out


def digest_words(g: Gen) -> int:
    return max([d.words for d in g.digests.values()] + [1])

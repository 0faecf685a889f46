"""Code generation for calculations (hashes, checksums) and the deparser.

A calculation's input is packed into one int per group of fields of the same header (one
validity test per group); the Internet checksum is summed from the field values directly,
without building bytes. The deparser is one ``struct.pack`` per byte-aligned header.
"""

from __future__ import annotations

from typing import Any

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.exprgen import hexint
from softnic.runtime.externs import HASH_ALGOS
from softnic.runtime.gen_base import GenContext, _ind
from softnic.runtime.loader import HeaderInfo


class DeparseGen:
    """Calculations, verify / update checksum and the deparser, generated into ``ctx.src``."""

    def __init__(self, ctx: GenContext) -> None:
        self.ctx = ctx
        self.calc_fns: dict[str, str] = {}  # calculation name -> input builder function
        self.hash_fns: dict[str, str] = {}  # input builder -> hash function
        self.calc_bodies: dict[str, list[str]] = {}
        self.calc_meta: dict[str, tuple[list, bool, list[str]]] = {}
        self.packer_exprs: dict[str, str] = {}  # header -> function packing its bytes

    # -- calculations ------------------------------------------------------------------------
    def calc_fn(self, name: Any, where: str) -> str:
        """Name of a generated ``(F, PL) -> bytes`` building the calculation's input."""
        if isinstance(name, str) and name in self.calc_fns:
            return self.calc_fns[name]
        calc = self.ctx.p.calculations.get(name) if isinstance(name, str) else None
        if calc is None:
            raise PipelineLoadError(f"{where}: unknown calculation {name!r}")
        fname = self.ctx.fresh("calc")
        # Consecutive inputs from the same header are packed with one validity test.
        groups: list[list] = []  # [header or None, [(src, width)]]
        last_hdr: str | None = None
        payload = False
        for inp in calc.get("input") or []:
            t = inp.get("type") if isinstance(inp, dict) else None
            if t == "field":
                ref = inp.get("value")
                slot = self.ctx.lay.field_slot(ref)
                h = self.ctx.lay.headers[ref[0]]
                wd = self.ctx.lay.widths[slot]
                signed = self.ctx.lay.signed[slot]
                val = f"(F[{slot}] & {(1 << wd) - 1:#x})" if signed else f"F[{slot}]"
                key = None if h.metadata else h.name
                if h.vl_index is not None and slot == h.base + h.vl_index:
                    groups.append([key, [(val, f"F[{h.len_slot}]")]])
                    groups.append([None, []])  # nothing may merge into a dynamic group
                elif groups and groups[-1][0] == key and key is not None:
                    groups[-1][1].append((val, wd))
                else:
                    groups.append([key, [(val, wd)]])
                last_hdr = ref[0]
            elif t == "hexstr":
                bw = inp.get("bitwidth")
                if not isinstance(bw, int) or bw <= 0:
                    raise PipelineLoadError(f"calculation '{name}': hexstr needs a bitwidth")
                val = hexint(inp.get("value"), where) & ((1 << bw) - 1)
                groups.append([None, [(str(val), bw)]])
            elif t == "header":
                h = self.ctx.lay.header(inp.get("value"))
                groups.append([h.name, [(f"({self.ctx.header_int(h)})", self.ctx.header_bits(h))]])
                groups.append([None, []])
                last_hdr = h.name
            elif t == "payload":
                payload = True
            else:
                raise PipelineLoadError(f"calculation '{name}': unsupported input {inp!r}")
        body = ["v = 0", "nb = 0"]
        for hname, parts in groups:
            if not parts:
                continue
            if any(isinstance(w, str) for _, w in parts):  # one dynamic-width input
                [(src, total)] = parts
                exprs = [src]
            else:
                total = sum(w for _, w in parts)
                exprs = []
                shift = total
                for src, w in parts:
                    shift -= w
                    exprs.append(f"({src} << {shift})" if shift else src)
            line = f"v = (v << {total}) | {' | '.join(exprs)}; nb += {total}"
            if hname is None:
                body.append(line)
            else:
                body += [f"if F[{self.ctx.lay.headers[hname].valid_slot}]:", "    " + line]
        body += ["pad = -nb & 7", "b = (v << pad).to_bytes((nb + pad) >> 3, 'big')"]
        if payload:
            after = []
            if last_hdr in self.ctx.deparse_order:
                after = self.ctx.deparse_order[self.ctx.deparse_order.index(last_hdr) + 1:]
            for hn in after:
                h = self.ctx.lay.headers[hn]
                body += [f"if F[{h.valid_slot}]:",
                         f"    b += ({self.ctx.header_int(h)})"
                         f".to_bytes({self.ctx.header_bits(h)} >> 3, "
                         "'big')"]
            body.append("b += PL")
        body.append("return b")
        self.calc_bodies[fname] = body
        self.calc_meta[fname] = (groups, payload, after if payload else [])
        self.ctx.src += [f"def {fname}(F, PL):"] + _ind(body) + [""]
        self.calc_fns[name] = fname
        return fname

    def hash_fn(self, calc_name: Any, where: str) -> str:
        calc = self.ctx.p.calculations.get(calc_name) if isinstance(calc_name, str) else None
        if calc is None:
            raise PipelineLoadError(f"{where}: unknown calculation {calc_name!r}")
        algo = calc.get("algo")
        if algo not in HASH_ALGOS:
            raise PipelineLoadError(f"calculation '{calc_name}': unsupported algorithm {algo!r}")
        cf = self.calc_fn(calc_name, where)
        fname = self.hash_fns.get(cf)
        if fname is None:
            fname = self.hash_fns[cf] = self.ctx.fresh("hash")
            if algo in ("csum16", "cksum16"):
                body = self.csum16_body(*self.calc_meta[cf])
            else:
                fn = self.ctx.eg.const(HASH_ALGOS[algo], "algo")
                body = self.calc_bodies[cf][:-1] + [f"return {fn}(b)"]
            self.ctx.src += [f"def {fname}(F, PL):"] + _ind(body) + [""]
        return fname

    def csum16_body(self, groups: list, payload: bool, after: list[str]) -> list[str]:
        """Internet checksum summed from the field values, without building bytes.

        Since 2**16 == 1 (mod 0xffff), the ones'-complement sum of the 16-bit words of the
        zero-padded input V is V mod 0xffff (0xffff instead of 0 when V != 0), and a field that
        ends at bit offset E from the start weighs 2**(-E mod 16): each term is a small int.
        """
        body = ["s = 0"]
        static_nb: int | None = 0  # bits so far, while they are known at load time

        def shifted(expr: str, shift: str) -> str:
            return expr if shift == "0" else f"(({expr}) << {shift})"

        for hname, parts in groups:
            if not parts:
                continue
            terms = []
            if any(isinstance(w, str) for _, w in parts):
                [(src, width)] = parts
                terms.append(f"(({src}) % 0xffff) << ((-({width})) & 15)")
            else:
                width = sum(w for _, w in parts)
                end = 0
                for src, w in parts:
                    end += w
                    terms.append(shifted(src, str(-end & 15)))
            gsum = " + ".join(terms)
            if static_nb is not None:
                shift = str(-static_nb & 15)
            else:
                shift = "(-nb & 15)"
            lines = [f"s += {shifted(gsum, shift)}", f"nb += {width}"]
            if hname is None:
                body += lines
                if static_nb is not None and isinstance(width, int):
                    static_nb += width
                else:
                    static_nb = None
            else:
                body += [f"if F[{self.ctx.lay.headers[hname].valid_slot}]:"] + _ind(lines)
                static_nb = None
        body.insert(1, "nb = 0")
        if payload:
            body.append("nb += -nb & 7")
            for hn in after:
                h = self.ctx.lay.headers[hn]
                bits = self.ctx.header_bits(h)
                hint = self.ctx.header_int(h)
                body += [f"if F[{h.valid_slot}]:",
                         f"    s += (({hint}) % 0xffff) << ((-(nb + {bits})) & 15)",
                         f"    nb += {bits}"]
            body += ["L = len(PL) * 8",
                     "s += (int.from_bytes(PL, 'big') % 0xffff) << ((-(nb + L)) & 15)"]
        return body + ["r = s % 0xffff", "if r == 0 and s:", "    r = 0xffff",
                       "return ~r & 0xffff"]

    # -- checksums ---------------------------------------------------------------------------
    def checksums(self) -> tuple[str | None, str | None]:
        cherr = self.ctx.lay.sm["checksum_error"]
        verify: list[str] = []
        update: list[str] = []
        for ck in self.ctx.p.json.get("checksums") or []:
            name = ck.get("name", "?") if isinstance(ck, dict) else "?"
            where = f"checksum '{name}'"
            if not isinstance(ck, dict):
                raise PipelineLoadError(f"malformed checksum {ck!r}")
            tgt = self.ctx.lay.field_slot(ck.get("target"))
            width = self.ctx.lay.widths[tgt]
            hf = self.hash_fn(ck.get("calculation"), where)
            cond = ck.get("if_cond")
            c = self.ctx.eg.data(cond, where) if cond is not None else "True"
            if ck.get("verify", True) and cherr is not None:
                verify += [f"if {c}:",
                           f"    if F[{tgt}] != {hf}(F, PL) & {(1 << width) - 1:#x}:",
                           f"        F[{cherr}] = 1"]
            if ck.get("update", True):
                update += [f"if {c}:", f"    F[{tgt}] = {hf}(F, PL) & {(1 << width) - 1:#x}"]
        names: list[str | None] = [None, None]
        for i, body in enumerate((verify, update)):
            if body:
                fname = names[i] = self.ctx.fresh("ck")
                self.ctx.src += [f"def {fname}(F, PL):"] + _ind(body) + [""]
        return names[0], names[1]

    # -- deparser ----------------------------------------------------------------------------
    def pack_expr(self, h: HeaderInfo) -> str:
        """Source of the header's bytes: one struct.pack when byte-aligned, else int.to_bytes."""
        plan = self.ctx.struct_plan(h)
        if plan is None:
            return f"({self.ctx.header_int(h)}).to_bytes({self.ctx.header_bits(h)} >> 3, 'big')"
        import struct

        fmt, chunks, pieces = plan
        pack = self.ctx.eg.const(struct.Struct(fmt).pack, "sp")
        args = []
        for chunk, sizes in zip(chunks, pieces, strict=True):
            terms = []
            for fi, fw, shift in chunk:
                ref = f"F[{h.base + fi}]"
                if h.fields[fi][2]:
                    ref = f"({ref} & {(1 << fw) - 1:#x})"
                terms.append(f"({ref} << {shift})" if shift else ref)
            cv = terms[0] if len(terms) == 1 else "(" + " | ".join(terms) + ")"
            if len(sizes) == 1:
                args.append(cv)
                continue
            rest = sum(sizes) * 8
            for z in sizes:
                rest -= z * 8
                piece = f"({cv} >> {rest})" if rest else cv
                args.append(f"({piece} & {(1 << (z * 8)) - 1:#x})" if z * 8 + rest < sum(
                    sizes) * 8 else piece)
        return f"{pack}({', '.join(args)})"

    def deparser(self) -> str:
        """One ``struct.pack`` per valid header, joined once; returns the function's name."""
        body = ["parts = []"]
        lay = self.ctx.lay
        element = {h: (st.name, i) for st in lay.stacks.values() for i, h in enumerate(st.headers)}
        order = self.ctx.deparse_order
        i = 0
        while i < len(order):
            # A run of one-byte stack elements (byte-by-byte parsing) laid out back to back:
            # one slice of values and one of valid bits instead of a test per element.
            j = i
            h0 = lay.headers[order[i]]
            if order[i] in element and self.ctx.one_byte(h0):
                sname, k = element[order[i]]
                while (j + 1 < len(order) and element.get(order[j + 1]) == (sname, k + j + 1 - i)
                       and lay.headers[order[j + 1]].base == h0.base + 2 * (j + 1 - i)
                       and self.ctx.one_byte(lay.headers[order[j + 1]])):
                    j += 1
            if j > i:
                body.append(f"parts.append(_stackbytes(F, {h0.base}, {h0.base + 2 * (j - i + 1)}))")
            else:
                h = h0
                body += [f"if F[{h.valid_slot}]:", f"    parts.append({self.pack_expr(h)})"]
            i = j + 1
        for hn in order:
            expr = self.pack_expr(lay.headers[hn])
            pname = self.ctx.fresh("pack")
            self.ctx.src += [f"def {pname}(F):", f"    return {expr}", ""]
            self.packer_exprs[hn] = pname
        body.append("return b''.join(parts)")
        fname = self.ctx.fresh("deparse")
        self.ctx.src += [f"def {fname}(F):"] + _ind(body) + [""]
        return fname

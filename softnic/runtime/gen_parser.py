"""Code generation for the parser: one function per parse state, plus the loop bound.

A state function ``(B, n, pos, F, S) -> (next state function or None, pos)`` extracts its
headers (one ``struct.unpack_from`` when byte-aligned), runs its ops and picks the transition.
The parser is generated twice: fast, and reporting each step to a trace callback ``T``.
"""

from __future__ import annotations

from typing import Any

from softnic.runtime.api import PipelineLoadError
from softnic.runtime.exprgen import hexint
from softnic.runtime.gen_base import GenContext, _ind
from softnic.runtime.loader import HeaderInfo
from softnic.runtime.primitives import emit

# Parser loop bound. BMv2's parser runs states until one transitions to accept/reject, with no
# bound, so ``state start { transition start; }`` hangs its packet thread forever. softnic must
# not hang (the switch lock is held while a packet runs, which would block P4Runtime too), so the
# states that lie on a cycle of the parse graph count their visits per packet, and when a packet
# of n bytes has visited them more than PARSER_STEPS_PER_BYTE * (number of looping states) * n +
# PARSER_STEPS_BASE times, parsing ends with error.ParserTimeout (the core.p4 error meant for
# this): the packet continues to ingress with standard_metadata.parser_error set, like any other
# parser error on BMv2. A loop that extracts at least one byte per round ends long before that
# with PacketTooShort, so only loops that consume nothing can reach the bound.
PARSER_STEPS_PER_BYTE = 1
PARSER_STEPS_BASE = 256


def _cyclic_states(states: list[dict]) -> set[str]:
    """Names of the parse states that can reach themselves again (lie on a cycle)."""
    succ: dict[str, set[str]] = {}
    for st in states:
        nxt = set()
        for tr in st.get("transitions") or []:
            if isinstance(tr, dict) and isinstance(tr.get("next_state"), str):
                nxt.add(tr["next_state"])
        succ[st["name"]] = nxt
    out = set()
    for start in succ:
        seen: set[str] = set()
        todo = list(succ[start])
        while todo:
            cur = todo.pop()
            if cur == start:
                out.add(start)
                break
            if cur in seen or cur not in succ:
                continue
            seen.add(cur)
            todo.extend(succ[cur])
    return out


def _single_target(transitions: list[str]) -> str | None:
    """The next state's function if ``transitions`` is one unconditional ``return X, pos``."""
    if len(transitions) == 1 and transitions[0].startswith("return ") \
            and transitions[0].endswith(", pos"):
        return transitions[0][len("return "):-len(", pos")]
    return None


# BMv2 reads an advance amount with get<size_t>: 64 bits, unsigned.
SIZE_T_MASK = (1 << 64) - 1


class ParserGen:
    """Parse states and transitions, generated into ``ctx.src``."""

    def __init__(self, ctx: GenContext) -> None:
        self.ctx = ctx

    def extract_lines(self, h: HeaderInfo, traced: bool, vl_len: str | None = None) -> list[str]:
        out = []
        if traced:
            out.append(f"T({'Extracting header ' + repr(h.name)!r})")
        if h.vl_index is not None:
            if vl_len is None:
                raise PipelineLoadError(f"header '{h.name}' has a varbit field: use extract_VL")
            return out + self.extract_vl_lines(h, vl_len)
        nb = h.nbits // 8
        out += [f"e = pos + {nb}", f"if e > n: raise _PE({self.ctx.too_short}, pos)"]
        plan = self.ctx.struct_plan(h)
        if plan is not None:
            return out + self.struct_extract(h, plan) + [f"F[{h.valid_slot}] = 1", "pos = e"] + [
                f"F[{vs}] = 0" for vs in h.union_siblings]
        if nb:
            out.append("v = int.from_bytes(B[pos:e], 'big')")
        shift = h.nbits
        for i, (_, w, s) in enumerate(h.fields):
            shift -= w
            val = f"(v >> {shift})" if shift else "v"
            if shift + w < h.nbits:
                val = f"({val} & {(1 << w) - 1:#x})"
            if w == 0:
                val = "0"
            out.append(f"F[{h.base + i}] = " + (f"_tcm({val}, {w})" if s else val))
        out += [f"F[{h.valid_slot}] = 1", "pos = e"]
        out += [f"F[{vs}] = 0" for vs in h.union_siblings]
        return out

    def struct_extract(self, h: HeaderInfo, plan: tuple) -> list[str]:
        import struct

        fmt, chunks, pieces = plan
        unpack = self.ctx.eg.const(struct.Struct(fmt).unpack_from, "su")
        names = [f"u{k}" for k in range(sum(len(p) for p in pieces))]
        out = [f"{', '.join(names)}, = {unpack}(B, pos)"]
        k = 0
        for chunk, sizes in zip(chunks, pieces, strict=True):
            parts = names[k:k + len(sizes)]
            k += len(sizes)
            if len(parts) == 1:
                cv = parts[0]
            else:
                rest = sum(sizes) * 8
                terms = []
                for nm, z in zip(parts, sizes, strict=True):
                    rest -= z * 8
                    terms.append(f"({nm} << {rest})" if rest else nm)
                cv = "(" + " | ".join(terms) + ")"
            for fi, fw, shift in chunk:
                val = cv if len(chunk) == 1 else (
                    f"({cv} >> {shift})" if chunk[0][0] == fi else
                    f"(({cv} >> {shift}) & {(1 << fw) - 1:#x})" if shift else
                    f"({cv} & {(1 << fw) - 1:#x})")
                signed = h.fields[fi][2]
                out.append(f"F[{h.base + fi}] = " + (f"_tcm({val}, {fw})" if signed else val))
        for i, (_, w, _) in enumerate(h.fields):
            if w == 0:
                out.append(f"F[{h.base + i}] = 0")
        return out

    def extract_vl_lines(self, h: HeaderInfo, vl_len: str) -> list[str]:
        """extract_VL: the varbit field's length in bits comes from an expression."""
        # BMv2's extract_VL checks in this order: a length that is not a whole number of
        # bytes is ParserInvalidArgument, then PacketTooShort, then a header longer than its
        # type's max_length is HeaderTooShort.
        hts = self.ctx.p.errors["HeaderTooShort"]
        pia = self.ctx.p.errors["ParserInvalidArgument"]
        out = [] if vl_len == "L" else [f"L = {vl_len}"]
        out += [f"if L & 7: raise _PE({pia}, pos)",
                f"r = {h.nbits} + L", "e = pos + (r >> 3)",
                f"if e > n: raise _PE({self.ctx.too_short}, pos)",
                f"if L < 0 or L > {h.max_vl_bits}: raise _PE({hts}, pos)",
                "v = int.from_bytes(B[pos:e], 'big')"]
        for i, (_, w, s) in enumerate(h.fields):
            if i == h.vl_index:
                out += ["r -= L", f"F[{h.base + i}] = (v >> r) & ((1 << L) - 1)",
                        f"F[{h.len_slot}] = L"]
                continue
            out.append(f"r -= {w}")
            val = f"((v >> r) & {(1 << w) - 1:#x})"
            out.append(f"F[{h.base + i}] = " + (f"_tcm({val}, {w})" if s else val))
        out += [f"F[{h.valid_slot}] = 1", "pos = e"]
        out += [f"F[{vs}] = 0" for vs in h.union_siblings]
        return out

    def last_guards(self, node: Any) -> list[str]:
        """``hs.last`` of an empty stack (nextIndex 0) in a parser op or select key: the parser
        stops there with error.StackOutOfBounds, the bytes from the current position on staying
        payload. (BMv2's Stack::get_last only asserts a non-empty stack; the P4_16 spec gives
        StackOutOfBounds.) Checked before the op, so nothing of it runs."""
        names: list[str] = []
        todo = [node]
        while todo:
            x = todo.pop()
            if isinstance(x, dict):
                v = x.get("value")
                if x.get("type") == "stack_field" and isinstance(v, list) and v \
                        and v[0] not in names:
                    names.append(v[0])
                todo.extend(x.values())
            elif isinstance(x, list):
                todo.extend(x)
        sobe = self.ctx.p.errors["StackOutOfBounds"]
        return [f"if not F[{self.ctx.lay.stack(n).next_slot}]: raise _PE({sobe}, pos)"
                for n in names]

    @staticmethod
    def advance_amount(arg: Any, where: str) -> None:
        """Refuse a negative constant amount: BMv2's ParserOpAdvance<Data> asserts that "the
        JSON should never specify a negative constant" (an abort of the switch there)."""
        if isinstance(arg, dict) and arg.get("type") == "hexstr" \
                and hexint(arg.get("value"), where) < 0:
            raise PipelineLoadError(f"{where}: advance amount {arg.get('value')!r:.40} is "
                                    "negative; BMv2 requires a non-negative constant")

    def advance_lines(self, op: str, amount: str) -> list[str]:
        """``advance`` (an amount in bits) or the legacy ``shift`` (in bytes), as BMv2's
        ParserOpAdvance / ParserOpShift: an amount in bits that is not a multiple of 8 is
        error.ParserInvalidArgument, and an amount past the end of the packet is
        error.PacketTooShort raised *before* moving, so the bytes from the current position
        on stay in the payload. BMv2 reads the amount as a ``size_t`` (``get<size_t>``), so
        the parser never moves backwards: a negative run-time amount (which BMv2 only
        asserts against) wraps to a huge one, and is PacketTooShort or ParserInvalidArgument
        here; a negative constant is refused at load (``advance_amount``)."""
        out = [f"L = ({amount}) & {SIZE_T_MASK:#x}"]
        if op == "advance":
            out += [f"if L & 7: raise _PE({self.ctx.p.errors['ParserInvalidArgument']}, pos)",
                    "L >>= 3"]
        return out + [f"if pos + L > n: raise _PE({self.ctx.too_short}, pos)", "pos += L"]

    def union_stack_extract(self, val: Any, where: str, sobe: int, traced: bool) -> list[str]:
        """``extract`` into ``us.next.m`` (BMv2's ParserOpExtractUnionStack, value
        ``[union stack, member]``): StackOutOfBounds when every element has been extracted,
        else the extract into member m of element nextIndex (which invalidates the element's
        other members, as any union member extract does), and nextIndex + 1."""
        if not (isinstance(val, list) and len(val) == 2):
            raise PipelineLoadError(f"{where}: a union_stack extract needs [stack, member]")
        lay = self.ctx.lay
        us = lay.union_stack(val[0])
        xs = []
        for i in range(len(us.unions)):
            xf = self.ctx.fresh("x")
            xs.append(xf)
            lines = self.extract_lines(lay.union_stack_member(us, i, val[1]), traced)
            self.ctx.src += [f"def {xf}(B, n, pos, F):"] + _ind(lines) + ["    return pos", ""]
        tab = self.ctx.fresh("xs")
        self.ctx.src += [f"{tab} = ({', '.join(xs)},)", ""]
        return [f"i = F[{us.next_slot}]",
                f"if i >= {len(us.unions)}: raise _PE({sobe}, pos)",
                f"pos = {tab}[i](B, n, pos, F)",
                f"F[{us.next_slot}] = i + 1"]

    def stack_extract_vl(self, sname: Any, vl_len: str, sobe: int, traced: bool) -> list[str]:
        """``extract_VL`` into ``stack.next`` (BMv2's ParserOpExtractStack with a length):
        StackOutOfBounds when the stack is full, else the VL extract into that element."""
        stk = self.ctx.lay.stack(sname)
        xs = []
        for hn in stk.headers:
            xf = self.ctx.fresh("x")
            xs.append(xf)
            lines = self.extract_lines(self.ctx.lay.headers[hn], traced, "L")
            self.ctx.src += ([f"def {xf}(B, n, pos, F, L):"] + _ind(lines)
                             + ["    return pos", ""])
        tab = self.ctx.fresh("xs")
        self.ctx.src += [f"{tab} = ({', '.join(xs)},)", ""]
        return [f"i = F[{stk.next_slot}]",
                f"if i >= {len(stk.headers)}: raise _PE({sobe}, pos)",
                f"pos = {tab}[i](B, n, pos, F, {vl_len})",
                f"F[{stk.next_slot}] = i + 1"]

    def parser(self, traced: bool) -> str:
        prs = self.ctx.p.json["parsers"][0]
        states = prs.get("parse_states")
        if not isinstance(states, list) or not states:
            raise PipelineLoadError("parser has no parse_states")
        fnames = {}
        for st in states:
            sname = st.get("name") if isinstance(st, dict) else None
            if not isinstance(sname, str):
                raise PipelineLoadError(f"malformed parse state {st!r}")
            if sname in fnames:
                raise PipelineLoadError(f"duplicate parse state {sname!r}")
            fnames[sname] = self.ctx.fresh("ps")
        init = prs.get("init_state")
        if init not in fnames:
            raise PipelineLoadError(f"parser init_state {init!r} is not a parse state")
        sobe = self.ctx.p.errors["StackOutOfBounds"]
        looping = _cyclic_states(states)
        # Parser loop bound (see PARSER_STEPS_PER_BYTE): only states on a cycle of the state
        # graph count their visits, so a loop-free parser pays nothing per packet.
        limit = f"{PARSER_STEPS_PER_BYTE * max(1, len(looping))} * n + {PARSER_STEPS_BASE}"
        timeout = self.ctx.p.errors["ParserTimeout"]
        self._count_steps = ["S.steps += 1", f"if S.steps > {limit}: raise _PE({timeout}, pos)"]
        bodies: dict[str, list[str]] = {}
        trans: dict[str, list[str]] = {}
        for st in states:
            sname = st["name"]
            where = f"parse state '{sname}'"
            body: list[str] = []
            if traced:
                body.append(f"T({'Parser state ' + repr(sname)!r})")
            if sname in looping:
                body += self._count_steps
            for op in st.get("parser_ops") or []:
                o = op.get("op") if isinstance(op, dict) else None
                args = op.get("parameters") or []
                body += self.last_guards(op)
                if o == "extract":
                    if len(args) != 1 or not isinstance(args[0], dict):
                        raise PipelineLoadError(f"{where}: extract takes one parameter")
                    kind, val = args[0].get("type"), args[0].get("value")
                    if kind == "regular":
                        body += self.extract_lines(self.ctx.lay.header(val), traced)
                    elif kind == "stack":
                        stk = self.ctx.lay.stack(val)
                        h0 = self.ctx.lay.headers[stk.headers[0]]
                        if not traced and self.ctx.one_byte(h0):
                            # Byte-by-byte parsing (a stack of one-byte headers): extract in
                            # place, without a call per byte.
                            bases = self.ctx.eg.stack_bases(val)
                            body += [f"i = F[{stk.next_slot}]",
                                     f"if i >= {len(stk.headers)}: raise _PE({sobe}, pos)",
                                     f"if pos >= n: raise _PE({self.ctx.too_short}, pos)",
                                     f"b = {bases}[i]",
                                     "F[b] = B[pos]",
                                     "F[b + 1] = 1",
                                     "pos += 1",
                                     f"F[{stk.next_slot}] = i + 1"]
                            continue
                        xs = []
                        for hn in stk.headers:
                            xf = self.ctx.fresh("x")
                            xs.append(xf)
                            lines = self.extract_lines(self.ctx.lay.headers[hn], traced)
                            self.ctx.src += ([f"def {xf}(B, n, pos, F):"] + _ind(lines)
                                             + ["    return pos", ""])
                        tab = self.ctx.fresh("xs")
                        self.ctx.src += [f"{tab} = ({', '.join(xs)},)", ""]
                        body += [f"i = F[{stk.next_slot}]",
                                 f"if i >= {len(stk.headers)}: raise _PE({sobe}, pos)",
                                 f"pos = {tab}[i](B, n, pos, F)",
                                 f"F[{stk.next_slot}] = i + 1"]
                    elif kind == "union_stack":
                        body += self.union_stack_extract(val, where, sobe, traced)
                    else:
                        raise PipelineLoadError(f"{where}: unsupported extract type {kind!r}")
                elif o == "extract_VL":
                    if len(args) != 2 or not isinstance(args[0], dict) \
                            or args[0].get("type") not in ("regular", "stack"):
                        raise PipelineLoadError(f"{where}: extract_VL takes a header and a length")
                    vl = self.ctx.eg.data(args[1], where)
                    if args[0].get("type") == "regular":
                        h = self.ctx.lay.header(args[0].get("value"))
                        body += self.extract_lines(h, traced, vl)
                    else:
                        body += self.stack_extract_vl(args[0].get("value"), vl, sobe, traced)
                elif o == "set":
                    if len(args) != 2:
                        raise PipelineLoadError(f"{where}: set takes two parameters")
                    dst = self.ctx.eg.lvalue(args[0], where)
                    src, sw = self.ctx.eg.rv(args[1], where)
                    body.append(self.ctx.eg.store(dst, src, sw))
                elif o == "verify":
                    if len(args) != 2:
                        raise PipelineLoadError(f"{where}: verify takes two parameters")
                    body.append(f"if not {self.ctx.eg.data(args[0], where)}: "
                                f"raise _PE({self.ctx.eg.data(args[1], where)}, pos)")
                elif o in ("advance", "shift"):
                    if len(args) != 1:
                        raise PipelineLoadError(f"{where}: {o} takes one parameter")
                    self.advance_amount(args[0], where)
                    body += self.advance_lines(o, self.ctx.eg.data(args[0], where))
                elif o == "primitive":
                    if len(args) != 1:
                        raise PipelineLoadError(f"{where}: primitive takes one parameter")
                    self.ctx.eg.nparams = 0
                    body += emit(self.ctx, args[0], where)
                    self.ctx.eg.nparams = None
                else:
                    raise PipelineLoadError(f"{where}: unsupported parser op {o!r}")
            bodies[sname] = body
            trans[sname] = self.transitions(st, fnames, where, traced)
        # A state that always goes on to the same other state runs that state's body inline
        # instead of returning to the parse loop: a byte-by-byte loop (select state, extract
        # state) then costs one call per byte instead of two. One level only, so it is finite.
        by_fn = {fn: sn for sn, fn in fnames.items()}
        for sname, body in bodies.items():
            tail = trans[sname]
            nxt = _single_target(tail)
            if not traced and nxt in by_fn and by_fn[nxt] != sname:
                nbody = bodies[by_fn[nxt]]
                if body[:2] == nbody[:2] == self._count_steps:
                    # both states count loop steps: count the pair at once
                    body = ["S.steps += 2"] + body[1:]
                    nbody = nbody[2:]
                tail = nbody + trans[by_fn[nxt]]
            code = body + tail
            again = f"return {fnames[sname]}, pos"
            if not traced and any(ln.endswith(again) for ln in tail):
                # The state goes back to itself (a byte loop after the inlining above): loop
                # here instead of returning to the parse loop once per iteration.
                code = ["while True:"] + _ind([ln[:-len(again)] + "continue"
                                               if ln.endswith(again) else ln for ln in code])
            self.ctx.src += [f"def {fnames[sname]}(B, n, pos, F, S):"] + _ind(code) + [""]
        return fnames[init]

    def vset_case(self, tr: dict, key_width: int, nxt: str, where: str) -> str:
        """A ``parse_vset`` transition: the unpadded key is a member of the named set
        (BMv2 ParseSwitchCaseVSet; a mask, when given, applies to both)."""
        vsets = self.ctx.p.vsets  # built once at load, shared by fast and traced parsers
        name = tr.get("value")
        vs = vsets.get(name) if isinstance(name, str) else None
        if vs is None:
            raise PipelineLoadError(f"{where}: transition names unknown parse_vset {name!r}")
        if vs.bitwidth != key_width:
            raise PipelineLoadError(
                f"{where}: parse_vset '{name}' has compressed_bitwidth {vs.bitwidth} but the "
                f"transition key is {key_width} bits wide")
        # generated names come from the context, never from the JSON's id or mask
        var = self.ctx.fresh("vs")
        self.ctx.env[var] = vs.members
        mask = tr.get("mask")
        if mask is None:
            return f"if v in {var}: return {nxt}, pos"
        m = hexint(mask, where)
        if m < 0:
            raise PipelineLoadError(f"{where}: parse_vset mask {mask!r} is negative")
        # BMv2 compares the key and the members both ANDed with the mask (compressed form)
        mvar = self.ctx.fresh("vsm")
        self.ctx.env[mvar] = vs.masked_view(m)
        return f"if v & {m} in {mvar}: return {nxt}, pos"

    def transitions(self, st: dict, fnames: dict[str, str], where: str,
                    traced: bool) -> list[str]:
        def target(nxt: Any) -> str:
            if nxt is None:
                return "None"
            if nxt not in fnames:
                raise PipelineLoadError(f"{where}: unknown next state {nxt!r}")
            return fnames[nxt]

        keys = st.get("transition_key") or []
        parts = []
        # the key with its fields concatenated without padding: what value-set members hold
        cparts = []
        total = ctotal = 0
        for k in reversed(keys):
            src, w = self.ctx.slot_source(k, where)
            parts.append(f"({src} << {total})" if total else src)
            cparts.append(f"({src} << {ctotal})" if ctotal else src)
            total += (w + 7) // 8 * 8
            ctotal += w
        out = self.last_guards(keys)
        if parts:
            out.append(f"k = {' | '.join(reversed(parts))}")
            if traced:
                out.append(f"T({'Parser state ' + st['name'] + ': key is '!r} + format(k, 'x'))")
        if any(isinstance(tr, dict) and tr.get("type") == "parse_vset"
               for tr in st.get("transitions") or []):
            out.append(f"v = {' | '.join(reversed(cparts)) if cparts else '0'}")
        has_default = False
        for tr in st.get("transitions") or []:
            if not isinstance(tr, dict):
                raise PipelineLoadError(f"{where}: malformed transition {tr!r}")
            t = tr.get("type", "hexstr")
            nxt = target(tr.get("next_state"))
            # p4c <= JSON 2.18 wrote the default case as a typeless transition whose value is
            # the string "default"; BMv2 still accepts that form, so softnic does too.
            if t == "default" or (t == "hexstr" and tr.get("value") in (None, "default")):
                out.append(f"return {nxt}, pos")
                has_default = True
                break
            if t == "parse_vset":
                out.append(self.vset_case(tr, ctotal, nxt, where))
                continue
            if t != "hexstr":
                raise PipelineLoadError(f"{where}: unsupported transition type {t!r}")
            if not parts:
                raise PipelineLoadError(f"{where}: value transition without transition_key")
            val = hexint(tr.get("value"), where)
            mask = tr.get("mask")
            if mask is None:
                out.append(f"if k == {val}: return {nxt}, pos")
            else:
                m = hexint(mask, where)
                out.append(f"if k & {m} == {val & m}: return {nxt}, pos")
        if not has_default:
            # BMv2 (ParseState::find_next_state): no case matched and the JSON has no default
            # transition -> its default_next_state, which is null, i.e. accept, with
            # parser_error still NoError. p4c-bm2-ss 1.2.4 emits no default for a select
            # without one (its simple_switch mid end lacks HandleNoMatch), so the P4_16 spec's
            # error.NoMatch never happens on p4c + BMv2; softnic does the same.
            out.append("return None, pos")
        return out

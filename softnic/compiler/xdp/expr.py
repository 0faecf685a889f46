"""BMv2 JSON expressions as C expressions over 64-bit words.

BMv2 computes with unbounded integers and truncates on every store; p4c wraps each operation
that must wrap in an explicit ``&`` mask. In C a value is a list of 64-bit limbs (least
significant first): ``limbs(node, n)`` gives the C source of the low ``n`` limbs of the value,
which is exact for ``+ - * << & | ^ ~`` modulo 2**(64 n) (``*`` only for ``n == 1``; ``+`` and
``-`` on several limbs compute their carries into temporaries of the statement prologue).
Operations that look at high bits (``>>``, comparisons, ``/``) ask their operands for as many
limbs as the operands' widths can reach.

Nothing from the JSON becomes C text except through this module's integer literals and the
generator's own names: field references are word indices, constants are printed from ints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from softnic.compiler.xdp.errors import XdpUnsupported
from softnic.compiler.xdp.words import Words, limbs
from softnic.runtime.api import PipelineLoadError
from softnic.runtime.exprgen import MAX_EXPR_DEPTH, hexint
from softnic.runtime.loader import HeaderInfo, Program

M64 = (1 << 64) - 1


def lit(v: int) -> str:
    """A C literal of the 64-bit pattern of ``v`` (any int)."""
    return f"{v & M64:#x}ULL"


class CSrc(str):
    """C source made by the generator itself (never from the JSON: JSON cannot hold a Python
    object of this class), usable where an expression node is expected."""


@dataclass
class HdrRef:
    """A header operand: ``word`` is C source of its first word (may depend on a run-time
    stack index, already bounds-checked by the statement prologue)."""

    word: str
    h: HeaderInfo  # the header type's representative (element 0 for stacks)
    nwords: int  # words of fields + validity

    @property
    def valid(self) -> str:
        return f"st->f[{self.word} + {self.nwords - 1}]"


class ExprC:
    """Translates expressions of one program; ``checks`` collects statement prologues (stack
    index bounds) that must run before the expression's value is used."""

    def __init__(self, prog: Program, words: Words,
                 param: Callable[[int], tuple[int, int]] | None = None) -> None:
        self.p = prog
        self.lay = prog.layout
        self.w = words
        self.param = param  # runtime_data index -> (word in st->ap, width)
        self.depth = 0
        self.tmp_n = 0
        self.pre: list[str] = []  # statements to emit before the current expression
        self.in_parser = False
        self.parser_pos = "st->pos"

    # -- helpers --------------------------------------------------------------------------------
    def fresh(self, hint: str = "t") -> str:
        self.tmp_n += 1
        return f"{hint}{self.tmp_n}"

    def take_pre(self) -> list[str]:
        out, self.pre = self.pre, []
        return out

    def abort(self, reason: str) -> str:
        """The statement that ends the packet on a run-time error: a stack index out of range in
        a control (BMv2 aborts; softnic drops and counts), StackOutOfBounds in the parser."""
        if self.in_parser:
            return "goto stack_oob;"
        return f"{{ st->abort = {ABORT_CODES[reason]}; goto abort; }}"

    # -- widths -------------------------------------------------------------------------------
    def width(self, node: Any) -> int | None:
        """Upper bound on the bits a value can have (None: signed, i.e. sign-extended)."""
        if isinstance(node, CSrc):
            return 64
        if isinstance(node, bool):
            return 1
        if isinstance(node, int):
            return max(1, node.bit_length()) if node >= 0 else None
        if not isinstance(node, dict):
            return 64
        t, v = node.get("type"), node.get("value")
        if t == "expression":
            return self.width(v)
        if t == "field":
            slot = self.lay.field_slot(v)
            return None if self.lay.signed[slot] else self.lay.widths[slot]
        if t == "hexstr":
            x = hexint(v, "hexstr")
            return max(1, x.bit_length()) if x >= 0 else None
        if t in ("bool", "header"):
            return 1
        if t in ("runtime_data", "local") and self.param is not None:
            return self.param(v)[1]
        if t == "stack_field":
            _, w, s = self._stack_field_info(v, "0")
            return None if s else w
        if t == "lookahead" and isinstance(v, list) and len(v) == 2:
            return v[1]
        op = node.get("op")
        if op is None:
            return 64
        if op in ("==", "!=", "<", "<=", ">", ">=", "and", "or", "not", "d2b", "valid"):
            return 1
        lw, rw = self.width(node.get("left")), self.width(node.get("right"))
        if op == "&":
            ws = [x for x in (lw, rw) if x is not None]
            return min(ws) if ws else None
        if op in ("|", "^"):
            return None if lw is None or rw is None else max(lw, rw)
        if op == "<<":
            k = self._const(node.get("right"))
            if lw is None:
                return None
            return lw + k if k is not None else lw + 64
        if op == ">>":
            return lw
        if op == "+":
            return None if lw is None or rw is None else max(lw, rw) + 1
        if op == "*":
            return None if lw is None or rw is None else lw + rw
        if op == "b2d":
            return 1
        if op == "?":
            return None if lw is None or rw is None else max(lw, rw)
        if op in ("-", "~", "two_comp_mod", "sat_cast"):
            return None
        if op == "usat_cast":
            return self._const(node.get("right"))
        if op in ("/", "%"):
            return lw
        return 64

    @staticmethod
    def _const(node: Any) -> int | None:
        if isinstance(node, dict) and node.get("type") == "expression":
            return ExprC._const(node.get("value"))
        if isinstance(node, dict) and node.get("type") == "hexstr":
            return hexint(node.get("value"), "hexstr")
        return None

    def need(self, node: Any, at_least: int = 1) -> int:
        """Limbs needed to see every bit of ``node``."""
        w = self.width(node)
        return max(at_least, limbs(w) if w is not None else 1)

    def signed_bits(self, node: Any) -> int | None:
        """Bits of a two's-complement number that holds BMv2's unbounded value of ``node``
        (None: no bound known), so that its low 64 bits read as ``__s64`` are exact when
        this is at most 64."""
        w = self.width(node)
        if w is not None:
            return w + 1
        if isinstance(node, int):
            return node.bit_length() + 1
        if not isinstance(node, dict):
            return None
        t, v = node.get("type"), node.get("value")
        if t == "expression":
            return self.signed_bits(v)
        if t == "hexstr":
            return hexint(v, "hexstr").bit_length() + 1
        if t == "field":
            return self.lay.widths[self.lay.field_slot(v)]
        if t == "stack_field":
            return self._stack_field_info(v, "0")[1]
        op = node.get("op")
        if op in ("two_comp_mod", "sat_cast"):
            return self._const(node.get("right"))
        if op == "~":
            return self.signed_bits(node.get("right"))
        if op in ("+", "-", "*"):
            sides = [self.signed_bits(x) for x in (node.get("left"), node.get("right"))
                     if x is not None]  # unary minus has no left operand
            bits = [b for b in sides if b is not None]
            if not bits or len(bits) < len(sides):
                return None
            return sum(bits) if op == "*" else max(bits) + 1
        return None

    # -- headers and fields ---------------------------------------------------------------------
    def header(self, node: Any, where: str) -> HdrRef:
        if isinstance(node, dict) and node.get("type") == "expression":
            return self.header(node.get("value"), where)
        if isinstance(node, dict) and node.get("type") == "header":
            h = self.lay.header(node.get("value"))
            if h.vl_index is not None:
                raise XdpUnsupported("a varbit field", where)
            self.element_dirty(h.name)
            return HdrRef(str(self.w.of(h.base)), h, self.w.header_words(h))
        if isinstance(node, dict) and node.get("op") == "dereference_header_stack":
            sname = (node.get("left") or {}).get("value")
            st = self.lay.stack(sname)
            sw = self.w.stacks[st.name]
            i = self.fresh("i")
            idx = self.c(node.get("right"), where)
            self.pre += [f"__u64 {i} = {idx};",
                         f"if ({i} >= {sw.size}) {self.abort('stack')}",
                         f"INDEX_CHECKED({i});", stack_dirty(sw.index, f"{i} + 1")]
            h0 = self.lay.headers[st.headers[0]]
            return HdrRef(f"({sw.base} + {i} * {sw.stride})", h0, self.w.header_words(h0))
        if isinstance(node, dict) and node.get("op") == "?":
            return self._header_choice(node, where)
        if isinstance(node, dict) and node.get("type") in ("header_union", "union_stack"):
            raise XdpUnsupported("header unions", where)
        raise XdpUnsupported(f"the header expression {str(node)[:60]!r}", where)

    def _header_choice(self, node: dict, where: str) -> HdrRef:
        """``c ? h1 : h2`` between two headers of one type (p4c's ``h = c ? h1 : h2``, an
        assign_header source): the chosen header's first word, in a temporary. Only the chosen
        branch's prologue (stack index checks) runs, as in BMv2."""
        cnd = self.cond(node.get("cond"), where)
        outer, self.pre = self.pre, []
        try:
            a = self.header(node.get("left"), where)
            pre_a = self.take_pre()
            b = self.header(node.get("right"), where)
            pre_b = self.take_pre()
        finally:
            self.pre = outer
        if a.h.type_name != b.h.type_name:
            raise PipelineLoadError(f"{where}: the branches of '?' are headers of different "
                                    f"types ({a.h.type_name!r}, {b.h.type_name!r})")
        hw = self.fresh("hw")
        self.pre += [f"__u64 {hw};", f"if ({cnd}) {{"] + ["    " + x for x in pre_a] + [
            f"    {hw} = {a.word};", "} else {"] + ["    " + x for x in pre_b] + [
            f"    {hw} = {b.word};", "}"]
        return HdrRef(hw, a.h, a.nwords)

    def _field_word(self, h: HdrRef, off: int) -> str:
        words = sum(self.w.nlimbs(s) for s in range(h.h.base, h.h.base + off))
        return f"{h.word} + {words}" if words else h.word

    def _stack_field_info(self, v: Any, last: str) -> tuple[str, int, bool]:
        """(C word index of ``stack.last.field``, width, signed), ``last`` being the C source of
        the checked index of ``stack.last`` (:meth:`_last_check`)."""
        if not (isinstance(v, list) and len(v) == 2):
            raise PipelineLoadError(f"malformed stack_field {v!r}")
        st = self.lay.stack(v[0])
        sw = self.w.stacks[st.name]
        h0 = self.lay.headers[st.headers[0]]
        off = h0.field_index(v[1])
        words = sum(self.w.nlimbs(s) for s in range(h0.base, h0.base + off))
        return (f"({sw.base} + {last} * {sw.stride} + {words})",
                h0.fields[off][1], h0.fields[off][2])

    def lvalue(self, node: Any, where: str) -> tuple[str, int, bool]:
        """(C word index source, width, signed) of an assignable field."""
        if not isinstance(node, dict):
            raise PipelineLoadError(f"{where}: malformed lvalue {node!r}")
        t, v = node.get("type"), node.get("value")
        if t == "field":
            slot = self.lay.field_slot(v)
            self.element_dirty(v[0])
            if slot == self.lay.sm.get("mcast_grp"):
                # replicas each run egress and leave on their own port: one XDP verdict cannot
                # say that (mark_to_drop's reset of mcast_grp is generated apart)
                raise XdpUnsupported("multicast (a write to standard_metadata.mcast_grp)", where)
            return str(self.w.of(slot)), self.lay.widths[slot], self.lay.signed[slot]
        if t == "expression":
            return self.lvalue(v, where)
        if t == "stack_field":
            last = self._last_check(v[0] if isinstance(v, list) and v else None)
            self.pre.append(stack_dirty(self.w.stacks[self.lay.stack(v[0]).name].index,
                                        f"{last} + 1"))
            return self._stack_field_info(v, last)
        if node.get("op") == "access_field":
            h = self.header(node.get("left"), where)
            off = node.get("right")
            if not isinstance(off, int) or not 0 <= off < len(h.h.fields):
                raise PipelineLoadError(f"{where}: bad field offset {off!r}")
            _, fw, fs = h.h.fields[off]
            return self._field_word(h, off), fw, fs
        raise PipelineLoadError(f"{where}: not an assignable field: {str(node)[:80]}")

    def element_dirty(self, header: str) -> None:
        """A statement raising the high-water mark of ``header``'s stack if it is an element
        (used wherever the element may be written; harmless where it is only read)."""
        el = self.w.element_of.get(header)
        if el is not None:
            self.pre.append(stack_dirty(self.w.stacks[el[0]].index, str(el[1] + 1)))

    def _last_check(self, sname: Any) -> str:
        """A prologue temporary holding the index of ``stack.last``, checked (a stack with no
        element extracted wraps to a huge index, which fails the check too)."""
        st = self.lay.stack(sname)
        sw = self.w.stacks[st.name]
        li = self.fresh("last")
        self.pre += [f"__u64 {li} = st->f[{sw.next_word}] - 1;",
                     f"if ({li} >= {sw.size}) {self.abort('stack')}",
                     f"INDEX_CHECKED({li});"]
        return li

    def store(self, dst: tuple[str, int, bool], node: Any, where: str) -> list[str]:
        """Statements storing ``node`` into ``dst`` with BMv2's truncation to the width."""
        word, w, _ = dst
        n = limbs(w)
        vals = self.limbs(node, n, where)
        pre = self.take_pre()
        top = w - 64 * (n - 1)
        mask = "" if top == 64 else f" & {lit((1 << top) - 1)}"
        if n == 1:
            return pre + [f"st->f[{word}] = ({vals[0]}){mask};"]
        tmps = [self.fresh("v") for _ in range(n)]
        out = pre + [f"__u64 {t} = {v};" for t, v in zip(tmps, vals, strict=False)]
        for k, t in enumerate(tmps):
            m = mask if k == n - 1 else ""
            out.append(f"st->f[{word} + {k}] = {t}{m};")
        return ["{"] + ["    " + s for s in out] + ["}"]

    # -- rvalues --------------------------------------------------------------------------------
    def c(self, node: Any, where: str) -> str:
        """C source of a value's low 64 bits (sign-extended for signed values)."""
        return self.limbs(node, 1, where)[0]

    def cond(self, node: Any, where: str) -> str:
        return f"({self.c(node, where)} != 0)"

    def limbs(self, node: Any, n: int, where: str) -> list[str]:
        if self.depth >= MAX_EXPR_DEPTH:
            raise PipelineLoadError(f"{where}: expression nested deeper than {MAX_EXPR_DEPTH}")
        self.depth += 1
        try:
            return self._limbs(node, n, where)
        finally:
            self.depth -= 1

    def _word_read(self, word: str, width: int, signed: bool, n: int) -> list[str]:
        k = limbs(width)
        if signed:
            if k > 1:
                raise XdpUnsupported("a signed field wider than 64 bits", "")
            v = f"sext(st->f[{word}], {width})"
            return [v] + [f"(__u64)((__s64){v} >> 63)"] * (n - 1)
        return [f"st->f[{word} + {i}]" if i else f"st->f[{word}]" for i in range(min(n, k))] + \
            ["0ULL"] * max(0, n - k)

    def _limbs(self, node: Any, n: int, where: str) -> list[str]:
        if isinstance(node, CSrc):
            return [str(node)] + ["0ULL"] * (n - 1)
        if isinstance(node, bool):
            return ["1ULL" if node else "0ULL"] + ["0ULL"] * (n - 1)
        if isinstance(node, int):
            return [lit(node >> (64 * i)) for i in range(n)]
        if not isinstance(node, dict):
            raise PipelineLoadError(f"{where}: malformed expression {str(node)[:80]}")
        t, v = node.get("type"), node.get("value")
        if t == "expression":
            return self.limbs(v, n, where)
        if t == "hexstr":
            x = hexint(v, where)
            return [lit(x >> (64 * i)) for i in range(n)]
        if t == "bool":
            return ["1ULL" if v else "0ULL"] + ["0ULL"] * (n - 1)
        if t == "field":
            slot = self.lay.field_slot(v)
            return self._word_read(str(self.w.of(slot)), self.lay.widths[slot],
                                   self.lay.signed[slot], n)
        if t in ("runtime_data", "local"):
            if self.param is None or not isinstance(v, int) or isinstance(v, bool):
                raise PipelineLoadError(f"{where}: runtime_data outside an action")
            word, width = self.param(v)
            k = limbs(width)
            return [f"st->ap[{word + i}]" for i in range(min(n, k))] + ["0ULL"] * max(0, n - k)
        if t == "stack_field":
            last = self._last_check(v[0] if isinstance(v, list) and v else None)
            word, w, s = self._stack_field_info(v, last)
            return self._word_read(word, w, s, n)
        if t == "header":
            h = self.header(node, where)
            return [h.valid] + ["0ULL"] * (n - 1)
        if t == "lookahead":
            return self._lookahead(v, n, where)
        if t is None and "op" in node:
            return self._op(node, n, where)
        raise XdpUnsupported(f"the expression type {str(t)[:40]!r}", where)

    def _lookahead(self, v: Any, n: int, where: str) -> list[str]:
        if not self.in_parser:
            raise PipelineLoadError(f"{where}: lookahead outside the parser")
        if not (isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) for x in v)):
            raise PipelineLoadError(f"{where}: malformed lookahead {str(v)[:80]}")
        off, w = v
        if not (0 <= off <= 8 * 4096 and 0 < w <= 4096):
            raise PipelineLoadError(f"{where}: lookahead {v!r} out of range")
        nbytes = (off + w + 7) // 8
        if nbytes > 4096:
            raise XdpUnsupported("a lookahead past the first 4096 bytes", where)
        self.pre.append(f"if ({self.parser_pos} + {nbytes} > st->plen) goto too_short;")
        out = []
        for i in range(min(n, limbs(w))):
            lo = max(0, w - 64 * (i + 1))
            width = w - 64 * i - lo
            out.append(read_bits(f"(st->pkt + ({self.parser_pos} & PKT_MASK))", off + lo, width))
        return out + ["0ULL"] * max(0, n - len(out))

    def _op(self, e: dict, n: int, where: str) -> list[str]:
        o = e.get("op")
        left, right = e.get("left"), e.get("right")
        z = ["0ULL"] * (n - 1)
        if o in ("&", "|", "^"):
            a, b = self.limbs(left, n, where), self.limbs(right, n, where)
            return [f"({x} {o} {y})" for x, y in zip(a, b, strict=False)]
        if o == "~":
            return [f"(~{x})" for x in self.limbs(right, n, where)]
        if o in ("+", "-") and n > 1:
            return self._wide_add(o, left, right, n, where)
        if o in ("+", "-", "*"):
            if n > 1:
                raise XdpUnsupported(f"'{o}' on values wider than 64 bits", where)
            return [f"({self.c(left, where)} {o} {self.c(right, where)})"]
        if o == "<<":
            k = self._const(right)
            if k is None:
                if n > 1:
                    raise XdpUnsupported("a variable shift of a value wider than 64 bits", where)
                return [f"shl64({self.c(left, where)}, {self.c(right, where)})"]
            q, r = divmod(k, 64)
            a = self.limbs(left, n, where)
            out = []
            for i in range(n):
                hi = a[i - q] if 0 <= i - q < n else None
                lo = a[i - q - 1] if 0 <= i - q - 1 < n and r else None
                parts = []
                if hi is not None:
                    parts.append(f"({hi} << {r})" if r else hi)
                if lo is not None:
                    parts.append(f"({lo} >> {64 - r})")
                out.append("(" + " | ".join(parts) + ")" if parts else "0ULL")
            return out
        if o == ">>":
            k = self._const(right)
            lw = self.width(left)
            if lw is None:  # signed: arithmetic shift of the sign-extended value
                if n > 1:
                    raise XdpUnsupported("'>>' on a signed value wider than 64 bits", where)
                amt = self.c(right, where) if k is None else str(min(k, 63))
                return [f"(__u64)((__s64){self.c(left, where)} >> "
                        f"({amt} > 63 ? 63 : {amt}))"]
            if k is None:
                if n > 1 or lw > 64:
                    raise XdpUnsupported("a variable shift of a value wider than 64 bits", where)
                return [f"shr64({self.c(left, where)}, {self.c(right, where)})"]
            q, r = divmod(k, 64)
            m = max(n + q + 1, 1)
            a = self.limbs(left, min(m, limbs(lw)), where)
            a += ["0ULL"] * (m - len(a))
            out = []
            for i in range(n):
                parts = [f"({a[i + q]} >> {r})" if r else a[i + q]]
                if r and a[i + q + 1] != "0ULL":
                    parts.append(f"({a[i + q + 1]} << {64 - r})")
                out.append("(" + " | ".join(parts) + ")")
            return out
        if o in ("==", "!="):
            m = max(self.need(left), self.need(right))
            a, b = self.limbs(left, m, where), self.limbs(right, m, where)
            eq = " && ".join(f"({x} == {y})" for x, y in zip(a, b, strict=False))
            return [f"(__u64)({eq})" if o == "==" else f"(__u64)(!({eq}))"] + z
        if o in ("<", "<=", ">", ">="):
            lw, rw = self.width(left), self.width(right)
            if (lw is not None and lw > 64) or (rw is not None and rw > 64):
                if lw is None or rw is None:
                    raise XdpUnsupported(f"'{o}' on signed values wider than 64 bits", where)
                return [self._wide_compare(o, left, right, where)] + z
            a, b = self.c(left, where), self.c(right, where)
            if lw is None or rw is None:
                a, b = f"(__s64){a}", f"(__s64){b}"
            return [f"(__u64)({a} {o} {b})"] + z
        if o in ("and", "or"):
            return [self._short_circuit(o, left, right, where)] + z
        if o == "not":
            return [f"(__u64)(!{self.cond(right, where)})"] + z
        if o == "d2b":
            return [f"(__u64)({self.c(right, where)} != 0)"] + z
        if o == "b2d":
            return [f"(__u64)({self.c(right, where)} != 0)"] + z
        if o == "valid":
            return [self.header(right, where).valid] + z
        if o == "?":
            return self._choice(e.get("cond"), left, right, n, where)
        if o == "two_comp_mod":
            w = self._const(right)
            if w is None or not 1 <= w <= 64 or n > 1:
                raise XdpUnsupported("two_comp_mod wider than 64 bits", where)
            return [f"sext({self.c(left, where)}, {w})"]
        if o in ("/", "%"):
            lw, rw = self.width(left), self.width(right)
            if n > 1 or lw is None or rw is None or lw > 64 or rw > 64:
                raise XdpUnsupported(f"'{o}' on signed or wide values", where)
            d = self.fresh("d")
            self.pre += [f"__u64 {d} = {self.c(right, where)};",
                         f"if ({d} == 0) {self.abort('div')}"]
            return [f"({self.c(left, where)} {o} {d})"]
        if o == "access_field":
            h = self.header(left, where)
            off = right
            if not isinstance(off, int) or not 0 <= off < len(h.h.fields):
                raise PipelineLoadError(f"{where}: bad field offset {off!r}")
            _, fw, fs = h.h.fields[off]
            return self._word_read(self._field_word(h, off), fw, fs, n)
        if o == "last_stack_index":
            st = self.lay.stack((left or right or {}).get("value"))
            nw = self.w.stacks[st.name].next_word
            self.pre.append(f"if (st->f[{nw}] == 0) {self.abort('stack')}")
            return [f"(st->f[{nw}] - 1)"] + z
        if o == "size_stack_index":
            st = self.lay.stack((left or right or {}).get("value"))
            return [lit(self.w.stacks[st.name].size)] + z
        if o in ("sat_cast", "usat_cast"):
            return self._saturate(o, left, right, n, where)
        raise XdpUnsupported(f"the operator {str(o)[:30]!r}", where)

    def _guarded(self, node: Any, n: int, where: str) -> tuple[list[str], list[str]]:
        """(limbs of ``node``, its prologue) with the prologue kept apart: for an operand that
        must only be evaluated on one path (a stack index or divisor check that fails there
        would end the packet, which BMv2 never evaluates)."""
        outer, self.pre = self.pre, []
        try:
            vals = self.limbs(node, n, where)
            return vals, self.take_pre()
        finally:
            self.pre = outer

    def _short_circuit(self, o: str, left: Any, right: Any, where: str) -> str:
        """``and`` / ``or``: the right operand's prologue runs only when it is evaluated."""
        lc = self.cond(left, where)
        rv, rpre = self._guarded(right, 1, where)
        rc = f"({rv[0]} != 0)"
        if not rpre:
            return f"(__u64)({lc} {'&&' if o == 'and' else '||'} {rc})"
        t = self.fresh("b")
        self.pre += [f"__u64 {t} = {lc};", f"if ({'' if o == 'and' else '!'}{t}) {{"] + [
            "    " + x for x in rpre] + [f"    {t} = {rc};", "}"]
        return t

    def _choice(self, cond: Any, left: Any, right: Any, n: int, where: str) -> list[str]:
        """``cond ? left : right``: each branch's prologue runs only when it is chosen."""
        cnd = self.cond(cond, where)
        a, pa = self._guarded(left, n, where)
        b, pb = self._guarded(right, n, where)
        if not pa and not pb:
            return [f"({cnd} ? {x} : {y})" for x, y in zip(a, b, strict=False)]
        t = self.fresh("sel")
        self.pre += [f"__u64 {t}[{n}];", f"if ({cnd}) {{"] + ["    " + x for x in pa] + [
            f"    {t}[{i}] = {x};" for i, x in enumerate(a)] + ["} else {"] + [
            "    " + x for x in pb] + [f"    {t}[{i}] = {y};" for i, y in enumerate(b)] + ["}"]
        return [f"{t}[{i}]" for i in range(n)]

    def _wide_add(self, o: str, left: Any, right: Any, n: int, where: str) -> list[str]:
        """``left + right`` / ``left - right`` over ``n`` limbs: each limb in a temporary of the
        prologue, the carry (borrow) of one limb going into the next."""
        a, b = self.limbs(left, n, where), self.limbs(right, n, where)
        r, c = self.fresh("sum"), self.fresh("carry")
        pre = [f"__u64 {r}[{n}];", f"__u64 {c} = 0;"]
        for i in range(n):
            x, y = self.fresh("x"), self.fresh("y")
            pre += [f"__u64 {x} = {a[i]};", f"__u64 {y} = {b[i]};"]
            if o == "+":
                pre.append(f"{r}[{i}] = {x} + {y} + {c};")
                if i < n - 1:  # the true sum reached 2**64: the result wrapped below x
                    pre.append(f"{c} = {r}[{i}] < {x} || ({r}[{i}] == {x} && {c});")
            else:
                pre.append(f"{r}[{i}] = {x} - {y} - {c};")
                if i < n - 1:  # y + borrow exceeded x
                    pre.append(f"{c} = {x} < {y} || ({x} == {y} && {c});")
        self.pre += pre
        return [f"{r}[{i}]" for i in range(n)]

    def _wide_compare(self, o: str, left: Any, right: Any, where: str) -> str:
        """An unsigned comparison over as many limbs as either side has: the most significant
        limb that differs decides."""
        m = max(self.need(left), self.need(right))
        a, b = self.limbs(left, m, where), self.limbs(right, m, where)
        if o in (">", ">="):
            a, b = b, a
            o = "<" if o == ">" else "<="
        test = f"({a[0]} {o} {b[0]})"
        for i in range(1, m):
            test = f"({a[i]} < {b[i]} || ({a[i]} == {b[i]} && {test}))"
        return f"(__u64){test}"

    def _saturate(self, o: str, left: Any, right: Any, n: int, where: str) -> list[str]:
        """``sat_cast`` (``|+|``, ``|-|`` on int<W>) and ``usat_cast`` (on bit<W>): BMv2 clamps
        the unbounded value into W bits; here the value is computed as an __s64, which is exact
        when its operands leave it within 64 bits (always for W <= 62)."""
        w = self._const(right)
        bits = self.signed_bits(left)
        if w is None or not 1 <= w <= 64 or bits is None or bits > 64:
            raise XdpUnsupported("saturating arithmetic on operands wider than 62 bits",
                                 where)
        v = f"(__s64)({self.c(left, where)})"
        if o == "usat_cast":
            return [f"usat64({v}, {lit((1 << w) - 1)})"] + ["0ULL"] * (n - 1)
        val = f"(__u64){v}" if w == 64 else f"ssat64({v}, {w})"
        if n == 1:
            return [val]
        t = self.fresh("sat")
        self.pre.append(f"__u64 {t} = {val};")
        return [t] + [f"(__u64)((__s64){t} >> 63)"] * (n - 1)


# Why a packet was ended by the engine (st->abort), as counted in the stats map.
ABORT_CODES = {"stack": 1, "div": 2, "assert": 3}


def stack_dirty(index: int, upto: str) -> str:
    """Stack ``index`` may hold written elements below ``upto`` (see words.Words.stack_end)."""
    return f"STACK_DIRTY({index}, {upto});"


def read_bits(ptr: str, bit_off: int, width: int) -> str:
    """C source reading ``width`` (<= 64) bits at bit ``bit_off`` after ``ptr``, a pointer into
    the frame copy ``st->pkt`` at ``pos & PKT_MASK``: a variable offset below PKT_MAX plus a
    constant one below PKT_MAX stays inside the 2 * PKT_MAX buffer, which the verifier sees.
    The caller has checked that the bytes lie within the frame."""
    first = bit_off // 8
    last = (bit_off + width - 1) // 8
    trail = (last + 1) * 8 - (bit_off + width)
    terms = []
    for k in range(first, last + 1):
        sh = 8 * (last - k) - trail
        b = f"(__u64){ptr}[{k}]"
        if sh > 0:
            terms.append(f"({b} << {sh})")
        elif sh < 0:
            terms.append(f"({b} >> {-sh})")
        else:
            terms.append(b)
    mask = "" if width == 64 else f" & {lit((1 << width) - 1)}"
    return f"(({' | '.join(terms)}){mask})"

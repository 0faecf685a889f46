"""Lowering of straight-line statements to BMv2 primitives (action bodies, parser states).

An action body becomes a list of primitive calls. Assignments of structs are split per field;
calls to v1model externs map to the primitives simple_switch implements (``register_read``,
``modify_field_with_hash_based_offset``, ``generate_digest``...). ``if`` inside an action is
predicated (each assignment becomes ``x = c ? v : x``) when its branches only assign, which is
what p4c-bm2-ss does; the checker has already rejected branches that call externs.

In a parser state the same statements become ``parser_ops``: plain field assignments are ``set``
ops, ``extract``/``verify``/``advance`` are parser ops and anything else is wrapped in a
``primitive`` op.
"""

from __future__ import annotations

from typing import Any

from softnic.compiler.bmv2.context import LowerContext, source_info
from softnic.compiler.bmv2.layout import (
    DynHeaderLoc,
    FieldLoc,
    HeaderLoc,
    JsonLoc,
    Loc,
    StackLoc,
    StackNextLoc,
    StackNextMemberLoc,
    StructLoc,
    UnionLoc,
)
from softnic.compiler.bmv2.legacy_field_lists import (
    LEGACY_FIELD_LIST_CALLS,
    legacy_field_list_message,
)
from softnic.compiler.bmv2.lower_expr import (
    ExprLowerer,
    field_ref,
    hexstr,
    inner,
    op,
    wrap_op,
    wrap_param,
)
from softnic.compiler.diagnostics import error
from softnic.compiler.frontend.check import CallInfo, annotation_string
from softnic.compiler.ir import ast
from softnic.compiler.ir.pretty import show_expr, show_stmt
from softnic.compiler.ir.scope import Sym
from softnic.compiler.ir.types import (
    BitT,
    BoolT,
    EnumT,
    ErrorT,
    ExternT,
    PType,
    StructT,
    UnionT,
    bit_width,
)

HASH_ALGOS = {
    "crc32": "crc32",
    "crc32_custom": "crc32_custom",
    "crc16": "crc16",
    "crc16_custom": "crc16_custom",
    "random": "random",
    "identity": "identity",
    "csum16": "csum16",
    "xor16": "xor16",
}


class StmtLowerer:
    def __init__(self, prog: LowerContext, env: dict[int, Loc], mode: str = "action",
                 action_name: str = "") -> None:
        self.prog = prog
        self.chk = prog.chk
        self.env = env
        self.mode = mode  # 'action' | 'parser'
        self.action_name = action_name
        self.ops: list[dict[str, Any]] = []
        self.x = ExprLowerer(self.chk, env, in_parser=mode == "parser")
        if mode == "parser":
            self.x.spill = self.spill_lookahead
        # Set by ``exit``: p4c stops converting an action at its exit statement, and BMv2's
        # exit only marks the packet (the action's later primitives would still run), so
        # nothing after it is emitted - also not the caller's rest when an inlined action exits.
        self.exited = False
        self.cond_stack: list[dict[str, Any]] = []  # active predicates (bool JSON of a field)
        self.cur_node: ast.Node | None = None  # the statement whose index guard is emitted

    # ------------------------------------------------------------------ output

    def prim(self, name: str, params: list[dict[str, Any]], node: ast.Node,
             fragment: str = "") -> None:
        p = {"op": name, "parameters": [wrap_op(x) for x in params],
             "source_info": source_info(node, fragment or self.frag(node))}
        if self.mode == "parser":
            self.ops.append({"op": "primitive", "parameters": [p]})
        else:
            self.ops.append(p)

    def frag(self, node: ast.Node) -> str:
        if isinstance(node, ast.Stmt):
            return show_stmt(node)
        if isinstance(node, ast.Expr):
            return show_expr(node)
        return ""

    # ------------------------------------------------------------------ statements

    def stmts(self, ss: list[Any]) -> None:
        for s in ss:
            if self.exited:
                break
            self.stmt(s)

    def spill_lookahead(self, la: dict[str, Any], t: PType) -> dict[str, Any]:
        """A lookahead inside an expression, read first into a temporary with a ``set`` op (the
        only place besides a transition key where BMv2 takes ``lookahead``)."""
        tmp = self.prog.layout.add_scalar("tmp", t)
        ref = field_ref(tmp.header, tmp.field)
        self.ops.append({"op": "set", "parameters": [ref, la]})
        return ref

    def stmt(self, s: Any) -> None:
        if isinstance(s, ast.BlockStmt):
            self.stmts(s.stmts)
        elif isinstance(s, ast.AssignStmt):
            self.assign(s.lhs, s.rhs, s)
        elif isinstance(s, ast.VarDecl):
            sym = self.chk.decl_syms[id(s)]
            t = sym.type
            assert t is not None
            if id(sym) not in self.env:
                lname = self.prog.layout.local_name(s.name)
                self.env[id(sym)] = self.prog.layout.alloc(t, lname, "")
            if s.init is not None:
                self.assign(ast.PathExpr(s.name, loc=s.loc), s.init, s, target=self.env[id(sym)])
        elif isinstance(s, ast.ConstDecl):
            pass
        elif isinstance(s, ast.CallStmt):
            self.call(s.call, s)
        elif isinstance(s, ast.IfStmt):
            self.predicated_if(s)
        elif isinstance(s, ast.ExitStmt):
            if self.mode == "parser":
                raise error(s, "exit in a parser is unsupported on this target")
            self.prim("exit", [], s, "exit")
            self.exited = True
        elif isinstance(s, ast.ReturnStmt):
            # desugar removes return from actions and functions and lower_control handles it
            # in apply blocks; anywhere else ignoring it would run the code that follows
            raise error(s, "return is unsupported here on this target")
        elif isinstance(s, ast.EmptyStmt):
            pass
        else:
            raise error(s, f"{type(s).__name__}: unsupported statement in this context")

    def predicated_if(self, s: ast.IfStmt) -> None:
        if self.mode == "parser":
            raise error(s, "if statements in parser states are unsupported on this target")
        folded = self.x.const(s.cond)
        if isinstance(folded, bool):
            # p4c's ConstantFolding and SimplifyControlFlow run before Predication: the if is
            # gone and only the taken branch stays, unconditionally
            taken = s.then if folded else s.other
            if taken is not None:
                self.stmt(taken)
            return
        c = self.x.boolean(s.cond)
        tmp = self.prog.layout.add_scalar("cond", BoolT())
        self.emit_assign(field_ref(tmp.header, tmp.field), op("b2d", None, c), s,
                         f"if ({show_expr(s.cond)})")
        cref = op("d2b", None, field_ref(tmp.header, tmp.field))
        self.cond_stack.append(cref)
        self.stmt(s.then)
        self.cond_stack.pop()
        if s.other is not None:
            self.cond_stack.append(op("not", None, cref))
            self.stmt(s.other)
            self.cond_stack.pop()

    def guard(self, dst: dict[str, Any], val: dict[str, Any]) -> dict[str, Any]:
        """Under active predicates, ``dst = val`` becomes ``dst = cond ? val : dst``."""
        for c in reversed(self.cond_stack):
            val = {"type": "expression",
                   "value": {"op": "?", "left": inner(val), "right": inner(dst), "cond": c}}
        return val

    def guard_header(self, dst: dict[str, Any], src: dict[str, Any]) -> dict[str, Any]:
        """p4c's Predication turns ``h = s`` under the ifs of an action into
        ``h = c ? s : h``; its BMv2 back end writes that as ``assign_header`` whose source is
        the ``?`` expression (nested, innermost condition first)."""
        for c in reversed(self.cond_stack):
            src = {"type": "expression", "value": {"op": "?", "left": src, "right": dst,
                                                   "cond": c}}
        return src

    def emit_assign_header(self, dst: dict[str, Any], src: dict[str, Any],
                           node: ast.Node) -> None:
        self.prim("assign_header", [dst, self.guard_header(dst, src)], node)

    def emit_assign(self, dst: dict[str, Any], val: dict[str, Any], node: ast.Node,
                    fragment: str = "") -> None:
        val = self.guard(dst, val)
        if self.mode == "parser" and dst.get("type") == "field":
            self.ops.append({"op": "set", "parameters": [dst, wrap_param(val)]})
            return
        self.prim("assign", [dst, wrap_param(val)], node, fragment)

    # ------------------------------------------------------------------ assignment

    def guarded_index(self, idx: dict[str, Any], t: PType) -> dict[str, Any]:
        """p4c's Predication on a run-time stack index in the left-hand side under ifs: a new
        temporary ``index = c1 ? (c2 ? i : 0) : 0`` (outermost condition first), which the
        assignment then uses."""
        width = t.width if isinstance(t, BitT) else 32
        val = inner(idx)
        for c in reversed(self.cond_stack):
            val = {"type": "expression", "value": {"op": "?", "left": inner(val),
                                                   "right": hexstr(0, width), "cond": c}}
        tmp = self.prog.layout.add_scalar("index", t)
        ref = field_ref(tmp.header, tmp.field)
        assert self.cur_node is not None
        self.prim("assign", [ref, wrap_param(val)], self.cur_node)
        return ref

    def assign(self, lhs: ast.Expr, rhs: ast.Expr, node: ast.Node,
               target: Loc | None = None) -> None:
        if target is None and self.cond_stack:
            self.cur_node = node
            self.x.index_guard = self.guarded_index
            try:
                dst = self.x.loc(lhs)
            finally:
                self.x.index_guard = None
        else:
            dst = target if target is not None else self.x.loc(lhs)
        lt = self.x.type(lhs) if target is None else self.chk.types.get(id(rhs))
        if isinstance(lhs, ast.Slice):
            self.assign_slice(lhs, rhs, node)
            return
        if dst is None:
            raise error(lhs, f"{show_expr(lhs)}: cannot assign to this expression on this target")
        self.assign_loc(dst, rhs, node, lt)

    def assign_loc(self, dst: Loc, rhs: ast.Expr, node: ast.Node, lt: PType | None) -> None:
        if isinstance(dst, (FieldLoc, JsonLoc)):
            if isinstance(rhs, ast.Call) and self.x.is_lookahead(rhs) and self.mode == "parser":
                self.ops.append({"op": "set", "parameters": [
                    self.x.loc_json(dst, node), self.x.lookahead_json(rhs)]})
                return
            self.emit_assign(self.x.loc_json(dst, node), self.x.data(rhs), node)
            return
        if isinstance(dst, (HeaderLoc, DynHeaderLoc)):
            if isinstance(rhs, (ast.ListExpr, ast.StructInit)):
                self.assign_fields_from_init(dst, rhs, node)
                return
            src = self.x.loc(rhs)
            if src is None and self.mode == "parser" and isinstance(rhs, ast.Call) \
                    and self.x.is_lookahead(rhs):
                self.lookahead_into(dst, rhs, node)
                return
            if src is None and isinstance(rhs, ast.Ternary):
                # h = c ? h1 : h2: assign_header from a '?' of headers, as p4c writes it
                self.emit_assign_header(self.x.loc_json(dst, node), self.header_choice(rhs),
                                        node)
                return
            if src is None:
                raise error(rhs, f"{show_expr(rhs)}: unsupported header value on this target")
            self.emit_assign_header(self.x.loc_json(dst, node), self.x.loc_json(src, rhs), node)
            return
        if isinstance(dst, StackLoc):
            # a whole stack (p4c: assign_header_stack): every element and nextIndex
            src = self.x.loc(rhs)
            if not isinstance(src, StackLoc):
                raise error(rhs, f"{show_expr(rhs)}: unsupported header stack value on this target")
            self.no_predicate(node)
            self.copy_loc(dst, src, node)
            return
        if isinstance(dst, UnionLoc):
            src = self.x.loc(rhs)
            if not isinstance(src, UnionLoc):
                raise error(rhs, f"{show_expr(rhs)}: unsupported header_union value")
            self.no_predicate(node)
            self.prim("assign_union", [self.x.loc_json(dst, node), self.x.loc_json(src, rhs)],
                      node)
            return
        if isinstance(dst, StructLoc):
            if self.mode == "parser" and isinstance(rhs, ast.Call) and self.x.is_lookahead(rhs):
                self.lookahead_into(dst, rhs, node)
                return
            if isinstance(rhs, ast.ListExpr):
                for (fn, _), el in zip(dst.type.fields, rhs.elems, strict=False):
                    self.assign_loc(dst.fields[fn], el, node, None)
                return
            if isinstance(rhs, ast.StructInit):
                for fn, el in rhs.fields:
                    self.assign_loc(dst.fields[fn], el, node, None)
                return
            src = self.x.loc(rhs)
            if not isinstance(src, StructLoc):
                raise error(rhs, f"{show_expr(rhs)}: unsupported struct value on this target")
            for fn, _ in dst.type.fields:
                self.copy_loc(dst.fields[fn], src.fields[fn], node)
            return
        raise error(node, f"{show_expr(rhs)}: unsupported assignment on this target")

    def lookahead_into(self, dst: Loc, call: ast.Call, node: ast.Node) -> None:
        """``h = pkt.lookahead<H>()`` (a header or a struct of bit fields): as p4c's
        ExpandLookahead, a header becomes valid, and each field is read from its window of the
        lookahead (a ``set`` from ``lookahead`` per field, the one form BMv2 takes)."""
        t = self.x.type(call)
        self.x.lookahead_json(call)  # the checks: in a parser, no varbit field
        if isinstance(dst, (HeaderLoc, DynHeaderLoc)):
            self.prim("add_header", [self.x.loc_json(dst, node)], node)
        off = 0
        for fn, ft in t.fields:  # type: ignore[attr-defined]
            w = bit_width(ft)
            floc = self.x.member_loc(dst, ast.Member(call, fn, loc=call.loc))
            if floc is None or w <= 0:
                raise error(call, f"{show_expr(call)}: unsupported lookahead type on this target")
            la = {"type": "lookahead", "value": [off, w]}
            fj = self.x.loc_json(floc, node)
            if fj.get("type") == "field":
                self.ops.append({"op": "set", "parameters": [fj, la]})
            else:
                self.emit_assign(fj, self.spill_lookahead(la, ft), node)
            off += w

    def header_choice(self, e: ast.Expr) -> dict[str, Any]:
        """A header-typed value: a header (or run-time stack element), or a ``?:`` of them."""
        if isinstance(e, ast.Ternary):
            return {"type": "expression", "value": {
                "op": "?", "left": self.header_choice(e.then),
                "right": self.header_choice(e.other), "cond": self.x.boolean(e.cond)}}
        loc = self.x.loc(e)
        if not isinstance(loc, (HeaderLoc, DynHeaderLoc)):
            raise error(e, f"{show_expr(e)}: unsupported header value on this target")
        return self.x.loc_json(loc, e)

    def copy_loc(self, dst: Loc, src: Loc, node: ast.Node) -> None:
        if isinstance(dst, StructLoc) and isinstance(src, StructLoc):
            for fn, _ in dst.type.fields:
                self.copy_loc(dst.fields[fn], src.fields[fn], node)
        elif isinstance(dst, (FieldLoc, JsonLoc)):
            self.emit_assign(self.x.loc_json(dst, node), self.x.loc_json(src, node), node)
        elif isinstance(dst, HeaderLoc):
            self.emit_assign_header(self.x.loc_json(dst, node), self.x.loc_json(src, node), node)
        elif isinstance(dst, StackLoc) and isinstance(src, StackLoc):
            if isinstance(dst.type.elem, UnionT):
                # p4c writes assign_union_stack; softnic's engine lacks it
                raise error(node, "softnic does not support copying a whole stack of header "
                            "unions yet; copy its elements one by one")
            self.prim("assign_header_stack",
                      [self.x.loc_json(dst, node), self.x.loc_json(src, node)], node)
        else:
            raise error(node, "unsupported struct copy on this target")

    def assign_fields_from_init(self, dst: Loc, rhs: ast.Expr, node: ast.Node) -> None:
        """``h = {a, b}`` makes ``h`` valid and sets its fields (P4_16 8.11)."""
        self.no_predicate(node)
        hj = self.x.loc_json(dst, node)
        self.prim("add_header", [hj], node)
        assert isinstance(dst, (HeaderLoc, DynHeaderLoc))
        names = [fn for fn, _ in dst.type.fields]
        if isinstance(rhs, ast.ListExpr):
            pairs = list(zip(names, rhs.elems, strict=False))
        else:
            pairs = list(rhs.fields)
        for fn, el in pairs:
            floc = self.x.member_loc(dst, ast.Member(rhs, fn, loc=rhs.loc))
            assert floc is not None
            self.emit_assign(self.x.loc_json(floc, node), self.x.data(el), node)

    def assign_slice(self, lhs: ast.Slice, rhs: ast.Expr, node: ast.Node) -> None:
        hi, lo = self.x.const(lhs.hi), self.x.const(lhs.lo)
        target = lhs.expr
        while isinstance(target, ast.Slice):
            # a slice of a slice is a range of the inner one's base: b[7:4][3:0] is b[7:4]
            inner_lo = self.x.const(target.lo)
            hi, lo = hi + inner_lo, lo + inner_lo
            target = target.expr
        base = self.x.loc(target)
        bt = self.x.type(target)
        if base is None or not isinstance(bt, BitT):
            raise error(lhs, f"{show_expr(lhs)}: cannot assign to this slice on this target")
        w = hi - lo + 1
        keep = ((1 << bt.width) - 1) ^ (((1 << w) - 1) << lo)
        bj = self.x.loc_json(base, node)
        new = op("&", self.x.data(rhs), hexstr((1 << w) - 1, w))
        if lo:
            new = op("<<", new, hexstr(lo))
        val = op("|", op("&", bj, hexstr(keep, bt.width)), new)
        self.emit_assign(bj, val, node)

    def no_predicate(self, node: ast.Node) -> None:
        if self.cond_stack:
            raise error(node, "Conditional execution in actions unsupported on this target")

    # ------------------------------------------------------------------ calls

    def call(self, call: ast.Call, node: ast.Node) -> None:
        info = self.chk.calls.get(id(call))
        if info is None:
            raise error(call, f"{show_expr(call)}: internal error: call not checked")
        if self.cond_stack and info.kind != "action":
            if not (info.kind == "builtin" and info.name == "isValid"):
                raise error(node, "Conditional execution in actions unsupported on this target")
        # (an action call never reaches here: InlineActions has inlined every one)
        if info.kind == "builtin":
            self.builtin(call, info, node)
        elif info.kind == "method":
            self.method(call, info, node)
        elif info.kind == "extern_func":
            self.extern_func(call, info, node)
        else:
            raise error(call, f"{show_expr(call)}: unsupported call here")

    def builtin(self, call: ast.Call, info: CallInfo, node: ast.Node) -> None:
        name = info.name
        assert info.base is not None
        if name in ("setValid", "setInvalid"):
            loc = self.x.loc(info.base)
            if loc is None:
                raise error(call, f"{show_expr(call)}: unsupported header expression")
            self.prim("add_header" if name == "setValid" else "remove_header",
                      [self.x.loc_json(loc, call)], node)
        elif name in ("push_front", "pop_front"):
            loc = self.x.loc(info.base)
            assert isinstance(loc, StackLoc)
            n = self.x.const(info.args[0])  # type: ignore[arg-type]
            # header_stack, or header_union_stack for a stack of unions
            self.prim("push" if name == "push_front" else "pop",
                      [self.x.loc_json(loc, call), hexstr(n)], node)
        elif name == "isValid":
            pass
        elif name == "apply":
            raise error(call, f"{show_expr(call)}: tables can only be applied in a control's apply "
                        "block")
        else:
            raise error(call, f"{show_expr(call)}: unsupported here")

    # ------------------------------------------------------------------ extern methods

    def instance_name(self, info: CallInfo, call: ast.Call) -> tuple[str, ExternT]:
        sym = info.sym
        if sym is None or sym.kind != "instance" or not isinstance(sym.type, ExternT):
            raise error(call, f"{show_expr(call)}: extern methods must be called on an instance")
        return sym.qualified, sym.type

    def method(self, call: ast.Call, info: CallInfo, node: ast.Node) -> None:
        base_t = self.chk.types.get(id(info.base))
        if isinstance(base_t, ExternT) and base_t.name == "packet_in":
            self.packet_in(call, info, node)
            return
        if isinstance(base_t, ExternT) and base_t.name == "packet_out":
            raise error(call, "packet_out.emit is only allowed in the deparser")
        name, et = self.instance_name(info, call)
        a = info.args
        if et.name == "register" and info.name == "read":
            self.prim("register_read", [
                self.lvalue(a[0]), {"type": "register_array", "value": name},
                self.x.param(a[1])], node)  # type: ignore[arg-type]
        elif et.name == "register" and info.name == "write":
            self.prim("register_write", [
                {"type": "register_array", "value": name}, self.x.param(a[0]),  # type: ignore
                self.x.param(a[1])], node)  # type: ignore[arg-type]
        elif et.name == "counter" and info.name == "count":
            self.prim("count", [{"type": "counter_array", "value": name},
                                self.x.param(a[0])], node)  # type: ignore[arg-type]
        elif et.name == "meter" and info.name == "execute_meter":
            self.prim("execute_meter", [
                {"type": "meter_array", "value": name}, self.x.param(a[0]),  # type: ignore
                self.lvalue(a[1])], node)  # type: ignore[arg-type]
        elif et.name == "direct_counter" and info.name == "count":
            pass  # BMv2 counts direct counters on every hit by itself
        elif et.name == "direct_meter" and info.name == "read":
            dst = self.x.loc(a[0])  # type: ignore[arg-type]
            if not isinstance(dst, FieldLoc):
                raise error(call, f"{show_expr(call)}: direct meter result must be a field")
            self.prog.direct_meter_targets[name] = [dst.header, dst.field]
        else:
            raise error(call, f"{show_expr(call)}: extern method {et.name}.{info.name} is "
                        "unsupported on this target")

    def lvalue(self, e: ast.Expr) -> dict[str, Any]:
        loc = self.x.loc(e)
        if loc is None:
            raise error(e, f"{show_expr(e)}: must be a left-value")
        return self.x.loc_json(loc, e)

    def packet_in(self, call: ast.Call, info: CallInfo, node: ast.Node) -> None:
        if self.mode != "parser":
            raise error(call, f"{show_expr(call)}: packet_in methods are only allowed in parsers")
        a = info.args
        if info.name == "extract":
            loc = self.x.loc(a[0])  # type: ignore[arg-type]
            if isinstance(loc, HeaderLoc):
                target = {"type": "regular", "value": loc.name}
            elif isinstance(loc, StackNextLoc) and not isinstance(loc.stack.type.elem, UnionT):
                target = {"type": "stack", "value": loc.stack.name}
            elif isinstance(loc, StackNextMemberLoc):
                target = {"type": "union_stack", "value": [loc.stack.name, loc.member]}
            else:
                raise error(call, f"{show_expr(call)}: extract target must be a header or "
                            "stack.next")
            if len(a) > 1 and a[1] is not None:
                # the length is always an ``expression`` holding the value (p4c, and BMv2's
                # loader refuses any other type here)
                length = {"type": "expression", "value": self.x.data(a[1])}
                self.ops.append({"op": "extract_VL", "parameters": [target, length]})
            else:
                self.ops.append({"op": "extract", "parameters": [target]})
        elif info.name == "advance":
            self.ops.append({"op": "advance", "parameters": [self.x.param(a[0])]})  # type: ignore
        elif info.name == "lookahead":
            pass  # a lookahead whose result is unused has no effect
        else:
            raise error(call, f"{show_expr(call)}: packet_in.{info.name} is unsupported here")

    # ------------------------------------------------------------------ extern functions

    def extern_func(self, call: ast.Call, info: CallInfo, node: ast.Node) -> None:
        n = info.name
        a = info.args
        if n == "verify":
            if self.mode != "parser":
                raise error(call, "verify is only allowed in parsers")
            self.ops.append({"op": "verify", "parameters": [
                self.x.boolean(a[0]), self.x.data(a[1])]})  # type: ignore[arg-type]
        elif n == "mark_to_drop":
            self.prim("mark_to_drop", [{"type": "header", "value": "standard_metadata"}], node)
        elif n == "hash":
            self.hash(call, info, node)
        elif n == "digest":
            self.digest(call, info, node)
        elif n == "random":
            self.prim("modify_field_rng_uniform", [
                self.lvalue(a[0]), self.x.param(a[1]), self.x.param(a[2])], node)  # type: ignore
        elif n == "truncate":
            self.prim("truncate", [self.x.param(a[0])], node)  # type: ignore[arg-type]
        elif n in ("assert", "assume"):
            # as data (b2d of the condition), as p4c's convert(cond, .., convertBool): BMv2
            # takes no ``bool`` argument, so a constant condition must not be one
            self.prim(n, [wrap_param(self.x.data(a[0]))], node)  # type: ignore[arg-type]
        elif n == "log_msg":
            msg = a[0]
            if not isinstance(msg, ast.StringLiteral):
                raise error(call, "log_msg needs a string literal")
            vec: list[dict[str, Any]] = []
            if len(a) > 1 and a[1] is not None:
                elems = a[1].elems if isinstance(a[1], ast.ListExpr) else [a[1]]
                vec = [self.x.data(el) for el in elems]
            self.prim("log_msg", [{"type": "string", "value": msg.value},
                                  {"type": "parameters_vector", "value": vec}], node)
        elif n == "clone":
            self.prim(self.clone_prim(a[0], call), [self.x.param(a[1]), hexstr(0)],  # type: ignore
                      node)
        elif n == "clone_preserving_field_list":
            fl = self.prog.field_list_id(self.x.const(a[2]), call)  # type: ignore[arg-type]
            self.prim(self.clone_prim(a[0], call),  # type: ignore[arg-type]
                      [self.x.param(a[1]), hexstr(fl)], node)  # type: ignore[arg-type]
        elif n in ("resubmit_preserving_field_list", "recirculate_preserving_field_list"):
            fl = self.prog.field_list_id(self.x.const(a[0]), call)  # type: ignore[arg-type]
            self.prim("resubmit" if n.startswith("resubmit") else "recirculate",
                      [hexstr(fl)], node)
        elif n in ("verify_checksum", "update_checksum", "verify_checksum_with_payload",
                   "update_checksum_with_payload"):
            raise error(call, f"{n} is only supported in the checksum controls of V1Switch")
        elif n in LEGACY_FIELD_LIST_CALLS:
            raise error(call, legacy_field_list_message(call, n))
        else:
            raise error(call, f"{show_expr(call)}: extern {n} is unsupported on this target")

    def clone_prim(self, kind: ast.Expr, call: ast.Call) -> str:
        v = self.x.const(kind)
        t = self.x.type(kind)
        if not isinstance(t, EnumT) or v is None:
            raise error(call, "clone type must be CloneType.I2E or CloneType.E2E")
        member = t.members[v]
        return "clone_ingress_pkt_to_egress" if member == "I2E" else "clone_egress_pkt_to_egress"

    def field_inputs(self, data: ast.Expr, node: ast.Node) -> list[dict[str, Any]]:
        """Hash/checksum inputs must be fields or constants: spill computed values to temps."""
        elems = data.elems if isinstance(data, ast.ListExpr) else [data]
        out: list[dict[str, Any]] = []
        for el in elems:
            out.extend(self.field_input(el, node))
        return out

    def field_input(self, el: ast.Expr, node: ast.Node) -> list[dict[str, Any]]:
        t = self.x.type(el)
        if isinstance(el, ast.ListExpr):
            return self.field_inputs(el, node)
        if isinstance(el, ast.StructInit):
            by_name = dict(el.fields)
            assert isinstance(t, StructT)
            out0: list[dict[str, Any]] = []
            for fn, _ in t.fields:
                out0.extend(self.field_input(by_name[fn], node))
            return out0
        c = self.x.const(el)
        if c is not None and isinstance(t, BitT):
            return [{"type": "hexstr", "value": hexstr(int(c), t.width)["value"],
                     "bitwidth": t.width}]
        loc = self.x.loc(el)
        if isinstance(loc, (FieldLoc, HeaderLoc, StructLoc)):
            return self.loc_inputs(loc, el)
        if isinstance(t, (BitT, BoolT, EnumT, ErrorT)):
            tmp = self.prog.layout.add_scalar("tmp", t)
            self.emit_assign(field_ref(tmp.header, tmp.field), self.x.data(el), node)
            return [field_ref(tmp.header, tmp.field)]
        raise error(el, f"{show_expr(el)}: unsupported hash/checksum input on this target")

    def loc_inputs(self, loc: Loc, node: ast.Node) -> list[dict[str, Any]]:
        if isinstance(loc, FieldLoc):
            return [field_ref(loc.header, loc.field)]
        if isinstance(loc, HeaderLoc):
            return [field_ref(loc.name, fn) for fn, _ in loc.type.fields]
        if isinstance(loc, StructLoc):
            out: list[dict[str, Any]] = []
            for fn, _ in loc.type.fields:
                out.extend(self.loc_inputs(loc.fields[fn], node))
            return out
        raise error(node, "unsupported field list element on this target")

    def algo(self, e: ast.Expr) -> str:
        t = self.x.type(e)
        v = self.x.const(e)
        if not isinstance(t, EnumT) or v is None:
            raise error(e, f"{show_expr(e)}: hash algorithm must be a HashAlgorithm constant")
        return HASH_ALGOS[t.members[v]]

    def hash(self, call: ast.Call, info: CallInfo, node: ast.Node) -> None:
        a = info.args
        inputs = self.field_inputs(a[3], node)  # type: ignore[arg-type]
        calc = self.prog.add_calculation(self.algo(a[1]), inputs, call)  # type: ignore[arg-type]
        self.prim("modify_field_with_hash_based_offset", [
            self.lvalue(a[0]), self.x.param(a[2]),  # type: ignore[arg-type]
            {"type": "calculation", "value": calc}, self.x.param(a[4])], node)  # type: ignore

    def digest(self, call: ast.Call, info: CallInfo, node: ast.Node) -> None:
        a = info.args
        data = a[1]
        assert data is not None
        t = info.bindings.get("T") or self.x.type(data)
        if not isinstance(t, StructT):
            raise error(call, f"{show_expr(call)}: the digest type must be a struct")
        elems = self.field_inputs(data, node)
        fields = [(fn, bit_width(ft)) for fn, ft in t.fields]
        lid = self.prog.add_learn_list(t.name, elems, fields, call)
        self.prim("generate_digest", [self.x.param(a[0]), hexstr(lid)], node)  # type: ignore


def ensure_action(ctx: LowerContext, sym: Sym | None, env: dict[int, Loc]) -> int:
    """The JSON id of the action ``sym`` names, lowering it on first use."""
    assert sym is not None
    d: ast.ActionDecl = sym.decl
    if id(d) in ctx.action_decl_ids:
        return ctx.action_decl_ids[id(d)]
    if sym.qualified in ctx.action_ids:
        # declarations of one control-plane name share a JSON action when they are the
        # same action; the per-table copies p4c's DuplicateActions makes (their bound
        # arguments differ) get their own, named alike, as p4c-bm2-ss emits them
        first = ctx.action_decl_of.get(sym.qualified)
        if first is None or (first.params == d.params and first.body == d.body):
            aid = ctx.action_ids[sym.qualified]
            ctx.action_decl_ids[id(d)] = aid
            return aid
    env2 = dict(env)
    rd: list[dict[str, Any]] = []
    for p in d.params:
        psym = ctx.chk.decl_syms[id(p)]
        t = psym.type
        assert t is not None
        if p.direction is not None:
            raise error(p, f"{p.name}: directional action parameters are unsupported here")
        w = bit_width(t)
        env2[id(psym)] = JsonLoc({"type": "runtime_data", "value": len(rd)}, t)
        # the control-plane name: @name keeps it when desugaring renamed the parameter
        pname = annotation_string(p, "name") or p.name
        rd.append({"name": pname, "bitwidth": w})
    sl = StmtLowerer(ctx, env2, "action", sym.qualified)
    sl.stmts(d.body.stmts)
    aid = ctx.add_action_json(sym.qualified, rd, sl.ops, d)
    ctx.action_decl_ids[id(d)] = aid
    ctx.action_decl_of.setdefault(sym.qualified, d)
    return aid
